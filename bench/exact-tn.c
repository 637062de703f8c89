/* exact-tn: the deterministic path's weight and bias gradients, the exact
 * Aᵀ·B of halo_cpu_exact_tn (kernels/cpu-exact.c), against the float
 * path's kernels on the same product (halo_cpu_gemm with trans_a, and
 * halo_cpu_colsum for a bias), side by side in one run.
 *
 * For each shape KxMxN (A is K × M, B is K × N, the K rows summed in
 * blocks of --block rows, as the training's fused input dropout sums them;
 * M = 0 is a bias: the column sums of B, A NULL) it runs the float kernel
 * and the exact sum at each vector width this CPU has (AVX-512, AVX2:
 * halo_cpu_exact_limit_isa), keeps the best of R runs of each, and prints
 * milliseconds and exact/float.  With --dropout P (M > 0), A is dropout(X)
 * as the training's fused input dropout makes it: the float path drops each
 * block into a buffer (halo_cpu_dropout_to) and multiplies that, the exact
 * path is halo_cpu_exact_tn_dropped over all K rows at once, dropping
 * inside its threads.  On one thread (the default) the times are
 * the thread's CPU seconds, so that other work on a shared machine does
 * not count (it can still evict the caches); with --threads T > 1,
 * wall-clock seconds.
 *
 *   exact-tn [--threads T] [--reps R] [--block ROWS] [--dropout P] [KxMxN ...]
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "halo-exact.h"
#include "halo-kernels.h"
#include "halo-rng.h"

typedef struct shape {
  int64_t k, m, n;
} shape;

static int threads = 1;
static float drop_p = 0.0f; /* --dropout */
static const uint64_t DROP_KEY = 0x5eed;

static double now(void) {
  if (threads > 1) return omp_get_wtime();
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best time of `reps` runs of Aᵀ·B in blocks of `block` rows: the float
 * kernel (level < 0) or the exact sum capped at `level`. */
static double best_of(int level, shape s, int64_t block, const float *a, const float *b, float *c,
                      float *xd, const int64_t *gid, void *work, int64_t *part, int e, int reps) {
  double best = 1e30;
  if (level >= 0) halo_cpu_exact_limit_isa((halo_cpu_isa)level);
  for (int r = 0; r < reps; r++) {
    const double t0 = now();
    if (drop_p > 0.0f && level >= 0)
      halo_cpu_exact_tn_dropped(s.k, s.m, s.n, a, gid, DROP_KEY, drop_p, b, s.n, e, threads, work,
                                part, 0, NULL, 1);
    for (int64_t r0 = 0; r0 < s.k && drop_p > 0.0f && level < 0; r0 += block) {
      const int64_t rows = s.k - r0 < block ? s.k - r0 : block;
      halo_cpu_dropout_to(xd, a + r0 * s.m, rows, s.m, gid + r0, DROP_KEY, drop_p);
      halo_cpu_gemm(1, 0, s.m, s.n, rows, 1.0f, xd, s.m, b + r0 * s.n, s.n, r0 > 0 ? 1.0f : 0.0f,
                    c, s.n);
    }
    for (int64_t r0 = 0; r0 < s.k && drop_p <= 0.0f; r0 += block) {
      const int64_t rows = s.k - r0 < block ? s.k - r0 : block;
      if (level < 0 && s.m == 0)
        halo_cpu_colsum(b + r0 * s.n, rows, s.n, c);
      else if (level < 0)
        halo_cpu_gemm(1, 0, s.m, s.n, rows, 1.0f, a + r0 * s.m, s.m, b + r0 * s.n, s.n,
                      r0 > 0 ? 1.0f : 0.0f, c, s.n);
      else
        halo_cpu_exact_tn(rows, s.m ? s.m : 1, s.n, s.m ? a + r0 * s.m : NULL, s.m ? s.m : 1,
                          b + r0 * s.n, s.n, e, threads, work, part);
    }
    const double t = now() - t0;
    if (t < best) best = t;
  }
  halo_cpu_exact_limit_isa(HALO_CPU_ISA_AVX512);
  return best;
}

int main(int argc, char **argv) {
  int reps = 5;
  int64_t block = 7700;
  shape shapes[32];
  int nshapes = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--block") && i + 1 < argc) {
      block = atoll(argv[++i]);
    } else if (!strcmp(argv[i], "--dropout") && i + 1 < argc) {
      drop_p = (float)atof(argv[++i]);
    } else if (nshapes < 32) {
      long long k, m, n;
      if (sscanf(argv[i], "%lldx%lldx%lld", &k, &m, &n) != 3 || k <= 0 || m < 0 || n <= 0) {
        fprintf(stderr, "exact-tn: bad shape '%s' (want KxMxN, M = 0 for column sums)\n",
                argv[i]);
        return 2;
      }
      shapes[nshapes++] = (shape){k, m, n};
    }
  }
  if (threads < 1 || reps < 1 || block < 1) {
    fprintf(stderr, "exact-tn: --threads, --reps and --block take a positive number\n");
    return 2;
  }
  if (!(drop_p >= 0.0f && drop_p < 1.0f)) {
    fprintf(stderr, "exact-tn: --dropout takes a probability in [0, 1)\n");
    return 2;
  }
  if (nshapes == 0) {
    /* The sbm's first layers (128 features; hidden 64 and 16), second
     * layers (64 and 16 wide into 8 classes), and biases (16 and 8). */
    const shape defaults[] = {{200000, 128, 64}, {200000, 128, 16}, {200000, 64, 8},
                              {200000, 16, 8},   {200000, 0, 16},   {200000, 0, 8}};
    nshapes = (int)(sizeof defaults / sizeof defaults[0]);
    memcpy(shapes, defaults, sizeof defaults);
  }
  omp_set_num_threads(threads);
  printf("# %d thread(s), blocks of %lld rows, best of %d, %s time", threads, (long long)block,
         reps, threads > 1 ? "wall-clock" : "thread CPU");
  if (drop_p > 0.0f) printf(", A = dropout(X) at p %g", (double)drop_p);
  printf("\n");
  printf("%8s %5s %5s %10s %10s %10s %12s %12s\n", "K", "M", "N", "float ms", "avx512 ms",
         "avx2 ms", "avx512/flt", "avx2/flt");
  int status = 0;
  for (int s = 0; s < nshapes; s++) {
    const shape sh = shapes[s];
    const int64_t m = sh.m ? sh.m : 1;
    if (drop_p > 0.0f && sh.m == 0) {
      fprintf(stderr, "exact-tn: --dropout drops A: %lldx0x%lld has none\n", (long long)sh.k,
              (long long)sh.n);
      status = 2;
      continue;
    }
    float *a = malloc((size_t)(sh.k * m) * sizeof *a);
    float *b = malloc((size_t)(sh.k * sh.n) * sizeof *b);
    float *c = malloc((size_t)(m * sh.n) * sizeof *c);
    int64_t *part = malloc((size_t)(m * sh.n * HALO_EXACT_LIMBS) * sizeof *part);
    void *work = aligned_alloc(16, (halo_cpu_exact_tn_work(m, sh.n, threads) + 15) / 16 * 16);
    float *xd = malloc((size_t)(block * m) * sizeof *xd);
    int64_t *gid = malloc((size_t)sh.k * sizeof *gid);
    if (!a || !b || !c || !part || !work || !xd || !gid) {
      fprintf(stderr, "exact-tn: out of memory for %lldx%lldx%lld\n", (long long)sh.k,
              (long long)sh.m, (long long)sh.n);
      status = 1;
    } else {
      for (int64_t i = 0; i < sh.k * m; i++)
        a[i] = 2.0f * halo_rng_uniform(1, (uint64_t)i, 0) - 1.0f;
      for (int64_t i = 0; i < sh.k * sh.n; i++)
        b[i] = 2.0f * halo_rng_uniform(2, (uint64_t)i, 0) - 1.0f;
      for (int64_t i = 0; i < sh.k; i++) gid[i] = i;
      /* Every term below the bound: |A| <= 1/(1-p) (the dropout's scale), |B| <= 1. */
      const int e = halo_exact_exponent_terms(1.0 / (1.0 - (double)drop_p), sh.k);
      const double t_float = best_of(-1, sh, block, a, b, c, xd, gid, work, part, e, reps);
      double t[3] = {NAN, NAN, NAN};
      for (int level = HALO_CPU_ISA_AVX2; level <= HALO_CPU_ISA_AVX512; level++)
        if (halo_cpu_exact_limit_isa((halo_cpu_isa)level) == (halo_cpu_isa)level)
          t[level] = best_of(level, sh, block, a, b, c, xd, gid, work, part, e, reps);
      printf("%8lld %5lld %5lld %10.3f %10.3f %10.3f %12.2f %12.2f\n", (long long)sh.k,
             (long long)sh.m, (long long)sh.n, 1e3 * t_float, 1e3 * t[2], 1e3 * t[1],
             t[2] / t_float, t[1] / t_float);
    }
    free(a);
    free(b);
    free(c);
    free(part);
    free(work);
    free(xd);
    free(gid);
  }
  halo_cpu_exact_limit_isa(HALO_CPU_ISA_AVX512);
  return status;
}
