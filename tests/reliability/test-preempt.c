/* Preemption, end to end under mpirun on Cora at P=2 with --deterministic:
 *
 *   - SIGUSR1 sent to mpirun (which forwards it to every rank, as a batch
 *     script's `sbatch --signal=USR1@T` reaches a job through it), and
 *     SIGTERM sent to one rank process alone (as srun sends it to its
 *     tasks), each stop the job after an epoch: mpirun exits 138 or 143, the
 *     newest checkpoint is that epoch's, and the metrics file holds whole
 *     JSON lines ending with a summary that names the signal;
 *   - the stopped run, continued with --resume auto to 10 epochs past that
 *     point at P=3 with the same metrics file, ends bit-identical
 *     (params_sha256 and every loss) to a straight run of as many epochs,
 *     which --resume auto started fresh from an empty folder, and the file
 *     then holds every epoch once and one summary of the whole run;
 *   - --metrics refuses a file that is not a halo metrics file unless
 *     --force, and a write that fails (/dev/full) stops every rank with one
 *     line naming the epoch and the system's reason.
 * The job trains "forever" (--epochs 100000) until the signal, so the test
 * does not depend on how fast this machine trains. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-checkpoint.h"
#include "train-cli.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"

/* Trains SHARDS at P=2 until SIGNAL reaches mpirun ("usr1") or its first
 * child rank ("term"), once the metrics file holds 3 epochs; returns
 * mpirun's exit status. */
static int train_until_signal(const char *dir, const char *shards, const char *how) {
  char script[600], log[600];
  snprintf(script, sizeof script, "%s/signal-%s.sh", dir, how);
  snprintf(log, sizeof log, "%s/signal-%s.log", dir, how);
  FILE *f = fopen(script, "w");
  cr_assert(f, "cannot write %s", script);
  fprintf(f,
          "cd '%s' || exit 2\n"
          "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 "
          "'%s' '%s' --threads 1 --quiet --deterministic --epochs 100000 --checkpoint ck-%s "
          "--checkpoint-every 100000 --metrics m-%s.jsonl &\n"
          "pid=$!\n"
          "for i in $(seq 1 3000); do\n"
          "  [ -s m-%s.jsonl ] && [ \"$(wc -l < m-%s.jsonl)\" -ge 3 ] && break\n"
          "  sleep 0.02\n"
          "done\n"
          "if [ %s = usr1 ]; then kill -USR1 $pid; else kill -TERM $(pgrep -P $pid | tail -1); fi\n"
          "wait $pid\n",
          dir, TRAIN_BIN, shards, how, how, how, how, how);
  fclose(f);
  return tr_run(240, log, "bash '%s'", script);
}

/* The epochs of a stopped run's metrics file, which must be whole JSON
 * lines ending with a summary that names `signal`. */
static int stopped_epochs(const char *path, const char *signal) {
  char *text = tr_slurp(path);
  cr_assert(text, "no metrics file %s", path);
  int lines = 0, epochs = -1;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    lines++;
    cr_expect(line[0] == '{' && line[strlen(line) - 1] == '}', "%s line %d is not whole: %.60s",
              path, lines, line);
    if (strstr(line, "\"summary\": true")) {
      char want[64];
      snprintf(want, sizeof want, "\"stopped_by\": \"%s\"", signal);
      cr_expect(strstr(line, want), "%s: the summary does not say %s", path, want);
      epochs = (int)tr_json_num(line, "epochs");
    }
  }
  free(text);
  cr_assert_gt(epochs, 0, "%s: no summary of trained epochs", path);
  cr_expect_eq(lines, epochs + 1, "%s: %d lines for %d epochs and a summary", path, lines, epochs);
  return epochs;
}

Test(preempt, a_signal_stops_at_an_epoch_and_resume_auto_continues_bit_exactly, .timeout = 600) {
  char *dir = tr_tmpdir("preempt");
  char shards2[512], shards3[512], json[600], path[700], ck[700], flags[900];
  snprintf(shards2, sizeof shards2, "%s/cora-2", dir);
  snprintf(shards3, sizeof shards3, "%s/cora-3", dir);
  snprintf(json, sizeof json, "%s.json", shards2);
  partition(CORA, 2, "metis", "1433,16,7", shards2, json);
  snprintf(json, sizeof json, "%s.json", shards3);
  partition(CORA, 3, "metis", "1433,16,7", shards3, json);

  static const struct {
    const char *how, *signal;
    int status;
  } cases[] = {{"usr1", "SIGUSR1", 138}, {"term", "SIGTERM", 143}};
  for (int c = 0; c < 2; c++) {
    const int rc = train_until_signal(dir, shards2, cases[c].how);
    cr_expect_eq(rc, cases[c].status, "%s: mpirun exited %d, not %d", cases[c].signal, rc,
                 cases[c].status);
    snprintf(path, sizeof path, "%s/m-%s.jsonl", dir, cases[c].how);
    const int stop = stopped_epochs(path, cases[c].signal);
    snprintf(ck, sizeof ck, "%s/ck-%s", dir, cases[c].how);
    int64_t newest = -1;
    cr_assert_eq(halo_checkpoint_newest(ck, &newest), HALO_OK);
    cr_expect_eq(newest, stop, "%s: the newest checkpoint is of epoch %lld, the run stopped at %d",
                 cases[c].signal, (long long)newest, stop);
    fprintf(stderr, "[preempt] %s: mpirun exited %d after epoch %d\n", cases[c].signal, rc, stop);

    /* Straight to stop + 10 from an empty folder, and the stopped run
     * resumed there at P=3: --resume auto both times. */
    run_report straight, resumed;
    snprintf(path, sizeof path, "%s/straight-%s.jsonl", dir, cases[c].how);
    snprintf(flags, sizeof flags,
             "--deterministic --epochs %d --checkpoint '%s/fresh-%s' --resume auto", stop + 10,
             dir, cases[c].how);
    train(2, shards2, flags, path);
    read_report(path, &straight);
    cr_assert_eq(straight.m.epochs, stop + 10, "--resume auto on an empty folder trained %d epochs",
                 straight.m.epochs);
    /* The stopped run's own metrics file, appended to: it then holds the
     * whole run's epochs and one summary of them. */
    snprintf(path, sizeof path, "%s/m-%s.jsonl", dir, cases[c].how);
    snprintf(flags, sizeof flags, "--deterministic --epochs %d --checkpoint '%s' --resume auto",
             stop + 10, ck);
    train(3, shards3, flags, path);
    read_resumed_report(path, &resumed);
    cr_assert_eq(resumed.m.epochs, stop + 10, "the appended file holds %d epochs",
                 resumed.m.epochs);
    char *text = tr_slurp(path);
    cr_assert(text);
    cr_expect_eq(tr_count_lines(text, "\"summary\": true"), 1, "%s: not one summary", path);
    const char *summary = strstr(text, "\"summary\": true");
    cr_expect(summary && tr_json_num(summary, "epochs") == stop + 10 &&
                  tr_json_num(summary, "epochs_this_run") == 10,
              "%s: the summary does not cover the whole run: %s", path, summary);
    free(text);
    for (int e = 0; e < stop + 10; e++)
      cr_expect(memcmp(&resumed.m.loss[e], &straight.m.loss[e], sizeof(double)) == 0,
                "%s: epoch %d's loss is %.17g stopped and resumed, %.17g straight",
                cases[c].signal, e + 1, resumed.m.loss[e], straight.m.loss[e]);
    cr_expect_str_eq(resumed.sha, straight.sha, "%s: resumed params_sha256 %s, straight %s",
                     cases[c].signal, resumed.sha, straight.sha);
  }
  tr_rmdir(dir);
}

Test(preempt, metrics_file_is_guarded_and_write_errors_stop_the_run, .timeout = 300) {
  char *dir = tr_tmpdir("metrics");
  char shards[512], json[600], path[700], log[700];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  snprintf(path, sizeof path, "%s/notes.txt", dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs("my notes, not metrics\n", f);
  fclose(f);
  snprintf(log, sizeof log, "%s/refused.log", dir);
  int rc = tr_mpirun(2, 120, log, "%s '%s' --epochs 3 --quiet --metrics '%s'", TRAIN_BIN, shards,
                     path);
  char *out = tr_slurp(log), *kept = tr_slurp(path);
  cr_expect_neq(rc, 0);
  cr_expect(out && strstr(out, "is not a halo metrics file") && strstr(out, "--force"),
            "no refusal line:\n%s", out);
  cr_expect(kept && strcmp(kept, "my notes, not metrics\n") == 0, "the file was touched");
  free(out);
  free(kept);
  rc = tr_mpirun(2, 120, log, "%s '%s' --epochs 3 --quiet --force --metrics '%s'", TRAIN_BIN,
                 shards, path);
  cr_expect_eq(rc, 0, "--force did not let it through");

  rc = tr_mpirun(2, 120, log, "%s '%s' --epochs 3 --quiet --metrics /dev/full", TRAIN_BIN, shards);
  out = tr_slurp(log);
  cr_expect_neq(rc, 0, "a failed metrics write did not fail the run");
  cr_expect(out && strstr(out, "--metrics /dev/full: cannot write epoch 1: No space left on device"),
            "no line naming the epoch and the reason:\n%s", out);
  free(out);
  tr_rmdir(dir);
}
