/* halo-cuda-emu's own tests: the bugs it promises to catch, caught, and the
 * arithmetic it stands in for, checked against a double reference.
 *
 * The GPU tests pass under the emulator in CI; that is worth something only
 * if the emulator fails code that a GPU would fail.  So each check below is
 * a bug written on purpose (a missing event wait, a host pointer handed to a
 * kernel, a barrier half the block skips, an operand cuSPARSE 12 faults on)
 * and the emulator's answer to it.  Built only with -DHALO_CUDA_EMU=ON: on a
 * GPU the races would be races, not certainties.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>
#include <signal.h>
#include <string.h>

#include "gpu/gpu-test.h"

/* ---- kernels --------------------------------------------------------------- */

__global__ void fill(float *x, int n, float value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = value;
}

/* y[i] = a·x[i] + y[i]: no barrier, so every block after the first runs as
 * plain calls. */
__global__ void axpy(int n, float a, const float *x, float *y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

/* out[b] = the sum of block b's 256 elements, as a tree in shared memory:
 * wrong unless every thread's write is seen after each barrier. */
__global__ void block_sum(const float *x, int n, float *out) {
  __shared__ float part[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  part[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

/* out[w] = the sum of warp w's 32 elements, by butterfly shuffles. */
__global__ void warp_sum(const float *x, int n, float *out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.0f;
  for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, lane_mask);
  if (threadIdx.x % 32 == 0) out[i / 32] = v;
}

/* Deliberately wrong: odd threads wait at a barrier that even threads
 * never reach.  On a GPU that is undefined behaviour and may hang. */
__global__ void divergent_barrier(float *x) {
  if (threadIdx.x % 2) __syncthreads();
  x[threadIdx.x] = 1.0f;
}

/* Deliberately wrong in a block of 48 threads: the second warp has 16
 * lanes, and a full mask names 32. */
__global__ void full_mask_shuffle(float *x) {
  x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, x[threadIdx.x], 1);
}

/* ---- helpers ---------------------------------------------------------------- */

#define CHECK(call)                                                         \
  do {                                                                      \
    const cudaError_t e_ = (call);                                          \
    cr_assert_eq(e_, cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_)); \
  } while (0)

static int blocks_for(int n, int threads) { return (n + threads - 1) / threads; }

/* 1 when every float of x[0, n) has the bits 0xffffffff: memory nothing wrote. */
static int untouched(const float *x, int n) {
  for (int i = 0; i < n; i++) {
    uint32_t bits;
    memcpy(&bits, &x[i], 4);
    if (bits != 0xffffffffu) return 0;
  }
  return 1;
}

static int all_equal(const float *x, int n, float value) {
  for (int i = 0; i < n; i++)
    if (x[i] != value) return 0;
  return 1;
}

/* ---- kernels run as a GPU runs them ---------------------------------------- */

Test(cuda_emu, reductions_across_barriers_and_shuffles_match_double) {
  const uint64_t seed = gpu_test_seed("reductions");
  const int n = 10000 + (int)(seed % 1000), blocks = blocks_for(n, 256), warps = blocks * 8;
  float *x = (float *)host_alloc((size_t)n * 4);
  fill_uniform(x, n, seed, 1, -1.0f, 1.0f);
  float *dx = (float *)dev_upload(x, (size_t)n * 4);
  float *dblock = (float *)dev_alloc((size_t)blocks * 4), *dwarp = (float *)dev_alloc(warps * 4);
  block_sum<<<blocks, 256>>>(dx, n, dblock);
  warp_sum<<<blocks, 256>>>(dx, n, dwarp);
  CHECK(cudaGetLastError());
  float *got_block = (float *)host_alloc((size_t)blocks * 4);
  float *got_warp = (float *)host_alloc((size_t)warps * 4);
  dev_download(got_block, dblock, (size_t)blocks * 4);
  dev_download(got_warp, dwarp, (size_t)warps * 4);
  for (int w = 0; w < warps; w++) {
    double want = 0.0;
    for (int i = w * 32; i < (w + 1) * 32 && i < n; i++) want += x[i];
    cr_assert_float_eq(got_warp[w], want, 1e-5, "warp %d: %.9g, want %.9g", w, got_warp[w], want);
  }
  for (int b = 0; b < blocks; b++) {
    double want = 0.0;
    for (int i = b * 256; i < (b + 1) * 256 && i < n; i++) want += x[i];
    cr_assert_float_eq(got_block[b], want, 1e-4, "block %d: %.9g, want %.9g", b, got_block[b],
                       want);
  }
  free(x);
  free(got_block);
  free(got_warp);
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dblock));
  CHECK(cudaFree(dwarp));
}

Test(cuda_emu, blocks_without_barriers_cover_the_grid) {
  const uint64_t seed = gpu_test_seed("axpy");
  const int n = 5000 + (int)(seed % 97);
  float *x = (float *)host_alloc((size_t)n * 4), *y = (float *)host_alloc((size_t)n * 4);
  fill_uniform(x, n, seed, 1, -1.0f, 1.0f);
  fill_uniform(y, n, seed, 2, -1.0f, 1.0f);
  float *dx = (float *)dev_upload(x, (size_t)n * 4), *dy = (float *)dev_upload(y, (size_t)n * 4);
  axpy<<<blocks_for(n, 128), 128>>>(n, 0.75f, dx, dy);
  float *got = (float *)host_alloc((size_t)n * 4);
  dev_download(got, dy, (size_t)n * 4);
  for (int i = 0; i < n; i++)
    cr_assert_eq(got[i], 0.75f * x[i] + y[i], "y[%d] = %.9g, want %.9g", i, got[i],
                 0.75f * x[i] + y[i]);
  free(x);
  free(y);
  free(got);
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
}

/* ---- ordering: a missing wait reads stale data every time ------------------ */

/* The emulator reads HALO_CUDA_EMU_SCHEDULE at every operation; the checks
 * of a missing wait need the late schedule (the default), whatever ctest's
 * environment says. */
static void schedule(const char *name) { cr_assert_eq(setenv("HALO_CUDA_EMU_SCHEDULE", name, 1), 0); }

Test(cuda_emu, a_copy_that_does_not_wait_for_the_kernel_reads_stale_data) {
  schedule("late");
  const int n = 1000;
  float *dx = (float *)dev_alloc(n * 4), *h = NULL;
  CHECK(cudaMallocHost(&h, n * 4));
  cudaStream_t compute, copy;
  cudaEvent_t done;
  CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));

  fill<<<blocks_for(n, 256), 256, 0, compute>>>(dx, n, 1.0f);
  CHECK(cudaMemcpyAsync(h, dx, n * 4, cudaMemcpyDeviceToHost, copy));
  CHECK(cudaStreamSynchronize(copy));
  cr_assert(untouched(h, n), "the copy stream did not wait, yet saw the kernel's writes");

  CHECK(cudaEventRecord(done, compute));
  CHECK(cudaStreamWaitEvent(copy, done, 0));
  CHECK(cudaMemcpyAsync(h, dx, n * 4, cudaMemcpyDeviceToHost, copy));
  CHECK(cudaStreamSynchronize(copy));
  cr_assert(all_equal(h, n, 1.0f), "the copy waited for the kernel's event, yet read stale data");

  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(compute));
  CHECK(cudaStreamDestroy(copy));
  CHECK(cudaFreeHost(h));
  CHECK(cudaFree(dx));
}

/* The legacy default stream waits for blocking streams, not for
 * non-blocking ones, as the runtime documents. */
Test(cuda_emu, the_default_stream_waits_for_blocking_streams_only) {
  schedule("late");
  const int n = 512;
  float *dx = (float *)dev_alloc(n * 4), *h = (float *)host_alloc(n * 4);
  cudaStream_t blocking, non_blocking;
  CHECK(cudaStreamCreate(&blocking));
  CHECK(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking));

  fill<<<2, 256, 0, non_blocking>>>(dx, n, 2.0f);
  CHECK(cudaMemcpy(h, dx, n * 4, cudaMemcpyDeviceToHost));
  cr_assert(untouched(h, n), "cudaMemcpy waited for a non-blocking stream");
  CHECK(cudaStreamSynchronize(non_blocking));

  fill<<<2, 256, 0, blocking>>>(dx, n, 3.0f);
  CHECK(cudaMemcpy(h, dx, n * 4, cudaMemcpyDeviceToHost));
  cr_assert(all_equal(h, n, 3.0f), "cudaMemcpy did not wait for a blocking stream");

  CHECK(cudaStreamDestroy(blocking));
  CHECK(cudaStreamDestroy(non_blocking));
  free(h);
  CHECK(cudaFree(dx));
}

/* The two schedules bracket a GPU's: an upload queued from pinned memory,
 * then a host write to that memory, then the wait.  Late, the upload runs at
 * the wait and carries the new values; eager, it ran when queued and
 * carries the old ones.  A GPU may do either, so code that writes a pinned
 * buffer before waiting for the copy out of it fails under one of them. */
Test(cuda_emu, late_and_eager_schedules_run_work_at_the_wait_and_at_the_launch) {
  const int n = 300;
  float *dx = (float *)dev_alloc(n * 4), *h = NULL, *back = (float *)host_alloc(n * 4);
  CHECK(cudaMallocHost(&h, n * 4));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const struct {
    const char *name;
    float seen;
  } cases[] = {{"late", 2.0f}, {"eager", 1.0f}};
  for (int c = 0; c < 2; c++) {
    schedule(cases[c].name);
    for (int i = 0; i < n; i++) h[i] = 1.0f;
    CHECK(cudaMemcpyAsync(dx, h, n * 4, cudaMemcpyHostToDevice, s));
    for (int i = 0; i < n; i++) h[i] = 2.0f; /* the bug: before the wait */
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(back, dx, n * 4, cudaMemcpyDeviceToHost));
    cr_expect(all_equal(back, n, cases[c].seen), "%s schedule: the upload carried %g, not %g",
              cases[c].name, back[0], cases[c].seen);
  }
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFreeHost(h));
  free(back);
  CHECK(cudaFree(dx));
}

/* The emulator hides the devices CUDA_VISIBLE_DEVICES does not list
 * (HALO_CUDA_EMU_DEVICES says how many there are).  The runtime reads the
 * variable once, at initialisation; the emulator at every call, which is
 * what lets this test try several values in one process. */
Test(cuda_emu, cuda_visible_devices_hides_devices) {
  const struct {
    const char *visible;
    int count;
  } cases[] = {{"", 0}, {"0", 1}, {"1", 1}, {"1,0", 2}, {"0,5,1", 1}, {"2", 0}, {"x", 0}};
  setenv("HALO_CUDA_EMU_DEVICES", "2", 1);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setenv("CUDA_VISIBLE_DEVICES", cases[i].visible, 1);
    int count = -1;
    const cudaError_t e = cudaGetDeviceCount(&count);
    cr_assert_eq(count, cases[i].count, "CUDA_VISIBLE_DEVICES='%s': %d devices, want %d",
                 cases[i].visible, count, cases[i].count);
    cr_assert_eq(e, count ? cudaSuccess : cudaErrorNoDevice);
  }
  unsetenv("CUDA_VISIBLE_DEVICES");
  unsetenv("HALO_CUDA_EMU_DEVICES");
}

/* ---- memory: what a kernel or a copy may touch ------------------------------ */

Test(cuda_emu, a_kernel_is_refused_host_freed_or_misaligned_pointers) {
  const int n = 64;
  float *host = (float *)host_alloc(n * 4);
  memset(host, 0xff, n * 4);
  fill<<<1, n>>>(host, n, 1.0f);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue, "a host pointer was launched with");
  cr_assert_eq(cudaGetLastError(), cudaSuccess, "a launch error is not sticky");
  CHECK(cudaDeviceSynchronize());
  cr_assert(untouched(host, n), "the refused kernel ran");

  float *dx = (float *)dev_alloc(n * 4 + 16);
  fill<<<1, n>>>((float *)((char *)dx + 2), n, 1.0f);
  cr_assert_eq(cudaGetLastError(), cudaErrorMisalignedAddress, "a misaligned float* was taken");

  CHECK(cudaFree(dx));
  fill<<<1, n>>>(dx, n, 1.0f);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue, "freed memory was launched with");
  free(host);
}

Test(cuda_emu, copies_past_an_allocation_or_of_the_wrong_kind_are_refused) {
  const int n = 100;
  float *dx = (float *)dev_alloc(n * 4), *h = (float *)host_alloc(n * 4);
  fill_uniform(h, n, 1, 1, -1.0f, 1.0f);
  cr_assert_eq(cudaMemcpy(dx + 1, h, n * 4, cudaMemcpyHostToDevice), cudaErrorInvalidValue,
               "a copy 4 bytes past the allocation's end was taken");
  cr_assert_eq(cudaMemcpy(h, dx, n * 4, cudaMemcpyHostToDevice), cudaErrorInvalidValue,
               "host memory was taken as a host-to-device destination");
  cr_assert_eq(cudaMemsetAsync(dx, 0, n * 4 + 1), cudaErrorInvalidValue,
               "a memset past the end was taken");
  CHECK(cudaMemcpy(h, dx, n * 4, cudaMemcpyDeviceToHost));
  cr_assert(untouched(h, n), "a refused operation wrote to the allocation");
  free(h);
  CHECK(cudaFree(dx));
}

/* ---- barriers: a bug that hangs a GPU stops the process --------------------- */

Test(cuda_emu, a_barrier_half_the_block_skips_stops_the_process, .signal = SIGABRT) {
  float *dx = (float *)dev_alloc(64 * 4);
  divergent_barrier<<<1, 64>>>(dx);
  cudaDeviceSynchronize();
}

Test(cuda_emu, a_full_mask_shuffle_in_a_partial_warp_stops_the_process, .signal = SIGABRT) {
  float *dx = (float *)dev_alloc(48 * 4);
  CHECK(cudaMemset(dx, 0, 48 * 4));
  full_mask_shuffle<<<1, 48>>>(dx);
  cudaDeviceSynchronize();
}

/* ---- cuBLAS and cuSPARSE against a double reference ------------------------- */

/* C = α·op(A)·op(B) + β·C in column-major storage, with leading dimensions
 * larger than the rows, for all four transposes. */
Test(cuda_emu, sgemm_matches_double) {
  const uint64_t seed = gpu_test_seed("sgemm");
  const int64_t m = 37, n = 29, k = 53, pad = 3;
  const float alpha = 0.7f, beta = -1.3f;
  cublasHandle_t blas;
  cr_assert_eq(cublasCreate(&blas), CUBLAS_STATUS_SUCCESS);
  for (int t = 0; t < 4; t++) {
    const int ta = t & 1, tb = t >> 1;
    const int64_t lda = (ta ? k : m) + pad, ldb = (tb ? n : k) + pad, ldc = m + pad;
    const int64_t a_sz = lda * (ta ? m : k), b_sz = ldb * (tb ? k : n), c_sz = ldc * n;
    float *a = (float *)host_alloc(a_sz * 4), *b = (float *)host_alloc(b_sz * 4);
    float *c = (float *)host_alloc(c_sz * 4), *got = (float *)host_alloc(c_sz * 4);
    fill_uniform(a, a_sz, seed + t, 1, -1.0f, 1.0f);
    fill_uniform(b, b_sz, seed + t, 2, -1.0f, 1.0f);
    fill_uniform(c, c_sz, seed + t, 3, -1.0f, 1.0f);
    float *da = (float *)dev_upload(a, a_sz * 4), *db = (float *)dev_upload(b, b_sz * 4);
    float *dc = (float *)dev_upload(c, c_sz * 4);
    cr_assert_eq(
        cublasSgemm_64(blas, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n,
                       k, &alpha, da, lda, db, ldb, &beta, dc, ldc),
        CUBLAS_STATUS_SUCCESS);
    dev_download(got, dc, c_sz * 4);
    double worst = 0.0;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) {
        double want = 0.0;
        for (int64_t l = 0; l < k; l++)
          want += (double)(ta ? a[l + i * lda] : a[i + l * lda]) *
                  (double)(tb ? b[j + l * ldb] : b[l + j * ldb]);
        want = alpha * want + beta * (double)c[i + j * ldc];
        const float g = got[i + j * ldc];
        worst = isfinite(g) ? fmax(worst, fabs(g - want) / (1.0 + fabs(want))) : INFINITY;
      }
    cr_assert_leq(worst, 1e-5, "transa %d transb %d: worst error %.2e", ta, tb, worst);
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = m; i < ldc; i++)
        cr_assert_eq(got[i + j * ldc], c[i + j * ldc], "the padding of C at (%ld, %ld) changed",
                     (long)i, (long)j);
    free(a);
    free(b);
    free(c);
    free(got);
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
  }
  cublasDestroy(blas);
}

/* A random CSR matrix on the device, with 32- or 64-bit indices. */
typedef struct {
  int64_t rows, cols, nnz;
  int64_t *offsets, *columns; /* host copies */
  float *values;
  void *d_offsets, *d_columns;
  float *d_values;
  cusparseSpMatDescr_t descr;
} csr;

static void *upload_indices(const int64_t *x, int64_t n, int wide) {
  if (wide) return dev_upload(x, (size_t)n * 8);
  int32_t *narrow = (int32_t *)host_alloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) narrow[i] = (int32_t)x[i];
  void *d = dev_upload(narrow, (size_t)n * 4);
  free(narrow);
  return d;
}

static csr random_csr(uint64_t seed, int64_t rows, int64_t cols, int wide) {
  csr a = {rows, cols, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  const uint64_t key = halo_rng_key(seed, HALO_RNG_FEATURES, 9, 0);
  a.offsets = (int64_t *)host_alloc((size_t)(rows + 1) * 8);
  a.columns = (int64_t *)host_alloc((size_t)rows * 8 * 8);
  a.offsets[0] = 0;
  for (int64_t i = 0; i < rows; i++) {
    const int64_t degree = rand_below(key, 2 * (uint64_t)i, 8); /* some rows are empty */
    for (int64_t d = 0; d < degree; d++)
      a.columns[a.nnz++] = rand_below(key, 2 * (uint64_t)i + 1 + (uint64_t)d * rows * 2, cols);
    a.offsets[i + 1] = a.nnz;
  }
  a.values = (float *)host_alloc((size_t)a.nnz * 4);
  fill_uniform(a.values, a.nnz, seed, 10, -1.0f, 1.0f);
  a.d_offsets = upload_indices(a.offsets, rows + 1, wide);
  a.d_columns = upload_indices(a.columns, a.nnz, wide);
  a.d_values = (float *)dev_upload(a.values, (size_t)a.nnz * 4);
  const cusparseIndexType_t type = wide ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
  cr_assert_eq(cusparseCreateCsr(&a.descr, rows, cols, a.nnz, a.d_offsets, a.d_columns, a.d_values,
                                 type, type, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
               CUSPARSE_STATUS_SUCCESS);
  return a;
}

/* Frees a's memory; the runtime's answer is not checked, since after a
 * device fault every call returns the fault and frees all the same. */
static void free_csr(csr *a) {
  cusparseDestroySpMat(a->descr);
  free(a->offsets);
  free(a->columns);
  free(a->values);
  cudaFree(a->d_offsets);
  cudaFree(a->d_columns);
  cudaFree(a->d_values);
}

/* Queues Y = α·A·X + β·Y, X and Y dense with f columns in `order` and
 * leading dimension ld, on a workspace `short_by` bytes smaller than
 * cusparseSpMM_bufferSize asks for.  Returns cusparseSpMM's status. */
static cusparseStatus_t spmm(cusparseHandle_t sp, const csr *a, cusparseOrder_t order, int64_t f,
                             int64_t ld, float alpha, float beta, float *dx, float *dy,
                             size_t short_by) {
  cusparseDnMatDescr_t x, y;
  cr_assert_eq(cusparseCreateDnMat(&x, a->cols, f, ld, dx, CUDA_R_32F, order),
               CUSPARSE_STATUS_SUCCESS);
  cr_assert_eq(cusparseCreateDnMat(&y, a->rows, f, ld, dy, CUDA_R_32F, order),
               CUSPARSE_STATUS_SUCCESS);
  const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  size_t bytes = 0;
  cr_assert_eq(cusparseSpMM_bufferSize(sp, op, op, &alpha, a->descr, x, &beta, y, CUDA_R_32F,
                                       CUSPARSE_SPMM_ALG_DEFAULT, &bytes),
               CUSPARSE_STATUS_SUCCESS);
  cr_assert_geq(bytes, short_by + 1, "a workspace of %zu bytes cannot be cut by %zu", bytes,
                short_by);
  void *work = dev_alloc(bytes - short_by);
  const cusparseStatus_t st = cusparseSpMM(sp, op, op, &alpha, a->descr, x, &beta, y, CUDA_R_32F,
                                           CUSPARSE_SPMM_ALG_DEFAULT, work);
  /* cudaFree waits for the queued product, as on a device, and returns a
   * fault in it: the caller's cudaDeviceSynchronize reports that. */
  cudaFree(work);
  cusparseDestroyDnMat(x);
  cusparseDestroyDnMat(y);
  return st;
}

/* Element (i, j) of a dense matrix stored in `order` with leading dimension ld. */
static int64_t at(cusparseOrder_t order, int64_t ld, int64_t i, int64_t j) {
  return order == CUSPARSE_ORDER_ROW ? i * ld + j : j * ld + i;
}

/* With β = 0, Y starts as NaN bytes: cuSPARSE must not read it. */
Test(cuda_emu, csr_spmm_matches_double) {
  const uint64_t seed = gpu_test_seed("spmm");
  const int64_t rows = 61, cols = 47, f = 9;
  cusparseHandle_t sp;
  cr_assert_eq(cusparseCreate(&sp), CUSPARSE_STATUS_SUCCESS);
  for (int t = 0; t < 8; t++) {
    const int wide = t & 1;
    const cusparseOrder_t order = t & 2 ? CUSPARSE_ORDER_COL : CUSPARSE_ORDER_ROW;
    const float alpha = 1.25f, beta = t & 4 ? -0.5f : 0.0f;
    const int64_t ld = order == CUSPARSE_ORDER_ROW ? 12 : 64; /* 16-byte rows or columns */
    const int64_t x_sz = order == CUSPARSE_ORDER_ROW ? cols * ld : f * ld;
    const int64_t y_sz = order == CUSPARSE_ORDER_ROW ? rows * ld : f * ld;
    csr a = random_csr(seed + t, rows, cols, wide);
    float *x = (float *)host_alloc(x_sz * 4), *y = (float *)host_alloc(y_sz * 4);
    float *got = (float *)host_alloc(y_sz * 4);
    fill_uniform(x, x_sz, seed + t, 4, -1.0f, 1.0f);
    fill_uniform(y, y_sz, seed + t, 5, -1.0f, 1.0f);
    float *dx = (float *)dev_upload(x, x_sz * 4), *dy = (float *)dev_upload(y, y_sz * 4);
    if (beta == 0.0f) {
      dev_poison(dy, y_sz * 4);
      memset(y, 0xff, y_sz * 4);
    }
    cr_assert_eq(spmm(sp, &a, order, f, ld, alpha, beta, dx, dy, 0), CUSPARSE_STATUS_SUCCESS);
    dev_download(got, dy, y_sz * 4);
    double worst = 0.0;
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < f; j++) {
        double want = 0.0;
        for (int64_t k = a.offsets[i]; k < a.offsets[i + 1]; k++)
          want += (double)a.values[k] * x[at(order, ld, a.columns[k], j)];
        want *= alpha;
        if (beta != 0.0f) want += beta * (double)y[at(order, ld, i, j)];
        const float g = got[at(order, ld, i, j)];
        worst = isfinite(g) ? fmax(worst, fabs(g - want) / (1.0 + fabs(want))) : INFINITY;
        got[at(order, ld, i, j)] = y[at(order, ld, i, j)]; /* what is left must be unchanged */
      }
    cr_assert_leq(worst, 1e-5, "%s-bit indices, %s-major, beta %g: worst error %.2e",
                  wide ? "64" : "32", order == CUSPARSE_ORDER_ROW ? "row" : "column", beta, worst);
    cr_assert_eq(memcmp(got, y, y_sz * 4), 0, "SpMM wrote into Y's padding");
    free(x);
    free(y);
    free(got);
    free_csr(&a);
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
  }
  cusparseDestroy(sp);
}

/* cuSPARSE 12 needs every dense operand 16-byte aligned and faults on the
 * device otherwise: the call succeeds, the next synchronisation fails, and
 * so does every runtime call after it. */
Test(cuda_emu, a_misaligned_spmm_operand_is_a_sticky_device_fault) {
  const uint64_t seed = gpu_test_seed("spmm_misaligned");
  cusparseHandle_t sp;
  cr_assert_eq(cusparseCreate(&sp), CUSPARSE_STATUS_SUCCESS);
  csr a = random_csr(seed, 20, 20, 0);
  float *dx = (float *)dev_alloc(20 * 8 * 4), *dy = (float *)dev_alloc(21 * 8 * 4);
  CHECK(cudaMemset(dx, 0, 20 * 8 * 4));
  cr_assert_eq(spmm(sp, &a, CUSPARSE_ORDER_ROW, 8, 8, 1.0f, 0.0f, dx, dy + 1, 0),
               CUSPARSE_STATUS_SUCCESS, "the misalignment shows on the device, not in the call");
  cr_assert_eq(cudaDeviceSynchronize(), cudaErrorMisalignedAddress);
  void *more = NULL;
  cr_assert_eq(cudaMalloc(&more, 16), cudaErrorMisalignedAddress, "the fault is not sticky");
  free_csr(&a);
  cudaFree(dx);
  cudaFree(dy);
  cusparseDestroy(sp);
}

Test(cuda_emu, a_workspace_smaller_than_asked_for_is_refused) {
  const uint64_t seed = gpu_test_seed("spmm_workspace");
  cusparseHandle_t sp;
  cr_assert_eq(cusparseCreate(&sp), CUSPARSE_STATUS_SUCCESS);
  csr a = random_csr(seed, 30, 30, 1);
  float *dx = (float *)dev_alloc(30 * 4 * 4), *dy = (float *)dev_alloc(30 * 4 * 4);
  CHECK(cudaMemset(dx, 0, 30 * 4 * 4));
  cr_assert_eq(spmm(sp, &a, CUSPARSE_ORDER_ROW, 4, 4, 1.0f, 1.0f, dx, dy, 8),
               CUSPARSE_STATUS_INVALID_VALUE);
  CHECK(cudaDeviceSynchronize());
  free_csr(&a);
  cusparseDestroy(sp);
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
}
