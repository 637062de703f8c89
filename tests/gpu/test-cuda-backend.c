/* The CUDA backend's table (src/backend-cuda.c) against the CPU backend's,
 * slot by slot, as the trainer calls them (ggml's test-backend-ops).
 *
 * test-cuda-kernels and test-cuda-spmm check the CUDA functions; this
 * checks the table over them: every slot keeps the contract of
 * src/halo-backend-impl.h (uploads and downloads at an offset and complete
 * on return, softmax_xent's HOST scalars, spmm with rows == NULL, with a row
 * list and on a view of a CSR's trailing rows, csr_dropout both ways, the
 * row-major GEMM conventions for all four transposes), and a failed launch
 * comes back from synchronize, once.
 *
 * Both backends get the same random inputs (seeded, printed); thresholds as
 * in test-cuda-kernels.c: 0 for ops that perform the CPU's float
 * operations, 1e-6 for double sums and for ELU's expm1f, 1e-5 for fp32 GEMM
 * and SpMM.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-test.h"
#include "halo-backend-impl.h"
#include "halo-backend.h"
#include "halo-exact.h"

#define EXACT 0.0
#define SUMS 1e-6
#define FP32 1e-5
#define LIBM 1e-6

typedef struct backends {
  halo_backend *cpu, *gpu;
} backends;

/* The GPU's products on `spmm`; its halo rows staged (no MPI here to ask). */
static backends open_backends_with(halo_backend_spmm spmm) {
  backends b = {0};
  const halo_backend_options cpu = {.device = "cpu"},
                             gpu = {.device = "cuda", .spmm = spmm, .mpi = HALO_BACKEND_MPI_STAGED};
  cr_assert_eq(halo_backend_create(&cpu, &b.cpu), HALO_OK);
  cr_assert_eq(halo_backend_create(&gpu, &b.gpu), HALO_OK, "--device cuda: no backend");
  cr_assert_eq(b.gpu->ops->space, HALO_MEM_DEVICE);
  fprintf(stderr, "backend: %s\n", halo_backend_describe(b.gpu));
  return b;
}

static backends open_backends(void) { return open_backends_with(HALO_BACKEND_SPMM_CUSPARSE); }

static void close_backends(backends *b) {
  halo_backend_destroy(&b->cpu);
  halo_backend_destroy(&b->gpu);
}

/* A buffer on each backend holding the same `bytes` host bytes (zeros when
 * host is NULL). */
typedef struct twin {
  halo_buf cpu, gpu;
} twin;

static twin twin_new(const backends *b, const void *host, size_t bytes) {
  twin t = {0};
  cr_assert_eq(b->cpu->ops->buf_alloc(b->cpu, bytes, &t.cpu), HALO_OK);
  cr_assert_eq(b->gpu->ops->buf_alloc(b->gpu, bytes, &t.gpu), HALO_OK);
  if (host && bytes) {
    memcpy(t.cpu.data, host, bytes);
    cr_assert_eq(b->gpu->ops->upload(b->gpu, &t.gpu, 0, host, bytes), HALO_OK);
  }
  return t;
}

static void twin_free(const backends *b, twin *t) {
  b->cpu->ops->buf_free(b->cpu, &t->cpu);
  b->gpu->ops->buf_free(b->gpu, &t->gpu);
}

/* synchronize is optional in the contract: without it, every op is done. */
static halo_status sync(halo_backend *be) {
  return be->ops->synchronize ? be->ops->synchronize(be) : HALO_OK;
}

/* The GPU side, downloaded after a synchronize that must report no failure. */
static void *gpu_side(const backends *b, const twin *t) {
  void *host = host_alloc(t->gpu.bytes);
  cr_assert_eq(sync(b->gpu), HALO_OK, "a CUDA slot failed");
  cr_assert_eq(b->gpu->ops->download(b->gpu, host, &t->gpu, 0, t->gpu.bytes), HALO_OK);
  return host;
}

/* Relative error of the GPU side against the CPU side, as floats. */
static double twin_err(const backends *b, const twin *t) {
  float *got = gpu_side(b, t);
  const double err = rel_err(got, t->cpu.data, (int64_t)(t->cpu.bytes / sizeof(float)));
  free(got);
  return err;
}

static float *random_floats(uint64_t seed, uint64_t tag, int64_t n, float lo, float hi) {
  float *x = host_alloc((size_t)n * sizeof *x);
  fill_uniform(x, n, seed, tag, lo, hi);
  return x;
}

#define F(t) ((float *)(t).data)

Test(cuda_backend, gemm_slot_follows_the_row_major_conventions) {
  const uint64_t seed = gpu_test_seed("backend gemm");
  backends b = open_backends();
  const int64_t m = 37, n = 29, k = 53;
  for (int t = 0; t < 4; t++) {
    const int ta = t & 1, tb = t >> 1;
    const int64_t lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 3, ldc = n + 1;
    const int64_t a_n = (ta ? k : m) * lda, b_n = (tb ? n : k) * ldb, c_n = m * ldc;
    float *ha = random_floats(seed, 1, a_n, -1, 1), *hb = random_floats(seed, 2, b_n, -1, 1),
          *hc = random_floats(seed, 3, c_n, -1, 1);
    twin A = twin_new(&b, ha, (size_t)a_n * 4), B = twin_new(&b, hb, (size_t)b_n * 4),
         C = twin_new(&b, hc, (size_t)c_n * 4);
    b.cpu->ops->gemm(b.cpu, ta, tb, m, n, k, 0.5f, F(A.cpu), lda, F(B.cpu), ldb, 2.0f, F(C.cpu),
                     ldc);
    b.gpu->ops->gemm(b.gpu, ta, tb, m, n, k, 0.5f, F(A.gpu), lda, F(B.gpu), ldb, 2.0f, F(C.gpu),
                     ldc);
    const double err = twin_err(&b, &C);
    fprintf(stderr, "gemm slot ta=%d tb=%d: rel err %.3g\n", ta, tb, err);
    cr_expect_leq(err, FP32, "gemm slot ta=%d tb=%d: rel err %g", ta, tb, err);
    twin_free(&b, &A);
    twin_free(&b, &B);
    twin_free(&b, &C);
    free(ha);
    free(hb);
    free(hc);
  }
  close_backends(&b);
}

Test(cuda_backend, softmax_xent_slot_returns_host_scalars) {
  const uint64_t seed = gpu_test_seed("backend softmax");
  backends b = open_backends();
  const int64_t rows = 700, cols = 7, nmask = 300;
  float *z = random_floats(seed, 1, rows * cols, -3, 3);
  int32_t *labels = host_alloc((size_t)rows * 4), *mask = host_alloc((size_t)nmask * 4);
  const uint64_t key = halo_rng_key(seed, HALO_RNG_GRAPH, 3, 0);
  for (int64_t i = 0; i < rows; i++) labels[i] = (int32_t)rand_below(key, (uint64_t)i, cols);
  for (int64_t i = 0; i < nmask; i++) mask[i] = (int32_t)(2 * i + 1);
  twin Z = twin_new(&b, z, (size_t)(rows * cols) * 4), G = twin_new(&b, NULL, Z.cpu.bytes),
       L = twin_new(&b, labels, (size_t)rows * 4), M = twin_new(&b, mask, (size_t)nmask * 4);
  double loss[2] = {0.0, 0.0};
  int64_t correct[2] = {-1, -1};
  b.cpu->ops->softmax_xent(b.cpu, F(Z.cpu), rows, cols, L.cpu.data, M.cpu.data, nmask, 0.01f,
                           F(G.cpu), &loss[0], &correct[0]);
  /* On the stack, host memory: the slot must write them, not a kernel. */
  b.gpu->ops->softmax_xent(b.gpu, F(Z.gpu), rows, cols, L.gpu.data, M.gpu.data, nmask, 0.01f,
                           F(G.gpu), &loss[1], &correct[1]);
  fprintf(stderr, "softmax slot: loss %.12g vs %.12g, correct %lld vs %lld\n", loss[1], loss[0],
          (long long)correct[1], (long long)correct[0]);
  cr_expect_leq(fabs(loss[1] - loss[0]) / loss[0], 1e-9, "loss %.12g, CPU %.12g", loss[1], loss[0]);
  cr_expect_eq(correct[1], correct[0]);
  const double err = twin_err(&b, &G);
  cr_expect_leq(err, SUMS, "softmax gradient rel err %g", err);
  /* Evaluation: g NULL. */
  b.gpu->ops->softmax_xent(b.gpu, F(Z.gpu), rows, cols, L.gpu.data, M.gpu.data, nmask, 0.0f, NULL,
                           &loss[1], &correct[1]);
  cr_expect_eq(correct[1], correct[0], "evaluation: correct %lld", (long long)correct[1]);
  cr_expect_eq(sync(b.gpu), HALO_OK);
  twin_free(&b, &Z);
  twin_free(&b, &G);
  twin_free(&b, &L);
  twin_free(&b, &M);
  free(z);
  free(labels);
  free(mask);
  close_backends(&b);
}

/* A random CSR (rows × cols, degree 0..max_deg), values NULL (all ones) or
 * random. */
static halo_csr random_csr(uint64_t seed, int64_t rows, int64_t cols, int max_deg, int ones) {
  const uint64_t key = halo_rng_key(seed, HALO_RNG_GRAPH, (uint64_t)rows, 11);
  halo_csr a = {.rows = rows, .cols = cols};
  a.indptr = host_alloc((size_t)(rows + 1) * sizeof *a.indptr);
  a.indptr[0] = 0;
  for (int64_t r = 0; r < rows; r++)
    a.indptr[r + 1] = a.indptr[r] + rand_below(key, (uint64_t)r, max_deg + 1);
  a.nnz = a.indptr[rows];
  a.indices = host_alloc((size_t)a.nnz * sizeof *a.indices);
  for (int64_t k = 0; k < a.nnz; k++)
    a.indices[k] = (int32_t)rand_below(key, (uint64_t)(rows + k), cols);
  a.values = ones ? NULL : random_floats(seed, 7, a.nnz, -1, 1);
  return a;
}

Test(cuda_backend, spmm_slot_on_all_rows_a_row_list_and_a_view) {
  const uint64_t seed = gpu_test_seed("backend spmm");
  backends b = open_backends();
  const int64_t rows = 500, cols = 650, ncols = 19, ldx = 21, ldy = 20, split = 180;
  for (int ones = 0; ones <= 1; ones++) {
    halo_csr host = random_csr(seed, rows, cols, 30, ones), dev = {0};
    cr_assert_eq(b.gpu->ops->csr_upload(b.gpu, &host, &dev), HALO_OK);
    float *hx = random_floats(seed, 2, cols * ldx, -1, 1);
    int32_t *list = host_alloc((size_t)rows * 4);
    for (int64_t i = 0; i < rows / 2; i++) list[i] = (int32_t)(rows - 1 - 2 * i);
    twin X = twin_new(&b, hx, (size_t)(cols * ldx) * 4), I = twin_new(&b, list, (size_t)rows * 4);
    for (int c = 0; c < 3; c++) {
      float *hy = random_floats(seed, 3 + (uint64_t)c, rows * ldy, -1, 1);
      twin Y = twin_new(&b, hy, (size_t)(rows * ldy) * 4);
      if (c == 0) { /* rows == NULL: rows 0..nrows-1 */
        b.cpu->ops->spmm(b.cpu, &host, F(X.cpu), ldx, ncols, 0.0f, F(Y.cpu), ldy, NULL, rows);
        b.gpu->ops->spmm(b.gpu, &dev, F(X.gpu), ldx, ncols, 0.0f, F(Y.gpu), ldy, NULL, rows);
      } else if (c == 1) { /* a row list, beta 1 */
        b.cpu->ops->spmm(b.cpu, &host, F(X.cpu), ldx, ncols, 1.0f, F(Y.cpu), ldy, I.cpu.data,
                         rows / 2);
        b.gpu->ops->spmm(b.gpu, &dev, F(X.gpu), ldx, ncols, 1.0f, F(Y.gpu), ldy, I.gpu.data,
                         rows / 2);
      } else { /* rows [split, rows) as a view: indptr offset, absolute entries */
        halo_csr hv = host, dv = dev;
        hv.indptr += split;
        dv.indptr += split;
        hv.rows = dv.rows = rows - split;
        b.cpu->ops->spmm(b.cpu, &hv, F(X.cpu), ldx, ncols, 0.0f, F(Y.cpu) + split * ldy, ldy, NULL,
                         rows - split);
        b.gpu->ops->spmm(b.gpu, &dv, F(X.gpu), ldx, ncols, 0.0f, F(Y.gpu) + split * ldy, ldy, NULL,
                         rows - split);
      }
      const double err = twin_err(&b, &Y);
      fprintf(stderr, "spmm slot ones=%d case %d: rel err %.3g\n", ones, c, err);
      cr_expect_leq(err, FP32, "spmm slot ones=%d case %d: rel err %g", ones, c, err);
      twin_free(&b, &Y);
      free(hy);
    }
    b.gpu->ops->csr_free(b.gpu, &dev);
    twin_free(&b, &X);
    twin_free(&b, &I);
    free(hx);
    free(list);
    free(host.indptr);
    free(host.indices);
    free(host.values);
  }
  close_backends(&b);
}

/* Each exact-sum slot's limbs, one op on both backends; `work` is the CPU's. */
static void expect_same_limbs(const int64_t *cpu, const int64_t *gpu, int64_t cells,
                              const char *what) {
  int64_t bad = 0;
  for (int64_t c = 0; c < cells * HALO_EXACT_LIMBS; c++) bad += cpu[c] != gpu[c];
  cr_expect_eq(bad, 0, "%s: %lld of %lld limbs differ from the CPU backend's", what, (long long)bad,
               (long long)(cells * HALO_EXACT_LIMBS));
}

/* The deterministic slots give the CPU backend's bits, also where a result
 * takes several of the device's 2^16-cell launches: Aᵀ·B of 300 × 300
 * cells (blocks of rows of cells), the column sums of 70,000 columns
 * (blocks of columns) and a sparse Aᵀ·B of 2,100 rows of 40 columns;
 * max_abs returns the CPU's float, and gemm_rows its rows. */
Test(cuda_backend, deterministic_slots_match_the_cpu_across_launches) {
  const uint64_t seed = gpu_test_seed("backend exact");
  backends b = open_backends();
  const int64_t n = 45, ac = 300, bc = 300, wide = 70000, rows = 2100, cols = 40;
  float *ha = random_floats(seed, 1, n * ac, -2, 2), *hb = random_floats(seed, 2, n * wide, -1, 1);
  halo_csr host = random_csr(seed, rows, n, 6, 0), dev = {0};
  cr_assert_eq(b.gpu->ops->csr_upload(b.gpu, &host, &dev), HALO_OK);
  twin A = twin_new(&b, ha, (size_t)(n * ac) * 4), B = twin_new(&b, hb, (size_t)(n * wide) * 4);
  const size_t work_bytes = halo_cpu_exact_tn_work(1, wide, 1) > halo_cpu_exact_tn_work(ac, bc, 1)
                                ? halo_cpu_exact_tn_work(1, wide, 1)
                                : halo_cpu_exact_tn_work(ac, bc, 1);
  void *work = aligned_alloc(16, (work_bytes + 15) / 16 * 16);
  int64_t most = ac * bc;
  if (rows * cols > most) most = rows * cols;
  if (wide > most) most = wide;
  int64_t *want = host_alloc((size_t)(most * HALO_EXACT_LIMBS) * 8),
          *got = host_alloc((size_t)(most * HALO_EXACT_LIMBS) * 8);
  cr_assert(work);

  const float amax = b.cpu->ops->max_abs(b.cpu, F(A.cpu), n * ac);
  const float bmax = b.cpu->ops->max_abs(b.cpu, F(B.cpu), n * wide);
  cr_expect_eq(b.gpu->ops->max_abs(b.gpu, F(A.gpu), n * ac), amax, "max_abs of A");
  cr_expect_eq(b.gpu->ops->max_abs(b.gpu, F(B.gpu), n * wide), bmax, "max_abs of B");
  int e = halo_exact_exponent((double)amax * (double)bmax);
  b.cpu->ops->exact_tn(b.cpu, n, ac, bc, F(A.cpu), ac, F(B.cpu), wide, e, 1, work, want);
  b.gpu->ops->exact_tn(b.gpu, n, ac, bc, F(A.gpu), ac, F(B.gpu), wide, e, 1, NULL, got);
  expect_same_limbs(want, got, ac * bc, "exact_tn 300 x 300");

  e = halo_exact_exponent((double)bmax);
  b.cpu->ops->exact_tn(b.cpu, n, 1, wide, NULL, 1, F(B.cpu), wide, e, 1, work, want);
  b.gpu->ops->exact_tn(b.gpu, n, 1, wide, NULL, 1, F(B.gpu), wide, e, 1, NULL, got);
  expect_same_limbs(want, got, wide, "exact_tn column sums of 70,000 columns");

  void *csr_work = aligned_alloc(16, (halo_cpu_exact_csr_work(cols, 1) + 15) / 16 * 16);
  cr_assert(csr_work);
  e = halo_exact_exponent(2.0 * (double)bmax);
  b.cpu->ops->exact_csr(b.cpu, &host, F(B.cpu), cols, wide, e, 1, csr_work, want);
  b.gpu->ops->exact_csr(b.gpu, &dev, F(B.gpu), cols, wide, e, 1, NULL, got);
  expect_same_limbs(want, got, rows * cols, "exact_csr 2,100 x 40");

  twin C = twin_new(&b, NULL, (size_t)(n * 17) * 4);
  b.cpu->ops->gemm_rows(b.cpu, 1, n, 17, ac, F(A.cpu), ac, F(B.cpu), ac, F(C.cpu), 17);
  b.gpu->ops->gemm_rows(b.gpu, 1, n, 17, ac, F(A.gpu), ac, F(B.gpu), ac, F(C.gpu), 17);
  float *hc = gpu_side(&b, &C);
  cr_expect(memcmp(hc, C.cpu.data, (size_t)(n * 17) * 4) == 0,
            "gemm_rows slot: not the CPU's bits");
  cr_expect_eq(sync(b.gpu), HALO_OK, "a deterministic slot failed");

  b.gpu->ops->csr_free(b.gpu, &dev);
  twin_free(&b, &A);
  twin_free(&b, &B);
  twin_free(&b, &C);
  free(ha);
  free(hb);
  free(hc);
  free(work);
  free(csr_work);
  free(want);
  free(got);
  free(host.indptr);
  free(host.indices);
  free(host.values);
  close_backends(&b);
}

Test(cuda_backend, elementwise_slots_equal_the_cpu_bit_for_bit) {
  const uint64_t seed = gpu_test_seed("backend elementwise");
  backends b = open_backends();
  const int64_t rows = 333, cols = 24, n = rows * cols;
  float *hy = random_floats(seed, 1, n, -1, 1), *hbias = random_floats(seed, 2, cols, -1, 1);
  int64_t *gid = host_alloc((size_t)rows * sizeof *gid);
  for (int64_t i = 0; i < rows; i++) gid[i] = 1000003 * i + 17;
  int32_t *idx = host_alloc((size_t)rows * 4);
  for (int64_t i = 0; i < rows; i++) idx[i] = (int32_t)((i * 7) % rows);
  twin Y = twin_new(&b, hy, (size_t)n * 4), Bias = twin_new(&b, hbias, (size_t)cols * 4),
       D = twin_new(&b, NULL, (size_t)n * 4), P = twin_new(&b, NULL, (size_t)n * 4),
       Gid = twin_new(&b, gid, (size_t)rows * sizeof *gid),
       Idx = twin_new(&b, idx, (size_t)rows * 4), S = twin_new(&b, NULL, (size_t)cols * 4);
  const uint64_t key = halo_rng_key(seed, HALO_RNG_DROPOUT, 5, 1);
  const backends *bb = &b;
  for (int side = 0; side < 2; side++) {
    halo_backend *be = side ? bb->gpu : bb->cpu;
    const halo_backend_ops *o = be->ops;
    float *y = F(side ? Y.gpu : Y.cpu), *d = F(side ? D.gpu : D.cpu), *p = F(side ? P.gpu : P.cpu);
    const int64_t *g = (side ? Gid.gpu : Gid.cpu).data;
    o->bias_add(be, y, rows, cols, F(side ? Bias.gpu : Bias.cpu));
    o->relu(be, y, n);
    o->copy(be, d, y, n);
    o->dropout(be, d, rows, cols, g, key, 0.4f);
    o->relu_backward(be, d, y, n);
    if (o->dropout_to) {
      o->dropout_to(be, p, d, rows, cols, g, key + 1, 0.3f);
    } else { /* optional: what the trainer does without it */
      o->copy(be, p, d, n);
      o->dropout(be, p, rows, cols, g, key + 1, 0.3f);
    }
    o->pack(be, d, p, cols, (side ? Idx.gpu : Idx.cpu).data, rows);
    o->colsum(be, d, rows, cols, F(side ? S.gpu : S.cpu));
  }
  cr_expect_leq(twin_err(&b, &Y), EXACT, "bias_add + relu differ");
  cr_expect_leq(twin_err(&b, &P), EXACT, "dropout, relu_backward, dropout_to differ");
  cr_expect_leq(twin_err(&b, &D), EXACT, "pack differs");
  const double es = twin_err(&b, &S);
  cr_expect_leq(es, SUMS, "colsum rel err %g", es);

  /* Adam, three steps. */
  float *hw = random_floats(seed, 3, n, -1, 1), *hg = random_floats(seed, 4, n, -1, 1);
  twin W = twin_new(&b, hw, (size_t)n * 4), Gr = twin_new(&b, hg, (size_t)n * 4),
       Mo = twin_new(&b, NULL, (size_t)n * 4), Vo = twin_new(&b, NULL, (size_t)n * 4);
  for (int64_t t = 1; t <= 3; t++) {
    b.cpu->ops->adam(b.cpu, F(W.cpu), F(Gr.cpu), F(Mo.cpu), F(Vo.cpu), n, 0.01f, 0.9f, 0.999f,
                     1e-8f, 5e-4f, t);
    b.gpu->ops->adam(b.gpu, F(W.gpu), F(Gr.gpu), F(Mo.gpu), F(Vo.gpu), n, 0.01f, 0.9f, 0.999f,
                     1e-8f, 5e-4f, t);
  }
  cr_expect_leq(twin_err(&b, &W), EXACT, "adam differs");
  /* AdamW, SGD (Nesterov) and the clipping's scale, on the same twins. */
  for (int64_t t = 4; t <= 5; t++) {
    b.cpu->ops->scale(b.cpu, F(Gr.cpu), n, 0.5f);
    b.gpu->ops->scale(b.gpu, F(Gr.gpu), n, 0.5f);
    b.cpu->ops->adamw(b.cpu, F(W.cpu), F(Gr.cpu), F(Mo.cpu), F(Vo.cpu), n, 0.01f, 0.9f, 0.999f,
                      1e-8f, 0.01f, t);
    b.gpu->ops->adamw(b.gpu, F(W.gpu), F(Gr.gpu), F(Mo.gpu), F(Vo.gpu), n, 0.01f, 0.9f, 0.999f,
                      1e-8f, 0.01f, t);
    /* SGD's buffer in the first moment's place (any sign): v stays >= 0. */
    b.cpu->ops->sgd(b.cpu, F(W.cpu), F(Gr.cpu), F(Mo.cpu), n, 0.1f, 0.9f, 5e-4f, 1);
    b.gpu->ops->sgd(b.gpu, F(W.gpu), F(Gr.gpu), F(Mo.gpu), n, 0.1f, 0.9f, 5e-4f, 1);
  }
  cr_expect_leq(twin_err(&b, &Gr), EXACT, "scale differs");
  cr_expect_leq(twin_err(&b, &W), EXACT, "adamw or sgd differs");
  twin *all[] = {&Y, &Bias, &D, &P, &Gid, &Idx, &S, &W, &Gr, &Mo, &Vo};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) twin_free(&b, all[i]);
  free(hy);
  free(hbias);
  free(gid);
  free(idx);
  free(hw);
  free(hg);
  close_backends(&b);
}

/* The largest |got - want| / max(|want|, scale) of n doubles. */
static double doubles_err(const double *got, const double *want, int64_t n, double scale) {
  double worst = 0.0;
  for (int64_t j = 0; j < n; j++) {
    const double e = fabs(got[j] - want[j]) / fmax(fabs(want[j]), scale);
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

/* BatchNorm's three slots (--norm batch) as gnn-batchnorm.c calls them: the
 * column sums come back in HOST arrays, complete on return; the statistics
 * go in as host arrays that the caller overwrites at once (the next site's
 * sums reuse them), so the slots must not read them later.  Two widths,
 * the narrow first, so the device copy of the statistics grows between
 * calls.  The statistics are the CPU's on both sides, so the normalisation,
 * its xhat and the backward are compared bit for bit; the sums (another
 * order) within 1e-11 of max(|sum|, rows): rows terms of at most 6.25 in
 * double, so n·2⁻⁵²·6.25 bounds it. */
Test(cuda_backend, batchnorm_slots_equal_the_cpu) {
  const uint64_t seed = gpu_test_seed("backend batchnorm");
  backends b = open_backends();
  for (int side = 0; side < 2; side++) {
    const halo_backend_ops *o = side ? b.gpu->ops : b.cpu->ops;
    cr_assert(o->bn_sums && o->batchnorm && o->batchnorm_backward,
              "the %s backend fills the BatchNorm slots", o->name);
  }
  static const int64_t widths[] = {5, 70};
  const int64_t rows = 1234;
  for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
    const int64_t cols = widths[w], n = rows * cols;
    const size_t bytes = (size_t)n * 4;
    float *hz = random_floats(seed, 10 * w + 1, n, -1.5f, 2.5f),
          *hg = random_floats(seed, 10 * w + 2, n, -1, 1),
          *hgamma = random_floats(seed, 10 * w + 3, cols, 0.5f, 1.5f),
          *hbeta = random_floats(seed, 10 * w + 4, cols, -0.5f, 0.5f);
    twin Z = twin_new(&b, hz, bytes), Ze = twin_new(&b, hz, bytes), G = twin_new(&b, hg, bytes),
         Xhat = twin_new(&b, NULL, bytes), Tmp = twin_new(&b, NULL, bytes),
         Gamma = twin_new(&b, hgamma, (size_t)cols * 4), Beta = twin_new(&b, hbeta, (size_t)cols * 4);
    double *sums[2][2], *stat[3];
    for (int k = 0; k < 4; k++) sums[k / 2][k % 2] = calloc((size_t)cols, sizeof(double));
    for (int k = 0; k < 3; k++) stat[k] = calloc((size_t)cols, sizeof(double));
    /* The forward's sums and statistics (as gnn-batchnorm.c makes them,
     * from the CPU's sums, so both sides normalise with the same). */
    for (int side = 0; side < 2; side++) {
      halo_backend *be = side ? b.gpu : b.cpu;
      be->ops->bn_sums(be, F(side ? Z.gpu : Z.cpu), NULL, rows, cols, sums[side][0],
                       sums[side][1]);
    }
    const double e1 = fmax(doubles_err(sums[1][0], sums[0][0], cols, (double)rows),
                           doubles_err(sums[1][1], sums[0][1], cols, (double)rows));
    cr_expect_leq(e1, 1e-11, "width %lld: bn_sums rel err %g", (long long)cols, e1);
    for (int side = 0; side < 2; side++) {
      halo_backend *be = side ? b.gpu : b.cpu;
      for (int64_t c = 0; c < cols; c++) {
        const double mean = sums[0][0][c] / (double)rows;
        stat[0][c] = mean;
        stat[1][c] = 1.0 / sqrt(fmax(sums[0][1][c] / (double)rows - mean * mean, 0.0) + 1e-5);
      }
      be->ops->batchnorm(be, F(side ? Z.gpu : Z.cpu), rows, cols, stat[0], stat[1],
                         F(side ? Gamma.gpu : Gamma.cpu), F(side ? Beta.gpu : Beta.cpu),
                         F(side ? Xhat.gpu : Xhat.cpu));
      /* The evaluation's pass: no xhat, the statistics as they are. */
      be->ops->batchnorm(be, F(side ? Ze.gpu : Ze.cpu), rows, cols, stat[0], stat[1],
                         F(side ? Gamma.gpu : Gamma.cpu), F(side ? Beta.gpu : Beta.cpu), NULL);
      for (int64_t c = 0; c < cols; c++) stat[0][c] = stat[1][c] = NAN; /* reused at once */
    }
    cr_expect_leq(twin_err(&b, &Z), EXACT, "width %lld: batchnorm differs", (long long)cols);
    cr_expect_leq(twin_err(&b, &Ze), EXACT, "width %lld: batchnorm without xhat differs",
                  (long long)cols);
    cr_expect_leq(twin_err(&b, &Xhat), EXACT, "width %lld: batchnorm's xhat differs",
                  (long long)cols);
    /* The backward: dgamma's terms, Σ dY and Σ dY·xhat, then dZ. */
    for (int side = 0; side < 2; side++) {
      halo_backend *be = side ? b.gpu : b.cpu;
      be->ops->mul(be, F(side ? Tmp.gpu : Tmp.cpu), F(side ? G.gpu : G.cpu),
                   F(side ? Xhat.gpu : Xhat.cpu), n);
      be->ops->bn_sums(be, F(side ? G.gpu : G.cpu), F(side ? Xhat.gpu : Xhat.cpu), rows, cols,
                       sums[side][0], sums[side][1]);
    }
    const double e2 = fmax(doubles_err(sums[1][0], sums[0][0], cols, (double)rows),
                           doubles_err(sums[1][1], sums[0][1], cols, (double)rows));
    cr_expect_leq(e2, 1e-11, "width %lld: bn_sums with y rel err %g", (long long)cols, e2);
    cr_expect_leq(twin_err(&b, &Tmp), EXACT, "width %lld: mul differs", (long long)cols);
    for (int side = 0; side < 2; side++) {
      halo_backend *be = side ? b.gpu : b.cpu;
      for (int64_t c = 0; c < cols; c++) {
        const double mean = sums[0][0][c] / (double)rows;
        stat[0][c] = 1.0 / sqrt(1.0 + 0.1 * (double)(c % 3)); /* a scale */
        stat[1][c] = mean;
        stat[2][c] = sums[0][1][c] / (double)rows;
      }
      be->ops->batchnorm_backward(be, F(side ? G.gpu : G.cpu), F(side ? Xhat.gpu : Xhat.cpu),
                                  rows, cols, F(side ? Gamma.gpu : Gamma.cpu), stat[0], stat[1],
                                  stat[2]);
      for (int k = 0; k < 3; k++)
        for (int64_t c = 0; c < cols; c++) stat[k][c] = NAN;
    }
    cr_expect_leq(twin_err(&b, &G), EXACT, "width %lld: batchnorm_backward differs",
                  (long long)cols);
    fprintf(stderr, "batchnorm slots, width %lld: sums rel err %.3g and %.3g\n", (long long)cols,
            e1, e2);
    twin *all[] = {&Z, &Ze, &G, &Xhat, &Tmp, &Gamma, &Beta};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) twin_free(&b, all[i]);
    for (int k = 0; k < 4; k++) free(sums[k / 2][k % 2]);
    for (int k = 0; k < 3; k++) free(stat[k]);
    free(hz);
    free(hg);
    free(hgamma);
    free(hbeta);
  }
  /* A bad size is recorded for synchronize, and the sums come back NaN. */
  halo_log_set_quiet(1);
  double sx = 0.0, sxy = 0.0;
  b.gpu->ops->bn_sums(b.gpu, NULL, NULL, -1, 1, &sx, &sxy);
  cr_expect(isnan(sx) && isnan(sxy), "a failed bn_sums gives NaN sums");
  cr_expect_eq(sync(b.gpu), HALO_ERR_ARG, "a bad bn_sums is reported by synchronize");
  b.gpu->ops->batchnorm(b.gpu, NULL, 4, -1, NULL, NULL, NULL, NULL, NULL);
  cr_expect_eq(sync(b.gpu), HALO_ERR_ARG, "a bad batchnorm is reported by synchronize");
  cr_expect_eq(sync(b.gpu), HALO_OK, "and only once");
  halo_log_set_quiet(0);
  close_backends(&b);
}

/* The optional slots of the models past GCN (axpy, elu, elu_backward,
 * leaky_relu and gelu_to with their backwards,
 * l2_normalize, l2_normalize_backward, layernorm, layernorm_backward, mul):
 * the CUDA backend fills them all, and each equals the CPU backend's.  Each
 * op gets inputs that are the same on both sides, so an exact op is
 * compared exactly: AXPY with GIN's ε in the backend's memory and with p
 * NULL, ELU and its backward (from the AXPY's output, the same bits on both
 * sides), the L2 normalisation with its norms and its backward from the
 * CPU's rows and norms, LayerNorm with its xhat and rstd and its backward
 * from the CPU's, and the product (into another buffer and in place). */
Test(cuda_backend, model_slots_are_filled_and_equal_the_cpu) {
  const uint64_t seed = gpu_test_seed("backend model slots");
  backends b = open_backends();
  const halo_backend_ops *slots[] = {b.cpu->ops, b.gpu->ops};
  for (int side = 0; side < 2; side++) {
    const halo_backend_ops *o = slots[side];
    cr_assert(o->axpy && o->elu && o->elu_backward && o->l2_normalize && o->l2_normalize_backward,
              "the %s backend fills the five model slots", o->name);
    cr_assert(o->layernorm && o->layernorm_backward && o->mul,
              "the %s backend fills layernorm, layernorm_backward and mul", o->name);
  }
  const int64_t rows = 333, cols = 40, n = rows * cols;
  const size_t bytes = (size_t)n * 4;
  float *hy = random_floats(seed, 1, n, -2, 2), *hx = random_floats(seed, 2, n, -2, 2),
        *hg = random_floats(seed, 3, n, -1, 1), *heps = random_floats(seed, 4, 1, -0.5f, 0.5f),
        *hgamma = random_floats(seed, 5, cols, 0.5f, 1.5f),
        *hbeta = random_floats(seed, 6, cols, -0.5f, 0.5f);
  twin A = twin_new(&b, hy, bytes), X = twin_new(&b, hx, bytes), Eps = twin_new(&b, heps, 4),
       E = twin_new(&b, NULL, bytes), Ge = twin_new(&b, hg, bytes), L = twin_new(&b, NULL, bytes),
       Norm = twin_new(&b, NULL, (size_t)rows * 4), Ln = twin_new(&b, NULL, bytes),
       Gamma = twin_new(&b, hgamma, (size_t)cols * 4), Beta = twin_new(&b, hbeta, (size_t)cols * 4),
       Xhat = twin_new(&b, NULL, bytes), Rstd = twin_new(&b, NULL, (size_t)rows * 4),
       M = twin_new(&b, NULL, bytes), Lk = twin_new(&b, NULL, bytes), Glk = twin_new(&b, hg, bytes),
       Gu = twin_new(&b, NULL, bytes), Ggu = twin_new(&b, hg, bytes);
  for (int side = 0; side < 2; side++)
    cr_assert(slots[side]->leaky_relu && slots[side]->leaky_relu_backward && slots[side]->gelu_to &&
                  slots[side]->gelu_backward,
              "the %s backend fills the LeakyReLU and GELU slots", slots[side]->name);
  for (int side = 0; side < 2; side++) {
    halo_backend *be = side ? b.gpu : b.cpu;
    const halo_backend_ops *o = be->ops;
    float *a = F(side ? A.gpu : A.cpu), *x = F(side ? X.gpu : X.cpu),
          *eps = F(side ? Eps.gpu : Eps.cpu), *e = F(side ? E.gpu : E.cpu),
          *ge = F(side ? Ge.gpu : Ge.cpu), *l = F(side ? L.gpu : L.cpu),
          *norm = F(side ? Norm.gpu : Norm.cpu), *ln = F(side ? Ln.gpu : Ln.cpu),
          *gamma = F(side ? Gamma.gpu : Gamma.cpu), *beta = F(side ? Beta.gpu : Beta.cpu),
          *xhat = F(side ? Xhat.gpu : Xhat.cpu), *rstd = F(side ? Rstd.gpu : Rstd.cpu),
          *m = F(side ? M.gpu : M.cpu), *lk = F(side ? Lk.gpu : Lk.cpu),
          *glk = F(side ? Glk.gpu : Glk.cpu), *gu = F(side ? Gu.gpu : Gu.cpu),
          *ggu = F(side ? Ggu.gpu : Ggu.cpu);
    o->axpy(be, a, x, n, 1.0f, eps); /* GIN: (1 + ε)·h */
    o->axpy(be, a, x, n, -0.5f, NULL);
    o->copy(be, e, a, n);
    o->elu(be, e, n);
    o->elu_backward(be, ge, a, n);
    o->copy(be, lk, a, n);
    o->leaky_relu(be, lk, n, 0.2f);
    o->leaky_relu_backward(be, glk, lk, n, 0.2f);
    o->gelu_to(be, gu, a, n);
    o->gelu_backward(be, ggu, a, n);
    o->copy(be, l, a, n);
    o->l2_normalize(be, l, rows, cols, norm);
    o->copy(be, ln, a, n);
    o->layernorm(be, ln, rows, cols, gamma, beta, xhat, rstd);
    o->mul(be, m, a, x, n);
    o->mul(be, x, x, a, n); /* in place */
  }
  cr_expect_leq(twin_err(&b, &A), EXACT, "axpy differs");
  const double ee = twin_err(&b, &E);
  cr_expect_leq(ee, LIBM, "elu rel err %g", ee);
  cr_expect_leq(twin_err(&b, &Ge), EXACT, "elu_backward differs");
  cr_expect_leq(twin_err(&b, &Lk), EXACT, "leaky_relu differs");
  cr_expect_leq(twin_err(&b, &Glk), EXACT, "leaky_relu_backward differs");
  const double egu = twin_err(&b, &Gu), eggu = twin_err(&b, &Ggu);
  cr_expect_leq(egu, LIBM, "gelu rel err %g", egu);
  cr_expect_leq(eggu, LIBM, "gelu_backward rel err %g", eggu);
  const double el = twin_err(&b, &L), en = twin_err(&b, &Norm);
  cr_expect_leq(el, SUMS, "l2_normalize rel err %g", el);
  cr_expect_leq(en, SUMS, "l2_normalize's norms: rel err %g", en);
  fprintf(stderr, "model slots: elu rel err %.3g, l2_normalize %.3g (norms %.3g)\n", ee, el, en);
  const double eln = twin_err(&b, &Ln), ex = twin_err(&b, &Xhat), er = twin_err(&b, &Rstd);
  cr_expect_leq(eln, SUMS, "layernorm rel err %g", eln);
  cr_expect_leq(ex, SUMS, "layernorm's xhat: rel err %g", ex);
  cr_expect_leq(er, SUMS, "layernorm's rstd: rel err %g", er);
  fprintf(stderr, "model slots: layernorm rel err %.3g (xhat %.3g, rstd %.3g)\n", eln, ex, er);
  cr_expect_leq(twin_err(&b, &M), EXACT, "mul differs");
  cr_expect_leq(twin_err(&b, &X), EXACT, "mul in place differs");

  /* The backward from the CPU's normalised rows and norms, on both sides. */
  twin Gl = twin_new(&b, hg, bytes);
  cr_assert_eq(b.gpu->ops->upload(b.gpu, &L.gpu, 0, L.cpu.data, bytes), HALO_OK);
  cr_assert_eq(b.gpu->ops->upload(b.gpu, &Norm.gpu, 0, Norm.cpu.data, (size_t)rows * 4), HALO_OK);
  b.cpu->ops->l2_normalize_backward(b.cpu, F(Gl.cpu), F(L.cpu), F(Norm.cpu), rows, cols);
  b.gpu->ops->l2_normalize_backward(b.gpu, F(Gl.gpu), F(L.gpu), F(Norm.gpu), rows, cols);
  const double eb = twin_err(&b, &Gl);
  fprintf(stderr, "model slots: l2_normalize_backward rel err %.3g\n", eb);
  cr_expect_leq(eb, SUMS, "l2_normalize_backward rel err %g", eb);

  /* LayerNorm's backward from the CPU's xhat and rstd, on both sides. */
  twin Gn = twin_new(&b, hg, bytes);
  cr_assert_eq(b.gpu->ops->upload(b.gpu, &Xhat.gpu, 0, Xhat.cpu.data, bytes), HALO_OK);
  cr_assert_eq(b.gpu->ops->upload(b.gpu, &Rstd.gpu, 0, Rstd.cpu.data, (size_t)rows * 4), HALO_OK);
  b.cpu->ops->layernorm_backward(b.cpu, F(Gn.cpu), F(Xhat.cpu), F(Rstd.cpu), F(Gamma.cpu), rows,
                                 cols);
  b.gpu->ops->layernorm_backward(b.gpu, F(Gn.gpu), F(Xhat.gpu), F(Rstd.gpu), F(Gamma.gpu), rows,
                                 cols);
  const double egn = twin_err(&b, &Gn);
  fprintf(stderr, "model slots: layernorm_backward rel err %.3g\n", egn);
  cr_expect_leq(egn, SUMS, "layernorm_backward rel err %g", egn);

  /* A slot that fails records it for synchronize, as the others do. */
  halo_log_set_quiet(1);
  b.gpu->ops->l2_normalize(b.gpu, F(L.gpu), -1, cols, F(Norm.gpu));
  cr_expect_eq(sync(b.gpu), HALO_ERR_ARG, "a bad l2_normalize is reported by synchronize");
  cr_expect_eq(sync(b.gpu), HALO_OK, "and only once");
  b.gpu->ops->layernorm(b.gpu, F(Ln.gpu), rows, -1, F(Gamma.gpu), F(Beta.gpu), F(Xhat.gpu),
                        F(Rstd.gpu));
  cr_expect_eq(sync(b.gpu), HALO_ERR_ARG, "a bad layernorm is reported by synchronize");
  b.gpu->ops->mul(b.gpu, F(M.gpu), F(A.gpu), F(X.gpu), -1);
  cr_expect_eq(sync(b.gpu), HALO_ERR_ARG, "a bad mul is reported by synchronize");
  cr_expect_eq(sync(b.gpu), HALO_OK, "and only once");
  halo_log_set_quiet(0);

  twin *all[] = {&A,    &X,    &Eps,  &E, &Ge, &L,  &Norm, &Gl, &Ln, &Gamma,
                 &Beta, &Xhat, &Rstd, &M, &Gn, &Lk, &Glk,  &Gu, &Ggu};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) twin_free(&b, all[i]);
  free(hy);
  free(hx);
  free(hg);
  free(heps);
  free(hgamma);
  free(hbeta);
  close_backends(&b);
}

/* GAT's four model ops are on both backends, the scores slot gives the
 * CPU's numbers through the backend's buffers, and a bad shape is reported
 * by synchronize.  (The four kernels against their CPU twins on a graph:
 * test-cuda-kernels; end to end: test-train-cuda.) */
Test(cuda_backend, gat_slots_are_filled_and_report_failures) {
  backends b = open_backends();
  const halo_backend_ops *ops[2] = {b.cpu->ops, b.gpu->ops};
  for (int k = 0; k < 2; k++)
    for (int op = HALO_OP_GAT_SCORES; op <= HALO_OP_GAT_ATTEND_BACKWARD; op++)
      cr_assert(halo__backend_has_op(ops[k], (halo_model_op)op), "the %s backend has model op %d",
                ops[k]->name, op);
  cr_assert_eq(ops[0]->model_ops, ops[1]->model_ops, "both backends have the same model ops");
  const uint64_t seed = gpu_test_seed("gat_slots");
  const int64_t rows = 777;
  const halo_gat_layer g = {.heads = 4, .f = 6, .concat = 1, .slope = 0.2f};
  float *ht = random_floats(seed, 1, rows * 24, -1.0f, 1.0f),
        *ha = random_floats(seed, 2, 24, -1.0f, 1.0f),
        *hd = random_floats(seed, 3, 24, -1.0f, 1.0f);
  twin T = twin_new(&b, ht, (size_t)rows * 24 * 4), As = twin_new(&b, ha, 24 * 4),
       Ad = twin_new(&b, hd, 24 * 4), S = twin_new(&b, NULL, (size_t)rows * 8 * 4);
  const halo_model_call on_cpu = {
      .op = HALO_OP_GAT_SCORES, .gat_scores = {&g, F(T.cpu), rows, F(As.cpu), F(Ad.cpu), F(S.cpu)}};
  const halo_model_call on_gpu = {
      .op = HALO_OP_GAT_SCORES, .gat_scores = {&g, F(T.gpu), rows, F(As.gpu), F(Ad.gpu), F(S.gpu)}};
  b.cpu->ops->model_kernel(b.cpu, &on_cpu);
  b.gpu->ops->model_kernel(b.gpu, &on_gpu);
  const double es = twin_err(&b, &S);
  fprintf(stderr, "gat slots: scores rel err %.3g\n", es);
  cr_expect_leq(es, FP32, "gat_scores rel err %g", es);
  halo_log_set_quiet(1);
  const halo_gat_layer bad = {.heads = 0, .f = 6};
  const halo_model_call bad_call = {
      .op = HALO_OP_GAT_SCORES,
      .gat_scores = {&bad, F(T.gpu), rows, F(As.gpu), F(Ad.gpu), F(S.gpu)}};
  b.gpu->ops->model_kernel(b.gpu, &bad_call);
  cr_expect_eq(sync(b.gpu), HALO_ERR_ARG, "a GAT layer without heads is reported by synchronize");
  cr_expect_eq(sync(b.gpu), HALO_OK, "and only once");
  halo_log_set_quiet(0);
  twin *all[] = {&T, &As, &Ad, &S};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) twin_free(&b, all[i]);
  free(ht);
  free(ha);
  free(hd);
  close_backends(&b);
}

Test(cuda_backend, csr_dropout_slot_both_ways) {
  const uint64_t seed = gpu_test_seed("backend csr_dropout");
  backends b = open_backends();
  const int64_t rows = 400, cols = 90;
  halo_csr host = random_csr(seed, rows, cols, 20, 0), dev = {0};
  cr_assert_eq(b.gpu->ops->csr_upload(b.gpu, &host, &dev), HALO_OK);
  int64_t *gid = host_alloc((size_t)rows * sizeof *gid);
  for (int64_t i = 0; i < rows; i++) gid[i] = 77 * i + 5;
  twin Gid = twin_new(&b, gid, (size_t)rows * sizeof *gid);
  for (int transposed = 0; transposed <= 1; transposed++) {
    twin Out = twin_new(&b, NULL, (size_t)host.nnz * 4);
    const uint64_t key = halo_rng_key(seed, HALO_RNG_DROPOUT, 2, (uint64_t)transposed);
    b.cpu->ops->csr_dropout(b.cpu, &host, transposed, Gid.cpu.data, key, 0.5f, F(Out.cpu));
    b.gpu->ops->csr_dropout(b.gpu, &dev, transposed, Gid.gpu.data, key, 0.5f, F(Out.gpu));
    cr_expect_leq(twin_err(&b, &Out), EXACT, "csr_dropout transposed=%d differs", transposed);
    twin_free(&b, &Out);
  }
  b.gpu->ops->csr_free(b.gpu, &dev);
  twin_free(&b, &Gid);
  free(gid);
  free(host.indptr);
  free(host.indices);
  free(host.values);
  close_backends(&b);
}

Test(cuda_backend, transfers_at_offsets_and_failures_reach_synchronize) {
  const uint64_t seed = gpu_test_seed("backend transfers");
  backends b = open_backends();
  const halo_backend_ops *o = b.gpu->ops;
  const int64_t n = 1000;
  float *h = random_floats(seed, 1, n, -1, 1), *back = host_alloc((size_t)n * 4);
  halo_buf buf = {0};
  cr_assert_eq(o->buf_alloc(b.gpu, (size_t)n * 4, &buf), HALO_OK);
  cr_assert_eq(buf.space, HALO_MEM_DEVICE);
  /* Two halves, the second at an offset; pageable host memory reused at once. */
  cr_assert_eq(o->upload(b.gpu, &buf, 0, h, (size_t)n * 2), HALO_OK);
  cr_assert_eq(o->upload(b.gpu, &buf, (size_t)n * 2, h + n / 2, (size_t)n * 2), HALO_OK);
  cr_assert_eq(o->download(b.gpu, back, &buf, 0, (size_t)n * 4), HALO_OK);
  cr_expect(memcmp(back, h, (size_t)n * 4) == 0, "upload at an offset");
  memset(back, 0, (size_t)n * 4);
  cr_assert_eq(o->download(b.gpu, back, &buf, (size_t)n, (size_t)n * 3), HALO_OK);
  cr_expect(memcmp(back, h + n / 4, (size_t)n * 3) == 0, "download at an offset");

  halo_log_set_quiet(1);
  cr_expect_eq(o->upload(b.gpu, &buf, (size_t)n * 3, h, (size_t)n * 2), HALO_ERR_ARG,
               "an upload past the end is refused");
  /* A compute slot that fails records it; synchronize reports it once. */
  o->gemm(b.gpu, 0, 0, 4, 4, 4, 1.0f, F(buf), 2, F(buf), 4, 0.0f, F(buf), 4);
  cr_expect_eq(o->synchronize(b.gpu), HALO_ERR_ARG, "a bad GEMM is reported by synchronize");
  cr_expect_eq(o->synchronize(b.gpu), HALO_OK, "and only once");
  o->buf_free(b.gpu, &buf);
  cr_expect_null(buf.data);
  free(h);
  free(back);
  close_backends(&b);
}

/* spmm_prepare: the products the trainer declares run on cuSPARSE
 * (HALO_BACKEND_SPMM_CUSPARSE, the default) or halo's row kernel (_ROWS), and
 * either way equal the CPU: Â's interior prefix and boundary view at a
 * width whose boundary Y is 16-byte aligned (16) and one where it is not
 * (7: the row kernel takes it), dropped values through the same plan, and
 * a width never declared.  csr_free releases the plans with the matrix. */
static void check_prepared(halo_backend_spmm spmm, uint64_t seed) {
  const char *choice = spmm == HALO_BACKEND_SPMM_ROWS ? "rows" : "cusparse";
  backends b = open_backends_with(spmm);
  const int64_t rows = 600, cols = 760, split = 181; /* odd: Y + split·7 is unaligned */
  halo_csr host = random_csr(seed, rows, cols, 25, 0), dev = {0};
  cr_assert_eq(b.gpu->ops->csr_upload(b.gpu, &host, &dev), HALO_OK);
  cr_assert_not_null(b.gpu->ops->spmm_prepare, "the CUDA backend prepares products");
  halo_csr hv = host, dv = dev; /* rows [split, rows) */
  hv.indptr += split;
  dv.indptr += split;
  hv.rows = dv.rows = rows - split;
  float *hdrop = random_floats(seed, 9, host.nnz, -2, 2);
  twin Drop = twin_new(&b, hdrop, (size_t)host.nnz * 4);
  const int64_t widths[] = {16, 7, 5};
  for (int w = 0; w < 3; w++) {
    const int64_t nc = widths[w];
    if (nc != 5) { /* 5: never declared */
      cr_assert_eq(b.gpu->ops->spmm_prepare(b.gpu, &dev, split, nc), HALO_OK);
      cr_assert_eq(b.gpu->ops->spmm_prepare(b.gpu, &dv, rows - split, nc), HALO_OK);
      cr_assert_eq(b.gpu->ops->spmm_prepare(b.gpu, &dev, rows, nc), HALO_OK);
    }
    float *hx = random_floats(seed, 20 + (uint64_t)w, cols * nc, -1, 1);
    twin X = twin_new(&b, hx, (size_t)(cols * nc) * 4);
    for (int drop = 0; drop <= 1; drop++) {
      float *hy = random_floats(seed, 30 + (uint64_t)w, rows * nc, -1, 1);
      twin Y = twin_new(&b, hy, (size_t)(rows * nc) * 4);
      halo_csr ha = host, da = dev, hb = hv, db = dv;
      if (drop) {
        ha.values = hb.values = Drop.cpu.data;
        da.values = db.values = Drop.gpu.data;
      }
      /* As the trainer's aggregate: the interior prefix, then the boundary view. */
      b.cpu->ops->spmm(b.cpu, &ha, F(X.cpu), nc, nc, 0.0f, F(Y.cpu), nc, NULL, split);
      b.gpu->ops->spmm(b.gpu, &da, F(X.gpu), nc, nc, 0.0f, F(Y.gpu), nc, NULL, split);
      b.cpu->ops->spmm(b.cpu, &hb, F(X.cpu), nc, nc, 0.0f, F(Y.cpu) + split * nc, nc, NULL,
                       rows - split);
      b.gpu->ops->spmm(b.gpu, &db, F(X.gpu), nc, nc, 0.0f, F(Y.gpu) + split * nc, nc, NULL,
                       rows - split);
      double err = twin_err(&b, &Y);
      fprintf(stderr, "SpMM %s width %lld dropped %d: interior + boundary rel err %.3g\n", choice,
              (long long)nc, drop, err);
      cr_expect_leq(err, FP32, "%s, width %lld, dropped %d: interior + boundary rel err %g", choice,
                    (long long)nc, drop, err);
      /* All rows in one product, beta 1. */
      b.cpu->ops->spmm(b.cpu, &ha, F(X.cpu), nc, nc, 1.0f, F(Y.cpu), nc, NULL, rows);
      b.gpu->ops->spmm(b.gpu, &da, F(X.gpu), nc, nc, 1.0f, F(Y.gpu), nc, NULL, rows);
      err = twin_err(&b, &Y);
      cr_expect_leq(err, FP32, "%s, width %lld, dropped %d: all rows, beta 1: rel err %g", choice,
                    (long long)nc, drop, err);
      twin_free(&b, &Y);
      free(hy);
    }
    twin_free(&b, &X);
    free(hx);
  }
  b.gpu->ops->csr_free(b.gpu, &dev);
  cr_expect_eq(sync(b.gpu), HALO_OK, "csr_free after the products");
  twin_free(&b, &Drop);
  free(hdrop);
  free(host.indptr);
  free(host.indices);
  free(host.values);
  close_backends(&b);
}

Test(cuda_backend, prepared_spmm_on_cusparse_equals_the_cpu) {
  check_prepared(HALO_BACKEND_SPMM_CUSPARSE, gpu_test_seed("backend spmm_prepare cusparse"));
}

Test(cuda_backend, prepared_spmm_on_the_row_kernel_equals_the_cpu) {
  check_prepared(HALO_BACKEND_SPMM_ROWS, gpu_test_seed("backend spmm_prepare rows"));
}

Test(cuda_backend, options_outside_their_enums_are_refused) {
  halo_backend *be = NULL;
  halo_log_set_quiet(1);
  const halo_backend_options spmm = {.device = "cuda", .spmm = (halo_backend_spmm)7};
  cr_expect_eq(halo_backend_create(&spmm, &be), HALO_ERR_ARG, "SpMM choice 7");
  cr_expect_null(be);
  const halo_backend_options mpi = {.device = "cuda", .mpi = (halo_backend_mpi)7};
  cr_expect_eq(halo_backend_create(&mpi, &be), HALO_ERR_ARG, "MPI mode 7");
  cr_expect_null(be);
}

/* The copy stream as the staged exchange drives it (halo-exchange.c), with
 * work sized so that a missing fence shows: a long GEMM queued before the
 * pack (without copy_wait_compute the download would read send_buf before
 * the pack wrote it), and 64 MiB of halo rows uploaded just before a ReLU
 * over them (without compute_wait_copy the ReLU would run first). */
Test(cuda_backend, copy_stream_slots_order_a_staged_exchange) {
  const uint64_t seed = gpu_test_seed("backend copy stream");
  backends b = open_backends();
  halo_backend *g = b.gpu;
  const halo_backend_ops *o = g->ops;
  cr_assert(o->copy_wait_compute && o->copy_download && o->copy_upload && o->copy_synchronize &&
                o->compute_wait_copy,
            "the CUDA backend has all five copy-stream slots");
  const int64_t owned = 4096, halo = 1 << 20, cols = 16, nsend = 3000, big = 2048;
  const int64_t n_all = owned + halo;
  float *hr = random_floats(seed, 1, n_all * cols, -1, 1),
        *hbias = random_floats(seed, 2, cols, -1, 1);
  int32_t *idx = host_alloc((size_t)nsend * 4);
  for (int64_t i = 0; i < nsend; i++) idx[i] = (int32_t)((i * 7919) % owned);
  twin R = twin_new(&b, hr, (size_t)(n_all * cols) * 4),
       Bias = twin_new(&b, hbias, (size_t)cols * 4), Idx = twin_new(&b, idx, (size_t)nsend * 4),
       Send = twin_new(&b, NULL, (size_t)(nsend * cols) * 4);
  halo_buf ga = {0}, gb = {0}, gc = {0};
  cr_assert_eq(o->buf_alloc(g, (size_t)(big * big) * 4, &ga), HALO_OK);
  cr_assert_eq(o->buf_alloc(g, (size_t)(big * big) * 4, &gb), HALO_OK);
  cr_assert_eq(o->buf_alloc(g, (size_t)(big * big) * 4, &gc), HALO_OK);
  void *host_send = NULL, *host_recv = NULL;
  cr_assert_eq(o->host_alloc(g, (size_t)(nsend * cols) * 4, &host_send), HALO_OK);
  cr_assert_eq(o->host_alloc(g, (size_t)(halo * cols) * 4, &host_recv), HALO_OK);
  cr_assert_eq(sync(g), HALO_OK);

  /* begin: compute work, the pack, the fence, the download; the host waits
   * for the copy stream only. */
  for (int rep = 0; rep < 4; rep++)
    o->gemm(g, 0, 0, big, big, big, 1.0f, F(ga), big, F(gb), big, 0.0f, F(gc), big);
  b.cpu->ops->bias_add(b.cpu, F(R.cpu), owned, cols, F(Bias.cpu));
  o->bias_add(g, F(R.gpu), owned, cols, F(Bias.gpu));
  b.cpu->ops->pack(b.cpu, F(Send.cpu), F(R.cpu), cols, Idx.cpu.data, nsend);
  o->pack(g, F(Send.gpu), F(R.gpu), cols, Idx.gpu.data, nsend);
  cr_assert_eq(o->copy_wait_compute(g), HALO_OK);
  cr_assert_eq(o->copy_download(g, host_send, &Send.gpu, 0, (size_t)(nsend * cols) * 4), HALO_OK);
  cr_assert_eq(o->copy_synchronize(g), HALO_OK);
  cr_expect(memcmp(host_send, Send.cpu.data, (size_t)(nsend * cols) * 4) == 0,
            "the downloaded send rows are the packed rows");

  /* end: the received rows go up on the copy stream; compute waits for them. */
  fill_uniform(host_recv, halo * cols, seed, 3, -1, 1);
  memcpy(F(R.cpu) + owned * cols, host_recv, (size_t)(halo * cols) * 4);
  cr_assert_eq(
      o->copy_upload(g, &R.gpu, (size_t)(owned * cols) * 4, host_recv, (size_t)(halo * cols) * 4),
      HALO_OK);
  cr_assert_eq(o->compute_wait_copy(g), HALO_OK);
  b.cpu->ops->relu(b.cpu, F(R.cpu), n_all * cols);
  o->relu(g, F(R.gpu), n_all * cols);
  cr_expect_leq(twin_err(&b, &R), EXACT, "the ReLU after compute_wait_copy saw the uploaded rows");
  cr_expect_eq(o->copy_synchronize(g), HALO_OK);

  /* A failed launch before the fence is reported by it, once; a copy past
   * the end is refused. */
  halo_log_set_quiet(1);
  o->gemm(g, 0, 0, 4, 4, 4, 1.0f, F(ga), 2, F(gb), 4, 0.0f, F(gc), 4);
  cr_expect_eq(o->copy_wait_compute(g), HALO_ERR_ARG, "the bad GEMM reaches copy_wait_compute");
  cr_expect_eq(o->copy_wait_compute(g), HALO_OK, "once");
  cr_expect_eq(o->copy_download(g, host_send, &Send.gpu, 4, (size_t)(nsend * cols) * 4),
               HALO_ERR_ARG);
  halo_log_set_quiet(0);

  o->host_free(g, &host_send);
  o->host_free(g, &host_recv);
  o->buf_free(g, &ga);
  o->buf_free(g, &gb);
  o->buf_free(g, &gc);
  twin *all[] = {&R, &Bias, &Idx, &Send};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) twin_free(&b, all[i]);
  free(hr);
  free(hbias);
  free(idx);
  close_backends(&b);
}
