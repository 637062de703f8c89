/* halo-train --profile (docs/train.md, "Profile"): the real binaries at
 * P=2 on a seeded sbm graph.  The table's op rows, summed here from the
 * printed rows, plus the MPI waits account for the measured step and
 * evaluation within the timers' overhead; the losses are bit-identical to
 * a run without --profile (the timed table calls the same ops); and after
 * the first epoch the loop touches no fresh memory (page faults ~0). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train-cli.h"
#include "train-run.h"

typedef struct table {
  double ops_ms, calls, mpi_ms, step_eval_ms, untimed_ms, faults;
  int rows;
} table;

/* The table of a run's log: the op rows' rank-0 times summed, and the
 * totals' rows. */
static table read_table(const char *log) {
  table t = {0};
  char *text = tr_slurp(log);
  cr_assert(text, "no %s", log);
  char *p = strstr(text, "\nprofile: ");
  cr_assert(p, "%s: no profile table", log);
  p = strchr(p + 1, '\n'); /* past the limits line */
  p = strchr(p + 1, '\n'); /* past the column names */
  t.faults = -1;
  for (char *line = p + 1; line && *line;
       line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    char name[32], phase[16], layer[8];
    double calls, ms;
    if (strncmp(line, "mpi waits", 9) == 0) {
      sscanf(line + 9, " - - - %lf", &t.mpi_ms);
    } else if (strncmp(line, "untimed", 7) == 0) {
      sscanf(line + 7, " - - - %lf", &t.untimed_ms);
    } else if (strncmp(line, "step+eval", 9) == 0) {
      sscanf(line + 9, " all - - %lf", &t.step_eval_ms);
    } else if (strncmp(line, "page faults:", 12) == 0) {
      char *q = strstr(line, "; ");
      cr_assert(q, "%s: %.60s", log, line);
      t.faults = strtod(q + 2, NULL);
      break;
    } else if (strncmp(line, "ops ", 4) == 0 || strncmp(line, "step ", 5) == 0 ||
               strncmp(line, "eval ", 5) == 0) {
      continue;
    } else if (sscanf(line, "%31s %15s %7s %lf %lf", name, phase, layer, &calls, &ms) == 5) {
      t.ops_ms += ms;
      t.calls += calls;
      t.rows++;
    }
  }
  free(text);
  return t;
}

static void run_model(const char *shards, const char *dir, const char *model) {
  char flags[256], plain[600], profiled[600], log[620];
  snprintf(plain, sizeof plain, "%s/%s-plain.jsonl", dir, model);
  snprintf(profiled, sizeof profiled, "%s/%s-profile.jsonl", dir, model);
  snprintf(flags, sizeof flags, "--model %s --epochs 12 --warmup 2", model);
  train(2, shards, flags, plain);
  snprintf(flags, sizeof flags, "--model %s --epochs 12 --warmup 2 --profile", model);
  train(2, shards, flags, profiled);

  run_report a, b;
  read_report(plain, &a);
  read_report(profiled, &b);
  expect_bit_identical(&a, &b, model);

  snprintf(log, sizeof log, "%s.log", profiled);
  const table t = read_table(log);
  cr_expect(t.rows >= 6, "%s: %d op rows", model, t.rows);
  cr_expect(t.step_eval_ms > 0, "%s: step+eval %g ms", model, t.step_eval_ms);
  /* What the timers cannot see: the loop's own code between ops and the
   * timers themselves (two clock reads a call, ~1 us).  Summed from the
   * printed rows, the ops and the waits are the step and the evaluation
   * within 10% plus 5 us a call. */
  const double sum = t.ops_ms + t.mpi_ms, slack = 0.10 * t.step_eval_ms + 0.005 * t.calls;
  cr_expect(fabs(sum - t.step_eval_ms) <= slack,
            "%s: the ops (%.3f ms) and MPI waits (%.3f ms) sum to %.3f ms against a step and "
            "evaluation of %.3f ms (untimed %.3f ms, slack %.3f ms)",
            model, t.ops_ms, t.mpi_ms, sum, t.step_eval_ms, t.untimed_ms, slack);
  /* The loop reuses the plan's buffers: no first touch after the warm-up. */
  cr_expect(t.faults >= 0 && t.faults <= 64, "%s: %g page faults per profiled epoch", model,
            t.faults);
}

Test(profile, ops_sum_to_the_step, .timeout = 300) {
  const uint64_t seed = tr_seed("profile", 7);
  char *dir = tr_tmpdir("profile");
  char input[200], shards[600], json[620];
  snprintf(input, sizeof input,
           "sbm:nodes=4000,classes=4,avg-degree=8,homophily=0.8,feat=32,seed=%llu",
           (unsigned long long)seed);
  snprintf(shards, sizeof shards, "%s/sbm-2", dir);
  snprintf(json, sizeof json, "%s/partition.json", dir);
  partition(input, 2, "metis", "32,16,4", shards, json);
  run_model(shards, dir, "gcn");
  run_model(shards, dir, "gat");
  tr_rmdir(dir);
}
