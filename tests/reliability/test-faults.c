/* Faults under mpirun, on the bundled Cora with 3 ranks:
 *
 *   - a rank killed with SIGKILL in the middle of training: mpirun ends the
 *     job within 10 s with a non-zero exit and a message, no halo-train
 *     process is left, and the newest checkpoint reads and resumes;
 *   - a rank that stalls (the test-only hook HALO_FAULT_STALL=RANK:EPOCH):
 *     with --timeout 2 a peer's watchdog names the phase, the epoch and the
 *     ranks it waits for, and the job ends within the timeout plus 10 s.
 * Times are measured here and printed, for docs/reliability.md. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "halo-checkpoint.h"
#include "train-run.h"

#define TRAIN_BIN HALO_BINARY_DIR "/bin/halo-train"
#define PARTITION_BIN HALO_BINARY_DIR "/bin/halo-partition"
#define CORA HALO_DATASETS_DIR "/cora"
#define MPIRUN                                                                      \
  "mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 " \
  "-x OPENBLAS_NUM_THREADS=1"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void nap_ms(int ms) {
  struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static pid_t spawn(const char *cmd, const char *log) {
  pid_t pid = tr_spawn(cmd, log);
  cr_assert_geq(pid, 0, "fork failed");
  return pid;
}

/* Waits up to `timeout_s` for `pid`; 1 with *status set when it ended. */
static int wait_exit(pid_t pid, double timeout_s, int *status) {
  double end = now_s() + timeout_s;
  while (now_s() < end) {
    pid_t got = waitpid(pid, status, WNOHANG);
    if (got == pid) return 1;
    nap_ms(10);
  }
  return 0;
}

/* The pids of the halo-train processes whose command line mentions `tag`. */
static int ranks_of(const char *tag, pid_t *pids, int max) {
  int count = 0;
  DIR *d = opendir("/proc");
  cr_assert(d);
  for (struct dirent *e; (e = readdir(d)) && count < max;) {
    char path[300], comm[64] = "", cmdline[4096];
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (!fgets(comm, sizeof comm, f)) comm[0] = '\0';
    fclose(f);
    if (strncmp(comm, "halo-train", 10) != 0) continue;
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    f = fopen(path, "r");
    if (!f) continue;
    size_t n = fread(cmdline, 1, sizeof cmdline - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
      if (cmdline[i] == '\0') cmdline[i] = ' ';
    cmdline[n] = '\0';
    /* A zombie or a process on its way out has no command line left. */
    if (strstr(cmdline, tag)) pids[count++] = (pid_t)atoi(e->d_name);
  }
  closedir(d);
  return count;
}

static int file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* 1 when one line of `text` holds both `a` and `b`. */
static int line_with(const char *text, const char *a, const char *b) {
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char *x = strstr(line, a), *y = strstr(line, b);
    if (x && y && x < line + len && y < line + len) return 1;
    line = end ? end + 1 : NULL;
  }
  return 0;
}

static void partition(const char *out, int parts) {
  char log[600];
  snprintf(log, sizeof log, "%s.log", out);
  int rc = tr_run(120, log, "%s --input '%s' --parts %d --out '%s' --force", PARTITION_BIN, CORA,
                  parts, out);
  cr_assert_eq(rc, 0, "halo-partition exited with %d (see %s)", rc, log);
}

Test(faults, sigkill_of_a_rank_ends_the_job, .timeout = 300) {
  char *dir = tr_tmpdir("kill");
  char shards[600], ckpt[600], log[700], cmd[2400], mark[700];
  snprintf(shards, sizeof shards, "%s/cora-3", dir);
  snprintf(ckpt, sizeof ckpt, "%s/ck", dir);
  snprintf(log, sizeof log, "%s/run.log", dir);
  partition(shards, 3);

  snprintf(cmd, sizeof cmd,
           "exec " MPIRUN
           " -np 3 %s '%s' --threads 1 --quiet --epochs 1000000 --checkpoint '%s' "
           "--checkpoint-every 25",
           TRAIN_BIN, shards, ckpt);
  pid_t mpirun = spawn(cmd, log);
  /* Training is under way once the epoch-50 checkpoint is in place. */
  snprintf(mark, sizeof mark, "%s/ckpt-00000050.h5", ckpt);
  double until = now_s() + 120;
  while (!file_exists(mark) && now_s() < until) nap_ms(20);
  cr_assert(file_exists(mark), "no checkpoint after 120 s (see %s)", log);

  pid_t pids[8];
  int n = ranks_of(ckpt, pids, 8);
  cr_assert_eq(n, 3, "found %d halo-train processes for %s", n, ckpt);
  double t0 = now_s();
  cr_assert_eq(kill(pids[1], SIGKILL), 0);
  int status = 0;
  int ended = wait_exit(mpirun, 60, &status);
  double took = now_s() - t0;
  if (!ended) {
    kill(mpirun, SIGKILL);
    waitpid(mpirun, &status, 0);
  }
  cr_assert(ended, "mpirun still running 60 s after a rank was killed");
  cr_log_info("SIGKILL of rank pid %d: mpirun exited %.3f s later with status %d", (int)pids[1],
              took, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  fprintf(stderr, "faults: sigkill: job ended %.3f s after the kill\n", took);
  cr_expect_lt(took, 10.0, "the job took %.1f s to end", took);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) != 0, "mpirun exit status %d", status);

  /* No rank left: give the kernel a moment to reap, then look. */
  nap_ms(500);
  n = ranks_of(ckpt, pids, 8);
  cr_expect_eq(n, 0, "%d halo-train processes left behind", n);
  char *out = tr_slurp(log);
  cr_assert(out);
  cr_expect(strstr(out, "signal 9") || strstr(out, "Killed"),
            "no message names the killed rank:\n%s", out);
  free(out);

  /* The newest checkpoint is intact and resumes. */
  halo_checkpoint c;
  char path[700];
  cr_assert_eq(halo_checkpoint_latest(ckpt, &c, path, sizeof path), HALO_OK);
  cr_log_info("newest checkpoint after the kill: %s (epoch %lld)", path, (long long)c.epoch);
  int64_t epoch = c.epoch;
  halo_checkpoint_clear(&c);
  snprintf(log, sizeof log, "%s/resume.log", dir);
  int rc =
      tr_mpirun(3, 120, log, "%s '%s' --threads 1 --quiet --epochs %lld --checkpoint '%s' --resume",
                TRAIN_BIN, shards, (long long)epoch + 3, ckpt);
  cr_expect_eq(rc, 0, "resume after the kill failed (see %s)", log);
  out = tr_slurp(log);
  cr_expect(out && tr_count_lines(out, "resumed from") == 1, "%s", out ? out : "");
  free(out);
  tr_rmdir(dir);
}

/* Stalls rank 1 of 3 at `stall_epoch` (HALO_FAULT_STALL) in a run of
 * `epochs` epochs with --timeout 2 and expects the job to end within 10 s
 * of the stall, with watchdog reports that hold each string of `reports`
 * (NULL-terminated). */
static void expect_stall_caught(const char *tag, int stall_epoch, int epochs,
                                const char *const *reports) {
  char *dir = tr_tmpdir(tag);
  char shards[600], log[700], cmd[2400];
  const double timeout = 2.0;
  snprintf(shards, sizeof shards, "%s/cora-3", dir);
  snprintf(log, sizeof log, "%s/run.log", dir);
  partition(shards, 3);

  snprintf(cmd, sizeof cmd,
           "exec " MPIRUN
           " -x HALO_FAULT_STALL=1:%d -np 3 %s '%s' --threads 1 --quiet --epochs %d "
           "--timeout %g",
           stall_epoch, TRAIN_BIN, shards, epochs, timeout);
  pid_t mpirun = spawn(cmd, log);
  double until = now_s() + 120, t0 = 0;
  while (now_s() < until && t0 == 0) {
    char *out = tr_slurp(log);
    if (out && strstr(out, "fault hook: stalling")) t0 = now_s();
    free(out);
    if (t0 == 0) nap_ms(10);
  }
  cr_assert_gt(t0, 0, "rank 1 never reached the stall (see %s)", log);
  int status = 0;
  int ended = wait_exit(mpirun, 60, &status);
  double took = now_s() - t0;
  if (!ended) {
    kill(mpirun, SIGKILL);
    waitpid(mpirun, &status, 0);
  }
  cr_assert(ended, "the job hung for 60 s with a stalled rank and --timeout %g", timeout);
  fprintf(stderr, "faults: watchdog (%s): job ended %.3f s after the stall (timeout %g s)\n", tag,
          took, timeout);
  cr_log_info("stalled rank (%s): the job ended %.3f s after the stall began (--timeout %g)", tag,
              took, timeout);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) != 0, "mpirun exit status %d", status);
  cr_expect_geq(took, timeout * 0.9, "the watchdog fired before its timeout (%.2f s)", took);
  cr_expect_lt(took, timeout + 10.0, "the job took %.1f s to end", took);

  char *out = tr_slurp(log);
  cr_assert(out);
  int lines = tr_count_lines(out, "watchdog: no progress for");
  cr_expect_geq(lines, 1, "no watchdog report:\n%s", out);
  for (const char *const *r = reports; *r; r++)
    cr_expect(line_with(out, "watchdog: no progress", *r), "no report holds '%s':\n%s", *r, out);
  free(out);
  pid_t pids[8];
  nap_ms(500);
  cr_expect_eq(ranks_of(shards, pids, 8), 0, "halo-train processes left behind");
  tr_rmdir(dir);
}

Test(faults, watchdog_names_a_stalled_peer, .timeout = 300) {
  /* Rank 1 stops at the start of epoch 30: its peers wait for its halo rows
   * in the first exchange, point to point. */
  const char *const reports[] = {"epoch 30,", "waiting for ranks 1", NULL};
  expect_stall_caught("stall", 30, 100000, reports);
}

Test(faults, watchdog_covers_the_memory_measurement, .timeout = 300) {
  /* Epoch 6 of a 5-epoch run is the hook after the loop: rank 1 stops
   * before the last memory measurement, a collective of every rank. */
  const char *const reports[] = {"in the memory measurement", "(a collective)", NULL};
  expect_stall_caught("stall-end", 6, 5, reports);
}
