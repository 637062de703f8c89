/* The trainer's device paths, without a device.
 *
 * train-probe runs one training epoch, an Adam step and an evaluation with
 * the CPU backend and with the checked backend (backend-checked.c), which
 * declares its buffers device memory: the trainer must then upload, download
 * and stage exactly as it would for a GPU, and the checked backend aborts on
 * any host pointer handed to a compute slot.  Both halo exchange modes of a
 * device backend run: staged through host buffers on the backend's
 * simulated copy stream, and in place (CUDA-aware MPI), with float32 halo
 * rows and with low-bit ones (--halo-precision).  The arithmetic is
 * the CPU's in every case, so every number the probe writes must be the
 * same text, at P=1 and P=3.  The runs of one P go into one mpirun
 * (train-probe --cases), and so do the set-up failures of one backend.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend-checked.h"
#include "halo-backend-impl.h"
#include "train-run.h"

#ifndef TRAIN_PROBE
#error "TRAIN_PROBE must name the train-probe binary"
#endif

typedef struct probe_args {
  const char *name;
  const char *args; /* nodes degree features density classes layers hidden dropout
                       input_dropout sparse */
  const char *model, *flags; /* HALO_PROBE_MODEL and HALO_PROBE_FLAGS; NULL: gcn, none */
  int deterministic;         /* HALO_PROBE_DETERMINISTIC */
} probe_args;

static const probe_args cases[] = {
    {"sparse X", "300 6 40 0.1 5 2 16 0.5 0.5 1", NULL, NULL, 0},
    {"dense X, 3 layers", "300 6 40 0.5 5 3 24 0.5 0.5 0", NULL, NULL, 0},
    {"cached AX", "300 6 40 0.1 5 2 16 0.5 0.0 -1", NULL, NULL, 0},
    {"aggregate first", "200 4 8 0.5 3 3 32 0.3 0.0 0", NULL, NULL, 0},
    {"sage, sparse X, normalised, ELU", "300 6 40 0.1 5 2 16 0.5 0.5 1", "sage", "nu", 0},
    {"gin aggregating first, learned eps", "200 4 8 0.5 3 3 32 0.3 0.0 0", "gin", "e", 0},
    /* GAT with the probe's heads (HALO_PROBE_GAT): 4 heads of 4, 2 averaged
     * at the top, attention dropout. */
    {"gat, sparse X, ELU", "300 6 40 0.1 5 2 4 0.5 0.5 1", "gat", "u", 0},
    /* Low-bit halo rows packed and unpacked by the backend (its quant_*
     * slots), in device memory, staged or in place. */
    {"low-bit rows, int8 forward, int4 backward", "300 6 40 0.5 5 2 16 0.5 0.0 0", NULL, "q", 0},
    /* The exact sums (sparse and dense) and the row-invariant products. */
    {"deterministic, sparse X, 3 layers, residual, LayerNorm", "300 6 40 0.1 5 3 16 0.5 0.5 1",
     NULL, "rl", 1},
    /* The input dropout fused into the first layer's exact sums on the CPU
     * (gnn_bufs_input_fused: 128 rows a block of 8192 features, 5 blocks at
     * P=1, 2 at P=3) against the dropped copy the device-like backend
     * makes: the blocks' limbs must add up to the same bits. */
    {"deterministic, dense X, fused input dropout", "600 6 8192 0.05 5 2 16 0.5 0.5 0", NULL,
     NULL, 1},
    /* SAGE's two weights and a residual projection read the same dropped
     * blocks, and share the forward's bound. */
    {"deterministic, sage, residual, fused input dropout", "600 6 8192 0.05 5 2 16 0.5 0.5 0",
     "sage", "r", 1},
};

static const char *const files[] = {"grads.txt",    "bytes.txt",    "after.txt",
                                    "logits-0.txt", "logits-1.txt", "logits-2.txt"};

#define NCASES (sizeof cases / sizeof cases[0])

/* Case `pc` on `backend` with `seed`, appended to the batch; returns its index. */
static int add_probe(tr_batch *b, const char *backend, const probe_args *pc, uint64_t seed) {
  char settings[256];
  snprintf(settings, sizeof settings,
           "HALO_PROBE_BACKEND=%s HALO_PROBE_MODEL=%s HALO_PROBE_FLAGS=%s "
           "HALO_PROBE_GAT=\"4 2 0.5\" HALO_PROBE_DETERMINISTIC=%d",
           backend, pc->model ? pc->model : "gcn", pc->flags ? pc->flags : "", pc->deterministic);
  const int k = tr_batch_add(b, settings, "%s %llu %llu 4", pc->args, (unsigned long long)seed,
                             (unsigned long long)seed);
  cr_assert_geq(k, 0, "%s, %s backend: cannot write the batch's case file", pc->name, backend);
  return k;
}

/* Whether run k of the batch succeeded on every rank; if not, the failure
 * names the case, its seed and the backend, with the ranks' output. */
static int probe_ran(const tr_batch *b, int k, int np, const probe_args *pc, uint64_t seed,
                     const char *backend) {
  const int status = tr_batch_status(b, k);
  if (status == 0) return 1;
  char *logs = tr_batch_logs(b, k, np);
  cr_expect_fail("%s (seed %llu), %s backend, P=%d: train-probe %s; its output:\n%s", pc->name,
                 (unsigned long long)seed, backend, np,
                 status < 0 ? "never finished the case" : "failed", logs ? logs : "");
  free(logs);
  return 0;
}

/* Every case on the CPU and on both device paths, all in one mpirun
 * (train-probe --cases), then each device run's files against the CPU
 * run's, as text. */
static void check_same(int np, uint64_t seed) {
  static const char *const backends[3] = {"cpu", "staged", "device-mpi"};
  int run[NCASES][3];
  tr_batch *b = tr_batch_new(np == 1 ? "backends-p1" : "backends-p3");
  cr_assert(b, "cannot make the P=%d batch's folder", np);
  for (size_t c = 0; c < NCASES; c++) {
    run[c][0] = -1;
    if (np == 1 && cases[c].flags && strchr(cases[c].flags, 'q')) continue; /* nothing crosses */
    for (int k = 0; k < 3; k++) run[c][k] = add_probe(b, backends[k], &cases[c], seed + c);
  }
  const int rc = tr_batch_run(b, TRAIN_PROBE, np, 20, 270);
  cr_expect_eq(rc, 0, "train-probe --cases (%d runs at P=%d) exited with %d", tr_batch_cases(b), np,
               rc);
  for (size_t c = 0; c < NCASES; c++) {
    if (run[c][0] < 0) continue;
    if (!probe_ran(b, run[c][0], np, &cases[c], seed + c, backends[0])) continue;
    const char *ref = tr_batch_dir(b, run[c][0]);
    for (int k = 1; k < 3; k++) {
      if (!probe_ran(b, run[c][k], np, &cases[c], seed + c, backends[k])) continue;
      const char *dir = tr_batch_dir(b, run[c][k]);
      for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        if (strncmp(files[f], "logits-", 7) == 0 && files[f][7] - '0' >= np) continue;
        char a[600], d[600];
        snprintf(a, sizeof a, "%s/%s", ref, files[f]);
        snprintf(d, sizeof d, "%s/%s", dir, files[f]);
        char *want = tr_slurp(a), *got = tr_slurp(d);
        cr_assert(want && got, "%s (seed %llu), P=%d, %s backend: %s missing", cases[c].name,
                  (unsigned long long)(seed + c), np, backends[k], files[f]);
        cr_expect_str_eq(got, want,
                         "%s (seed %llu), P=%d, %s backend: %s differs from the CPU run's",
                         cases[c].name, (unsigned long long)(seed + c), np, backends[k], files[f]);
        free(want);
        free(got);
      }
    }
  }
  tr_batch_free(&b);
}

Test(backends, device_paths_equal_cpu_p1, .timeout = 300) {
#ifdef __SANITIZE_ADDRESS__
  /* P=3 runs the same slots and the exchanges too; under ASan one is enough. */
  cr_skip_test("P=3 covers these paths under ASan");
#endif
  check_same(1, tr_seed("backends.p1", 21));
}

Test(backends, device_paths_equal_cpu_p3, .timeout = 300) {
  check_same(3, tr_seed("backends.p3", 22));
}

/* A device failure at each upload, download and synchronize of the set-up
 * in turn, on rank 1 (ÂX cached, so the set-up exchanges X: staged, its rows
 * are packed then downloaded; in place, packed then waited for): every rank
 * must fail, and none may wait forever for the rows of the rank that failed.
 * The counts come from a run without a failure. */
static long long next_failure(long long nth, long long made) {
#ifdef __SANITIZE_ADDRESS__
  /* Under ASan (3-4 s a run) the first and the last of each kind: the
   * failure paths' memory is what it checks; the normal build sweeps all. */
  return nth < made ? made : made + 1;
#else
  (void)made;
  return nth + 1;
#endif
}

static void fail_each_setup_step(const char *backend) {
  const char *args = "300 6 40 0.1 5 2 16 0.5 0.0 -1";
  static const char *const step[3] = {"upload", "download", "synchronize"};
  static const char *const env[3] = {"HALO_CHECKED_FAIL_UPLOAD", "HALO_CHECKED_FAIL_DOWNLOAD",
                                     "HALO_CHECKED_FAIL_SYNCHRONIZE"};
  char *dir = tr_tmpdir(backend);
  char path[600];
  setenv("HALO_PROBE_BACKEND", backend, 1);
  int rc = tr_mpirun(3, 60, NULL, "%s %s %s 5 5 4", TRAIN_PROBE, dir, args);
  unsetenv("HALO_PROBE_BACKEND");
  cr_assert_eq(rc, 0, "%s: train-probe without a failure exited with %d", backend, rc);
  snprintf(path, sizeof path, "%s/setup-copies-1.txt", dir);
  char *counts = tr_slurp(path);
  long long made[3] = {0, 0, 0};
  cr_assert(counts && sscanf(counts, "%lld %lld %lld", &made[0], &made[1], &made[2]) == 3, "%s",
            path);
  free(counts);
  tr_rmdir(dir);
  cr_log_info("%s: rank 1's set-up made %lld uploads, %lld downloads, %lld synchronizes", backend,
              made[0], made[1], made[2]);
  cr_assert_gt(made[0], 3, "%s: rank 1 made only %lld uploads at set-up", backend, made[0]);
  /* The exchange of X: a download (staged) or a synchronize (in place). */
  cr_assert_gt(made[1] + made[2], 1, "%s: rank 1 neither downloaded nor waited", backend);

  /* Every failure in one mpirun (train-probe --cases): each case on its own
   * communicator, so one that fails leaves the next a clean start.  A case
   * whose ranks hang stops the batch at its timeout, and that case and the
   * ones after it never finish. */
  tr_batch *b = tr_batch_new(backend);
  cr_assert(b, "%s: cannot make the batch's folder", backend);
  int first[3];
  for (int k = 0; k < 3; k++) {
    first[k] = tr_batch_cases(b);
    for (long long nth = 1; nth <= made[k]; nth = next_failure(nth, made[k])) {
      char settings[128];
      snprintf(settings, sizeof settings, "HALO_PROBE_BACKEND=%s %s=1:%lld", backend, env[k], nth);
      cr_assert_geq(tr_batch_add(b, settings, "%s 5 5 4", args), 0,
                    "%s: cannot write the batch's case file", backend);
    }
  }
  rc = tr_batch_run(b, TRAIN_PROBE, 3, 15, 220);
  cr_expect_neq(rc, 124,
                "%s: the batch of failures timed out (see the first case that never "
                "finished)",
                backend);
  for (int k = 0; k < 3; k++) {
    int run = first[k];
    for (long long nth = 1; nth <= made[k]; nth = next_failure(nth, made[k]), run++) {
      const int status = tr_batch_status(b, run);
      char *out = tr_batch_logs(b, run, 3);
      cr_assert(out);
      cr_expect_neq(status, -1,
                    "%s, %s %lld of %lld: never finished: the ranks hung or died after rank 1 "
                    "failed, or a case before it stopped the batch (mpirun exited with %d):\n%s",
                    backend, step[k], nth, made[k], rc, out);
      cr_expect_neq(status, 0, "%s, %s %lld: train-probe succeeded although rank 1 failed:\n%s",
                    backend, step[k], nth, out);
      char spec[64];
      snprintf(spec, sizeof spec, "%s %lld fails", step[k], nth);
      if (status >= 0)
        cr_expect_eq(tr_count_lines(out, spec), 1, "%s, %s %lld: not one line says \"%s\":\n%s",
                     backend, step[k], nth, spec, out);
      free(out);
    }
  }
  tr_batch_free(&b);
}

Test(backends, failed_setup_step_staged_fails_every_rank_without_hang, .timeout = 300) {
  fail_each_setup_step("staged");
}

Test(backends, failed_setup_step_in_place_fails_every_rank_without_hang, .timeout = 300) {
  fail_each_setup_step("device-mpi");
}

/* The checker itself: a host pointer handed to a compute slot aborts. */
Test(backends, checked_backend_refuses_host_pointers, .signal = SIGABRT) {
  halo_backend *be = NULL;
  cr_assert_eq(checked_backend_create(0, &be), HALO_OK);
  halo_buf y = {0};
  cr_assert_eq(be->ops->buf_alloc(be, 64 * sizeof(float), &y), HALO_OK);
  be->ops->relu(be, y.data, 64); /* device memory: fine */
  float host[64] = {1.0f};
  be->ops->relu(be, host, 64); /* aborts */
}

/* ... and so does a range that runs past its buffer. */
Test(backends, checked_backend_refuses_overruns, .signal = SIGABRT) {
  halo_backend *be = NULL;
  cr_assert_eq(checked_backend_create(0, &be), HALO_OK);
  halo_buf y = {0};
  cr_assert_eq(be->ops->buf_alloc(be, 64 * sizeof(float), &y), HALO_OK);
  be->ops->relu(be, y.data, 65);
}

/* The checked backend's copy stream runs a copy at the next wait, not
 * before: a missing copy_synchronize or compute_wait_copy in the exchange
 * then leaves stale rows, which the probes above would see. */
Test(backends, checked_backend_defers_copies_to_the_next_wait) {
  halo_backend *be = NULL;
  cr_assert_eq(checked_backend_create(0, &be), HALO_OK);
  const halo_backend_ops *o = be->ops;
  cr_assert(o->copy_wait_compute && o->copy_download && o->copy_upload && o->copy_synchronize &&
            o->compute_wait_copy);
  halo_buf dev = {0};
  cr_assert_eq(o->buf_alloc(be, 8 * sizeof(float), &dev), HALO_OK);
  float host[8] = {1, 2, 3, 4, 5, 6, 7, 8}, back[8] = {0};
  float *d = dev.data;

  cr_assert_eq(o->copy_upload(be, &dev, 0, host, sizeof host), HALO_OK);
  cr_expect_eq(d[3], 0.0f, "an upload is not done before a wait");
  cr_assert_eq(o->compute_wait_copy(be), HALO_OK);
  cr_expect_eq(d[3], 4.0f, "compute after compute_wait_copy sees the upload");

  o->relu(be, d, 8); /* compute: unchanged, all positive */
  cr_assert_eq(o->copy_wait_compute(be), HALO_OK);
  cr_assert_eq(o->copy_download(be, back, &dev, 4 * sizeof(float), 4 * sizeof(float)), HALO_OK);
  cr_expect_eq(back[0], 0.0f, "a download is not done before a wait");
  cr_assert_eq(o->copy_synchronize(be), HALO_OK);
  cr_expect_eq(back[0], 5.0f, "the host sees the download after copy_synchronize");
  cr_expect_eq(back[3], 8.0f);
  o->buf_free(be, &dev);
  halo_backend_destroy(&be);
}
