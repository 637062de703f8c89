/* halo-train --device cuda end to end, against --device cpu.
 *
 * Cora is partitioned into 1 and 2 parts and trained for 100 epochs on each
 * backend (at P=2 both ranks share the machine's GPUs as their local ranks
 * pick them).  The loss curves must agree within 1e-4 relative at every
 * epoch, the final accuracies within half a point, and the halo bytes the
 * CUDA run hands to MPI must equal the prediction every epoch, as on the
 * CPU.  Both halo exchange modes of the CUDA backend run: staged through
 * pinned host memory with its copies on the copy stream (HALO_CUDA_AWARE=0)
 * and, when this MPI is CUDA-aware, in place.  Both SpMM paths run: the
 * declared products on cuSPARSE (HALO_CUDA_SPMM=cusparse, the default) and
 * all of them on halo's row kernel (rows).
 *
 * Without a GPU the program reports "skipped: no CUDA device" (gpu-main.c).
 * Under halo-cuda-emu (tests/cuda-emu), which runs every kernel on one CPU
 * core, the runs are shorter: 10 epochs still cover the first steps of Adam,
 * where a wrong gradient shows at once.
 *
 * The memory halo-train predicts for a model must match what the model then
 * takes of the GPU: the free device memory gone after the first epoch.  On
 * a real GPU that also holds what the prediction leaves out (cuSPARSE's
 * workspaces, kernels loaded at first use), allowed for up to 64 MiB.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test-sanitized.h"
#include "train-cli.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"

#ifdef HALO_CUDA_EMU
#define EPOCHS 10
#else
#define EPOCHS 100
#endif
#define STR_(x) #x
#define STR(x) STR_(x)

/* One CUDA run's exchange mode and SpMM path: HALO_CUDA_AWARE and
 * HALO_CUDA_SPMM. */
typedef struct {
  const char *aware, *spmm;
} cuda_mode;

/* `input` (an OGB folder) with its widths `dims`, partitioned into `parts`
 * in folder `dir`; `model`: halo-train's model flags; `epochs` the epochs
 * compared.  The CPU run is the reference of each of the `nmodes` CUDA runs
 * `modes`: partitioned and trained once for all of them (each is an mpirun,
 * several seconds in the sanitized build). */
static void check_input_against_cpu_modes(char *dir, const char *input, const char *dims, int parts,
                                          const cuda_mode *modes, int nmodes, const char *model,
                                          int epochs) {
  char shards[512], json[600], cpu_path[600], cuda_path[600];
  snprintf(shards, sizeof shards, "%s/shards-%d", dir, parts);
  snprintf(json, sizeof json, "%s.json", shards);
  snprintf(cpu_path, sizeof cpu_path, "%s/cpu.jsonl", dir);
  partition(input, parts, "metis", dims, shards, json);

  metrics *m = calloc(2, sizeof *m);
  cr_assert(m);
  char flags[300];
  snprintf(flags, sizeof flags, "--epochs %d --seed 4 %s", epochs, model);
  train(parts, shards, flags, cpu_path);
  read_metrics(cpu_path, &m[0]);
  cr_assert_eq(m[0].epochs, epochs);
  for (int k = 0; k < nmodes; k++) {
    const char *aware = modes[k].aware, *spmm = modes[k].spmm;
    snprintf(cuda_path, sizeof cuda_path, "%s/cuda-%d.jsonl", dir, k);
    setenv("HALO_CUDA_AWARE", aware, 1);
    setenv("HALO_CUDA_SPMM", spmm, 1);
    snprintf(flags, sizeof flags, "--epochs %d --seed 4 --device cuda %s", epochs, model);
    train(parts, shards, flags, cuda_path);
    unsetenv("HALO_CUDA_SPMM");
    unsetenv("HALO_CUDA_AWARE");
    read_metrics(cuda_path, &m[1]);
    cr_assert_eq(m[1].epochs, epochs);
    int at = 0;
    double worst = worst_loss_difference(&m[0], &m[1], epochs, &at);
    fprintf(stderr,
            "[train_cuda] %s P=%d HALO_CUDA_AWARE=%s HALO_CUDA_SPMM=%s %s: worst loss difference "
            "%.2e (epoch %d); final test %.4f (cuda) vs %.4f (cpu)\n",
            input, parts, aware, spmm, model, worst, at, m[1].final_test, m[0].final_test);
    cr_expect_leq(worst, 1e-4,
                  "P=%d, HALO_CUDA_AWARE=%s, SpMM %s: cuda loss at epoch %d is %.9g, cpu has %.9g "
                  "(%.2e relative)",
                  parts, aware, spmm, at, m[1].loss[at - 1], m[0].loss[at - 1], worst);
    cr_expect_leq(fabs(m[1].final_test - m[0].final_test), 0.005,
                  "P=%d, HALO_CUDA_AWARE=%s: final test %.4f vs %.4f", parts, aware,
                  m[1].final_test, m[0].final_test);
    for (int e = 0; e < m[1].epochs; e++)
      cr_expect_eq(m[1].halo[e], m[1].predicted[e],
                   "P=%d, HALO_CUDA_AWARE=%s epoch %d: sent %.0f bytes, predicted %.0f", parts,
                   aware, e + 1, m[1].halo[e], m[1].predicted[e]);
  }
  free(m);
  tr_rmdir(dir);
}

static void check_input_against_cpu(char *dir, const char *input, const char *dims, int parts,
                                    const char *aware, const char *spmm, const char *model,
                                    int epochs) {
  const cuda_mode mode = {aware, spmm};
  check_input_against_cpu_modes(dir, input, dims, parts, &mode, 1, model, epochs);
}

static void check_model_against_cpu(int parts, const char *aware, const char *spmm,
                                    const char *model, int epochs) {
  check_input_against_cpu(tr_tmpdir("cuda"), CORA, "1433,16,7", parts, aware, spmm, model, epochs);
}

static void check_against_cpu(int parts, const char *aware, const char *spmm) {
  check_model_against_cpu(parts, aware, spmm, "", EPOCHS);
}

/* GraphSAGE (the mean and its transpose, normalised rows, ELU) and GIN (a
 * learned ε) through every new op's CUDA twin, staged, at P=2.  GIN's
 * curve amplifies rounding fast on Cora (test-train-models), so its first
 * 10 epochs are compared. */
Test(train_cuda, cora_p2_sage_equals_cpu, .timeout = 300) {
  /* Its two SpMMs per layer (the mean and its transpose) make it the
   * slowest case on halo-cuda-emu: 10 epochs there. */
  check_model_against_cpu(2, "0", "cusparse",
                          "--model sage --hidden 32 --sage-normalize --activation elu",
                          EPOCHS < 100 ? 10 : EPOCHS);
}

/* LeakyReLU and GELU (whose backward reads the kept Z) through their CUDA
 * twins, on GCN, staged, at P=2, 10 epochs each. */
Test(train_cuda, cora_p2_gcn_leaky_relu_and_gelu_equal_cpu, .timeout = 300) {
  check_model_against_cpu(2, "0", "rows", "--activation leaky_relu --negative-slope 0.2", 10);
  check_model_against_cpu(2, "0", "cusparse", "--activation gelu", 10);
}

/* GraphSAGE's max (its two CUDA twins; the arg-max ids cross ranks) and
 * sum, staged, at P=2, on a 2,000-node SBM graph of 32 features: the max
 * aggregates X first, which Cora's 1,433 features would make slow on
 * halo-cuda-emu. */
Test(train_cuda, sbm_p2_sage_max_and_sum_equal_cpu, .timeout = 300) {
  static const char *const graph = "sbm:nodes=2000,classes=4,avg-degree=10,homophily=0.4,feat=32,seed=7";
  check_input_against_cpu(tr_tmpdir("cuda"), graph, "32,16,4 --model sage --aggr max", 2, "0",
                          "cusparse", "--model sage --aggr max", 5);
  check_input_against_cpu(tr_tmpdir("cuda"), graph, "32,16,4 --model sage", 2, "0", "rows",
                          "--model sage --aggr sum", 5);
}

/* BatchNorm (--norm batch: its column sums, normalisation and backward on
 * the GPU, the statistics across ranks) after GCN's hidden layer, staged,
 * at P=2, 10 epochs. */
Test(train_cuda, cora_p2_gcn_batchnorm_equals_cpu, .timeout = 300) {
  check_model_against_cpu(2, "0", "rows", "--norm batch --bn-momentum 0.3", 10);
}

/* Low-bit halo rows (--halo-precision) packed and unpacked on the GPU
 * (kernels/cuda-halo-pack.cu, the CPU's bytes for the same rows:
 * test-cuda-kernels), at P=2: int8 forward and int4 backward staged through
 * pinned memory on the copy stream, bf16 both ways in place (CUDA-aware, as
 * every MPI is under halo-cuda-emu).  The rows packed differ from the
 * CPU's by the other kernels' float rounding alone, so a code flips only
 * where a value sits within that rounding of a rounding step: the curve is
 * the CPU's within the usual 1e-4, and the bytes sent are the prediction's. */
Test(train_cuda, cora_p2_lowbit_equals_cpu, .timeout = 300) {
  check_model_against_cpu(2, "0", "rows", "--halo-precision int8 --halo-precision-bwd int4", 5);
#ifndef HALO_CUDA_EMU
  if (tr_run(30, NULL,
             "ompi_info --parsable --all 2>/dev/null | "
             "grep -q 'mpi_built_with_cuda_support:value:true'") != 0)
    return;
#endif
  check_model_against_cpu(2, "1", "cusparse", "--halo-precision bf16 --halo-precision-bwd bf16", 5);
}

Test(train_cuda, cora_p2_gin_equals_cpu, .timeout = 300) {
  check_model_against_cpu(2, "0", "rows", "--model gin --hidden 32 --gin-train-eps", 10);
}

/* GAT (its four attention kernels), 4 heads of 8 and 2 output heads
 * averaged, attention dropout on: 10 epochs on halo-cuda-emu, where its
 * per-row kernels run on one core. */
Test(train_cuda, cora_p2_gat_equals_cpu, .timeout = 300) {
  check_model_against_cpu(2, "0", "cusparse", "--model gat --heads 4 --output-heads 2",
                          EPOCHS < 100 ? 10 : EPOCHS);
}

/* Edge weights (docs/models.md, "Edge weights"): Cora with an edge-feat of
 * width 1, weights (1 + (line mod 16)) / 4; GCN's gcn_norm and GraphSAGE's
 * weighted mean are values of the aggregation matrices, which both SpMMs
 * (cuSPARSE and the row kernel) multiply as they do the unweighted ones. */
Test(train_cuda, cora_p2_weighted_gcn_and_sage_equal_cpu, .timeout = 300) {
  static const char *const runs[][2] = {{"cusparse", ""}, {"rows", "--model sage --hidden 32"}};
  for (int i = 0; i < 2; i++) {
    char *dir = tr_tmpdir("cuda-weighted");
    char input[600];
    snprintf(input, sizeof input, "%s/cora-w", dir);
    int rc = tr_run(60, NULL,
                    "mkdir -p '%s' && cp -r " CORA "/*.csv.gz " CORA "/split '%s/' && "
                    "gzip -dc " CORA "/edge.csv.gz | awk '{print (1 + NR %% 16) / 4}' "
                    "> '%s/edge-feat.csv'",
                    input, input, input);
    cr_assert_eq(rc, 0, "writing the weighted Cora");
    check_input_against_cpu(dir, input, "1433,16,7", 2, "0", runs[i][0], runs[i][1], 10);
  }
}

Test(train_cuda, cora_p1_equals_cpu, .timeout = 300) { check_against_cpu(1, "0", "cusparse"); }

/* Multi-label tasks (the binary cross-entropy over the tasks a node has,
 * missing entries masked, ogbn-proteins' kind) on the GPU, staged, at P=2. */
Test(train_cuda, multilabel_p2_equals_cpu, .timeout = 300) {
  char *dir = tr_tmpdir("cuda-ml"), input[600], dims[64];
  tr_multilabel_graph(dir, tr_seed("train_cuda.multilabel", 5), NULL);
  snprintf(input, sizeof input, "%s/graph", dir);
  snprintf(dims, sizeof dims, "%d,16,%d", TR_ML_FEATURES, TR_ML_TASKS);
  check_input_against_cpu(dir, input, dims, 2, "0", "cusparse", "", EPOCHS);
}

/* Both exchange modes against one CPU run, staged on both SpMM paths.
 * Staged: the halo copies on the copy stream, overlapping the interior
 * SpMM.  In place, with device pointers handed to MPI: only where MPI takes
 * them (otherwise that run alone is left out, and the case says so).
 * Under halo-cuda-emu device memory is host memory, which every MPI takes,
 * and since queued work runs only when waited for, a send that does not
 * wait for the kernel that packed its rows sends stale bytes every time.
 * One case, not three, so that the partition and the CPU reference run
 * once (docs/benchmarks.md, "CI time"). */
Test(train_cuda, cora_p2_staged_rows_and_cuda_aware_equal_cpu, .timeout = 300) {
  static const cuda_mode modes[] = {{"0", "cusparse"}, {"0", "rows"}, {"1", "cusparse"}};
  int nmodes = 3;
#ifndef HALO_CUDA_EMU
  if (tr_run(30, NULL,
             "ompi_info --parsable --all 2>/dev/null | "
             "grep -q 'mpi_built_with_cuda_support:value:true'") != 0) {
    fprintf(stderr,
            "[train_cuda] in place (HALO_CUDA_AWARE=1) not run: this Open MPI is not "
            "CUDA-aware; staged only\n");
    nmodes = 2;
  }
#endif
  check_input_against_cpu_modes(tr_tmpdir("cuda"), CORA, "1433,16,7", 2, modes, nmodes, "", EPOCHS);
}

/* --deterministic on the GPU: P=1 against P=2, bit for bit (every epoch's
 * loss and the params_sha256), for GCN with Cora's sparse input features
 * (the exact sparse sums), a 3-layer GraphSAGE with residuals and
 * LayerNorm, GCN with BatchNorm (its statistics' exact sums across ranks),
 * and GAT.  Against the CPU's deterministic run the curve must
 * agree within float rounding (CPU against CUDA is not promised bit for
 * bit, docs/reproducibility.md); whether it is bit-identical is printed. */
Test(train_cuda, deterministic_p1_equals_p2, .timeout = 900) {
  static const char *const models[] = {
      "", "--model sage --hidden 16 --layers 3 --residual --norm layer",
      "--norm batch", "--model gat --heads 2 --hidden 8"};
  const int epochs = EPOCHS < 100 ? 4 : 50;
  /* GAT's kernels are those of cora_p2_gat_equals_cpu; only the sums of
   * its gradients are deterministic mode's own. */
  const size_t nmodels = TEST_SANITIZED ? 3 : sizeof models / sizeof models[0];
  if (TEST_SANITIZED)
    test_sanitized_note("train_cuda.deterministic", "GCN, GraphSAGE and GCN+BN, not GAT");
  char *dir = tr_tmpdir("cuda-det");
  char shards[2][512], json[600], path[700], flags[300];
  for (int k = 0; k < 2; k++) {
    snprintf(shards[k], sizeof shards[k], "%s/cora-%d", dir, k + 1);
    snprintf(json, sizeof json, "%s.json", shards[k]);
    partition(CORA, k + 1, "metis", "1433,16,7", shards[k], json);
  }
  run_report *r = calloc(3, sizeof *r);
  cr_assert(r);
  for (size_t i = 0; i < nmodels; i++) {
    /* r[0]: the CPU at P=1; r[1], r[2]: CUDA at P=1 and 2. */
    for (int k = 0; k < 3; k++) {
      snprintf(path, sizeof path, "%s/det-%zu-%d.jsonl", dir, i, k);
      snprintf(flags, sizeof flags, "--epochs %d --seed 6 --deterministic %s %s", epochs,
               k ? "--device cuda" : "", models[i]);
      train(k < 2 ? 1 : 2, shards[k < 2 ? 0 : 1], flags, path);
      read_report(path, &r[k]);
    }
    char what[400];
    snprintf(what, sizeof what, "cuda --deterministic %s: P=2 against P=1", models[i]);
    expect_bit_identical(&r[1], &r[2], what);
    int at = 0;
    const double worst = worst_loss_difference(&r[0].m, &r[1].m, epochs, &at);
    fprintf(stderr,
            "[train_cuda] --deterministic %s: P=1 and P=2 params_sha256 %s %s; against the "
            "CPU's: %s, worst loss difference %.2e (epoch %d)\n",
            models[i], r[1].sha, strcmp(r[1].sha, r[2].sha) == 0 ? "equal" : "DIFFER",
            strcmp(r[0].sha, r[1].sha) == 0 ? "bit-identical" : "not bit-identical", worst, at);
    cr_expect_leq(worst, 1e-4, "%s: the CUDA curve is %.2e off the CPU's at epoch %d", models[i],
                  worst, at);
  }
  free(r);
  tr_rmdir(dir);
}

Test(train_cuda, memory_prediction_matches_device_use, .timeout = 300) {
  char *dir = tr_tmpdir("cuda-mem");
  char shards[512], json[600], path[600];
  snprintf(shards, sizeof shards, "%s/sbm", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  snprintf(path, sizeof path, "%s/cuda.jsonl", dir);
  partition("sbm:nodes=20000,classes=8,avg-degree=16,homophily=0.8,feat=64,seed=3", 1, "metis",
            "64,128,8", shards, json);
  train(1, shards, "--epochs 1 --layers 3 --hidden 128 --device cuda", path);
  metrics m;
  read_metrics(path, &m);
  fprintf(stderr, "[train_cuda] memory: used %.1f MB of the device, predicted %.1f MB (%.2fx)\n",
          m.memory_used / 1e6, m.memory_predicted / 1e6, m.memory_predicted / m.memory_used);
#ifdef HALO_CUDA_EMU
  const double unmodelled = 0.0; /* the emulator counts exactly what halo allocates */
#else
  const double unmodelled = 64 << 20; /* cuSPARSE's workspaces, kernels loaded at first use */
#endif
  expect_memory_bounded(&m, unmodelled, "--device cuda, 3 layers, hidden 128");
  tr_rmdir(dir);
}

#ifdef HALO_CUDA_EMU
/* A launcher that gives each rank its own GPU through CUDA_VISIBLE_DEVICES
 * makes every rank call its GPU device 0.  Ranks must share a memory pool
 * only when they share the GPU itself, which its PCI location tells (the
 * emulated devices sit on buses of their own); before, the index did, and
 * two ranks on two GPUs had their needs summed against one. */
Test(train_cuda, ranks_share_a_memory_pool_only_on_one_gpu, .timeout = 300) {
  char *dir = tr_tmpdir("cuda-pool");
  char shards[512], json[600], path[600], log[600];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  snprintf(path, sizeof path, "%s/m.jsonl", dir);
  snprintf(log, sizeof log, "%s/run.log", dir);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  const struct {
    const char *visible[2];
    int ranks;
  } cases[] = {{{"0", "1"}, 1}, {{"1", "1"}, 2}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char rank_cmd[2][1600];
    for (int r = 0; r < 2; r++)
      snprintf(rank_cmd[r], sizeof rank_cmd[r],
               "-np 1 -x HALO_CUDA_EMU_DEVICES=2 -x CUDA_VISIBLE_DEVICES=%s %s '%s' --device cuda "
               "--epochs 1 --quiet --threads 1 --force --metrics '%s'",
               cases[c].visible[r], HALO_BINARY_DIR "/bin/halo-train", shards, path);
    int rc = tr_run(240, log, "mpirun --allow-run-as-root --oversubscribe --bind-to none %s : %s",
                    rank_cmd[0], rank_cmd[1]);
    char *out = tr_slurp(log), *m = tr_slurp(path), want[64];
    cr_assert(out && m);
    snprintf(want, sizeof want, "\"memory_pool_ranks\": %d", cases[c].ranks);
    cr_expect_eq(rc, 0, "CUDA_VISIBLE_DEVICES %s and %s: exit %d\n%s", cases[c].visible[0],
                 cases[c].visible[1], rc, out);
    cr_expect(strstr(m, want), "CUDA_VISIBLE_DEVICES %s and %s: no %s in\n%s", cases[c].visible[0],
              cases[c].visible[1], want, m);
    free(out);
    free(m);
  }
  tr_rmdir(dir);
}
#endif
