/* Every CUDA dense op against its CPU twin (kernels/halo-kernels.h).
 *
 * Thresholds are relative errors ‖cuda − cpu‖₂ / ‖cpu‖₂, one per op:
 *   0     ops that perform the same float operations in the same order
 *         (bias_add, relu, relu_backward, leaky_relu and its backward, axpy,
 *         elu_backward, mul, dropout, dropout_to, csr_dropout, pack, unpack,
 *         adam, adamw, sgd, scale, batchnorm and its backward) and the deterministic ops (gemm_rows, max_abs, and the exact
 *         sums' integers): any difference at all is a bug; so are the
 *         low-bit halo rows' packed bytes (quant_pack, by memcmp) and their
 *         unpacked floats;
 *   1e-9  the softmax loss, a double sum of double terms;
 *   n·2⁻⁵² BatchNorm's column sums (double sums of n exact terms in two
 *         orders), relative to the sum of their terms' magnitudes;
 *   1e-6  ops that sum in double in another order and round to float
 *         (colsum, row_normalize, the softmax gradient; l2_normalize and its
 *         backward, row by row, since a clamped row's 1e12 scale would
 *         drown the others; layernorm, its xhat and rstd and its backward,
 *         row by row, with rows of equal values and rows of one column bit
 *         for bit), and elu, whose expm1f is CUDA's (within 1 ulp
 *         of the true value; the CPU's is correctly rounded: at most 1 ulp
 *         apart, held to 2);
 *   1e-5  fp32 GEMM, whose summation order differs (k <= 300 here); GAT's
 *         kernels, which run the CPU's own row functions (core/halo-gat.h,
 *         its own exp too) with nvcc's fused multiply-adds (on
 *         halo-cuda-emu, which does not contract, they are bit-identical);
 *   5e-3  GEMM with TF32 allowed (10-bit mantissas on the inputs).
 */
#include <float.h>
#include <string.h>

#include "gpu-test.h"
#include "halo-exact.h"
#include "halo-kernels-cuda.h"
#include "halo-kernels.h"
#include "halo-quant.h"

#define EXACT 0.0
#define LOSS 1e-9
#define SUMS 1e-6
#define GEMM_FP32 1e-5
#define GEMM_TF32 5e-3
#define ATTENTION 1e-5
#define LIBM 1e-6
#define LIBM_ULPS 2

static void expect_ok(halo_status st, const char *op) {
  cr_assert_eq(st, HALO_OK, "%s returned %s", op, halo_status_str(st));
}

/* The largest distance in units in the last place between got[i] and
 * want[i] (floats of one sign are ordered as their bit patterns); INT64_MAX
 * when a sign or a NaN differs. */
static int64_t max_ulps(const float *got, const float *want, int64_t n) {
  int64_t worst = 0;
  for (int64_t i = 0; i < n; i++) {
    if (got[i] == want[i]) continue;
    if (isnan(got[i]) || isnan(want[i]) || signbit(got[i]) != signbit(want[i])) return INT64_MAX;
    int32_t a, b;
    memcpy(&a, &got[i], sizeof a);
    memcpy(&b, &want[i], sizeof b);
    const int64_t d = a > b ? (int64_t)a - b : (int64_t)b - a;
    if (d > worst) worst = d;
  }
  return worst;
}

/* The largest relative error of one row of got against the same row of
 * want (rel_err, row by row). */
static double max_row_err(const float *got, const float *want, int64_t rows, int64_t cols) {
  double worst = 0.0;
  for (int64_t r = 0; r < rows; r++) {
    const double e = rel_err(got + r * cols, want + r * cols, cols);
    if (!(e <= worst)) worst = e; /* a NaN stays */
  }
  return worst;
}

/* ---- GEMM --------------------------------------------------------------- */

/* One case of C = alpha·op(A)·op(B) + beta·C with padded leading dims;
 * returns the relative error against halo_cpu_gemm. */
static double gemm_case(void *blas, uint64_t seed, int ta, int tb, int64_t m, int64_t n,
                        int64_t k) {
  const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
  const int64_t a_rows = ta ? k : m, b_rows = tb ? n : k;
  const size_t a_sz = (size_t)(a_rows * lda), b_sz = (size_t)(b_rows * ldb),
               c_sz = (size_t)(m * ldc);
  float *a = host_alloc(a_sz * 4), *b = host_alloc(b_sz * 4), *c = host_alloc(c_sz * 4),
        *got = host_alloc(c_sz * 4);
  fill_uniform(a, (int64_t)a_sz, seed, 1, -1.0f, 1.0f);
  fill_uniform(b, (int64_t)b_sz, seed, 2, -1.0f, 1.0f);
  fill_uniform(c, (int64_t)c_sz, seed, 3, -1.0f, 1.0f);
  float *da = dev_upload(a, a_sz * 4), *db = dev_upload(b, b_sz * 4), *dc = dev_upload(c, c_sz * 4);

  expect_ok(halo_cuda_gemm(ta, tb, m, n, k, 0.75f, da, lda, db, ldb, -1.25f, dc, ldc, blas, NULL),
            "halo_cuda_gemm");
  halo_cpu_gemm(ta, tb, m, n, k, 0.75f, a, lda, b, ldb, -1.25f, c, ldc);
  dev_download(got, dc, c_sz * 4);
  double err = rel_err(got, c, (int64_t)c_sz);

  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  free(a);
  free(b);
  free(c);
  free(got);
  return err;
}

Test(cuda_kernels, gemm_matches_cblas_for_every_transpose) {
  const uint64_t seed = gpu_test_seed("gemm");
  void *blas = NULL;
  expect_ok(halo_cuda_blas_create(&blas), "halo_cuda_blas_create");
  for (int t = 0; t < 4; t++) {
    const int ta = t & 1, tb = t >> 1;
    const double err = gemm_case(blas, seed + (uint64_t)t, ta, tb, 37, 29, 300);
    fprintf(stderr, "gemm ta=%d tb=%d: rel err %.3g\n", ta, tb, err);
    cr_expect_leq(err, GEMM_FP32, "gemm ta=%d tb=%d: rel err %g", ta, tb, err);
  }
  /* An empty sum (k = 0): C = beta·C, which CBLAS does and cuBLAS must do
   * too (a rank with no owned rows computes dW = Hᵀ·dT with k = 0). */
  for (int ta = 0; ta <= 1; ta++) {
    const double err = gemm_case(blas, seed + 4 + (uint64_t)ta, ta, 0, 37, 29, 0);
    fprintf(stderr, "gemm k=0 ta=%d: rel err %.3g\n", ta, err);
    cr_expect_leq(err, GEMM_FP32, "gemm k=0 ta=%d: rel err %g", ta, err);
  }
  /* TF32 on: looser, but still the same product. */
  expect_ok(halo_cuda_blas_set_tf32(blas, 1), "halo_cuda_blas_set_tf32");
  const double tf32 = gemm_case(blas, seed, 0, 0, 128, 96, 256);
  fprintf(stderr, "gemm tf32: rel err %.3g\n", tf32);
  cr_expect_leq(tf32, GEMM_TF32, "tf32 gemm rel err %g", tf32);
  /* And off again: back to fp32. */
  expect_ok(halo_cuda_blas_set_tf32(blas, 0), "halo_cuda_blas_set_tf32");
  const double fp32 = gemm_case(blas, seed, 0, 0, 128, 96, 256);
  cr_expect_leq(fp32, GEMM_FP32, "fp32 gemm after tf32 off: rel err %g", fp32);
  halo_cuda_blas_destroy(&blas);
  cr_expect_null(blas);
}

/* ---- element-wise -------------------------------------------------------- */

Test(cuda_kernels, bias_add_is_exact) {
  const uint64_t seed = gpu_test_seed("bias_add");
  const int64_t rows = 1001, cols = 37, n = rows * cols;
  float *y = host_alloc((size_t)n * 4), *bias = host_alloc((size_t)cols * 4),
        *got = host_alloc((size_t)n * 4);
  fill_uniform(y, n, seed, 1, -2.0f, 2.0f);
  fill_uniform(bias, cols, seed, 2, -1.0f, 1.0f);
  float *dy = dev_upload(y, (size_t)n * 4), *db = dev_upload(bias, (size_t)cols * 4);
  expect_ok(halo_cuda_bias_add(dy, rows, cols, db, NULL), "halo_cuda_bias_add");
  halo_cpu_bias_add(y, rows, cols, bias);
  dev_download(got, dy, (size_t)n * 4);
  cr_expect_leq(rel_err(got, y, n), EXACT, "bias_add differs");
  cudaFree(dy);
  cudaFree(db);
  free(y);
  free(bias);
  free(got);
}

/* One colsum shape, with the workspace and without, against the CPU; with
 * the workspace twice, which must give the same bits. */
static void colsum_case(uint64_t seed, int64_t rows, int64_t cols, void *work) {
  const int64_t n = rows * cols;
  float *g = host_alloc((size_t)n * 4), *want = host_alloc((size_t)cols * 4),
        *got = host_alloc((size_t)cols * 4), *again = host_alloc((size_t)cols * 4);
  fill_uniform(g, n, seed, 1, -1.0f, 1.5f);
  float *dg = dev_upload(g, (size_t)n * 4), *dout = dev_alloc((size_t)cols * 4);
  halo_cpu_colsum(g, rows, cols, want);
  for (int with_work = 0; with_work <= 1; with_work++) {
    dev_poison(dout, (size_t)cols * 4);
    expect_ok(halo_cuda_colsum(dg, rows, cols, dout, with_work ? work : NULL, NULL),
              "halo_cuda_colsum");
    dev_download(got, dout, (size_t)cols * 4);
    const double err = rel_err(got, want, cols);
    fprintf(stderr, "colsum %lld x %lld, %s: rel err %.3g\n", (long long)rows, (long long)cols,
            with_work ? "workspace" : "no workspace", err);
    cr_expect_leq(err, SUMS, "colsum %lld x %lld work=%d: rel err %g", (long long)rows,
                  (long long)cols, with_work, err);
    if (rows == 0)
      for (int64_t j = 0; j < cols; j++)
        cr_expect_eq(got[j], 0.0f, "no rows: column %lld", (long long)j);
  }
  dev_poison(dout, (size_t)cols * 4);
  expect_ok(halo_cuda_colsum(dg, rows, cols, dout, work, NULL), "halo_cuda_colsum");
  dev_download(again, dout, (size_t)cols * 4);
  cr_expect(memcmp(got, again, (size_t)cols * 4) == 0,
            "colsum %lld x %lld: not the same bits twice", (long long)rows, (long long)cols);
  cudaFree(dg);
  cudaFree(dout);
  free(g);
  free(want);
  free(got);
  free(again);
}

Test(cuda_kernels, colsum_matches_double_sums) {
  const uint64_t seed = gpu_test_seed("colsum");
  void *work = dev_alloc(HALO_CUDA_COLSUM_WORK_BYTES);
  colsum_case(seed, 3001, 70, work);       /* a few chunks, a partial warp of columns */
  colsum_case(seed + 1, 200003, 16, work); /* every chunk, rows not a multiple of anything */
  colsum_case(seed + 2, 1500, 2100, work); /* three column tiles, the last partial */
  colsum_case(seed + 3, 0, 40, work);      /* no rows: zeros */
  cudaFree(work);
}

Test(cuda_kernels, relu_and_its_backward_are_exact) {
  const uint64_t seed = gpu_test_seed("relu");
  const int64_t n = 100003;
  float *y = host_alloc((size_t)n * 4), *g = host_alloc((size_t)n * 4),
        *got = host_alloc((size_t)n * 4);
  fill_uniform(y, n, seed, 1, -1.0f, 1.0f);
  fill_uniform(g, n, seed, 2, -3.0f, 3.0f);
  float *dy = dev_upload(y, (size_t)n * 4), *dg = dev_upload(g, (size_t)n * 4);

  expect_ok(halo_cuda_relu(dy, n, NULL), "halo_cuda_relu");
  halo_cpu_relu(y, n);
  dev_download(got, dy, (size_t)n * 4);
  cr_expect_leq(rel_err(got, y, n), EXACT, "relu differs");

  expect_ok(halo_cuda_relu_backward(dg, dy, n, NULL), "halo_cuda_relu_backward");
  halo_cpu_relu_backward(g, y, n);
  dev_download(got, dg, (size_t)n * 4);
  cr_expect_leq(rel_err(got, g, n), EXACT, "relu_backward differs");

  cudaFree(dy);
  cudaFree(dg);
  free(y);
  free(g);
  free(got);
}

/* GELU in double on both sides: erfc and exp within 2 ulp in double, so the
 * rounded floats almost always agree; 1e-6 relative allows an ulp. */
Test(cuda_kernels, gelu_and_its_backward_match) {
  const uint64_t seed = gpu_test_seed("gelu");
  const int64_t n = 100003;
  float *x = host_alloc((size_t)n * 4), *y = host_alloc((size_t)n * 4),
        *g = host_alloc((size_t)n * 4), *got = host_alloc((size_t)n * 4);
  fill_uniform(x, n, seed, 1, -6.0f, 6.0f);
  fill_uniform(g, n, seed, 2, -3.0f, 3.0f);
  memset(y, 0, (size_t)n * 4);
  float *dx = dev_upload(x, (size_t)n * 4), *dg = dev_upload(g, (size_t)n * 4),
        *dy = dev_upload(y, (size_t)n * 4);

  expect_ok(halo_cuda_gelu_to(dy, dx, n, NULL), "halo_cuda_gelu_to");
  halo_cpu_gelu_to(y, x, n);
  dev_download(got, dy, (size_t)n * 4);
  cr_expect_leq(rel_err(got, y, n), 1e-6, "gelu differs");

  expect_ok(halo_cuda_gelu_backward(dg, dx, n, NULL), "halo_cuda_gelu_backward");
  halo_cpu_gelu_backward(g, x, n);
  dev_download(got, dg, (size_t)n * 4);
  cr_expect_leq(rel_err(got, g, n), 1e-6, "gelu_backward differs");

  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dg);
  free(x);
  free(y);
  free(g);
  free(got);
}

Test(cuda_kernels, leaky_relu_and_its_backward_are_exact) {
  const uint64_t seed = gpu_test_seed("leaky_relu");
  const int64_t n = 100003;
  const float slope = 0.2f;
  float *y = host_alloc((size_t)n * 4), *g = host_alloc((size_t)n * 4),
        *got = host_alloc((size_t)n * 4);
  fill_uniform(y, n, seed, 1, -1.0f, 1.0f);
  fill_uniform(g, n, seed, 2, -3.0f, 3.0f);
  float *dy = dev_upload(y, (size_t)n * 4), *dg = dev_upload(g, (size_t)n * 4);

  expect_ok(halo_cuda_leaky_relu(dy, n, slope, NULL), "halo_cuda_leaky_relu");
  halo_cpu_leaky_relu(y, n, slope);
  dev_download(got, dy, (size_t)n * 4);
  cr_expect_leq(rel_err(got, y, n), EXACT, "leaky_relu differs");

  expect_ok(halo_cuda_leaky_relu_backward(dg, dy, n, slope, NULL), "halo_cuda_leaky_relu_backward");
  halo_cpu_leaky_relu_backward(g, y, n, slope);
  dev_download(got, dg, (size_t)n * 4);
  cr_expect_leq(rel_err(got, g, n), EXACT, "leaky_relu_backward differs");

  cudaFree(dy);
  cudaFree(dg);
  free(y);
  free(g);
  free(got);
}

/* y += (alpha + *p)·x with the scale in device memory, and with p NULL.
 * The scale is written by a copy queued on the stream just before the
 * AXPY: a kernel that reads *p sees the new value, while a host that read
 * it at the call would see the old one (on the emulator, which runs the
 * copy only when something waits for it). */
Test(cuda_kernels, axpy_is_exact_with_a_device_scale_and_without) {
  const uint64_t seed = gpu_test_seed("axpy");
  const int64_t n = 100003;
  const size_t bytes = (size_t)n * 4;
  float *y = host_alloc(bytes), *x = host_alloc(bytes), *got = host_alloc(bytes), eps[2];
  float *pinned = NULL;
  void *stream = NULL;
  fill_uniform(y, n, seed, 1, -2.0f, 2.0f);
  fill_uniform(x, n, seed, 2, -2.0f, 2.0f);
  fill_uniform(eps, 2, seed, 3, -1.0f, 1.0f);
  float *dy = dev_upload(y, bytes), *dx = dev_upload(x, bytes), *dp = dev_upload(&eps[0], 4);
  cr_assert_eq(halo_cuda_stream_create(&stream), HALO_OK);
  cr_assert_eq(halo_cuda_malloc_host((void **)&pinned, sizeof *pinned, "the scale"), HALO_OK);

  /* p NULL, a residual: alpha alone. */
  expect_ok(halo_cuda_axpy(dy, dx, n, 1.0f, NULL, stream), "halo_cuda_axpy");
  halo_cpu_axpy(y, x, n, 1.0f, NULL);
  cr_assert_eq(halo_cuda_stream_synchronize(stream), HALO_OK);
  dev_download(got, dy, bytes);
  cr_expect(memcmp(got, y, bytes) == 0, "axpy p NULL: not bit-identical (rel err %g)",
            rel_err(got, y, n));

  /* p on the device, GIN's 1 + ε, the scale replaced on the stream first. */
  *pinned = eps[1];
  cr_assert_eq(halo_cuda_memcpy(dp, pinned, sizeof *pinned, stream), HALO_OK);
  expect_ok(halo_cuda_axpy(dy, dx, n, 1.0f, dp, stream), "halo_cuda_axpy");
  halo_cpu_axpy(y, x, n, 1.0f, &eps[1]);
  cr_assert_eq(halo_cuda_stream_synchronize(stream), HALO_OK);
  dev_download(got, dy, bytes);
  fprintf(stderr, "axpy: eps %.9g (was %.9g)\n", (double)eps[1], (double)eps[0]);
  cr_expect(memcmp(got, y, bytes) == 0, "axpy alpha 1, p -> %g: not bit-identical (rel err %g)",
            (double)eps[1], rel_err(got, y, n));

  /* Another alpha with the same device scale, on the legacy stream. */
  expect_ok(halo_cuda_axpy(dy, dx, n, -0.75f, dp, NULL), "halo_cuda_axpy");
  halo_cpu_axpy(y, x, n, -0.75f, &eps[1]);
  dev_download(got, dy, bytes);
  cr_expect(memcmp(got, y, bytes) == 0, "axpy alpha -0.75: not bit-identical (rel err %g)",
            rel_err(got, y, n));
  /* X is left as it was. */
  dev_download(got, dx, bytes);
  cr_expect(memcmp(got, x, bytes) == 0, "axpy wrote X");

  halo_cuda_free_host((void **)&pinned);
  halo_cuda_stream_destroy(&stream);
  cudaFree(dy);
  cudaFree(dx);
  cudaFree(dp);
  free(y);
  free(x);
  free(got);
}

/* ELU over negative and positive values (and a few edges: ±0, a large
 * negative, tiny ones), then its backward from the CPU's ELU output, which
 * both sides get so that the backward is compared alone. */
Test(cuda_kernels, elu_within_an_ulp_or_two_and_its_backward_exact) {
  const uint64_t seed = gpu_test_seed("elu");
  const int64_t n = 100003;
  const size_t bytes = (size_t)n * 4;
  float *y = host_alloc(bytes), *g = host_alloc(bytes), *got = host_alloc(bytes);
  fill_uniform(y, n, seed, 1, -4.0f, 3.0f);
  fill_uniform(g, n, seed, 2, -3.0f, 3.0f);
  const float edges[] = {0.0f, -0.0f, -100.0f, -1e-30f, 1e-30f, -1e-8f, 20.0f, -0.5f};
  memcpy(y, edges, sizeof edges);
  int64_t negative = 0;
  for (int64_t i = 0; i < n; i++) negative += y[i] < 0.0f;
  fprintf(stderr, "elu: %lld of %lld inputs negative\n", (long long)negative, (long long)n);
  cr_assert(negative > n / 3 && n - negative > n / 3, "inputs of both signs");
  float *dy = dev_upload(y, bytes), *dg = dev_upload(g, bytes);

  expect_ok(halo_cuda_elu(dy, n, NULL), "halo_cuda_elu");
  halo_cpu_elu(y, n);
  dev_download(got, dy, bytes);
  const double err = rel_err(got, y, n);
  const int64_t ulps = max_ulps(got, y, n);
  fprintf(stderr, "elu: rel err %.3g, at most %lld ulps apart\n", err, (long long)ulps);
  cr_expect_leq(err, LIBM, "elu rel err %g", err);
  cr_expect_leq(ulps, LIBM_ULPS, "elu: %lld ulps apart", (long long)ulps);
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
    cr_expect(memcmp(&got[i], &y[i], 4) == 0, "elu(%g) = %.9g, CPU %.9g", (double)edges[i],
              (double)got[i], (double)y[i]);

  cr_assert_eq(cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  expect_ok(halo_cuda_elu_backward(dg, dy, n, NULL), "halo_cuda_elu_backward");
  halo_cpu_elu_backward(g, y, n);
  dev_download(got, dg, bytes);
  cr_expect(memcmp(got, g, bytes) == 0, "elu_backward: not bit-identical (rel err %g)",
            rel_err(got, g, n));

  cudaFree(dy);
  cudaFree(dg);
  free(y);
  free(g);
  free(got);
}

Test(cuda_kernels, dropout_masks_are_bit_identical) {
  const uint64_t seed = gpu_test_seed("dropout");
  const int64_t rows = 513, cols = 67, n = rows * cols;
  const float ps[] = {0.5f, 0.1f, 0.0f, 1.0f};
  float *y = host_alloc((size_t)n * 4), *want = host_alloc((size_t)n * 4),
        *got = host_alloc((size_t)n * 4);
  int64_t *gid = host_alloc((size_t)rows * sizeof *gid);
  /* Global ids far apart and far above the row numbers, as in a shard. */
  const uint64_t key_ids = halo_rng_key(seed, HALO_RNG_GRAPH, 7, 0);
  for (int64_t i = 0; i < rows; i++)
    gid[i] = (int64_t)(halo_rng_bits(key_ids, (uint64_t)i, 0) >> 24);
  fill_uniform(y, n, seed, 1, -1.0f, 1.0f);
  int64_t *dgid = dev_upload(gid, (size_t)rows * sizeof *gid);
  float *dy = dev_alloc((size_t)n * 4);

  for (size_t c = 0; c < sizeof ps / sizeof ps[0]; c++) {
    const uint64_t key = halo_rng_key(seed, HALO_RNG_DROPOUT, 3 + c, 1);
    memcpy(want, y, (size_t)n * 4);
    cr_assert_eq(cudaMemcpy(dy, y, (size_t)n * 4, cudaMemcpyHostToDevice), cudaSuccess);
    expect_ok(halo_cuda_dropout(dy, rows, cols, dgid, key, ps[c], NULL), "halo_cuda_dropout");
    halo_cpu_dropout(want, rows, cols, gid, key, ps[c]);
    dev_download(got, dy, (size_t)n * 4);
    int64_t dropped = 0;
    for (int64_t e = 0; e < n; e++) dropped += want[e] == 0.0f;
    fprintf(stderr, "dropout p=%.2f: %.3f of the elements dropped\n", (double)ps[c],
            (double)dropped / (double)n);
    cr_expect(memcmp(got, want, (size_t)n * 4) == 0, "dropout p=%g: not bit-identical",
              (double)ps[c]);
  }
  cudaFree(dy);
  cudaFree(dgid);
  free(gid);
  free(y);
  free(want);
  free(got);
}

Test(cuda_kernels, dropout_to_masks_are_bit_identical) {
  const uint64_t seed = gpu_test_seed("dropout_to");
  const int64_t rows = 777, cols = 45, n = rows * cols;
  const float ps[] = {0.5f, 0.2f, 0.0f, 1.0f};
  float *x = host_alloc((size_t)n * 4), *want = host_alloc((size_t)n * 4),
        *got = host_alloc((size_t)n * 4);
  int64_t *gid = host_alloc((size_t)rows * sizeof *gid);
  const uint64_t key_ids = halo_rng_key(seed, HALO_RNG_GRAPH, 8, 0);
  for (int64_t i = 0; i < rows; i++)
    gid[i] = (int64_t)(halo_rng_bits(key_ids, (uint64_t)i, 0) >> 24);
  fill_uniform(x, n, seed, 1, -1.0f, 1.0f);
  int64_t *dgid = dev_upload(gid, (size_t)rows * sizeof *gid);
  float *dx = dev_upload(x, (size_t)n * 4), *dy = dev_alloc((size_t)n * 4);
  for (size_t c = 0; c < sizeof ps / sizeof ps[0]; c++) {
    const uint64_t key = halo_rng_key(seed, HALO_RNG_DROPOUT, 9 + c, 2);
    dev_poison(dy, (size_t)n * 4);
    expect_ok(halo_cuda_dropout_to(dy, dx, rows, cols, dgid, key, ps[c], NULL),
              "halo_cuda_dropout_to");
    halo_cpu_dropout_to(want, x, rows, cols, gid, key, ps[c]);
    dev_download(got, dy, (size_t)n * 4);
    cr_expect(memcmp(got, want, (size_t)n * 4) == 0, "dropout_to p=%g: not bit-identical",
              (double)ps[c]);
  }
  /* The source is left as it was. */
  dev_download(got, dx, (size_t)n * 4);
  cr_expect(memcmp(got, x, (size_t)n * 4) == 0, "dropout_to wrote its source");
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dgid);
  free(gid);
  free(x);
  free(want);
  free(got);
}

Test(cuda_kernels, csr_dropout_masks_are_bit_identical) {
  const uint64_t seed = gpu_test_seed("csr_dropout");
  const int64_t rows = 700, cols = 300;
  const uint64_t key_g = halo_rng_key(seed, HALO_RNG_GRAPH, 9, 0);
  int64_t *indptr = host_alloc((size_t)(rows + 1) * sizeof *indptr);
  int64_t *gid = host_alloc((size_t)rows * sizeof *gid);
  indptr[0] = 0;
  for (int64_t r = 0; r < rows; r++) {
    indptr[r + 1] = indptr[r] + rand_below(key_g, (uint64_t)r, 70);
    gid[r] = (int64_t)(halo_rng_bits(key_g, (uint64_t)r, 5) >> 30);
  }
  const int64_t nnz = indptr[rows];
  int32_t *indices = host_alloc((size_t)nnz * sizeof *indices);
  float *values = host_alloc((size_t)nnz * 4), *want = host_alloc((size_t)nnz * 4),
        *got = host_alloc((size_t)nnz * 4);
  for (int64_t k = 0; k < nnz; k++)
    indices[k] = (int32_t)rand_below(key_g, (uint64_t)(rows + k), cols);
  fill_uniform(values, nnz, seed, 1, 0.0f, 1.0f);
  int64_t *dptr = dev_upload(indptr, (size_t)(rows + 1) * sizeof *indptr);
  int64_t *dgid = dev_upload(gid, (size_t)rows * sizeof *gid);
  int32_t *dind = dev_upload(indices, (size_t)nnz * sizeof *indices);
  float *dval = dev_upload(values, (size_t)nnz * 4), *dout = dev_alloc((size_t)nnz * 4);

  for (int c = 0; c < 6; c++) {
    const int transposed = c & 1, ones = (c >> 1) & 1;
    const float p = c >= 4 ? 1.0f : 0.5f;
    const uint64_t key = halo_rng_key(seed, HALO_RNG_DROPOUT, 0, (uint64_t)c);
    /* Transposed, the column indices (< cols <= rows) index global_id. */
    dev_poison(dout, (size_t)nnz * 4);
    expect_ok(halo_cuda_csr_dropout(dptr, dind, ones ? NULL : dval, rows, transposed, dgid, key, p,
                                    dout, NULL),
              "halo_cuda_csr_dropout");
    halo_cpu_csr_dropout(indptr, indices, ones ? NULL : values, rows, transposed, gid, key, p,
                         want);
    dev_download(got, dout, (size_t)nnz * 4);
    cr_expect(memcmp(got, want, (size_t)nnz * 4) == 0,
              "csr_dropout transposed=%d ones=%d p=%g: not bit-identical", transposed, ones,
              (double)p);
  }
  cudaFree(dptr);
  cudaFree(dgid);
  cudaFree(dind);
  cudaFree(dval);
  cudaFree(dout);
  free(indptr);
  free(gid);
  free(indices);
  free(values);
  free(want);
  free(got);
}

Test(cuda_kernels, adam_matches_over_several_steps) {
  const uint64_t seed = gpu_test_seed("adam");
  const int64_t n = 10007;
  const size_t sz = (size_t)n * 4;
  float *w = host_alloc(sz), *m = host_alloc(sz), *v = host_alloc(sz), *g = host_alloc(sz),
        *got = host_alloc(sz);
  fill_uniform(w, n, seed, 1, -0.5f, 0.5f);
  fill_uniform(m, n, seed, 2, -0.01f, 0.01f);
  fill_uniform(v, n, seed, 3, 0.0f, 1e-4f);
  float *dw = dev_upload(w, sz), *dm = dev_upload(m, sz), *dv = dev_upload(v, sz),
        *dg = dev_alloc(sz);
  for (int64_t t = 1; t <= 7; t++) {
    fill_uniform(g, n, seed, 10 + (uint64_t)t, -1.0f, 1.0f);
    cr_assert_eq(cudaMemcpy(dg, g, sz, cudaMemcpyHostToDevice), cudaSuccess);
    expect_ok(halo_cuda_adam(dw, dg, dm, dv, n, 0.01f, 0.9f, 0.999f, 1e-8f, 5e-4f, t, NULL),
              "halo_cuda_adam");
    halo_cpu_adam(w, g, m, v, n, 0.01f, 0.9f, 0.999f, 1e-8f, 5e-4f, t);
  }
  dev_download(got, dw, sz);
  const double ew = rel_err(got, w, n);
  dev_download(got, dm, sz);
  const double em = rel_err(got, m, n);
  dev_download(got, dv, sz);
  const double ev = rel_err(got, v, n);
  fprintf(stderr, "adam after 7 steps: rel err w %.3g m %.3g v %.3g\n", ew, em, ev);
  cr_expect_leq(ew, EXACT, "adam w rel err %g", ew);
  cr_expect_leq(em, EXACT, "adam m rel err %g", em);
  cr_expect_leq(ev, EXACT, "adam v rel err %g", ev);
  cudaFree(dw);
  cudaFree(dm);
  cudaFree(dv);
  cudaFree(dg);
  free(w);
  free(m);
  free(v);
  free(g);
  free(got);
}

/* ---- pack / unpack ------------------------------------------------------- */

Test(cuda_kernels, pack_and_unpack_are_exact) {
  const uint64_t seed = gpu_test_seed("pack");
  const int64_t rows = 900, cols = 19, n = 400;
  const size_t big = (size_t)(rows * cols) * 4, small = (size_t)(n * cols) * 4;
  float *src = host_alloc(big), *dst = host_alloc(big), *packed = host_alloc(small),
        *got = host_alloc(big);
  int32_t *idx = host_alloc((size_t)rows * sizeof *idx);
  /* n distinct rows in random order: the head of a shuffled 0..rows-1. */
  const uint64_t key = halo_rng_key(seed, HALO_RNG_GRAPH, 1, 0);
  for (int64_t i = 0; i < rows; i++) idx[i] = (int32_t)i;
  for (int64_t i = rows - 1; i > 0; i--) {
    const int64_t j = rand_below(key, (uint64_t)i, i + 1);
    const int32_t t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
  }
  fill_uniform(src, rows * cols, seed, 1, -1.0f, 1.0f);
  fill_uniform(dst, rows * cols, seed, 2, -1.0f, 1.0f);
  float *dsrc = dev_upload(src, big), *ddst = dev_upload(dst, big), *dpk = dev_alloc(small);
  int32_t *didx = dev_upload(idx, (size_t)n * sizeof *idx);

  dev_poison(dpk, small);
  expect_ok(halo_cuda_pack(dpk, dsrc, cols, didx, n, NULL), "halo_cuda_pack");
  halo_cpu_pack(packed, src, cols, idx, n);
  dev_download(got, dpk, small);
  cr_expect_leq(rel_err(got, packed, n * cols), EXACT, "pack differs");

  /* Unpack into a destination whose other rows must stay as they were. */
  expect_ok(halo_cuda_unpack(ddst, dpk, cols, didx, n, NULL), "halo_cuda_unpack");
  halo_cpu_unpack(dst, packed, cols, idx, n);
  dev_download(got, ddst, big);
  cr_expect_leq(rel_err(got, dst, rows * cols), EXACT, "unpack differs");

  cudaFree(dsrc);
  cudaFree(ddst);
  cudaFree(dpk);
  cudaFree(didx);
  free(src);
  free(dst);
  free(packed);
  free(got);
  free(idx);
}

/* ---- low-bit halo rows ---------------------------------------------------- */

/* Row r of a quantisation case: random values of a kind that stresses the
 * packing (r % 8): uniform, zeros, a constant, huge magnitudes up to
 * ±FLT_MAX (a range past FLT_MAX), subnormals, signed zeros among values
 * (the minimum's ties), an infinity, a NaN. */
static void quant_row(float *x, int64_t cols, uint64_t seed, int64_t r) {
  fill_uniform(x, cols, seed, 100 + (uint64_t)r, -1.0f, 1.0f);
  switch (r % 8) {
  case 1:
    for (int64_t j = 0; j < cols; j++) x[j] = 0.0f;
    break;
  case 2:
    for (int64_t j = 0; j < cols; j++) x[j] = -3.25f;
    break;
  case 3:
    for (int64_t j = 0; j < cols; j++) x[j] *= 3.0e38f;
    x[0] = FLT_MAX;
    x[cols - 1] = cols > 1 ? -FLT_MAX : x[cols - 1];
    break;
  case 4:
    for (int64_t j = 0; j < cols; j++) x[j] *= 1.0e-39f;
    break;
  case 5:
    for (int64_t j = 0; j < cols; j += 2) x[j] = (j / 2) % 2 ? 0.0f : -0.0f;
    break;
  case 6:
    x[cols / 2] = (r / 8) % 2 ? INFINITY : -INFINITY;
    break;
  case 7:
    x[(r / 8) % cols] = NAN;
    break;
  default:
    break;
  }
}

/* Packs n rows of a rows × cols matrix on the GPU and on the CPU at every
 * precision: the same bytes; unpacked into the halo rows of a device
 * matrix, the same floats, and the owned rows untouched. */
static void quant_case(uint64_t seed, int64_t cols) {
  const int64_t rows = 70, n = 48, owned = rows - n;
  const size_t mat = (size_t)(rows * cols) * 4;
  const size_t wire = (size_t)(n * halo_quant_row_bytes(HALO_PREC_INT8, cols) + 4 * n * cols);
  float *src = host_alloc(mat), *want = host_alloc(mat), *got = host_alloc(mat);
  uint8_t *packed = host_alloc(wire), *dev_bytes = host_alloc(wire);
  int32_t *idx = host_alloc((size_t)n * sizeof *idx);
  int64_t *gid = host_alloc((size_t)n * sizeof *gid);
  for (int64_t r = 0; r < rows; r++) quant_row(src + r * cols, cols, seed, r);
  for (int64_t i = 0; i < n; i++) {
    idx[i] = (int32_t)((i * 7 + 3) % rows); /* 7 is prime to 70: distinct rows */
    gid[i] = 1000003 * i + 17;
  }
  float *dsrc = dev_upload(src, mat), *ddst = dev_upload(src, mat);
  uint8_t *dpk = dev_alloc(wire);
  int32_t *didx = dev_upload(idx, (size_t)n * sizeof *idx);
  int64_t *dgid = dev_upload(gid, (size_t)n * sizeof *gid);
  for (int prec = 0; prec < HALO_PREC_COUNT; prec++) {
    const uint64_t key = halo_quant_key(seed, 3, 1, prec % 2);
    const size_t bytes = (size_t)(n * halo_quant_row_bytes(prec, cols));
    dev_poison(dpk, wire);
    expect_ok(halo_cuda_quant_pack(dpk, dsrc, cols, didx, dgid, n, prec, key, NULL),
              "halo_cuda_quant_pack");
    halo_cpu_quant_pack(packed, src, cols, idx, gid, n, prec, key);
    dev_download(dev_bytes, dpk, bytes);
    int64_t first = -1;
    for (size_t b = 0; b < bytes && first < 0; b++)
      if (dev_bytes[b] != packed[b]) first = (int64_t)b;
    cr_expect_eq(first, -1, "%s, %lld columns: packed byte %lld differs (GPU %u, CPU %u)",
                 halo_precision_names[prec], (long long)cols, (long long)first,
                 first >= 0 ? dev_bytes[first] : 0, first >= 0 ? packed[first] : 0);
    /* Into the halo rows (rows owned..rows) of a matrix, from the CPU's bytes. */
    memcpy(want, src, mat);
    halo_cpu_quant_unpack(want + owned * cols, packed, cols, n, prec);
    uint8_t *dcpu = dev_upload(packed, bytes > 0 ? bytes : 1);
    expect_ok(halo_cuda_quant_unpack(ddst + owned * cols, dcpu, cols, n, prec, NULL),
              "halo_cuda_quant_unpack");
    dev_download(got, ddst, mat);
    cr_expect(memcmp(got, want, mat) == 0, "%s, %lld columns: unpacked floats differ",
              halo_precision_names[prec], (long long)cols);
    cudaFree(dcpu);
  }
  cudaFree(dsrc);
  cudaFree(ddst);
  cudaFree(dpk);
  cudaFree(didx);
  cudaFree(dgid);
  free(src);
  free(want);
  free(got);
  free(packed);
  free(dev_bytes);
  free(idx);
  free(gid);
}

Test(cuda_kernels, quant_pack_gives_the_cpus_bytes) {
  const uint64_t seed = gpu_test_seed("quant_pack");
  /* Odd widths leave int4's and int2's last byte part full; 1 and 2 make
   * int8's row wider than fp32's. */
  const int64_t widths[] = {1, 2, 3, 5, 7, 16, 33};
  for (size_t k = 0; k < sizeof widths / sizeof *widths; k++) quant_case(seed, widths[k]);
}

/* ---- row-wise reductions ------------------------------------------------- */

Test(cuda_kernels, row_normalize_matches_and_keeps_zero_rows) {
  const uint64_t seed = gpu_test_seed("row_normalize");
  const int64_t rows = 1000, cols = 50, n = rows * cols;
  float *x = host_alloc((size_t)n * 4), *got = host_alloc((size_t)n * 4);
  fill_uniform(x, n, seed, 1, 0.0f, 1.0f);
  for (int64_t r = 0; r < rows; r += 97) memset(x + r * cols, 0, (size_t)cols * 4);
  float *dx = dev_upload(x, (size_t)n * 4);
  expect_ok(halo_cuda_row_normalize(dx, rows, cols, NULL), "halo_cuda_row_normalize");
  halo_cpu_row_normalize(x, rows, cols);
  dev_download(got, dx, (size_t)n * 4);
  const double err = rel_err(got, x, n);
  fprintf(stderr, "row_normalize: rel err %.3g\n", err);
  cr_expect_leq(err, SUMS, "row_normalize rel err %g", err);
  for (int64_t r = 0; r < rows; r += 97)
    for (int64_t j = 0; j < cols; j++)
      cr_expect_eq(got[r * cols + j], 0.0f, "zero row %lld", (long long)r);
  cudaFree(dx);
  free(x);
  free(got);
}

/* One L2 normalisation shape: random rows, with every 97th row zero and
 * every 89th (from row 5) so small that its norm is clamped (below 1e-12,
 * but not zero).  The forward, then the backward from the CPU's normalised rows
 * and norms (both sides get them, so the backward is compared alone);
 * clamped rows must equal the CPU's bit for bit, the others within
 * rounding, row by row. */
static int l2_clamped(int64_t r) { return r % 97 == 0 || r % 89 == 5; }

static void l2_case(uint64_t seed, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  const size_t bytes = (size_t)n * 4, nbytes = (size_t)rows * 4;
  float *y = host_alloc(bytes), *g = host_alloc(bytes), *got = host_alloc(bytes);
  float *norm = host_alloc(nbytes), *got_norm = host_alloc(nbytes);
  fill_uniform(y, n, seed, 1, -1.0f, 1.0f);
  fill_uniform(g, n, seed, 2, -1.0f, 1.0f);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < cols && l2_clamped(r); j++) y[r * cols + j] *= r % 97 ? 1e-20f : 0.0f;
  float *dy = dev_upload(y, bytes), *dg = dev_upload(g, bytes), *dnorm = dev_alloc(nbytes);

  dev_poison(dnorm, nbytes);
  expect_ok(halo_cuda_l2_normalize(dy, rows, cols, dnorm, NULL), "halo_cuda_l2_normalize");
  halo_cpu_l2_normalize(y, rows, cols, norm);
  dev_download(got, dy, bytes);
  dev_download(got_norm, dnorm, nbytes);
  const double ey = max_row_err(got, y, rows, cols), en = rel_err(got_norm, norm, rows);
  fprintf(stderr, "l2_normalize %lld x %lld: row rel err %.3g, norms %.3g\n", (long long)rows,
          (long long)cols, ey, en);
  cr_expect_leq(ey, SUMS, "l2_normalize %lld x %lld: row rel err %g", (long long)rows,
                (long long)cols, ey);
  cr_expect_leq(en, SUMS, "l2_normalize %lld x %lld: norm rel err %g", (long long)rows,
                (long long)cols, en);
  for (int64_t r = 0; r < rows; r++) {
    if (!l2_clamped(r)) continue;
    cr_expect_eq(got_norm[r], 1e-12f, "row %lld: norm %g, not the clamp", (long long)r,
                 (double)got_norm[r]);
    cr_expect(memcmp(got + r * cols, y + r * cols, (size_t)cols * 4) == 0,
              "clamped row %lld: not bit-identical", (long long)r);
  }

  /* The backward, from the CPU's forward. */
  cr_assert_eq(cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  cr_assert_eq(cudaMemcpy(dnorm, norm, nbytes, cudaMemcpyHostToDevice), cudaSuccess);
  expect_ok(halo_cuda_l2_normalize_backward(dg, dy, dnorm, rows, cols, NULL),
            "halo_cuda_l2_normalize_backward");
  halo_cpu_l2_normalize_backward(g, y, norm, rows, cols);
  dev_download(got, dg, bytes);
  const double eg = max_row_err(got, g, rows, cols);
  fprintf(stderr, "l2_normalize_backward %lld x %lld: row rel err %.3g\n", (long long)rows,
          (long long)cols, eg);
  cr_expect_leq(eg, SUMS, "l2_normalize_backward %lld x %lld: row rel err %g", (long long)rows,
                (long long)cols, eg);
  for (int64_t r = 0; r < rows; r++)
    if (l2_clamped(r))
      cr_expect(memcmp(got + r * cols, g + r * cols, (size_t)cols * 4) == 0,
                "clamped row %lld of the backward: not bit-identical", (long long)r);

  cudaFree(dy);
  cudaFree(dg);
  cudaFree(dnorm);
  free(y);
  free(g);
  free(got);
  free(norm);
  free(got_norm);
}

Test(cuda_kernels, l2_normalize_and_its_backward_match_and_clamp) {
  const uint64_t seed = gpu_test_seed("l2_normalize");
  l2_case(seed, 1000, 50);   /* a warp and a half per row */
  l2_case(seed + 1, 333, 7); /* fewer columns than a warp */
  l2_case(seed + 2, 120, 1000);
  /* No columns: every norm is the clamp. */
  float *dnorm = dev_alloc(5 * 4), *dy = dev_alloc(4), norm[5], want[5], none[1] = {0.0f};
  dev_poison(dnorm, 5 * 4);
  expect_ok(halo_cuda_l2_normalize(dy, 5, 0, dnorm, NULL), "halo_cuda_l2_normalize");
  halo_cpu_l2_normalize(none, 5, 0, want);
  dev_download(norm, dnorm, sizeof norm);
  cr_expect(memcmp(norm, want, sizeof norm) == 0, "no columns: norms %g, CPU %g", (double)norm[0],
            (double)want[0]);
  expect_ok(halo_cuda_l2_normalize_backward(dy, dy, dnorm, 5, 0, NULL),
            "halo_cuda_l2_normalize_backward");
  cudaFree(dnorm);
  cudaFree(dy);
}

/* One LayerNorm shape: random rows (with an offset, so that the mean
 * matters), every 37th row (from row 3) of one repeated value, whose
 * variance is 0.  The forward (Y, XHAT, rstd), then the backward from the
 * CPU's XHAT and rstd (both sides get them, so the backward is compared
 * alone); rows of equal values must equal the CPU's forward bit for bit,
 * and with one column every row must, both ways; the others within
 * rounding, row by row. */
static int ln_constant(int64_t r) { return r % 37 == 3; }

static void layernorm_case(uint64_t seed, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  const size_t bytes = (size_t)n * 4, rbytes = (size_t)rows * 4, cbytes = (size_t)cols * 4;
  float *y = host_alloc(bytes), *g = host_alloc(bytes), *xhat = host_alloc(bytes);
  float *got = host_alloc(bytes), *got_x = host_alloc(bytes), *rstd = host_alloc(rbytes),
        *got_r = host_alloc(rbytes), *gamma = host_alloc(cbytes), *beta = host_alloc(cbytes);
  fill_uniform(y, n, seed, 1, -2.0f, 2.0f);
  fill_uniform(g, n, seed, 2, -1.0f, 1.0f);
  fill_uniform(gamma, cols, seed, 3, 0.5f, 1.5f);
  fill_uniform(beta, cols, seed, 4, -0.5f, 0.5f);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < cols; j++)
      y[r * cols + j] = ln_constant(r) ? y[r * cols] : y[r * cols + j] + 0.25f * (float)(r % 5);
  float *dy = dev_upload(y, bytes), *dg = dev_upload(g, bytes), *dx = dev_alloc(bytes),
        *dr = dev_alloc(rbytes), *dgamma = dev_upload(gamma, cbytes),
        *dbeta = dev_upload(beta, cbytes);

  dev_poison(dx, bytes);
  dev_poison(dr, rbytes);
  expect_ok(halo_cuda_layernorm(dy, rows, cols, dgamma, dbeta, dx, dr, NULL),
            "halo_cuda_layernorm");
  halo_cpu_layernorm(y, rows, cols, gamma, beta, xhat, rstd);
  dev_download(got, dy, bytes);
  dev_download(got_x, dx, bytes);
  dev_download(got_r, dr, rbytes);
  const double ey = max_row_err(got, y, rows, cols), ex = max_row_err(got_x, xhat, rows, cols),
               er = rel_err(got_r, rstd, rows);
  fprintf(stderr, "layernorm %lld x %lld: row rel err %.3g, xhat %.3g, rstd %.3g\n",
          (long long)rows, (long long)cols, ey, ex, er);
  cr_expect_leq(ey, SUMS, "layernorm %lld x %lld: row rel err %g", (long long)rows, (long long)cols,
                ey);
  cr_expect_leq(ex, SUMS, "layernorm %lld x %lld: xhat row rel err %g", (long long)rows,
                (long long)cols, ex);
  cr_expect_leq(er, SUMS, "layernorm %lld x %lld: rstd rel err %g", (long long)rows,
                (long long)cols, er);
  for (int64_t r = 0; r < rows; r++) {
    if (!ln_constant(r) && cols != 1) continue;
    const size_t o = (size_t)(r * cols), rb = (size_t)cols * 4;
    cr_expect(memcmp(got + o, y + o, rb) == 0 && memcmp(got_x + o, xhat + o, rb) == 0 &&
                  memcmp(&got_r[r], &rstd[r], 4) == 0,
              "layernorm %lld x %lld: row %lld of variance 0 is not bit-identical", (long long)rows,
              (long long)cols, (long long)r);
  }

  /* The backward, from the CPU's forward. */
  cr_assert_eq(cudaMemcpy(dx, xhat, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  cr_assert_eq(cudaMemcpy(dr, rstd, rbytes, cudaMemcpyHostToDevice), cudaSuccess);
  expect_ok(halo_cuda_layernorm_backward(dg, dx, dr, dgamma, rows, cols, NULL),
            "halo_cuda_layernorm_backward");
  halo_cpu_layernorm_backward(g, xhat, rstd, gamma, rows, cols);
  dev_download(got, dg, bytes);
  const double eg = max_row_err(got, g, rows, cols);
  fprintf(stderr, "layernorm_backward %lld x %lld: row rel err %.3g\n", (long long)rows,
          (long long)cols, eg);
  cr_expect_leq(eg, SUMS, "layernorm_backward %lld x %lld: row rel err %g", (long long)rows,
                (long long)cols, eg);
  if (cols == 1)
    cr_expect(memcmp(got, g, bytes) == 0, "layernorm_backward, one column: not bit-identical");
  /* XHAT, rstd and gamma are left as they were. */
  dev_download(got_x, dx, bytes);
  dev_download(got_r, dr, rbytes);
  cr_expect(memcmp(got_x, xhat, bytes) == 0 && memcmp(got_r, rstd, rbytes) == 0,
            "layernorm_backward wrote xhat or rstd");

  cudaFree(dy);
  cudaFree(dg);
  cudaFree(dx);
  cudaFree(dr);
  cudaFree(dgamma);
  cudaFree(dbeta);
  free(y);
  free(g);
  free(xhat);
  free(got);
  free(got_x);
  free(rstd);
  free(got_r);
  free(gamma);
  free(beta);
}

Test(cuda_kernels, layernorm_and_its_backward_match_and_keep_constant_rows) {
  const uint64_t seed = gpu_test_seed("layernorm");
  layernorm_case(seed, 1000, 50);   /* a warp and a half per row */
  layernorm_case(seed + 1, 333, 7); /* fewer columns than a warp */
  layernorm_case(seed + 2, 120, 1000);
  layernorm_case(seed + 3, 200, 1); /* one column: Y = beta, G = 0 */
  /* No columns: every rstd is 1/sqrt(eps), as on the CPU. */
  float *dr = dev_alloc(5 * 4), *dy = dev_alloc(4), rstd[5], want[5], none[1] = {0.0f};
  dev_poison(dr, 5 * 4);
  expect_ok(halo_cuda_layernorm(dy, 5, 0, dy, dy, dy, dr, NULL), "halo_cuda_layernorm");
  halo_cpu_layernorm(none, 5, 0, none, none, none, want);
  dev_download(rstd, dr, sizeof rstd);
  cr_expect(memcmp(rstd, want, sizeof rstd) == 0, "no columns: rstd %g, CPU %g", (double)rstd[0],
            (double)want[0]);
  expect_ok(halo_cuda_layernorm_backward(dy, dy, dr, dy, 5, 0, NULL),
            "halo_cuda_layernorm_backward");
  cudaFree(dr);
  cudaFree(dy);
}

/* ---- GAT ---------------------------------------------------------------- */

/* A random A + I over `rows` owned rows and `all` columns (each row's
 * self-loop and up to 9 other columns, sorted by the columns' global ids),
 * as halo_gnn_aggregation(HALO_AGG_SELF) gives the kernels. */
static halo_csr gat_graph(uint64_t seed, int64_t rows, int64_t all, const int64_t *gid) {
  halo_csr a = {.rows = rows, .cols = all};
  a.indptr = host_alloc((size_t)(rows + 1) * sizeof(int64_t));
  a.indices = host_alloc((size_t)(rows * 10) * sizeof(int32_t));
  const uint64_t key = halo_rng_key(seed, HALO_RNG_GRAPH, 7, 0);
  a.indptr[0] = 0;
  for (int64_t i = 0; i < rows; i++) {
    int32_t *row = a.indices + a.nnz;
    int64_t len = 0;
    row[len++] = (int32_t)i;
    for (int64_t k = rand_below(key, (uint64_t)i, 10); k > 0; k--) {
      const int32_t j = (int32_t)rand_below(key, (uint64_t)(i * 16 + k), all);
      int dup = 0;
      for (int64_t q = 0; q < len; q++) dup |= row[q] == j;
      if (!dup) row[len++] = j;
    }
    for (int64_t q = 1; q < len; q++) /* insertion sort by global id */
      for (int64_t r = q; r > 0 && gid[row[r - 1]] > gid[row[r]]; r--) {
        const int32_t t = row[r];
        row[r] = row[r - 1];
        row[r - 1] = t;
      }
    a.nnz += len;
    a.indptr[i + 1] = a.nnz;
  }
  return a;
}

/* Every GAT kernel on the same inputs, CPU against CUDA: the scores of all
 * rows, the attention forward (heads' outputs, Z, the softmax's max and
 * sum), the node terms and the backward (dT and the attention terms). */
static void gat_case(uint64_t seed, int32_t heads, int32_t f, int concat, float p) {
  const int64_t rows = 300, all = 420, kf = (int64_t)heads * f;
  const halo_gat_layer g = {.heads = heads,
                            .f = f,
                            .concat = concat,
                            .slope = 0.2f,
                            .key = halo_rng_key(seed, HALO_RNG_ATTENTION, 3, 1),
                            .p = p};
  const int32_t d_out = halo_gat_out_cols(&g), ld = halo_gat_node_cols(&g);
  int64_t *gid = host_alloc((size_t)all * sizeof(int64_t));
  for (int64_t r = 0; r < all; r++) gid[r] = (r * 7919) % 1009 + 1009 * (r % 3); /* distinct */
  halo_csr a = gat_graph(seed, rows, all, gid);
  const size_t tb = (size_t)(all * kf) * 4, sb = (size_t)(all * 2 * heads) * 4,
               ob = (size_t)(rows * kf) * 4, zb = (size_t)(rows * d_out) * 4,
               nb = (size_t)(all * ld) * 4, ab = (size_t)kf * 4, gb = 2 * ob;
  float *t = host_alloc(tb), *as = host_alloc(ab), *ad = host_alloc(ab), *dz = host_alloc(zb);
  float *s = host_alloc(sb), *out = host_alloc(ob), *z = host_alloc(zb), *node = host_alloc(nb),
        *dt = host_alloc(ob), *att = host_alloc(gb), *got = host_alloc(gb > nb ? gb : nb);
  fill_uniform(t, all * kf, seed, 1, -1.0f, 1.0f);
  fill_uniform(as, kf, seed, 2, -1.0f, 1.0f);
  fill_uniform(ad, kf, seed, 3, -1.0f, 1.0f);
  fill_uniform(dz, rows * d_out, seed, 4, -1.0f, 1.0f);
  halo_csr da = a;
  da.indptr = dev_upload(a.indptr, (size_t)(rows + 1) * sizeof(int64_t));
  da.indices = dev_upload(a.indices, (size_t)a.nnz * sizeof(int32_t));
  int64_t *dgid = dev_upload(gid, (size_t)all * sizeof(int64_t));
  float *d_t = dev_upload(t, tb), *d_as = dev_upload(as, ab), *d_ad = dev_upload(ad, ab),
        *d_dz = dev_upload(dz, zb), *d_s = dev_alloc(sb), *d_heads_out = dev_alloc(ob),
        *d_z = dev_alloc(zb), *d_node = dev_alloc(nb), *d_dt = dev_alloc(ob),
        *d_att = dev_alloc(gb);
  char what[96];
  snprintf(what, sizeof what, "gat K=%d F=%d %s p=%g", heads, f, concat ? "concat" : "mean",
           (double)p);

  /* The scores of every row, halo rows included. */
  expect_ok(halo_cuda_gat_scores(&g, d_t, all, d_as, d_ad, d_s, NULL), "halo_cuda_gat_scores");
  halo_cpu_gat_scores(&g, t, all, as, ad, s);
  dev_download(got, d_s, sb);
  const double es = max_row_err(got, s, all, 2 * heads);
  /* The forward, both sides from the CPU's scores. */
  cr_assert_eq(cudaMemcpy(d_s, s, sb, cudaMemcpyHostToDevice), cudaSuccess);
  dev_poison(d_node, nb);
  expect_ok(halo_cuda_gat_attend(&g, &da, dgid, d_t, d_s, d_heads_out, d_z, d_node, NULL),
            "halo_cuda_gat_attend");
  memset(node, 0xff, nb);
  halo_cpu_gat_attend(&g, &a, gid, t, s, out, z, node);
  dev_download(got, d_heads_out, ob);
  const double eo = max_row_err(got, out, rows, kf);
  dev_download(got, d_z, zb);
  const double ez = max_row_err(got, z, rows, d_out);
  /* The node terms of the owned rows over the CPU's max and inverse sum,
   * then the halo rows' as another rank's (here: the CPU's own numbers). */
  halo_cpu_gat_node_terms(&g, dz, out, rows, node);
  float *want_node = host_alloc(nb);
  memcpy(want_node, node, nb);
  cr_assert_eq(cudaMemcpy(d_heads_out, out, ob, cudaMemcpyHostToDevice), cudaSuccess);
  cr_assert_eq(cudaMemcpy(d_node, node, nb, cudaMemcpyHostToDevice), cudaSuccess);
  expect_ok(halo_cuda_gat_node_terms(&g, d_dz, d_heads_out, rows, d_node, NULL),
            "halo_cuda_gat_node_terms");
  dev_download(got, d_node, nb);
  const double en = max_row_err(got, want_node, rows, ld);
  for (int64_t r = rows; r < all; r++) /* the halo rows' terms: any finite values */
    for (int32_t c = 0; c < ld; c++)
      node[r * ld + c] = c >= d_out && c < d_out + 2 * heads
                             ? (c < d_out + heads ? 0.5f : 2.0f) /* max, 1/sum */
                             : dz[(r % rows) * d_out + (c % d_out)];
  cr_assert_eq(cudaMemcpy(d_node, node, nb, cudaMemcpyHostToDevice), cudaSuccess);
  expect_ok(
      halo_cuda_gat_attend_backward(&g, &da, dgid, d_t, d_s, d_node, d_as, d_ad, d_dt, d_att, NULL),
      "halo_cuda_gat_attend_backward");
  halo_cpu_gat_attend_backward(&g, &a, gid, t, s, node, as, ad, dt, att);
  dev_download(got, d_dt, ob);
  const double ed = max_row_err(got, dt, rows, kf);
  dev_download(got, d_att, gb);
  const double eg = max_row_err(got, att, 2 * rows, kf);
  fprintf(stderr,
          "%s: row rel err scores %.3g, out %.3g, Z %.3g, node terms %.3g, dT %.3g, "
          "attention terms %.3g\n",
          what, es, eo, ez, en, ed, eg);
  const double errs[] = {es, eo, ez, en, ed, eg};
  const char *names[] = {"scores", "out", "Z", "node terms", "dT", "attention terms"};
  for (int k = 0; k < 6; k++)
    cr_expect_leq(errs[k], ATTENTION, "%s: %s row rel err %g", what, names[k], errs[k]);
  double mx = 0.0;
  for (int64_t i = 0; i < rows * kf; i++) mx = fmax(mx, fabs(dt[i]));
  cr_expect_gt(mx, 0.0, "%s: dT is all zeros", what);

  cudaFree(da.indptr);
  cudaFree(da.indices);
  cudaFree(dgid);
  void *dev[] = {d_t, d_as, d_ad, d_dz, d_s, d_heads_out, d_z, d_node, d_dt, d_att};
  for (size_t k = 0; k < sizeof dev / sizeof dev[0]; k++) cudaFree(dev[k]);
  void *host[] = {a.indptr, a.indices, gid,  t,  as,  ad,  dz,       s,
                  out,      z,         node, dt, att, got, want_node};
  for (size_t k = 0; k < sizeof host / sizeof host[0]; k++) free(host[k]);
}

Test(cuda_kernels, gat_kernels_match_the_cpu) {
  const uint64_t seed = gpu_test_seed("gat");
  gat_case(seed, 4, 3, 1, 0.5f);     /* hidden: heads concatenated, attention dropout */
  gat_case(seed + 1, 3, 5, 0, 0.0f); /* output: heads averaged, no dropout */
  gat_case(seed + 2, 8, 8, 1, 0.6f); /* the paper's hidden layer */
  gat_case(seed + 3, 1, 7, 0, 0.6f); /* the paper's output layer */
}

/* The elementwise product into another array, then in place over A and
 * over B. */
Test(cuda_kernels, mul_is_exact_and_may_overwrite_an_input) {
  const uint64_t seed = gpu_test_seed("mul");
  const int64_t n = 100003;
  const size_t bytes = (size_t)n * 4;
  float *a = host_alloc(bytes), *b = host_alloc(bytes), *out = host_alloc(bytes),
        *got = host_alloc(bytes);
  fill_uniform(a, n, seed, 1, -3.0f, 3.0f);
  fill_uniform(b, n, seed, 2, -3.0f, 3.0f);
  float *da = dev_upload(a, bytes), *db = dev_upload(b, bytes), *dout = dev_alloc(bytes);
  dev_poison(dout, bytes);

  expect_ok(halo_cuda_mul(dout, da, db, n, NULL), "halo_cuda_mul");
  halo_cpu_mul(out, a, b, n);
  dev_download(got, dout, bytes);
  cr_expect(memcmp(got, out, bytes) == 0, "mul: not bit-identical (rel err %g)",
            rel_err(got, out, n));
  dev_download(got, da, bytes);
  cr_expect(memcmp(got, a, bytes) == 0, "mul wrote A");

  expect_ok(halo_cuda_mul(da, da, db, n, NULL), "halo_cuda_mul"); /* A ⊙= B */
  halo_cpu_mul(a, a, b, n);
  dev_download(got, da, bytes);
  cr_expect(memcmp(got, a, bytes) == 0, "mul into A: not bit-identical (rel err %g)",
            rel_err(got, a, n));
  expect_ok(halo_cuda_mul(db, da, db, n, NULL), "halo_cuda_mul"); /* B = A ⊙ B */
  halo_cpu_mul(b, a, b, n);
  dev_download(got, db, bytes);
  cr_expect(memcmp(got, b, bytes) == 0, "mul into B: not bit-identical (rel err %g)",
            rel_err(got, b, n));

  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
  free(a);
  free(b);
  free(out);
  free(got);
}

/* One softmax case: `cols` classes, a random mask of nmask distinct rows,
 * run twice and then in two parts, which must give the same bits. */
static void softmax_case(uint64_t seed, int64_t rows, int64_t cols, int64_t nmask, int with_grad,
                         void *work) {
  const size_t zsz = (size_t)(rows * cols) * 4;
  float *z = host_alloc(zsz), *g = host_alloc(zsz), *got = host_alloc(zsz);
  int32_t *labels = host_alloc((size_t)rows * 4), *perm = host_alloc((size_t)rows * 4);
  fill_uniform(z, rows * cols, seed, 1, -4.0f, 4.0f);
  const uint64_t key = halo_rng_key(seed, HALO_RNG_GRAPH, 2, (uint64_t)cols);
  for (int64_t i = 0; i < rows; i++) {
    labels[i] = (int32_t)rand_below(key, (uint64_t)i, cols);
    perm[i] = (int32_t)i;
  }
  for (int64_t i = rows - 1; i > 0; i--) {
    const int64_t j = rand_below(key, (uint64_t)(rows + i), i + 1);
    const int32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  float *dz = dev_upload(z, zsz), *dg = with_grad ? dev_alloc(zsz) : NULL;
  int32_t *dl = dev_upload(labels, (size_t)rows * 4), *dm = dev_upload(perm, (size_t)nmask * 4);
  double *dloss = dev_alloc(sizeof(double));
  int64_t *dcorrect = dev_alloc(sizeof(int64_t));
  if (dg) dev_poison(dg, zsz);
  dev_poison(dloss, sizeof(double));
  dev_poison(dcorrect, sizeof(int64_t));

  const float scale = 1.0f / (float)nmask;
  double loss = 0.0, want_loss = 0.0;
  int64_t correct = 0, want_correct = 0;
  expect_ok(
      halo_cuda_softmax_xent(dz, rows, cols, dl, dm, nmask, scale, dg, dloss, dcorrect, work, NULL),
      "halo_cuda_softmax_xent");
  halo_cpu_softmax_xent(z, rows, cols, labels, perm, nmask, scale, with_grad ? g : NULL, &want_loss,
                        &want_correct);
  dev_download(&loss, dloss, sizeof loss);
  dev_download(&correct, dcorrect, sizeof correct);
  const double eloss = fabs(loss - want_loss) / fabs(want_loss);
  fprintf(stderr,
          "softmax_xent cols=%lld nmask=%lld grad=%d: loss %.9g vs %.9g (rel %.3g), "
          "correct %lld\n",
          (long long)cols, (long long)nmask, with_grad, loss, want_loss, eloss, (long long)correct);
  /* The same bits again, and from the mask cut in two (as two ranks would
   * hold it): the halves' sums lie on the loss grid, so they add exactly. */
  double again = 0.0, halves[2] = {0.0, 0.0};
  dev_poison(dloss, sizeof(double));
  expect_ok(
      halo_cuda_softmax_xent(dz, rows, cols, dl, dm, nmask, scale, dg, dloss, dcorrect, work, NULL),
      "halo_cuda_softmax_xent");
  dev_download(&again, dloss, sizeof again);
  cr_expect(memcmp(&again, &loss, sizeof loss) == 0, "loss %.17g, then %.17g: not the same bits",
            loss, again);
  const int64_t cut = nmask / 3;
  for (int h = 0; h < 2; h++) {
    expect_ok(halo_cuda_softmax_xent(dz, rows, cols, dl, dm + (h ? cut : 0),
                                     h ? nmask - cut : cut, scale, NULL, dloss, dcorrect, work,
                                     NULL),
              "halo_cuda_softmax_xent");
    dev_download(&halves[h], dloss, sizeof halves[h]);
  }
  const double joined = halves[0] + halves[1];
  cr_expect(memcmp(&joined, &loss, sizeof loss) == 0,
            "loss %.17g over the whole mask, %.17g from its two parts", loss, joined);
  cr_expect_leq(eloss, LOSS, "softmax loss rel err %g", eloss);
  cr_expect_eq(correct, want_correct, "correct %lld, CPU says %lld", (long long)correct,
               (long long)want_correct);
  if (with_grad) {
    dev_download(got, dg, zsz);
    const double eg = rel_err(got, g, rows * cols);
    cr_expect_leq(eg, SUMS, "softmax grad rel err %g", eg);
  }
  cudaFree(dz);
  cudaFree(dg);
  cudaFree(dl);
  cudaFree(dm);
  cudaFree(dloss);
  cudaFree(dcorrect);
  free(z);
  free(g);
  free(got);
  free(labels);
  free(perm);
}

Test(cuda_kernels, softmax_xent_matches_loss_accuracy_and_gradient) {
  const uint64_t seed = gpu_test_seed("softmax_xent");
  void *work = dev_alloc(HALO_CUDA_SOFTMAX_WORK_BYTES);
  softmax_case(seed, 2000, 7, 1200, 1, work);  /* Cora's 7 classes: fewer than a warp */
  softmax_case(seed, 1500, 47, 1500, 1, work); /* more classes than a warp; every row */
  softmax_case(seed, 999, 40, 333, 0, work);   /* evaluation only */
  softmax_case(seed, 30011, 5, 20000, 1, work);
  cudaFree(work);
}

/* halo_cuda_sigmoid_bce against the CPU: the same hits, the loss to the
 * grid's rounding, the gradient entry by entry (each depends on its logit
 * alone), the same bits run after run and from the mask cut in two. */
static void bce_case(uint64_t seed, int64_t rows, int64_t cols, int64_t nmask, int with_grad,
                     void *work) {
  const size_t zsz = (size_t)(rows * cols) * 4;
  float *z = host_alloc(zsz), *g = host_alloc(zsz), *got = host_alloc(zsz);
  int8_t *y = host_alloc((size_t)(rows * cols));
  int32_t *mask = host_alloc((size_t)rows * 4);
  fill_uniform(z, rows * cols, seed, 3, -6.0f, 6.0f);
  const uint64_t key = halo_rng_key(seed, HALO_RNG_GRAPH, 4, (uint64_t)cols);
  for (int64_t k = 0; k < rows * cols; k++) {
    const int64_t r = rand_below(key, (uint64_t)k, 10);
    y[k] = r < 2 ? -1 : (int8_t)(r & 1); /* a fifth missing */
  }
  for (int64_t i = 0; i < rows; i++) mask[i] = (int32_t)((i * 7) % rows); /* rows is odd */
  float *dz = dev_upload(z, zsz), *dg = with_grad ? dev_alloc(zsz) : NULL;
  int8_t *dy = dev_upload(y, (size_t)(rows * cols));
  int32_t *dm = dev_upload(mask, (size_t)nmask * 4);
  double *dloss = dev_alloc(sizeof(double));
  int64_t *dcorrect = dev_alloc(sizeof(int64_t));
  if (dg) dev_poison(dg, zsz);
  const float scale = 1.0f / (float)(nmask * cols);
  double loss = 0.0, want_loss = 0.0, again = 0.0, halves[2] = {0.0, 0.0};
  int64_t correct = 0, want_correct = 0;
  expect_ok(
      halo_cuda_sigmoid_bce(dz, rows, cols, dy, dm, nmask, scale, dg, dloss, dcorrect, work, NULL),
      "halo_cuda_sigmoid_bce");
  halo_cpu_sigmoid_bce(z, rows, cols, y, mask, nmask, scale, with_grad ? g : NULL, &want_loss,
                       &want_correct);
  dev_download(&loss, dloss, sizeof loss);
  dev_download(&correct, dcorrect, sizeof correct);
  const double eloss = fabs(loss - want_loss) / fabs(want_loss);
  fprintf(stderr, "sigmoid_bce cols=%lld nmask=%lld grad=%d: loss %.9g vs %.9g (rel %.3g)\n",
          (long long)cols, (long long)nmask, with_grad, loss, want_loss, eloss);
  cr_expect_leq(eloss, LOSS, "BCE loss rel err %g", eloss);
  cr_expect_eq(correct, want_correct, "correct %lld, CPU says %lld", (long long)correct,
               (long long)want_correct);
  expect_ok(
      halo_cuda_sigmoid_bce(dz, rows, cols, dy, dm, nmask, scale, dg, dloss, dcorrect, work, NULL),
      "halo_cuda_sigmoid_bce");
  dev_download(&again, dloss, sizeof again);
  cr_expect(memcmp(&again, &loss, sizeof loss) == 0, "loss %.17g, then %.17g", loss, again);
  const int64_t cut = nmask / 3;
  for (int h = 0; h < 2; h++) {
    expect_ok(halo_cuda_sigmoid_bce(dz, rows, cols, dy, dm + (h ? cut : 0), h ? nmask - cut : cut,
                                    scale, NULL, dloss, dcorrect, work, NULL),
              "halo_cuda_sigmoid_bce");
    dev_download(&halves[h], dloss, sizeof halves[h]);
  }
  const double joined = halves[0] + halves[1];
  cr_expect(memcmp(&joined, &loss, sizeof loss) == 0, "loss %.17g whole, %.17g from two parts",
            loss, joined);
  if (with_grad) {
    dev_download(got, dg, zsz);
    const double eg = rel_err(got, g, rows * cols);
    cr_expect_leq(eg, SUMS, "BCE grad rel err %g", eg);
  }
  cudaFree(dz);
  cudaFree(dg);
  cudaFree(dy);
  cudaFree(dm);
  cudaFree(dloss);
  cudaFree(dcorrect);
  free(z);
  free(g);
  free(got);
  free(y);
  free(mask);
}

Test(cuda_kernels, sigmoid_bce_matches_loss_hits_and_gradient) {
  const uint64_t seed = gpu_test_seed("sigmoid_bce");
  void *work = dev_alloc(HALO_CUDA_SOFTMAX_WORK_BYTES);
  bce_case(seed, 2001, 5, 1300, 1, work);  /* fewer tasks than a warp */
  bce_case(seed, 1501, 112, 1501, 1, work); /* ogbn-proteins' 112 tasks; every row */
  bce_case(seed, 999, 40, 333, 0, work);    /* evaluation only */
  cudaFree(work);
}

Test(cuda_kernels, softmax_xent_turns_a_bad_label_into_nan) {
  const int64_t rows = 4, cols = 3;
  const float z[] = {1, 2, 3, 3, 2, 1, 0, 0, 1, -1, 5, 2};
  const int32_t labels[] = {2, 0, 3 /* out of range */, 1}, mask[] = {0, 1, 2, 3};
  float *dz = dev_upload(z, sizeof z), *dg = dev_alloc(sizeof z), g[12];
  int32_t *dl = dev_upload(labels, sizeof labels), *dm = dev_upload(mask, sizeof mask);
  double *dloss = dev_alloc(sizeof(double)), loss = 0.0;
  int64_t *dcorrect = dev_alloc(sizeof(int64_t)), correct = -1;
  dev_poison(dg, sizeof z);
  void *work = dev_alloc(HALO_CUDA_SOFTMAX_WORK_BYTES);
  expect_ok(
      halo_cuda_softmax_xent(dz, rows, cols, dl, dm, 4, 1.0f, dg, dloss, dcorrect, work, NULL),
      "halo_cuda_softmax_xent");
  dev_download(&loss, dloss, sizeof loss);
  dev_download(&correct, dcorrect, sizeof correct);
  dev_download(g, dg, sizeof g);
  cr_expect(isnan(loss), "loss %g should be NaN", loss);
  cr_expect_eq(correct, 3, "rows 0, 1 and 3 are right, row 2 does not count");
  for (int j = 0; j < 3; j++) cr_expect_eq(g[2 * 3 + j], 0.0f, "bad row's gradient is zero");
  cudaFree(dz);
  cudaFree(dg);
  cudaFree(dl);
  cudaFree(dm);
  cudaFree(dloss);
  cudaFree(dcorrect);
  cudaFree(work);
}

/* Rows the argmax cannot rank (NaN, -inf only) count as the CPU counts
 * them: its scan starts at column 0 and moves only to a larger value. */
Test(cuda_kernels, softmax_xent_argmax_of_nan_and_infinite_rows) {
  const int64_t rows = 4, cols = 3;
  const float z[] = {NAN, 5, 1, -INFINITY, -INFINITY, -INFINITY, 1, NAN, 3, 2, 7, 7};
  const int32_t labels[] = {0, 0, 2, 1}, mask[] = {0, 1, 2, 3};
  float *dz = dev_upload(z, sizeof z);
  int32_t *dl = dev_upload(labels, sizeof labels), *dm = dev_upload(mask, sizeof mask);
  double *dloss = dev_alloc(sizeof(double)), loss = 0.0, want_loss = 0.0;
  int64_t *dcorrect = dev_alloc(sizeof(int64_t)), correct = -1, want_correct = -1;
  void *work = dev_alloc(HALO_CUDA_SOFTMAX_WORK_BYTES);
  expect_ok(
      halo_cuda_softmax_xent(dz, rows, cols, dl, dm, 4, 1.0f, NULL, dloss, dcorrect, work, NULL),
      "halo_cuda_softmax_xent");
  halo_cpu_softmax_xent(z, rows, cols, labels, mask, 4, 1.0f, NULL, &want_loss, &want_correct);
  dev_download(&loss, dloss, sizeof loss);
  dev_download(&correct, dcorrect, sizeof correct);
  cr_expect_eq(want_correct, 4, "the CPU's own count changed: %lld", (long long)want_correct);
  cr_expect_eq(correct, want_correct, "correct %lld, CPU says %lld", (long long)correct,
               (long long)want_correct);
  cr_expect(isnan(loss) && isnan(want_loss), "loss %g (CPU %g) should be NaN", loss, want_loss);
  cudaFree(dz);
  cudaFree(dl);
  cudaFree(dm);
  cudaFree(dloss);
  cudaFree(dcorrect);
  cudaFree(work);
}

/* ---- device, memory and streams ------------------------------------------- */

/* ---- deterministic ops ---------------------------------------------------- */

/* gemm_rows against halo_cpu_gemm_rows, bit for bit, with padded leading
 * dimensions and sizes off the kernel's 16-tiles; then rows [m/3, m) alone,
 * which must give the same bits (a row does not depend on the others). */
static void gemm_rows_case(uint64_t seed, int tb, int64_t m, int64_t n, int64_t k) {
  const int64_t lda = k + 3, ldb = (tb ? k : n) + 1, ldc = n + 2, b_rows = tb ? n : k;
  const size_t a_sz = (size_t)(m * lda) * 4, b_sz = (size_t)(b_rows * ldb) * 4,
               c_sz = (size_t)(m * ldc) * 4;
  float *a = host_alloc(a_sz), *b = host_alloc(b_sz), *want = host_alloc(c_sz),
        *got = host_alloc(c_sz);
  fill_uniform(a, m * lda, seed, 40, -1.0f, 1.0f);
  fill_uniform(b, b_rows * ldb, seed, 41, -1.0f, 1.0f);
  halo_cpu_gemm_rows(tb, m, n, k, a, lda, b, ldb, want, ldc);
  float *da = dev_upload(a, a_sz), *db = dev_upload(b, b_sz), *dc = dev_alloc(c_sz);
  const int64_t cut = m / 3;
  for (int part = 0; part < 2; part++) {
    dev_poison(dc, c_sz);
    if (part == 0)
      expect_ok(halo_cuda_gemm_rows(tb, m, n, k, da, lda, db, ldb, dc, ldc, NULL),
                "halo_cuda_gemm_rows");
    else
      expect_ok(halo_cuda_gemm_rows(tb, m - cut, n, k, da + cut * lda, lda, db, ldb,
                                    dc + cut * ldc, ldc, NULL),
                "halo_cuda_gemm_rows");
    dev_download(got, dc, c_sz);
    int64_t bad = 0;
    for (int64_t i = part ? cut : 0; i < m; i++)
      bad += memcmp(got + i * ldc, want + i * ldc, (size_t)n * 4) != 0;
    cr_expect_eq(bad, 0, "gemm_rows tb=%d %lldx%lldx%lld%s: %lld rows differ from the CPU's", tb,
                 (long long)m, (long long)n, (long long)k, part ? " (rows m/3.. alone)" : "",
                 (long long)bad);
  }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  free(a);
  free(b);
  free(want);
  free(got);
}

Test(cuda_kernels, gemm_rows_gives_the_cpus_bits) {
  const uint64_t seed = gpu_test_seed("gemm_rows");
  gemm_rows_case(seed, 0, 300, 37, 50); /* H·W */
  gemm_rows_case(seed, 1, 211, 16, 64); /* G·Wᵀ */
  gemm_rows_case(seed, 0, 17, 7, 1);
  gemm_rows_case(seed, 1, 5, 3, 0); /* k = 0: zeros */
}

/* Floats over many binades, a few zeros and a few exact ties on the grid. */
static void fill_spread(float *x, int64_t n, uint64_t seed, uint64_t tag) {
  fill_uniform(x, n, seed, tag, -1.0f, 1.0f);
  for (int64_t i = 0; i < n; i++) {
    x[i] = ldexpf(x[i], (int)(i % 23) - 11);
    if (i % 31 == 7) x[i] = 0.0f;
  }
}

static float cuda_max_abs_of(const float *dx, int64_t n) {
  unsigned *dword = dev_alloc(sizeof(unsigned)), bits = 0;
  float m;
  expect_ok(halo_cuda_max_abs(dx, n, dword, NULL), "halo_cuda_max_abs");
  dev_download(&bits, dword, sizeof bits);
  memcpy(&m, &bits, sizeof m);
  cudaFree(dword);
  return m;
}

/* The pairs of `cells` cells from the device, as the CPU's limbs. */
static int64_t *limbs_of_pairs(const int64_t *dpairs, int64_t cells) {
  int64_t *pairs = host_alloc((size_t)(2 * cells) * 8),
          *limbs = host_alloc((size_t)(HALO_EXACT_LIMBS * cells) * 8);
  dev_download(pairs, dpairs, (size_t)(2 * cells) * 8);
  for (int64_t c = 0; c < cells; c++)
    halo_exact_limbs(pairs[2 * c], pairs[2 * c + 1], limbs + HALO_EXACT_LIMBS * c);
  free(pairs);
  return limbs;
}

/* Aᵀ·B (or B's column sums) over n rows: the CPU's limbs, integer for
 * integer, on the grid of the two operands' bounds (max_abs, which must
 * agree too). */
static void exact_tn_case(uint64_t seed, int64_t n, int64_t ac, int64_t bc, int with_a) {
  const int64_t lda = ac + 1, ldb = bc + 2, cells = ac * bc;
  const size_t a_sz = (size_t)(n * lda) * 4, b_sz = (size_t)(n * ldb) * 4;
  float *a = host_alloc(a_sz), *b = host_alloc(b_sz);
  fill_spread(a, n * lda, seed, 42);
  fill_spread(b, n * ldb, seed, 43);
  float *da = dev_upload(a, a_sz), *db = dev_upload(b, b_sz);
  const float amax = with_a ? halo_cpu_max_abs(a, n * lda) : 1.0f, bmax = halo_cpu_max_abs(b, n * ldb);
  if (with_a) cr_expect_eq(cuda_max_abs_of(da, n * lda), amax, "max_abs of A");
  cr_expect_eq(cuda_max_abs_of(db, n * ldb), bmax, "max_abs of B");
  const int e = halo_exact_exponent((double)amax * (double)bmax);

  void *work = aligned_alloc(16, (halo_cpu_exact_tn_work(ac, bc, 2) + 15) / 16 * 16);
  int64_t *want = host_alloc((size_t)(HALO_EXACT_LIMBS * cells) * 8),
          *dpairs = dev_alloc((size_t)(2 * cells) * 8);
  cr_assert(work);
  halo_cpu_exact_tn(n, ac, bc, with_a ? a : NULL, lda, b, ldb, e, 2, work, want);
  dev_poison(dpairs, (size_t)(2 * cells) * 8);
  unsigned char *dirs = dev_alloc((size_t)n + 1);
  expect_ok(halo_cuda_exact_row_dirs(n, db, bc, ldb, dirs, NULL), "halo_cuda_exact_row_dirs");
  expect_ok(halo_cuda_exact_tn(n, ac, bc, with_a ? da : NULL, lda, db, ldb, dirs, e, dpairs, NULL),
            "halo_cuda_exact_tn");
  cudaFree(dirs);
  int64_t *got = limbs_of_pairs(dpairs, cells);
  cr_expect(memcmp(got, want, (size_t)(HALO_EXACT_LIMBS * cells) * 8) == 0,
            "exact_tn n=%lld %lldx%lld%s: the sums differ from the CPU's", (long long)n,
            (long long)ac, (long long)bc, with_a ? "" : " (column sums)");
  cudaFree(da);
  cudaFree(db);
  cudaFree(dpairs);
  free(a);
  free(b);
  free(work);
  free(want);
  free(got);
}

/* The sparse Aᵀ·B: `rows` rows of random degree (row 3 longer than one
 * run of 2^11 terms, row 5 empty) over the n rows of B. */
static void exact_csr_case(uint64_t seed, int64_t rows, int64_t n, int64_t bc, int with_values) {
  const uint64_t key = halo_rng_key(seed, HALO_RNG_GRAPH, 44, (uint64_t)rows);
  int64_t *indptr = host_alloc((size_t)(rows + 1) * 8);
  indptr[0] = 0;
  for (int64_t p = 0; p < rows; p++)
    indptr[p + 1] = indptr[p] + (p == 3 ? 5000 : p == 5 ? 0 : rand_below(key, (uint64_t)p, 40));
  const int64_t nnz = indptr[rows], ldb = bc + 1;
  int32_t *indices = host_alloc((size_t)nnz * 4);
  float *values = host_alloc((size_t)nnz * 4), *b = host_alloc((size_t)(n * ldb) * 4);
  for (int64_t k = 0; k < nnz; k++) indices[k] = (int32_t)rand_below(key, (uint64_t)(rows + k), n);
  fill_spread(values, nnz, seed, 45);
  fill_spread(b, n * ldb, seed, 46);
  const float vmax = with_values ? halo_cpu_max_abs(values, nnz) : 1.0f;
  const int e = halo_exact_exponent((double)vmax * (double)halo_cpu_max_abs(b, n * ldb));

  void *work = aligned_alloc(16, (halo_cpu_exact_csr_work(bc, 2) + 15) / 16 * 16);
  int64_t *want = host_alloc((size_t)(HALO_EXACT_LIMBS * rows * bc) * 8),
          *dpairs = dev_alloc((size_t)(2 * rows * bc) * 8);
  cr_assert(work);
  halo_cpu_exact_csr(indptr, indices, with_values ? values : NULL, rows, b, bc, ldb, e, 2, work,
                     want);
  int64_t *dptr = dev_upload(indptr, (size_t)(rows + 1) * 8);
  int32_t *didx = dev_upload(indices, (size_t)nnz * 4);
  float *dval = dev_upload(values, (size_t)nnz * 4), *db = dev_upload(b, (size_t)(n * ldb) * 4);
  dev_poison(dpairs, (size_t)(2 * rows * bc) * 8);
  expect_ok(halo_cuda_exact_csr(dptr, didx, with_values ? dval : NULL, rows, db, bc, ldb, e, dpairs,
                                NULL),
            "halo_cuda_exact_csr");
  int64_t *got = limbs_of_pairs(dpairs, rows * bc);
  cr_expect(memcmp(got, want, (size_t)(HALO_EXACT_LIMBS * rows * bc) * 8) == 0,
            "exact_csr rows=%lld bc=%lld values=%d: the sums differ from the CPU's",
            (long long)rows, (long long)bc, with_values);
  cudaFree(dptr);
  cudaFree(didx);
  cudaFree(dval);
  cudaFree(db);
  cudaFree(dpairs);
  free(indptr);
  free(indices);
  free(values);
  free(b);
  free(work);
  free(want);
  free(got);
}

Test(cuda_kernels, exact_sums_give_the_cpus_integers) {
  const uint64_t seed = gpu_test_seed("exact_sums");
  exact_tn_case(seed, 5000, 9, 40, 1); /* three runs of rows */
  exact_tn_case(seed, 333, 1, 70, 0);  /* column sums */
  exact_tn_case(seed, 0, 3, 4, 1);     /* no rows: zeros */
  exact_csr_case(seed, 20, 700, 35, 1);
  exact_csr_case(seed, 9, 300, 3, 0);
}

Test(cuda_kernels, max_abs_reports_a_nan_as_infinity) {
  const float x[] = {1.0f, -3.5f, NAN, 2.0f}, y[] = {-0.0f, 0.25f, -7.0f};
  float *dx = dev_upload(x, sizeof x), *dy = dev_upload(y, sizeof y);
  cr_expect(isinf(cuda_max_abs_of(dx, 4)), "a NaN among the values");
  cr_expect_eq(cuda_max_abs_of(dy, 3), 7.0f);
  cr_expect_eq(cuda_max_abs_of(dy, 0), 0.0f, "no values");
  cudaFree(dx);
  cudaFree(dy);
}

Test(cuda_kernels, device_memory_and_streams_round_trip) {
  const uint64_t seed = gpu_test_seed("device");
  int device = -1;
  char name[256];
  cr_assert_eq(halo_cuda_select_device(3, &device), HALO_OK);
  cr_expect(device >= 0, "device %d", device);
  cr_assert_eq(halo_cuda_device_name(name, sizeof name), HALO_OK);
  fprintf(stderr, "device %d: %s\n", device, name);
  cr_expect(name[0] != '\0');

  const int64_t n = 100003;
  const size_t bytes = (size_t)n * 4;
  float *host = host_alloc(bytes), *pinned = NULL, *back = host_alloc(bytes), *zeros = NULL;
  float *da = NULL, *db = NULL;
  void *stream = NULL;
  fill_uniform(host, n, seed, 1, -1.0f, 1.0f);
  cr_assert_eq(halo_cuda_malloc((void **)&da, bytes, "test buffer a"), HALO_OK);
  cr_assert_eq(halo_cuda_malloc((void **)&db, bytes, "test buffer b"), HALO_OK);
  cr_assert_eq(halo_cuda_malloc_host((void **)&pinned, bytes, "pinned buffer"), HALO_OK);
  cr_assert_eq(halo_cuda_stream_create(&stream), HALO_OK);

  /* Fresh device memory is zeroed. */
  zeros = host_alloc(bytes);
  cr_assert_eq(halo_cuda_memcpy(zeros, da, bytes, NULL), HALO_OK);
  cr_assert_eq(halo_cuda_stream_synchronize(NULL), HALO_OK);
  for (int64_t i = 0; i < n; i++) cr_expect_eq(zeros[i], 0.0f, "element %lld", (long long)i);

  /* pageable -> device -> device -> pinned -> pageable, on one stream. */
  memcpy(pinned, host, bytes);
  cr_assert_eq(halo_cuda_memcpy(da, pinned, bytes, stream), HALO_OK);
  cr_assert_eq(halo_cuda_relu(da, n, stream), HALO_OK);
  cr_assert_eq(halo_cuda_memcpy(db, da, bytes, stream), HALO_OK);
  /* The upload from pinned memory returned at once: the host may overwrite
   * the buffer only after it has run. */
  cr_assert_eq(halo_cuda_stream_synchronize(stream), HALO_OK);
  memset(pinned, 0xff, bytes);
  cr_assert_eq(halo_cuda_memcpy(pinned, db, bytes, stream), HALO_OK);
  cr_assert_eq(halo_cuda_stream_synchronize(stream), HALO_OK);
  memcpy(back, pinned, bytes);
  halo_cpu_relu(host, n);
  cr_expect(memcmp(back, host, bytes) == 0, "round trip through the stream changed the data");

  halo_cuda_stream_destroy(&stream);
  halo_cuda_free((void **)&da);
  halo_cuda_free((void **)&db);
  halo_cuda_free_host((void **)&pinned);
  cr_expect_null(stream);
  cr_expect_null(da);
  cr_expect_null(pinned);
  halo_cuda_free((void **)&da); /* NULL is fine */
  free(host);
  free(back);
  free(zeros);
}

/* halo_cuda_malloc's zeros must be in place for work on ANY stream, not
 * only on the default stream its memset runs on: the backend queues all its
 * work on a non-blocking stream, which does not wait for the default one.
 * The default stream is kept busy first, so that a memset left queued
 * behind it would still be pending when the copy on the other stream reads
 * the buffer; the buffer just freed held 0x7f bytes, which a fresh
 * allocation of the same size usually gets back. */
Test(cuda_kernels, fresh_memory_is_zero_for_another_stream) {
#ifdef HALO_CUDA_EMU
  /* The emulator runs queued work only when something waits for it, so a
   * missing wait shows at any size. */
  const int64_t n = (int64_t)1 << 16;
#else
  const int64_t n = (int64_t)64 << 20; /* 256 MiB of floats */
#endif
  const size_t bytes = (size_t)n * 4;
  void *stream = NULL;
  unsigned char *pinned = NULL;
  float *busy = dev_alloc(bytes);
  cr_assert_eq(halo_cuda_stream_create(&stream), HALO_OK);
  cr_assert_eq(halo_cuda_malloc_host((void **)&pinned, bytes, "pinned buffer"), HALO_OK);
  for (int round = 0; round < 3; round++) {
    void *old = dev_alloc(bytes);
    cr_assert_eq(cudaMemset(old, 0x7f, bytes), cudaSuccess);
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
    cudaFree(old);
    for (int i = 0; i < 100; i++) cr_assert_eq(halo_cuda_relu(busy, n, NULL), HALO_OK);
    void *fresh = NULL;
    cr_assert_eq(halo_cuda_malloc(&fresh, bytes, "fresh buffer"), HALO_OK);
    cr_assert_eq(halo_cuda_memcpy(pinned, fresh, bytes, stream), HALO_OK);
    cr_assert_eq(halo_cuda_stream_synchronize(stream), HALO_OK);
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; i++) nonzero += pinned[i] != 0;
    cr_expect_eq(nonzero, 0, "round %d: %zu of %zu bytes of fresh memory are not zero", round,
                 nonzero, bytes);
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
    halo_cuda_free(&fresh);
  }
  halo_cuda_free_host((void **)&pinned);
  halo_cuda_stream_destroy(&stream);
  cudaFree(busy);
}

/* AdamW (the decoupled decay, then Adam), SGD with and without Nesterov
 * momentum, and the clipping's scale: the CPU's roundings, bit for bit. */
Test(cuda_kernels, adamw_sgd_and_scale_match_over_several_steps) {
  const uint64_t seed = gpu_test_seed("adamw_sgd");
  const int64_t n = 10007;
  const size_t sz = (size_t)n * 4;
  float *w = host_alloc(sz), *m = host_alloc(sz), *v = host_alloc(sz), *g = host_alloc(sz),
        *got = host_alloc(sz);
  for (int which = 0; which < 3; which++) {
    fill_uniform(w, n, seed, 1, -0.5f, 0.5f);
    fill_uniform(m, n, seed, 2, -0.01f, 0.01f);
    fill_uniform(v, n, seed, 3, 0.0f, 1e-4f);
    float *dw = dev_upload(w, sz), *dm = dev_upload(m, sz), *dv = dev_upload(v, sz),
          *dg = dev_alloc(sz);
    for (int64_t t = 1; t <= 5; t++) {
      fill_uniform(g, n, seed, 10 + (uint64_t)t, -1.0f, 1.0f);
      cr_assert_eq(cudaMemcpy(dg, g, sz, cudaMemcpyHostToDevice), cudaSuccess);
      expect_ok(halo_cuda_scale(dg, n, 0.37f, NULL), "halo_cuda_scale");
      halo_cpu_scale(g, n, 0.37f);
      if (which == 0) {
        expect_ok(halo_cuda_adamw(dw, dg, dm, dv, n, 0.01f, 0.9f, 0.999f, 1e-8f, 0.01f, t, NULL),
                  "halo_cuda_adamw");
        halo_cpu_adamw(w, g, m, v, n, 0.01f, 0.9f, 0.999f, 1e-8f, 0.01f, t);
      } else {
        expect_ok(halo_cuda_sgd(dw, dg, dm, n, 0.1f, 0.9f, 5e-4f, which == 2, NULL),
                  "halo_cuda_sgd");
        halo_cpu_sgd(w, g, m, n, 0.1f, 0.9f, 5e-4f, which == 2);
      }
    }
    dev_download(got, dw, sz);
    const double ew = rel_err(got, w, n);
    dev_download(got, dm, sz);
    const double em = rel_err(got, m, n);
    dev_download(got, dg, sz);
    const double eg = rel_err(got, g, n);
    static const char *const names[] = {"adamw", "sgd", "sgd nesterov"};
    fprintf(stderr, "%s after 5 steps: rel err w %.3g, state %.3g, scaled g %.3g\n", names[which],
            ew, em, eg);
    cr_expect_leq(ew, EXACT, "%s w rel err %g", names[which], ew);
    cr_expect_leq(em, EXACT, "%s state rel err %g", names[which], em);
    cr_expect_leq(eg, EXACT, "scale rel err %g", eg);
    cudaFree(dw);
    cudaFree(dm);
    cudaFree(dv);
    cudaFree(dg);
  }
  free(w);
  free(m);
  free(v);
  free(g);
  free(got);
}

/* ---- argument checks ----------------------------------------------------- */

Test(cuda_kernels, bad_arguments_fail_with_a_status) {
  halo_log_set_quiet(1);
  cr_expect_eq(halo_cuda_relu(NULL, -1, NULL), HALO_ERR_ARG);
  cr_expect_eq(halo_cuda_dropout(NULL, -1, 1, NULL, 0, 0.5f, NULL), HALO_ERR_ARG);
  cr_expect_eq(halo_cuda_adam(NULL, NULL, NULL, NULL, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0, 0, NULL),
               HALO_ERR_ARG);
  cr_expect_eq(halo_cuda_gemm(0, 0, 4, 4, 4, 1.0f, NULL, 2, NULL, 4, 0.0f, NULL, 4, NULL, NULL),
               HALO_ERR_ARG);
  cr_expect_eq(halo_cuda_axpy(NULL, NULL, -1, 1.0f, NULL, NULL), HALO_ERR_ARG);
  cr_expect_eq(halo_cuda_elu(NULL, -1, NULL), HALO_ERR_ARG);
  cr_expect_eq(halo_cuda_elu_backward(NULL, NULL, -1, NULL), HALO_ERR_ARG);
  cr_expect_eq(halo_cuda_l2_normalize(NULL, -1, 4, NULL, NULL), HALO_ERR_ARG);
  cr_expect_eq(halo_cuda_l2_normalize(NULL, 4, 4, NULL, NULL), HALO_ERR_ARG, "norm NULL");
  cr_expect_eq(halo_cuda_l2_normalize_backward(NULL, NULL, NULL, 4, -1, NULL), HALO_ERR_ARG);
  cr_expect_eq(halo_cuda_l2_normalize_backward(NULL, NULL, NULL, 4, 4, NULL), HALO_ERR_ARG,
               "norm NULL");
  cr_expect_eq(halo_cuda_layernorm(NULL, -1, 4, NULL, NULL, NULL, NULL, NULL), HALO_ERR_ARG);
  cr_expect_eq(halo_cuda_layernorm(NULL, 4, 4, NULL, NULL, NULL, NULL, NULL), HALO_ERR_ARG,
               "rstd NULL");
  cr_expect_eq(halo_cuda_layernorm_backward(NULL, NULL, NULL, NULL, 4, -1, NULL), HALO_ERR_ARG);
  cr_expect_eq(halo_cuda_layernorm_backward(NULL, NULL, NULL, NULL, 4, 4, NULL), HALO_ERR_ARG,
               "rstd NULL");
  cr_expect_eq(halo_cuda_mul(NULL, NULL, NULL, -1, NULL), HALO_ERR_ARG);
  /* Empty sizes are no-ops, not errors. */
  cr_expect_eq(halo_cuda_relu(NULL, 0, NULL), HALO_OK);
  cr_expect_eq(halo_cuda_pack(NULL, NULL, 8, NULL, 0, NULL), HALO_OK);
  cr_expect_eq(halo_cuda_axpy(NULL, NULL, 0, 1.0f, NULL, NULL), HALO_OK);
  cr_expect_eq(halo_cuda_elu(NULL, 0, NULL), HALO_OK);
  cr_expect_eq(halo_cuda_l2_normalize(NULL, 0, 8, NULL, NULL), HALO_OK);
  cr_expect_eq(halo_cuda_l2_normalize_backward(NULL, NULL, NULL, 0, 8, NULL), HALO_OK);
  cr_expect_eq(halo_cuda_layernorm(NULL, 0, 8, NULL, NULL, NULL, NULL, NULL), HALO_OK);
  cr_expect_eq(halo_cuda_layernorm_backward(NULL, NULL, NULL, NULL, 0, 8, NULL), HALO_OK);
  cr_expect_eq(halo_cuda_mul(NULL, NULL, NULL, 0, NULL), HALO_OK);
}

/* GraphSAGE's max, CPU against CUDA, bit for bit: the max, its arg-max
 * and the backward's routed sums, on values drawn from 9 levels so that
 * ties are common (they go to the lowest global id on both), over rows
 * whose columns include halo rows and some with no column at all. */
Test(cuda_kernels, sage_max_matches_the_cpu_bit_for_bit) {
  const uint64_t seed = gpu_test_seed("sage_max");
  const int64_t rows = 300, all = 420, cols = 13;
  int64_t *gid = host_alloc((size_t)all * sizeof(int64_t));
  for (int64_t r = 0; r < all; r++) gid[r] = (r * 7919) % 1009 + 1009 * (r % 3); /* distinct */
  halo_csr a = gat_graph(seed, rows, all, gid);
  /* A without its self-loops (gat_graph's A + I), every 10th row emptied. */
  int64_t nnz = 0;
  for (int64_t i = 0; i < rows; i++) {
    const int64_t lo = a.indptr[i], hi = a.indptr[i + 1];
    a.indptr[i] = nnz;
    for (int64_t k = lo; k < hi && i % 10 != 0; k++)
      if (a.indices[k] != i) a.indices[nnz++] = a.indices[k];
  }
  a.indptr[rows] = a.nnz = nnz;
  const size_t xb = (size_t)(all * cols) * 4, ob = (size_t)(rows * cols) * 4;
  float *x = host_alloc(xb), *out = host_alloc(ob), *g = host_alloc(xb), *dx = host_alloc(ob),
        *got = host_alloc(xb);
  int32_t *arg = host_alloc(xb), *got_arg = host_alloc(xb);
  fill_uniform(x, all * cols, seed, 1, 0.0f, 1.0f);
  for (int64_t i = 0; i < all * cols; i++) x[i] = floorf(x[i] * 9.0f) - 4.0f; /* ties */
  fill_uniform(g, all * cols, seed, 2, -1.0f, 1.0f);
  halo_csr da = a;
  da.indptr = dev_upload(a.indptr, (size_t)(rows + 1) * sizeof(int64_t));
  da.indices = dev_upload(a.indices, (size_t)(a.nnz ? a.nnz : 1) * sizeof(int32_t));
  int64_t *dgid = dev_upload(gid, (size_t)all * sizeof(int64_t));
  float *d_x = dev_upload(x, xb), *d_out = dev_alloc(ob), *d_g = dev_upload(g, xb),
        *d_dx = dev_alloc(ob);
  int32_t *d_arg = dev_alloc(xb);

  halo_cpu_sage_max(&a, gid, x, cols, out, arg);
  expect_ok(halo_cuda_sage_max(&da, dgid, d_x, cols, d_out, d_arg, NULL), "halo_cuda_sage_max");
  dev_download(got, d_out, ob);
  dev_download(got_arg, d_arg, ob);
  cr_expect_eq(memcmp(got, out, ob), 0, "sage_max: the max differs from the CPU's");
  cr_expect_eq(memcmp(got_arg, arg, ob), 0, "sage_max: the arg-max differs from the CPU's");
  /* The halo rows' ids as another rank would send them: any ids of the
   * graph, some equal to the owned rows' own. */
  for (int64_t i = rows * cols; i < all * cols; i++) arg[i] = (int32_t)gid[i % rows];
  cr_assert_eq(cudaMemcpy(d_arg, arg, xb, cudaMemcpyHostToDevice), cudaSuccess);
  halo_cpu_sage_max_backward(&a, gid, arg, g, cols, dx);
  expect_ok(halo_cuda_sage_max_backward(&da, dgid, d_arg, d_g, cols, d_dx, NULL),
            "halo_cuda_sage_max_backward");
  dev_download(got, d_dx, ob);
  cr_expect_eq(memcmp(got, dx, ob), 0, "sage_max_backward differs from the CPU's");
  double mx = 0.0;
  for (int64_t i = 0; i < rows * cols; i++) mx = fmax(mx, fabs(dx[i]));
  cr_expect_gt(mx, 0.0, "sage_max_backward: dX is all zeros");

  cudaFree(da.indptr);
  cudaFree(da.indices);
  cudaFree(dgid);
  void *dev[] = {d_x, d_out, d_g, d_dx, d_arg};
  for (size_t k = 0; k < sizeof dev / sizeof dev[0]; k++) cudaFree(dev[k]);
  void *host[] = {a.indptr, a.indices, gid, x, out, g, dx, got, arg, got_arg};
  for (size_t k = 0; k < sizeof host / sizeof host[0]; k++) free(host[k]);
}

/* The largest |got - want| of a column's double sum, relative to the sum of
 * its terms' magnitudes (the scale a summation order's rounding follows). */
static double bn_sum_err(const double *got, const double *want, const double *mag, int64_t n) {
  double worst = 0.0;
  for (int64_t j = 0; j < n; j++) {
    const double e = fabs(got[j] - want[j]) / (mag[j] > 0.0 ? mag[j] : 1.0);
    if (!(e <= worst)) worst = e; /* a NaN sticks */
  }
  return worst;
}

/* BatchNorm's three ops against the CPU's: the column sums (with Y and
 * without) within rounding, in colsum's order, and the same bits twice;
 * the normalisation (with XHAT and without) and the backward bit for bit,
 * from the CPU's statistics. */
static void bn_case(uint64_t seed, int64_t rows, int64_t cols, void *work) {
  const int64_t n = rows * cols;
  const size_t fb = (size_t)n * 4, db = (size_t)cols * 8;
  float *x = host_alloc(fb + 4), *y = host_alloc(fb + 4), *g = host_alloc(fb + 4),
        *xhat = host_alloc(fb + 4), *got = host_alloc(fb + 4), *gamma = host_alloc(db),
        *beta = host_alloc(db);
  double *sx = host_alloc(db + 8), *sxy = host_alloc(db + 8), *gx = host_alloc(db + 8),
         *gxy = host_alloc(db + 8), *mag = host_alloc(db + 8), *shift = host_alloc(db + 8),
         *scale = host_alloc(db + 8), *a = host_alloc(db + 8), *b = host_alloc(db + 8);
  fill_uniform(x, n, seed, 1, -1.0f, 1.5f);
  fill_uniform(y, n, seed, 2, -2.0f, 1.0f);
  fill_uniform(g, n, seed, 3, -1.0f, 1.0f);
  fill_uniform(gamma, cols, seed, 4, 0.5f, 1.5f);
  fill_uniform(beta, cols, seed, 5, -0.5f, 0.5f);
  float *dx = dev_upload(x, fb + 4), *dy = dev_upload(y, fb + 4), *dg = dev_upload(g, fb + 4),
        *dxhat = dev_alloc(fb + 4), *dgamma = dev_upload(gamma, db), *dbeta = dev_upload(beta, db);
  double *dsums = dev_alloc(2 * db + 8), *dcols = dev_alloc(3 * db + 8);

  for (int with_y = 0; with_y <= 1; with_y++) {
    const float *yy = with_y ? y : x;
    halo_cpu_bn_sums(x, with_y ? y : NULL, rows, cols, sx, sxy);
    for (int pass = 0; pass < 2; pass++) {
      dev_poison(dsums, 2 * db + 8);
      expect_ok(halo_cuda_bn_sums(dx, with_y ? dy : NULL, rows, cols, dsums, dsums + cols, work,
                                  NULL),
                "halo_cuda_bn_sums");
      dev_download(pass ? a : gx, dsums, db);
      dev_download(pass ? b : gxy, dsums + cols, db);
    }
    cr_expect(memcmp(gx, a, db) == 0 && memcmp(gxy, b, db) == 0,
              "bn_sums %lld x %lld: not the same bits twice", (long long)rows, (long long)cols);
    /* Each sum against the magnitude of its terms, within the bound of
     * two orders of n terms in double: n·2⁻⁵³ each (CPU: ascending). */
    const double bound = (double)(rows > 0 ? rows : 1) * DBL_EPSILON;
    for (int64_t j = 0; j < cols; j++) {
      mag[j] = 0.0;
      for (int64_t i = 0; i < rows; i++) mag[j] += fabs((double)x[i * cols + j]);
    }
    const double ex = bn_sum_err(gx, sx, mag, cols);
    for (int64_t j = 0; j < cols; j++) {
      mag[j] = 0.0;
      for (int64_t i = 0; i < rows; i++)
        mag[j] += fabs((double)x[i * cols + j] * (double)yy[i * cols + j]);
    }
    const double exy = bn_sum_err(gxy, sxy, mag, cols);
    fprintf(stderr, "bn_sums %lld x %lld, %s: Σx err %.3g, Σxy err %.3g\n", (long long)rows,
            (long long)cols, with_y ? "x·y" : "x²", ex, exy);
    cr_expect_leq(ex, bound, "bn_sums %lld x %lld: Σx err %g", (long long)rows, (long long)cols,
                  ex);
    cr_expect_leq(exy, bound, "bn_sums %lld x %lld: Σxy err %g", (long long)rows, (long long)cols,
                  exy);
    if (rows == 0)
      for (int64_t j = 0; j < cols; j++)
        cr_expect(gx[j] == 0.0 && gxy[j] == 0.0, "no rows: column %lld", (long long)j);
  }

  /* The statistics as gnn-batchnorm.c makes them, from the CPU's sums. */
  halo_cpu_bn_sums(x, NULL, rows, cols, sx, sxy);
  for (int64_t j = 0; j < cols; j++) {
    const double r = rows > 0 ? (double)rows : 1.0, mean = sx[j] / r;
    shift[j] = mean;
    scale[j] = 1.0 / sqrt(fmax(sxy[j] / r - mean * mean, 0.0) + 1e-5);
    a[j] = 0.01 * (double)(j % 7) - 0.02;
    b[j] = 0.03 - 0.005 * (double)(j % 5);
  }
  expect_ok(halo_cuda_memcpy(dcols, shift, db, NULL), "halo_cuda_memcpy");
  expect_ok(halo_cuda_memcpy(dcols + cols, scale, db, NULL), "halo_cuda_memcpy");
  for (int with_xhat = 0; with_xhat <= 1; with_xhat++) {
    float *want = host_alloc(fb + 4);
    memcpy(want, x, fb);
    float *dz = dev_upload(x, fb + 4);
    dev_poison(dxhat, fb + 4);
    expect_ok(halo_cuda_batchnorm(dz, rows, cols, dcols, dcols + cols, dgamma, dbeta,
                                  with_xhat ? dxhat : NULL, NULL),
              "halo_cuda_batchnorm");
    halo_cpu_batchnorm(want, rows, cols, shift, scale, gamma, beta, with_xhat ? xhat : NULL);
    dev_download(got, dz, fb);
    cr_expect(memcmp(got, want, fb) == 0, "batchnorm %lld x %lld: not bit-identical (rel err %g)",
              (long long)rows, (long long)cols, rel_err(got, want, n));
    if (with_xhat) {
      dev_download(got, dxhat, fb);
      cr_expect(memcmp(got, xhat, fb) == 0,
                "batchnorm %lld x %lld: xhat not bit-identical (rel err %g)", (long long)rows,
                (long long)cols, rel_err(got, xhat, n));
    }
    cudaFree(dz);
    free(want);
  }
  /* The backward from that xhat (on the device: the CPU's bits, above). */
  expect_ok(halo_cuda_memcpy(dcols, scale, db, NULL), "halo_cuda_memcpy");
  expect_ok(halo_cuda_memcpy(dcols + cols, a, db, NULL), "halo_cuda_memcpy");
  expect_ok(halo_cuda_memcpy(dcols + 2 * cols, b, db, NULL), "halo_cuda_memcpy");
  expect_ok(halo_cuda_batchnorm_backward(dg, dxhat, rows, cols, dgamma, dcols, dcols + cols,
                                         dcols + 2 * cols, NULL),
            "halo_cuda_batchnorm_backward");
  halo_cpu_batchnorm_backward(g, xhat, rows, cols, gamma, scale, a, b);
  dev_download(got, dg, fb);
  cr_expect(memcmp(got, g, fb) == 0,
            "batchnorm_backward %lld x %lld: not bit-identical (rel err %g)", (long long)rows,
            (long long)cols, rel_err(got, g, n));

  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dg);
  cudaFree(dxhat);
  cudaFree(dgamma);
  cudaFree(dbeta);
  cudaFree(dsums);
  cudaFree(dcols);
  void *frees[] = {x, y, g, xhat, got, gamma, beta, sx, sxy, gx, gxy, mag, shift, scale, a, b};
  for (size_t k = 0; k < sizeof frees / sizeof *frees; k++) free(frees[k]);
}

Test(cuda_kernels, batchnorm_sums_match_and_its_normalisation_is_exact) {
  const uint64_t seed = gpu_test_seed("batchnorm");
  void *work = dev_alloc(HALO_CUDA_COLSUM_WORK_BYTES);
  bn_case(seed, 3001, 70, work);      /* a few chunks, a partial warp of columns */
  bn_case(seed + 1, 100003, 6, work); /* every chunk, rows not a multiple of anything */
  bn_case(seed + 2, 700, 1100, work); /* three column tiles of BatchNorm's 512, the last partial */
  bn_case(seed + 3, 0, 40, work);     /* no rows: zeros */
  cudaFree(work);
}
