/* halo-train end to end: the real halo-partition and halo-train binaries on
 * the bundled Cora and on synthetic sbm graphs, under mpirun, each with a
 * timeout the test enforces.  Figures are read from --metrics and from
 * halo-partition --json. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test-sanitized.h"
#include "train-cli.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"

Test(cli, partition_invariance, .timeout = 600) {
  char *dir = tr_tmpdir("inv");
  char shards[512], json[600], path[600], extra[64];
  const int epochs = TEST_SANITIZED ? 30 : 100;
  if (TEST_SANITIZED)
    test_sanitized_note("cli.partition_invariance",
                        "each of the 4 runs (P=1, 2 and 4 metis, 4 random) trains 30 epochs, "
                        "not 100");
  static const struct {
    int parts;
    const char *method;
  } runs[] = {{1, "metis"}, {2, "metis"}, {4, "metis"}, {4, "random"}};
  metrics *m = calloc(4, sizeof *m);
  for (int i = 0; i < 4; i++) {
    snprintf(shards, sizeof shards, "%s/cora-%s-%d", dir, runs[i].method, runs[i].parts);
    snprintf(json, sizeof json, "%s.json", shards);
    snprintf(path, sizeof path, "%s.jsonl", shards);
    partition(CORA, runs[i].parts, runs[i].method, "1433,16,7", shards, json);
    /* The float path: equal up to float rounding (the default exact sums
     * are bit-identical; test-train-reproducible holds them to that). */
    snprintf(extra, sizeof extra, "--epochs %d --seed 3 --no-deterministic", epochs);
    train(runs[i].parts, shards, extra, path);
    read_metrics(path, &m[i]);
    cr_assert_eq(m[i].epochs, epochs);
  }
  for (int i = 1; i < 4; i++) {
    int at = 0;
    double worst = worst_loss_difference(&m[0], &m[i], epochs, &at);
    fprintf(stderr,
            "[cli.partition_invariance] P=%d %s: worst loss difference %.2e (epoch %d); "
            "final test %.4f vs %.4f\n",
            runs[i].parts, runs[i].method, worst, at, m[i].final_test, m[0].final_test);
    /* Measured: 3e-8 to 4.3e-8 (float rounding of the gradient allreduce and
     * of GEMMs over other row counts), with room for other CPUs' BLAS
     * kernels; any real difference is far larger. */
    cr_expect_leq(worst, 1e-5, "P=%d %s: loss at epoch %d is %.9g, P=1 has %.9g (%.2e relative)",
                  runs[i].parts, runs[i].method, at, m[i].loss[at - 1], m[0].loss[at - 1], worst);
    cr_expect_leq(fabs(m[i].train_acc - m[0].train_acc), 0.005, "P=%d %s: train accuracy",
                  runs[i].parts, runs[i].method);
    cr_expect_leq(fabs(m[i].val_acc - m[0].val_acc), 0.005, "P=%d %s: val accuracy", runs[i].parts,
                  runs[i].method);
    cr_expect_leq(fabs(m[i].test_acc - m[0].test_acc), 0.005, "P=%d %s: test accuracy %.4f vs %.4f",
                  runs[i].parts, runs[i].method, m[i].test_acc, m[0].test_acc);
  }
  free(m);
  tr_rmdir(dir);
}

/* A graph with nodes and no edges (a Matrix Market file "N N 0") is legal
 * input: GCN on it is an MLP and the halo plan is empty.  Partitioned into
 * 1, 2 (metis) and 3 (random) parts, it trains under mpirun with no halo
 * bytes, as predicted, and the P = 2 and 3 runs follow the P = 1 run, which
 * exchanges nothing by construction, loss for loss. */
Test(cli, graph_without_edges_trains, .timeout = 300) {
  char *dir = tr_tmpdir("noedge");
  char mtx[512], shards[600], json[700], path[700], log[700];
  snprintf(mtx, sizeof mtx, "%s/none.mtx", dir);
  FILE *f = fopen(mtx, "w");
  cr_assert(f);
  fprintf(f, "%%%%MatrixMarket matrix coordinate pattern general\n60 60 0\n");
  fclose(f);
  static const struct {
    int parts;
    const char *method;
  } runs[] = {{1, "metis"}, {2, "metis"}, {3, "random"}};
  metrics *m = calloc(3, sizeof *m);
  cr_assert(m);
  const int epochs = 5;
  for (int i = 0; i < 3; i++) {
    snprintf(shards, sizeof shards, "%s/none-%s-%d", dir, runs[i].method, runs[i].parts);
    snprintf(json, sizeof json, "%s.json", shards);
    snprintf(path, sizeof path, "%s.jsonl", shards);
    snprintf(log, sizeof log, "%s.log", shards);
    int rc = tr_run(120, log,
                    "%s --input '%s' --parts %d --method %s --dims 8,16,3 --out '%s' --json '%s' "
                    "--synthetic-features 8 --synthetic-classes 3 --seed 7",
                    PARTITION_BIN, mtx, runs[i].parts, runs[i].method, shards, json);
    char *text = tr_slurp(log);
    cr_assert_eq(rc, 0, "halo-partition exited with %d:\n%s", rc, text ? text : "");
    free(text);
    cr_expect_eq(json_figure(json, "nodes"), 60);
    cr_expect_eq(json_figure(json, "edges"), 0);
    cr_expect_eq(json_figure(json, "comm_volume"), 0);
    char extra[64];
    snprintf(extra, sizeof extra, "--epochs %d --seed 3", epochs);
    train(runs[i].parts, shards, extra, path);
    read_metrics(path, &m[i]);
    cr_assert_eq(m[i].epochs, epochs, "P=%d: %d epochs in %s", runs[i].parts, m[i].epochs, path);
    cr_expect(m[i].has_summary, "P=%d: no summary in %s", runs[i].parts, path);
    for (int e = 0; e < epochs; e++) {
      cr_expect_eq(m[i].halo[e], 0, "P=%d epoch %d: %.0f halo bytes", runs[i].parts, e + 1,
                   m[i].halo[e]);
      cr_expect_eq(m[i].predicted[e], 0, "P=%d epoch %d", runs[i].parts, e + 1);
      cr_expect(isfinite(m[i].loss[e]) && m[i].loss[e] > 0, "P=%d epoch %d: loss %g", runs[i].parts,
                e + 1, m[i].loss[e]);
    }
  }
  for (int i = 1; i < 3; i++) {
    int at = 0;
    double worst = worst_loss_difference(&m[0], &m[i], epochs, &at);
    cr_expect_leq(worst, 1e-5, "P=%d %s: loss at epoch %d is %.9g, P=1 has %.9g", runs[i].parts,
                  runs[i].method, at, m[i].loss[at - 1], m[0].loss[at - 1]);
  }
  free(m);
  tr_rmdir(dir);
}

/* --metrics - is standard output: under mpirun -np 2, stdout holds the JSON
 * lines alone (one per epoch, then the summary, each one object), with the
 * same losses as a run of the same seed with --metrics FILE; the report's
 * text goes to stderr, and no file named "-" appears. */
/* The number after "KEY": in one JSON line, or -1 when the key is absent. */
static double line_figure(const char *line, const char *key) {
  char pattern[80];
  snprintf(pattern, sizeof pattern, "\"%s\": ", key);
  const char *at = strstr(line, pattern);
  return at ? strtod(at + strlen(pattern), NULL) : -1.0;
}

Test(cli, metrics_dash_is_standard_output, .timeout = 300) {
  char *dir = tr_tmpdir("mstdout");
  char shards[512], json[600], ref[600], path[600], err[600];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  snprintf(ref, sizeof ref, "%s.jsonl", shards);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  const int epochs = 3;
  train(2, shards, "--epochs 3 --seed 5", ref);
  metrics want, got;
  read_metrics(ref, &want);
  cr_assert_eq(want.epochs, epochs);

  snprintf(path, sizeof path, "%s/stdout", dir);
  snprintf(err, sizeof err, "%s/stderr", dir);
  int rc = tr_run(120, NULL,
                  "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 -wdir '%s' %s "
                  "'%s' --threads 1 --epochs 3 --seed 5 --metrics - >'%s' 2>'%s'",
                  dir, TRAIN_BIN, shards, path, err);
  char *out = tr_slurp(path), *text = tr_slurp(err);
  cr_assert(out && text);
  cr_assert_eq(rc, 0, "halo-train --metrics - exited with %d:\n%s\n%s", rc, out, text);
  int lines = 0;
  for (char *line = out, *next; *line; line = next) {
    next = strchr(line, '\n');
    cr_assert(next, "stdout does not end in a newline:\n%s", out);
    *next++ = '\0';
    lines++;
    const size_t len = strlen(line);
    cr_expect(len > 2 && line[0] == '{' && line[len - 1] == '}', "line %d is not a JSON object: %s",
              lines, line);
    /* Each epoch's work over the ranks, in CPU seconds: min <= mean <=
     * max, and a step does work. */
    if (strstr(line, "\"epoch\": ")) {
      const double lo = line_figure(line, "compute_cpu_s_min"),
                   mean = line_figure(line, "compute_cpu_s"),
                   hi = line_figure(line, "compute_cpu_s_max");
      cr_expect(lo > 0.0 && lo <= mean * (1 + 1e-9) && mean <= hi * (1 + 1e-9),
                "line %d: compute_cpu_s %g, min %g, max %g", lines, mean, lo, hi);
      /* The gradient allreduce's part of comm_s (the ranks' means): -1,
       * the key missing, fails too. */
      const double ar = line_figure(line, "allreduce_s"), comm = line_figure(line, "comm_s");
      cr_expect(ar >= 0.0 && comm >= 0.0 && ar <= comm * (1 + 1e-9) + 1e-12,
                "line %d: allreduce_s %g, comm_s %g", lines, ar, comm);
    }
    next[-1] = '\n';
  }
  cr_expect_eq(lines, epochs + 1, "%d lines on stdout, expected %d:\n%s", lines, epochs + 1, out);
  cr_expect_eq(tr_count_lines(out, "\"summary\": true"), 1, "%s", out);
  cr_expect_eq(tr_count_lines(out, "summary:"), 0, "the report's text is on stdout:\n%s", out);
  cr_expect_eq(tr_count_lines(text, "summary: 3 epochs"), 1, "no summary on stderr:\n%s", text);
  cr_expect_eq(tr_count_lines(text, "epoch    3  loss"), 1, "no epoch lines on stderr:\n%s", text);
  read_metrics(path, &got);
  cr_assert_eq(got.epochs, epochs);
  /* The float path's summary line carries the JSON's params_sha256 too. */
  char sha[65], summary_sha[96];
  read_params_sha256(path, sha);
  snprintf(summary_sha, sizeof summary_sha, "MB, params_sha256 %s\n", sha);
  cr_expect(strstr(text, summary_sha), "the summary line lacks %s:\n%s", summary_sha, text);
  for (int e = 0; e < epochs; e++)
    cr_expect_eq(got.loss[e], want.loss[e], "epoch %d: loss %.17g on stdout, %.17g in the file",
                 e + 1, got.loss[e], want.loss[e]);
  snprintf(path, sizeof path, "%s/-", dir);
  cr_expect(access(path, F_OK) != 0, "a file named '-' was written");
  free(out);
  free(text);
  tr_rmdir(dir);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Kipf & Welling's settings: halo-train's defaults, and their features
 * row-normalised (--normalize-features; the default keeps them as stored,
 * docs/train.md). */
Test(cli, cora_accuracy_kipf_settings, .timeout = 600) {
#ifdef __SANITIZE_ADDRESS__
  /* 600 epochs at P=4 take minutes under ASan and test statistics, not
   * memory: partition_invariance runs the same code there. */
  cr_skip_test("accuracy is checked in the build without sanitizers");
#endif
  char *dir = tr_tmpdir("acc");
  char shards[512], json[600], path[600], extra[64];
  snprintf(shards, sizeof shards, "%s/cora-4", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, 4, "metis", "1433,16,7", shards, json);
  double acc[3];
  for (int seed = 0; seed < 3; seed++) {
    metrics m;
    snprintf(path, sizeof path, "%s/seed-%d.jsonl", dir, seed);
    snprintf(extra, sizeof extra, "--seed %d --normalize-features", seed);
    train(4, shards, extra, path);
    read_metrics(path, &m);
    cr_assert_eq(m.epochs, 200, "the default is 200 epochs");
    acc[seed] = m.final_test;
    fprintf(stderr, "[cli.cora_accuracy] seed %d: final test accuracy %.4f\n", seed, acc[seed]);
  }
  qsort(acc, 3, sizeof acc[0], cmp_double);
  cr_expect_geq(acc[1], 0.800, "median test accuracy over 3 seeds is %.4f (Kipf & Welling: 0.815)",
                acc[1]);
  tr_rmdir(dir);
}

/* Measured == predicted by the runtime == halo-partition's --json figure,
 * every epoch, with and without input dropout; and the set-up exchange: the
 * cached ÂX without input dropout, the evaluation's with it when the input
 * stays dense (sparse_input: Cora's is kept as CSR, so none). */
static void check_volume(const char *dir, const char *input, const char *tag, int parts,
                         const char *dims, int hidden, int sparse_input) {
  char shards[512], json[600], path[600], extra[128];
  snprintf(shards, sizeof shards, "%s/%s-%d", dir, tag, parts);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(input, parts, "metis", dims, shards, json);
  double want = json_figure(json, "predicted_halo_bytes_per_epoch");
  double want_static = json_figure(json, "predicted_halo_bytes_per_epoch_static");
  double want_setup = json_figure(json, "predicted_setup_halo_bytes");
  double want_setup_dropout = json_figure(json, "predicted_setup_halo_bytes_dropout");
  cr_assert_gt(want, 0.0);
  cr_assert_gt(want_setup_dropout, 0.0, "GCN with input dropout keeps the evaluation's ÂX");
  for (int dropin = 1; dropin >= 0; dropin--) {
    metrics m;
    snprintf(path, sizeof path, "%s-%d.jsonl", shards, dropin);
    snprintf(extra, sizeof extra, "--epochs 4 --hidden %d --input-dropout %s", hidden,
             dropin ? "0.5" : "0");
    train(parts, shards, extra, path);
    read_metrics(path, &m);
    double expect = dropin ? want : want_static;
    for (int e = 0; e < m.epochs; e++) {
      cr_expect_eq(m.halo[e], m.predicted[e], "%s P=%d epoch %d: sent %.0f bytes, predicted %.0f",
                   tag, parts, e + 1, m.halo[e], m.predicted[e]);
      cr_expect_eq(m.halo[e], expect,
                   "%s P=%d epoch %d: sent %.0f bytes, halo-partition predicted %.0f", tag, parts,
                   e + 1, m.halo[e], expect);
    }
    const double setup = !dropin ? want_setup : sparse_input ? 0.0 : want_setup_dropout;
    cr_expect_eq(m.setup_bytes, setup, "%s P=%d input dropout %d: set-up bytes %.0f, not %.0f", tag,
                 parts, dropin, m.setup_bytes, setup);
  }
}

Test(cli, volume_equals_prediction, .timeout = 600) {
  char *dir = tr_tmpdir("vol");
  if (TEST_SANITIZED)
    test_sanitized_note("cli.volume_equals_prediction",
                        "Cora at P=2 and the sbm graph at P=4 (each with and without input "
                        "dropout), not each of them at both P=2 and P=4");
  /* Hidden narrower than the input: Cora, 1433 -> 16 -> 7. */
  check_volume(dir, CORA, "cora", 2, "1433,16,7", 16, 1);
  if (!TEST_SANITIZED) check_volume(dir, CORA, "cora", 4, "1433,16,7", 16, 1);
  /* Hidden wider than the input: 8 -> 32 -> 4. */
  const char *sbm = "sbm:nodes=4000,classes=4,avg-degree=10,homophily=0.8,feat=8,seed=5";
  if (!TEST_SANITIZED) check_volume(dir, sbm, "sbm", 2, "8,32,4", 32, 0);
  check_volume(dir, sbm, "sbm", 4, "8,32,4", 32, 0);
  tr_rmdir(dir);
}

/* The memory halo-train predicts before it allocates a model (and refuses a
 * run by) against what the model then took of the node's RAM: the ranks'
 * peaks of resident memory above what they held before.  They must agree
 * within 5% one way and 25% the other (expect_memory_bounded), over dense
 * features, cached ÂX, GraphSAGE and GIN, and 1 or 2 ranks on a node.  Under ASan, whose
 * shadow memory and quarantine swell the use, one run checks only that the
 * figures are there. */
Test(cli, memory_prediction_matches_the_use, .timeout = 600) {
  char *dir = tr_tmpdir("mem");
  const char *sbm = "sbm:nodes=60000,classes=8,avg-degree=16,homophily=0.8,feat=64,seed=3";
  static const char *const runs[] = {"--layers 3 --hidden 128",
                                     "--layers 2 --hidden 16",
                                     "--layers 2 --hidden 256 --input-dropout 0",
                                     "--model sage --hidden 64 --sage-normalize",
                                     "--model gin --hidden 64 --layers 3 --gin-train-eps",
                                     "--model gat --heads 8 --hidden 8 --output-heads 2"};
#if defined(__SANITIZE_ADDRESS__)
  const int sanitized = 1;
#else
  const int sanitized = 0;
#endif
  const int max_parts = sanitized ? 1 : 2, nruns = sanitized ? 1 : 6;
  for (int parts = 1; parts <= max_parts; parts++) {
    char shards[512], json[600], path[600], tag[700];
    snprintf(shards, sizeof shards, "%s/sbm-%d", dir, parts);
    snprintf(json, sizeof json, "%s.json", shards);
    partition(sbm, parts, "metis", "64,16,8", shards, json);
    for (int k = 0; k < nruns; k++) {
      metrics m;
      snprintf(path, sizeof path, "%s-%d.jsonl", shards, k);
      char extra[200];
      snprintf(extra, sizeof extra, "--epochs 2 %s", runs[k]);
      train(parts, shards, extra, path);
      read_metrics(path, &m);
      snprintf(tag, sizeof tag, "P=%d %s", parts, runs[k]);
      printf("[memory] %s: used %.1f MB, predicted %.1f MB (%.2fx)\n", tag, m.memory_used / 1e6,
             m.memory_predicted / 1e6, m.memory_predicted / m.memory_used);
      if (sanitized)
        cr_expect(m.memory_used > 0 && m.memory_predicted > 0, "%s: used %.0f, predicted %.0f", tag,
                  m.memory_used, m.memory_predicted);
      else
        expect_memory_bounded(&m, 0.0, tag);
    }
  }
  tr_rmdir(dir);
}

/* Runs halo-train with every rank's exit status printed, and checks that
 * every rank failed, within the timeout, with an error line that contains
 * `needle`. */
static void expect_failure(int np, const char *shards, const char *flags, const char *needle,
                           int max_error_lines, const char *log) {
  int rc = tr_mpirun(
      np, 60, log, "sh -c '\"$0\" \"$@\"; echo \"rank-exit $?\"' %s '%s' --threads 1 --epochs 3 %s",
      TRAIN_BIN, shards, flags);
  cr_assert_neq(rc, 124, "halo-train %s hung (timeout)", flags);
  char *out = tr_slurp(log);
  cr_assert(out);
  int exits = tr_count_lines(out, "rank-exit ");
  int zero = tr_count_lines(out, "rank-exit 0");
  int errors = tr_count_lines(out, ": error: ");
  int named = tr_count_lines(out, needle);
  cr_expect_eq(exits, np, "%s: %d of %d ranks finished:\n%s", flags, exits, np, out);
  cr_expect_eq(zero, 0, "%s: %d ranks exited with status 0:\n%s", flags, zero, out);
  cr_expect(errors >= 1 && errors <= max_error_lines, "%s: %d error lines:\n%s", flags, errors,
            out);
  cr_expect_geq(named, 1, "%s: no line names '%s':\n%s", flags, needle, out);
  free(out);
}

static void copy_file(const char *from, const char *to) {
  cr_assert_eq(tr_run(30, NULL, "cp '%s' '%s'", from, to), 0);
}

Test(cli, bad_shards_fail_on_every_rank, .timeout = 600) {
  char *dir = tr_tmpdir("bad");
  char a[512], b[512], json[600], part[600], log[600], other[600];
  snprintf(a, sizeof a, "%s/a", dir);
  snprintf(b, sizeof b, "%s/b", dir);
  snprintf(json, sizeof json, "%s/a.json", dir);
  partition(CORA, 4, "metis", "1433,16,7", a, json);
  snprintf(json, sizeof json, "%s/b.json", dir);
  partition(CORA, 4, "random", "1433,16,7", b, json);
  snprintf(part, sizeof part, "%s/part-00002-of-00004.h5", a);
  snprintf(other, sizeof other, "%s/part-00002-of-00004.h5", b);
  snprintf(log, sizeof log, "%s/run.log", dir);

  /* More ranks than parts (fewer is a grouping: test-train-any-p). */
  expect_failure(5, a, "", "mpirun -np 1 to 4", 1, log);

  /* A shard from another partition run. */
  copy_file(part, "/tmp/halo-train-keep.h5");
  copy_file(other, part);
  expect_failure(4, a, "", "part-00002-of-00004.h5", 1, log);

  /* A bit flipped in the middle of a shard. */
  copy_file("/tmp/halo-train-keep.h5", part);
  cr_assert_eq(tr_run(30, NULL,
                      "python3 -c \"import os,sys; p=sys.argv[1]; n=os.path.getsize(p); "
                      "f=open(p,'r+b'); f.seek(n//2); c=f.read(1); f.seek(n//2); "
                      "f.write(bytes([c[0]^0x10]))\" '%s'",
                      part),
               0);
  expect_failure(4, a, "", "part-00002-of-00004.h5", 1, log);

  /* A shard missing. */
  cr_assert_eq(remove(part), 0);
  expect_failure(4, a, "", "part-00002-of-00004.h5", 1, log);
  remove("/tmp/halo-train-keep.h5");

  /* No shards at all. */
  snprintf(part, sizeof part, "%s/nothing-here", dir);
  expect_failure(2, part, "", "manifest.h5", 1, log);
  tr_rmdir(dir);
}

Test(cli, bad_flags_fail_on_every_rank, .timeout = 300) {
  char *dir = tr_tmpdir("flags");
  char shards[512], json[600], log[600];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  snprintf(log, sizeof log, "%s/run.log", dir);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  expect_failure(2, shards, "--hidden 0", "--hidden", 1, log);
  expect_failure(2, shards, "--epochs -1", "--epochs", 1, log);
  expect_failure(2, shards, "--lr nan", "--lr", 1, log);
  expect_failure(2, shards, "--dropout 1", "--dropout", 1, log);
  expect_failure(2, shards, "--frobnicate", "--frobnicate", 1, log);
  expect_failure(2, shards, "--layers", "--layers", 1, log);

  /* --help is not a failure. */
  int rc = tr_mpirun(2, 60, log, "%s --help", TRAIN_BIN);
  cr_expect_eq(rc, 0);
  char *out = tr_slurp(log);
  cr_expect(out && strstr(out, "usage: mpirun -np P halo-train DIR"), "%s", out ? out : "");
  free(out);
  tr_rmdir(dir);
}

/* The flags of bad_flags_fail_on_every_rank that need a device or name an
 * output: a case of their own, as each refused mpirun idles about 2 s in
 * Open MPI's kill sequence, which the other case's runs fill. */
Test(cli, bad_device_and_output_flags_fail_on_every_rank, .timeout = 300) {
  char *dir = tr_tmpdir("flags-out");
  char shards[512], json[600], log[600];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  snprintf(log, sizeof log, "%s/run.log", dir);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  /* No GPU (hidden, so that the case holds on a machine with one too): one
   * clear line for all ranks, whether or not this build has CUDA. */
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  expect_failure(2, shards, "--device cuda", "(1 other rank failed too)", 1, log);
  unsetenv("CUDA_VISIBLE_DEVICES");
  expect_failure(2, shards, "--tf32", "--tf32 needs --device cuda", 1, log);
  expect_failure(2, shards, "--deterministic --no-deterministic",
                 "--deterministic and --no-deterministic: give one of them", 1, log);
  expect_failure(2, shards, "--eval-only --checkpoint x.h5 --profile", "--profile has no epoch", 1,
                 log);
  /* A metrics file that cannot be written, refused before the run. */
  char flag[700];
  snprintf(flag, sizeof flag, "--metrics '%s'", dir);
  expect_failure(2, shards, flag, "is a folder; give a file name", 1, log);
  expect_failure(2, shards, "--metrics /nonexistent/m.jsonl",
                 "--metrics /nonexistent/m.jsonl: the folder /nonexistent does not exist", 1, log);
  tr_rmdir(dir);
}

Test(cli, readme_demo_into_a_fresh_folder, .timeout = 600) {
  /* The README's first command, less installing and building (it runs this
   * build): its output folder and the folder above it do not exist yet, as
   * on a fresh machine. */
  char *dir = tr_tmpdir("demo");
  char out[512], log[600], path[600];
  snprintf(out, sizeof out, "%s/not/yet", dir);
  snprintf(log, sizeof log, "%s/demo.log", dir);
  int rc =
      tr_run(300, log, "env HALO_DEMO_BUILD='%s' HALO_DEMO_OUT='%s' HALO_DEMO_EPOCHS=20 bash '%s'",
             HALO_BINARY_DIR, out, HALO_SOURCE_DIR "/scripts/demo.sh");
  char *text = tr_slurp(log);
  cr_assert(text);
  cr_assert_eq(rc, 0, "scripts/demo.sh exited with %d:\n%s", rc, text);
  /* The communication column of every epoch line, and the summary. */
  cr_expect_eq(tr_count_lines(text, "(predicted 0.0887)"), 20, "%s", text);
  cr_expect_eq(tr_count_lines(text, "(equal to the prediction)"), 1, "%s", text);
  free(text);

  metrics m;
  snprintf(path, sizeof path, "%s/cora-4.jsonl", out);
  read_metrics(path, &m);
  cr_assert_eq(m.epochs, 20);
  for (int e = 0; e < m.epochs; e++)
    cr_expect_eq(m.halo[e], m.predicted[e], "epoch %d: %.0f bytes, %.0f predicted", e + 1,
                 m.halo[e], m.predicted[e]);
  tr_rmdir(dir);
}

/* Runs halo-train on `shards` for one epoch with its process held to core 0
 * (taskset; mpirun --bind-to none keeps that mask) and returns its output. */
static char *run_on_one_core(const char *dir, const char *shards, const char *flags) {
  char log[600];
  snprintf(log, sizeof log, "%s/one-core.log", dir);
  int rc = tr_run(120, log,
                  "taskset -c 0 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 1 "
                  "%s '%s' --epochs 1 --quiet %s",
                  TRAIN_BIN, shards, flags);
  char *text = tr_slurp(log);
  cr_assert(text);
  cr_assert_eq(rc, 0, "halo-train %s exited with %d:\n%s", flags, rc, text);
  return text;
}

Test(cli, binding_that_does_not_fit_is_named, .timeout = 300) {
  /* Open MPI binds each rank to one core when -np <= 2, so `mpirun -np 1
   * halo-train --threads 2` runs both threads on one core: that gets one
   * warning line, which asks for 1 thread.  A rank with one thread on its
   * one core is not told to take more, though the node has idle cores (2
   * threads per rank measured 2.7x slower than 1 on Cora). */
  char *dir = tr_tmpdir("bind");
  char shards[512], json[600];
  snprintf(shards, sizeof shards, "%s/cora-1", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, 1, "metis", "1433,16,7", shards, json);

  char *text = run_on_one_core(dir, shards, "--threads 2");
  cr_expect_eq(tr_count_lines(text, "warning: 2 threads per rank, but rank 0 may run on 1 core"), 1,
               "%s", text);
  cr_expect_eq(tr_count_lines(text, "so threads share cores; give --threads 1"), 1, "%s", text);
  cr_expect_eq(tr_count_lines(text, "warning:"), 1, "%s", text);
  free(text);
  text = run_on_one_core(dir, shards, "--threads 1");
  cr_expect_eq(tr_count_lines(text, "warning:"), 0, "%s", text);
  cr_expect_eq(tr_count_lines(text, "bind-to"), 0, "%s", text);
  free(text);

  /* Unbound, one thread per core: nothing to say. */
  char log[600];
  snprintf(log, sizeof log, "%s/unbound.log", dir);
  cr_assert_eq(tr_mpirun(1, 120, log, "%s '%s' --epochs 1 --quiet --threads 1", TRAIN_BIN, shards),
               0);
  text = tr_slurp(log);
  cr_assert(text);
  cr_expect_eq(tr_count_lines(text, "warning:"), 0, "%s", text);
  free(text);
  tr_rmdir(dir);
}

/* More ranks on a node than it has cores (a hostfile with more slots than
 * cores ran Cora at 140 ms per epoch against 7 ms): mpirun --oversubscribe
 * -np (cores + 1) gets one warning line naming both counts, and -np 1 none.
 * The node's cores are sysconf's, read here independently of halo-train. */
Test(cli, oversubscribed_node_is_named, .timeout = 300) {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 8) cr_skip_test("%ld cores: -np %ld would take too long here", online, online + 1);
  const int np = (int)online + 1;
  char *dir = tr_tmpdir("oversub");
  char shards[512], json[600], log[600], want[128];
  snprintf(shards, sizeof shards, "%s/cora-%d", dir, np);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, np, "metis", "1433,16,7", shards, json);
  snprintf(log, sizeof log, "%s/over.log", dir);
  cr_assert_eq(tr_mpirun(np, 200, log, "%s '%s' --epochs 1 --quiet", TRAIN_BIN, shards), 0);
  char *text = tr_slurp(log);
  cr_assert(text);
  snprintf(want, sizeof want, "warning: %d ranks share the %ld cores of a node", np, online);
  cr_expect_eq(tr_count_lines(text, want), 1, "'%s' not once in:\n%s", want, text);
  cr_expect_eq(tr_count_lines(text, "every epoch will be slow"), 1, "%s", text);
  cr_expect_eq(tr_count_lines(text, "warning:"), 1, "%s", text);
  free(text);

  snprintf(shards, sizeof shards, "%s/cora-1", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, 1, "metis", "1433,16,7", shards, json);
  snprintf(log, sizeof log, "%s/one.log", dir);
  cr_assert_eq(tr_mpirun(1, 120, log, "%s '%s' --epochs 1 --quiet", TRAIN_BIN, shards), 0);
  text = tr_slurp(log);
  cr_assert(text);
  cr_expect_eq(tr_count_lines(text, "share the"), 0, "%s", text);
  cr_expect_eq(tr_count_lines(text, "warning:"), 0, "%s", text);
  free(text);
  tr_rmdir(dir);
}

/* One part, one rank, one thread: the header and the summary say so in the
 * singular, and the ratios to the 1D baselines, whose bytes are then 0 as
 * halo's are, read n/a (the JSON's null), not 1/inf. */
Test(cli, one_part_reads_in_the_singular_and_ratios_are_n_a, .timeout = 300) {
  char *dir = tr_tmpdir("one");
  char shards[512], json[600], log[600];
  snprintf(shards, sizeof shards, "%s/cora-1", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, 1, "metis", "1433,16,7", shards, json);
  char *text = tr_slurp(json);
  cr_assert(text);
  cr_expect(strstr(text, "\"cagnet1d_ratio\": null") != NULL, "%s", text);
  free(text);
  snprintf(log, sizeof log, "%s.log", shards);
  text = tr_slurp(log);
  cr_assert(text);
  cr_expect_eq(tr_count_lines(text, "(manifest.h5 + 1 part), run id"), 1, "%s", text);
  free(text);
  snprintf(log, sizeof log, "%s/train.log", dir);
  cr_assert_eq(tr_mpirun(1, 120, log, "%s '%s' --epochs 2 --threads 1", TRAIN_BIN, shards), 0);
  text = tr_slurp(log);
  cr_assert(text);
  static const char *const said[] = {"0 halo rows in all; 1 rank x 1 thread (passive wait), device",
                                     "(halo/CAGNET = n/a)", "same widths 0.000 MB (n/a)",
                                     "summary: 2 epochs,", "(1 warm-up epoch excluded)",
                                     "device cpu, exact sums (bit-identical for any P)"};
  for (size_t k = 0; k < sizeof said / sizeof said[0]; k++)
    cr_expect_eq(tr_count_lines(text, said[k]), 1, "no line says '%s':\n%s", said[k], text);
  cr_expect_eq(tr_count_lines(text, "1/inf"), 0, "%s", text);
  cr_expect_eq(tr_count_lines(text, "1 ranks"), 0, "%s", text);
  free(text);
  /* The sums' mode, said in the header and the summary: the float path
   * spelled out; kept by a flag the exact sums cannot run with, when no
   * mode is asked for, with the reason; and the exact sums, whose bits
   * low-bit rows keep at this P only. */
  static const struct {
    const char *flags, *header, *key;
  } modes[] = {
      {"--no-deterministic", "device cpu, float sums", "\"deterministic\": false"},
      {"--halo-aggregate auto", "device cpu, float sums (--halo-aggregate auto reorders them)",
       "\"deterministic\": false"},
      {"--deterministic --halo-precision int8", "device cpu, exact sums (bit-identical at this P)",
       "\"deterministic\": true"},
  };
  for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
    snprintf(json, sizeof json, "%s/mode-%zu.jsonl", dir, k);
    cr_assert_eq(tr_mpirun(1, 120, log, "%s '%s' --epochs 2 --threads 1 %s --metrics '%s'",
                           TRAIN_BIN, shards, modes[k].flags, json),
                 0, "%s", modes[k].flags);
    text = tr_slurp(log);
    cr_assert(text);
    cr_expect_eq(tr_count_lines(text, modes[k].header), 1, "%s: %s", modes[k].flags, text);
    free(text);
    text = tr_slurp(json);
    cr_assert(text);
    cr_expect(strstr(text, modes[k].key) != NULL, "%s: %s", modes[k].flags, text);
    free(text);
  }
  tr_rmdir(dir);
}
