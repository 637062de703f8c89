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
 * same text, at P=1 and P=3.
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
};

static const char *const files[] = {"grads.txt",    "bytes.txt",    "after.txt",
                                    "logits-0.txt", "logits-1.txt", "logits-2.txt"};

static void run_probe(const char *backend, int np, const probe_args *pc, uint64_t seed,
                      const char *dir) {
  setenv("HALO_PROBE_BACKEND", backend, 1);
  setenv("HALO_PROBE_MODEL", pc->model ? pc->model : "gcn", 1);
  setenv("HALO_PROBE_FLAGS", pc->flags ? pc->flags : "", 1);
  setenv("HALO_PROBE_GAT", "4 2 0.5", 1);
  setenv("HALO_PROBE_DETERMINISTIC", pc->deterministic ? "1" : "0", 1);
  int rc = tr_mpirun(np, 120, NULL, "%s %s %s %llu %llu 4", TRAIN_PROBE, dir, pc->args,
                     (unsigned long long)seed, (unsigned long long)seed);
  unsetenv("HALO_PROBE_BACKEND");
  unsetenv("HALO_PROBE_MODEL");
  unsetenv("HALO_PROBE_FLAGS");
  unsetenv("HALO_PROBE_GAT");
  unsetenv("HALO_PROBE_DETERMINISTIC");
  cr_assert_eq(rc, 0, "%s, %s backend, P=%d: train-probe exited with %d", pc->name, backend, np,
               rc);
}

static void check_same(int np, uint64_t seed) {
  static const char *const backends[] = {"staged", "device-mpi"};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    if (np == 1 && cases[c].flags && strchr(cases[c].flags, 'q')) continue; /* nothing crosses */
    char *ref = tr_tmpdir("cpu");
    run_probe("cpu", np, &cases[c], seed + c, ref);
    for (size_t b = 0; b < 2; b++) {
      char *dir = tr_tmpdir(backends[b]);
      run_probe(backends[b], np, &cases[c], seed + c, dir);
      for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        if (strncmp(files[f], "logits-", 7) == 0 && files[f][7] - '0' >= np) continue;
        char a[600], d[600];
        snprintf(a, sizeof a, "%s/%s", ref, files[f]);
        snprintf(d, sizeof d, "%s/%s", dir, files[f]);
        char *want = tr_slurp(a), *got = tr_slurp(d);
        cr_assert(want && got, "%s: %s missing", cases[c].name, files[f]);
        cr_expect_str_eq(got, want, "%s, P=%d, %s backend: %s differs from the CPU run's",
                         cases[c].name, np, backends[b], files[f]);
        free(want);
        free(got);
      }
      tr_rmdir(dir);
    }
    tr_rmdir(ref);
  }
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
  cr_assert_eq(rc, 0, "%s: train-probe without a failure exited with %d", backend, rc);
  snprintf(path, sizeof path, "%s/setup-copies-1.txt", dir);
  char *counts = tr_slurp(path);
  long long made[3] = {0, 0, 0};
  cr_assert(counts && sscanf(counts, "%lld %lld %lld", &made[0], &made[1], &made[2]) == 3, "%s",
            path);
  free(counts);
  cr_log_info("%s: rank 1's set-up made %lld uploads, %lld downloads, %lld synchronizes", backend,
              made[0], made[1], made[2]);
  cr_assert_gt(made[0], 3, "%s: rank 1 made only %lld uploads at set-up", backend, made[0]);
  /* The exchange of X: a download (staged) or a synchronize (in place). */
  cr_assert_gt(made[1] + made[2], 1, "%s: rank 1 neither downloaded nor waited", backend);
  for (int k = 0; k < 3; k++) {
    for (long long nth = 1; nth <= made[k]; nth = next_failure(nth, made[k])) {
      char spec[64], log[600];
      snprintf(spec, sizeof spec, "1:%lld", nth);
      snprintf(log, sizeof log, "%s/%s-%lld.log", dir, step[k], nth);
      setenv(env[k], spec, 1);
      rc = tr_mpirun(3, 30, log, "%s %s %s 5 5 4", TRAIN_PROBE, dir, args);
      unsetenv(env[k]);
      char *out = tr_slurp(log);
      cr_assert(out);
      cr_expect_neq(rc, 124, "%s, %s %lld of %lld: the ranks hung after rank 1 failed:\n%s",
                    backend, step[k], nth, made[k], out);
      cr_expect_neq(rc, 0, "%s, %s %lld: train-probe succeeded although rank 1 failed:\n%s",
                    backend, step[k], nth, out);
      snprintf(spec, sizeof spec, "%s %lld fails", step[k], nth);
      cr_expect_eq(tr_count_lines(out, spec), 1, "%s", out);
      free(out);
    }
  }
  unsetenv("HALO_PROBE_BACKEND");
  tr_rmdir(dir);
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
