/* gemm-rows: halo_cpu_gemm_rows (row-invariant) against cblas_sgemm on the
 * per-row products of halo's layers (halo_cpu_gemm takes the rows kernel
 * for those of at most 64 columns: kernels/cpu-gemm.c).
 *
 * For each shape M×K×N and trans_b 0 and 1 (Y = H·W, dH = G·Wᵀ), it runs
 * both on the same random inputs, keeps the best of R runs of each, and
 * prints GFLOP/s = 2·M·N·K / seconds.  The thread count is OpenMP's and
 * OpenBLAS's both (--threads, default 1).  With one thread both run on the
 * calling thread, and the seconds are that thread's CPU time, so that other
 * work on a shared machine does not count (it can still evict the caches);
 * with more, they are wall-clock seconds.
 *
 *   gemm-rows [--threads T] [--reps R] [MxKxN ...]
 */
#include <cblas.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "halo-kernels.h"
#include "halo-rng.h"

/* From OpenBLAS, as in train/train-run.c. */
void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);

typedef struct shape {
  int64_t m, k, n;
} shape;

static void fill(float *x, int64_t n, uint64_t key) {
  for (int64_t i = 0; i < n; i++) x[i] = 2.0f * halo_rng_uniform(key, (uint64_t)i, 0) - 1.0f;
}

static int use_cpu_clock;

static double now(void) {
  if (!use_cpu_clock) return omp_get_wtime();
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best time of `reps` runs of one product, in seconds. */
static double best_of(int rows_kernel, int trans_b, shape s, const float *a, const float *b,
                      float *c, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    const double t0 = now();
    if (rows_kernel)
      halo_cpu_gemm_rows(trans_b, s.m, s.n, s.k, a, s.k, b, trans_b ? s.k : s.n, c, s.n);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (int)s.m,
                  (int)s.n, (int)s.k, 1.0f, a, (int)s.k, b, trans_b ? (int)s.k : (int)s.n, 0.0f, c,
                  (int)s.n);
    const double t = now() - t0;
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  int threads = 1, reps = 20;
  shape shapes[32];
  int nshapes = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (nshapes < 32) {
      long long m, k, n;
      if (sscanf(argv[i], "%lldx%lldx%lld", &m, &k, &n) != 3 || m <= 0 || k <= 0 || n <= 0) {
        fprintf(stderr, "gemm-rows: bad shape '%s' (want MxKxN)\n", argv[i]);
        return 2;
      }
      shapes[nshapes++] = (shape){m, k, n};
    }
  }
  if (nshapes == 0) {
    const shape defaults[] = {
        {2708, 1433, 16}, {100000, 128, 64}, {100000, 64, 64}, {100000, 64, 8}};
    nshapes = 4;
    memcpy(shapes, defaults, sizeof defaults);
  }
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
  use_cpu_clock = threads == 1;
  printf("# OpenBLAS core %s, %d thread(s), best of %d, %s time\n", openblas_get_corename(),
         threads, reps, use_cpu_clock ? "thread CPU" : "wall-clock");
  printf("%8s %6s %5s %7s %14s %14s %7s\n", "M", "K", "N", "trans_b", "cblas GFLOP/s",
         "rows GFLOP/s", "ratio");
  int status = 0;
  for (int s = 0; s < nshapes; s++) {
    const shape sh = shapes[s];
    float *a = malloc((size_t)(sh.m * sh.k) * sizeof *a);
    float *b = malloc((size_t)(sh.k * sh.n) * sizeof *b);
    float *c = malloc((size_t)(sh.m * sh.n) * sizeof *c);
    if (!a || !b || !c) {
      fprintf(stderr, "gemm-rows: out of memory for %lldx%lldx%lld\n", (long long)sh.m,
              (long long)sh.k, (long long)sh.n);
      status = 1;
    } else {
      fill(a, sh.m * sh.k, 1);
      fill(b, sh.k * sh.n, 2);
      for (int trans_b = 0; trans_b < 2; trans_b++) {
        const double flop = 2.0 * (double)sh.m * (double)sh.n * (double)sh.k;
        const double t_blas = best_of(0, trans_b, sh, a, b, c, reps);
        const double t_rows = best_of(1, trans_b, sh, a, b, c, reps);
        printf("%8lld %6lld %5lld %7d %14.1f %14.1f %7.2f\n", (long long)sh.m, (long long)sh.k,
               (long long)sh.n, trans_b, flop / t_blas * 1e-9, flop / t_rows * 1e-9,
               t_blas / t_rows);
      }
    }
    free(a);
    free(b);
    free(c);
  }
  return status;
}
