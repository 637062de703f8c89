/* halo-train --deterministic end to end: the same losses, bit for bit, every
 * epoch, and the same final parameters (the summary's params_sha256) for
 * any number of ranks, partitioner (METIS, Scotch, random, block), row order and thread count, and
 * across a checkpoint resumed at another P (docs/reproducibility.md). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test-sanitized.h"
#include "train-cli.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"

/* mpirun -np NP halo-train SHARDS --deterministic EXTRA --metrics PATH. */
static void run(int np, const char *shards, const char *extra, const char *path) {
  char log[700];
  snprintf(log, sizeof log, "%s.log", path);
  int rc = tr_mpirun(np, 300, log, "%s '%s' --deterministic --quiet --metrics '%s' %s", TRAIN_BIN,
                     shards, path, extra);
  cr_assert_eq(rc, 0, "halo-train -np %d %s exited with %d (see %s)", np, extra, rc, log);
}

Test(reproducible, cora_any_p_partitioner_order_and_threads, .timeout = 900) {
  char *dir = tr_tmpdir("repro");
  static const struct {
    int parts;
    const char *method, *order, *threads;
  } runs[] = {{1, "metis", "community", "1"},  {2, "metis", "community", "1"},
              {3, "metis", "community", "1"},  {4, "metis", "community", "1"},
              {4, "random", "community", "1"}, {3, "block", "community", "1"},
              {4, "scotch", "community", "1"}, {2, "metis", "id", "1"},
              {2, "metis", "community", "2"},  {1, "metis", "community", "2"}};
  const int nruns = (int)(sizeof runs / sizeof runs[0]);
  /* The default, 200 epochs; under sanitizers 30, which run the same code
   * (the epoch loop does not allocate) in every one of the runs. */
  const int epochs = TEST_SANITIZED ? 30 : 200;
  if (TEST_SANITIZED)
    test_sanitized_note("reproducible.cora",
                        "each of the 10 runs (every P, partitioner, row order and thread "
                        "count) trains 30 epochs, not 200");
  run_report *r = calloc((size_t)nruns, sizeof *r);
  cr_assert(r);
  for (int i = 0; i < nruns; i++) {
    char shards[512], path[600], log[600], extra[64];
    snprintf(shards, sizeof shards, "%s/cora-%s-%s-%d", dir, runs[i].method, runs[i].order,
             runs[i].parts);
    snprintf(log, sizeof log, "%s.partition.log", shards);
    struct stat st;
    if (stat(shards, &st) != 0) {
      int rc = tr_run(120, log, "%s --input '%s' --parts %d --method %s --order %s --out '%s'",
                      PARTITION_BIN, CORA, runs[i].parts, runs[i].method, runs[i].order, shards);
      cr_assert_eq(rc, 0, "halo-partition exited with %d (see %s)", rc, log);
    }
    snprintf(path, sizeof path, "%s-t%s.jsonl", shards, runs[i].threads);
    if (TEST_SANITIZED)
      snprintf(extra, sizeof extra, "--threads %s --epochs %d", runs[i].threads, epochs);
    else
      snprintf(extra, sizeof extra, "--threads %s", runs[i].threads);
    run(runs[i].parts, shards, extra, path);
    read_report(path, &r[i]);
    cr_assert_eq(r[i].m.epochs, epochs);
  }
  for (int i = 1; i < nruns; i++) {
    char what[128];
    snprintf(what, sizeof what, "P=%d %s, %s order, %s threads against P=1", runs[i].parts,
             runs[i].method, runs[i].order, runs[i].threads);
    expect_bit_identical(&r[0], &r[i], what);
  }
  fprintf(stderr, "[reproducible.cora] %d runs: params_sha256 %s, final test %.4f\n", nruns,
          r[0].sha, r[0].m.final_test);
  free(r);
  tr_rmdir(dir);
}

/* The other layer shapes and inputs: the cached ÂX (no input dropout, kept
 * as CSR by the density rule), an aggregate-first hidden layer (32 -> 32)
 * and a transform-first top layer; and other dropout, decay and rates. */
Test(reproducible, other_layer_shapes_p1_against_p3, .timeout = 600) {
  char *dir = tr_tmpdir("repro-shapes");
  const int epochs = TEST_SANITIZED ? 20 : 50;
  if (TEST_SANITIZED)
    test_sanitized_note("reproducible.other_layer_shapes",
                        "both models at P=1 and P=3 train 20 epochs, not 50");
  static const char *const models[] = {
      "--input-dropout 0 --layers 3 --hidden 32",
      "--weight-decay-all --dropout 0.2 --input-dropout 0.3 --lr 0.02"};
  for (int k = 0; k < 2; k++) {
    run_report r[2];
    for (int i = 0; i < 2; i++) {
      const int parts = i == 0 ? 1 : 3;
      char shards[512], path[700], log[700], extra[256];
      snprintf(shards, sizeof shards, "%s/cora-%d", dir, parts);
      snprintf(log, sizeof log, "%s.log", shards);
      struct stat st;
      if (stat(shards, &st) != 0)
        cr_assert_eq(tr_run(120, log, "%s --input '%s' --parts %d --out '%s'", PARTITION_BIN, CORA,
                            parts, shards),
                     0);
      snprintf(path, sizeof path, "%s/m%d-%d.jsonl", dir, k, parts);
      snprintf(extra, sizeof extra, "--epochs %d --threads 1 %s", epochs, models[k]);
      run(parts, shards, extra, path);
      read_report(path, &r[i]);
    }
    char what[300];
    snprintf(what, sizeof what, "%s: P=3 against P=1", models[k]);
    expect_bit_identical(&r[0], &r[1], what);
  }
  tr_rmdir(dir);
}

Test(reproducible, resume_at_another_p_ends_as_a_straight_run, .timeout = 600) {
  char *dir = tr_tmpdir("repro-resume");
  /* The straight run trains 2 * half epochs; the other stops at half, with a
   * checkpoint, and resumes at P=3. */
  const int half = TEST_SANITIZED ? 20 : 60;
  if (TEST_SANITIZED)
    test_sanitized_note("reproducible.resume",
                        "40 epochs straight, and 20 + 20 across the resume, not 120 and 60 + 60");
  char shards2[512], shards3[512], ckpt[600], path[700], log[700], extra[700];
  snprintf(shards2, sizeof shards2, "%s/cora-2", dir);
  snprintf(shards3, sizeof shards3, "%s/cora-3", dir);
  snprintf(ckpt, sizeof ckpt, "%s/ckpt", dir);
  const char *outs[2] = {shards2, shards3};
  for (int k = 0; k < 2; k++) {
    snprintf(log, sizeof log, "%s.log", outs[k]);
    cr_assert_eq(tr_run(120, log, "%s --input '%s' --parts %d --out '%s'", PARTITION_BIN, CORA,
                        k + 2, outs[k]),
                 0);
  }
  run_report straight, resumed;
  snprintf(path, sizeof path, "%s/straight.jsonl", dir);
  snprintf(extra, sizeof extra, "--epochs %d --threads 1", 2 * half);
  run(2, shards2, extra, path);
  read_report(path, &straight);

  snprintf(path, sizeof path, "%s/first.jsonl", dir);
  snprintf(extra, sizeof extra, "--epochs %d --threads 1 --checkpoint '%s' --checkpoint-every %d",
           half, ckpt, half);
  run(2, shards2, extra, path);
  snprintf(path, sizeof path, "%s/second.jsonl", dir);
  snprintf(extra, sizeof extra, "--epochs %d --threads 1 --checkpoint '%s' --resume", 2 * half,
           ckpt);
  run(3, shards3, extra, path);
  read_resumed_report(path, &resumed);
  cr_assert_eq(resumed.m.epochs, half, "the resumed run trained %d epochs", resumed.m.epochs);
  int bad = 0;
  for (int e = 0; e < half; e++)
    if (memcmp(&straight.m.loss[half + e], &resumed.m.loss[e], sizeof(double)) != 0 && bad++ < 3)
      cr_expect_fail("epoch %d: resumed at P=3 the loss is %.17g, straight %.17g", half + 1 + e,
                     resumed.m.loss[e], straight.m.loss[half + e]);
  cr_expect_eq(bad, 0);
  cr_expect_str_eq(resumed.sha, straight.sha, "resumed at P=3: the final parameters differ");
  tr_rmdir(dir);
}

Test(reproducible, sbm_100k_nodes_any_p, .timeout = 900) {
#ifdef __SANITIZE_ADDRESS__
  cr_skip_test(
      "100 epochs of a 100,000-node graph at three P: the build without sanitizers "
      "runs it; the Cora cases run the same code here");
#endif
  char *dir = tr_tmpdir("repro-sbm");
  const char *spec = "sbm:nodes=100000,avg-degree=10,feat=32,classes=8,homophily=0.8,seed=1";
  const int parts[] = {1, 2, 4};
  run_report r[3];
  for (int k = 0; k < 3; k++) {
    char shards[512], path[600], log[600];
    snprintf(shards, sizeof shards, "%s/sbm-%d", dir, parts[k]);
    snprintf(log, sizeof log, "%s.log", shards);
    cr_assert_eq(tr_run(300, log, "%s --input '%s' --parts %d --out '%s'", PARTITION_BIN, spec,
                        parts[k], shards),
                 0, "halo-partition failed (see %s)", log);
    snprintf(path, sizeof path, "%s.jsonl", shards);
    run(parts[k], shards, "--epochs 100 --threads 1", path);
    read_report(path, &r[k]);
  }
  expect_bit_identical(&r[0], &r[1], "sbm P=2 against P=1");
  expect_bit_identical(&r[0], &r[2], "sbm P=4 against P=1");
  tr_rmdir(dir);
}
