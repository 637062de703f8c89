/* Helpers of the trainer's integration tests: temporary folders, running a
 * command under a timeout the test enforces, and reading what it wrote. */
#ifndef TRAIN_RUN_H
#define TRAIN_RUN_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Seed from $HALO_TEST_SEED when set, else `fallback`; printed either way. */
uint64_t tr_seed(const char *test, uint64_t fallback);

/* A fresh folder under /tmp (malloc'd path); tr_rmdir removes it. */
char *tr_tmpdir(const char *tag);
void tr_rmdir(char *dir);

/* "mpirun --allow-run-as-root --oversubscribe --bind-to none -np P -x OMP_NUM_THREADS=1"
 * followed by `args`, under `timeout`.  Output goes to OUT_FILE (stdout and
 * stderr together) when given.  Returns the exit status: 124 when the
 * timeout fired. */
int tr_mpirun(int np, int timeout_s, const char *out_file, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Cases of train-probe run in one mpirun (train-probe --cases FILE): under
 * the sanitizers each mpirun costs seconds of start-up and exit, more than
 * a small case.  Each case gets its own OUT folder inside the batch's;
 * tr_batch_run runs them all, then tr_batch_status and tr_batch_logs say
 * how each went. */
typedef struct tr_batch tr_batch;

/* A new, empty batch in a fresh folder under /tmp; NULL when it cannot. */
tr_batch *tr_batch_new(const char *tag);

/* Appends a case: `settings` ("KEY=VALUE ...", a value with spaces in double
 * quotes; may be "") and the words after OUT that `fmt` formats.  Returns its
 * index, or -1 when the case file cannot be written. */
int tr_batch_add(tr_batch *b, const char *settings, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Number of cases added. */
int tr_batch_cases(const tr_batch *b);

/* Case k's OUT folder (owned by the batch). */
const char *tr_batch_dir(const tr_batch *b, int k);

/* Runs every case at np ranks under a timeout of 30 s + `per_case_s` a
 * case, at most `limit_s` (keep it under the Criterion case's timeout, so
 * that a hung case is named: it and the cases after it never finish);
 * train-probe's own lines go to the test's stderr.  Returns mpirun's exit
 * status (124: the timeout fired). */
int tr_batch_run(tr_batch *b, const char *probe, int np, int per_case_s, int limit_s);

/* Case k's status: 0 when every rank succeeded, 1 when one failed, -1 when
 * it never finished (the mpirun died or timed out in it or before it). */
int tr_batch_status(const tr_batch *b, int k);

/* Case k's output: each rank's log-R.txt in rank order after a "--- rank R"
 * line (malloc'd; NULL when out of memory). */
char *tr_batch_logs(const tr_batch *b, int k, int np);

/* Removes the batch's folder (unless HALO_TEST_KEEP) and frees it; NULL is fine. */
void tr_batch_free(tr_batch **b);

/* Runs a shell command under `timeout`; same return value. */
int tr_run(int timeout_s, const char *out_file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Starts `cmd` under /bin/sh in the background, stdout and stderr to
 * `log`; the shell execs the command's first word (mpirun, say), so the pid
 * returned is its.  Returns -1 when fork fails. */
pid_t tr_spawn(const char *cmd, const char *log);

/* fopen of the path that `fmt` formats, or NULL. */
FILE *tr_fopenf(const char *mode, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes `path`: for each of n rows, "gid[i]" and then row i (`classes`
 * values) of each of the `models` arrays z[k].  Returns 0, or -1 when it
 * could not write. */
int tr_write_logits(const char *path, const int64_t *gid, int64_t n, int64_t classes, int models,
                    float *const *z);

/* The whole file (malloc'd, NUL-terminated), or NULL. */
char *tr_slurp(const char *path);

/* Number of lines in `text` that contain `needle`. */
int tr_count_lines(const char *text, const char *needle);

/* Value of "key": NUMBER in one JSON line (NAN when absent). */
double tr_json_num(const char *line, const char *key);

#endif /* TRAIN_RUN_H */
