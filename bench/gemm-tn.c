/* gemm-tn: the weight gradient's tall-skinny Aᵀ·B (halo_cpu_gemm with
 * trans_a, halo's own register-tiled kernel: kernels/cpu-gemm.c) against
 * cblas_sgemm on the same product, side by side in one run.
 *
 * For each shape KxMxN (A is K × M, B is K × N, the K rows summed as the
 * training's fused input dropout sums them: in blocks of --block rows, beta
 * 1 after the first) it runs OpenBLAS and halo's kernel at each vector
 * width this CPU has (AVX-512, AVX2, the portable loop:
 * halo_cpu_gemm_limit_isa), keeps the best of R runs of each, and prints
 * milliseconds and halo/OpenBLAS.  One thread by default, timed in the
 * thread's CPU seconds so that other work on a shared machine does not
 * count (it can still evict the caches); with --threads T > 1, wall-clock
 * seconds.
 *
 *   gemm-tn [--threads T] [--reps R] [--block ROWS] [KxMxN ...]
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
  int64_t k, m, n;
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

/* Best time of `reps` runs of Aᵀ·B in blocks of `block` rows: OpenBLAS
 * (level < 0) or halo's kernel capped at `level`. */
static double best_of(int level, shape s, int64_t block, const float *a, const float *b, float *c,
                      int reps) {
  double best = 1e30;
  if (level >= 0) halo_cpu_gemm_limit_isa((halo_cpu_isa)level);
  for (int r = 0; r < reps; r++) {
    const double t0 = now();
    for (int64_t r0 = 0; r0 < s.k; r0 += block) {
      const int64_t rows = s.k - r0 < block ? s.k - r0 : block;
      const float beta = r0 > 0 ? 1.0f : 0.0f;
      if (level < 0)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)s.m, (int)s.n, (int)rows, 1.0f,
                    a + r0 * s.m, (int)s.m, b + r0 * s.n, (int)s.n, beta, c, (int)s.n);
      else
        halo_cpu_gemm(1, 0, s.m, s.n, rows, 1.0f, a + r0 * s.m, s.m, b + r0 * s.n, s.n, beta, c,
                      s.n);
    }
    const double t = now() - t0;
    if (t < best) best = t;
  }
  halo_cpu_gemm_limit_isa(HALO_CPU_ISA_AVX512);
  return best;
}

int main(int argc, char **argv) {
  int threads = 1, reps = 5;
  int64_t block = 8000;
  shape shapes[32];
  int nshapes = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--block") && i + 1 < argc) {
      block = atoll(argv[++i]);
    } else if (nshapes < 32) {
      long long k, m, n;
      if (sscanf(argv[i], "%lldx%lldx%lld", &k, &m, &n) != 3 || k <= 0 || m <= 0 || n <= 0) {
        fprintf(stderr, "gemm-tn: bad shape '%s' (want KxMxN)\n", argv[i]);
        return 2;
      }
      shapes[nshapes++] = (shape){k, m, n};
    }
  }
  if (threads < 1 || reps < 1 || block < 1) {
    fprintf(stderr, "gemm-tn: --threads, --reps and --block take a positive number\n");
    return 2;
  }
  if (nshapes == 0) {
    /* The sbm's first layers (128 features; hidden 16 and 64, GAT's 8 × 8
     * heads and SAGE's), the second layers, and a wide one. */
    const shape defaults[] = {{200000, 128, 16}, {200000, 128, 64}, {200000, 64, 64},
                              {200000, 16, 8},   {200000, 64, 8},   {200000, 128, 128},
                              {200000, 256, 32}, {200000, 32, 32}};
    nshapes = (int)(sizeof defaults / sizeof defaults[0]);
    memcpy(shapes, defaults, sizeof defaults);
  }
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
  use_cpu_clock = threads == 1;
  printf("# OpenBLAS core %s, %d thread(s), blocks of %lld rows, best of %d, %s time\n",
         openblas_get_corename(), threads, (long long)block, reps,
         use_cpu_clock ? "thread CPU" : "wall-clock");
  printf("%8s %5s %5s %12s %12s %12s %12s %10s\n", "K", "M", "N", "openblas ms", "avx512 ms",
         "avx2 ms", "plain ms", "best/blas");
  int status = 0;
  for (int s = 0; s < nshapes; s++) {
    const shape sh = shapes[s];
    float *a = malloc((size_t)(sh.k * sh.m) * sizeof *a);
    float *b = malloc((size_t)(sh.k * sh.n) * sizeof *b);
    float *c = malloc((size_t)(sh.m * sh.n) * sizeof *c);
    if (!a || !b || !c) {
      fprintf(stderr, "gemm-tn: out of memory for %lldx%lldx%lld\n", (long long)sh.k,
              (long long)sh.m, (long long)sh.n);
      status = 1;
    } else {
      fill(a, sh.k * sh.m, 1);
      fill(b, sh.k * sh.n, 2);
      const double t_blas = best_of(-1, sh, block, a, b, c, reps);
      double t[3], best = 1e30;
      for (int level = 2; level >= 0; level--) {
        t[level] = best_of(level, sh, block, a, b, c, reps);
        if (t[level] < best) best = t[level];
      }
      printf("%8lld %5lld %5lld %12.1f %12.1f %12.1f %12.1f %10.2f\n", (long long)sh.k,
             (long long)sh.m, (long long)sh.n, 1e3 * t_blas, 1e3 * t[2], 1e3 * t[1], 1e3 * t[0],
             best / t_blas);
    }
    free(a);
    free(b);
    free(c);
  }
  return status;
}
