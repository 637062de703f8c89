/* parallel-min: when a CPU kernel's loop should wake the OpenMP team
 * (kernels/cpu-parallel.h).  For sizes n = 2^10 .. 2^22 it times two loops
 * on the calling thread alone and on the whole team, alternated, each call
 * after GAP µs of work on the calling thread alone (as an epoch's serial
 * steps are), so that a passively waiting team has gone to sleep as it
 * does in training:
 *
 *   stream  y = max(y, 0) in place (ReLU): the loops of HALO_PARALLEL_STREAM;
 *   heavy   inverted dropout of x into y, one hash a value (the loops of
 *           HALO_PARALLEL_HEAVY).
 *
 * It prints the median µs of REPS calls of each, the team's time over one
 * thread's, and the thresholds halo uses.  Run it as halo-train runs:
 *
 *   OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2 build/bench/parallel-min [--reps R] [--gap US]
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu-parallel.h"
#include "halo-rng.h"

static void relu(float *y, int64_t n, int team) {
#pragma omp parallel for simd schedule(static) if (parallel : team)
  for (int64_t i = 0; i < n; i++) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

static void dropout(float *restrict y, const float *restrict x, int64_t n, int team) {
  const uint64_t key = halo_rng_key(1, HALO_RNG_DROPOUT, 0, 0);
  const float p = 0.5f, scale = halo_dropout_scale(p);
#pragma omp parallel for schedule(static) if (team)
  for (int64_t i = 0; i < n; i++)
    y[i] = halo_dropout_apply(x[i], key, (uint64_t)i >> 4, (uint64_t)i & 15, p, scale);
}

/* About `us` µs of work on the calling thread alone. */
static void serial_gap(float *z, double us) {
  const double t0 = omp_get_wtime();
  while ((omp_get_wtime() - t0) * 1e6 < us)
    for (int i = 0; i < 1024; i++) z[i] = z[i] * 0.5f + 1.0f;
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return v[n / 2];
}

int main(int argc, char **argv) {
  int reps = 101;
  double gap = 200.0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--gap") == 0 && i + 1 < argc) {
      gap = atof(argv[++i]);
    } else {
      fprintf(stderr, "usage: parallel-min [--reps R] [--gap US]\n");
      return 2;
    }
  }
  if (reps < 1 || gap < 0) {
    fprintf(stderr, "parallel-min: --reps must be positive and --gap not negative\n");
    return 2;
  }
  const int64_t most = (int64_t)1 << 22;
  float *x = malloc((size_t)most * sizeof *x), *y = malloc((size_t)most * sizeof *y);
  float z[1024] = {0};
  double *t[4];
  for (int k = 0; k < 4; k++) t[k] = malloc((size_t)reps * sizeof *t[k]);
  if (!x || !y || !t[0] || !t[1] || !t[2] || !t[3]) {
    fprintf(stderr, "parallel-min: out of memory\n");
    return 1;
  }
  for (int64_t i = 0; i < most; i++) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  const char *policy = getenv("OMP_WAIT_POLICY");
  printf("# %d threads, OMP_WAIT_POLICY=%s, %.0f us of serial work before each call, median "
         "of %d calls\n",
         omp_get_max_threads(), policy ? policy : "(unset)", gap, reps);
  printf("# halo's thresholds: HALO_PARALLEL_STREAM %lld, HALO_PARALLEL_HEAVY %lld values\n",
         (long long)HALO_PARALLEL_STREAM, (long long)HALO_PARALLEL_HEAVY);
  printf("%9s %12s %12s %7s %12s %12s %7s\n", "n", "stream 1 us", "stream T us", "T / 1",
         "heavy 1 us", "heavy T us", "T / 1");
  for (int64_t n = 1 << 10; n <= most; n <<= 1) {
    for (int r = 0; r < reps; r++)
      for (int k = 0; k < 4; k++) {
        memcpy(y, x, (size_t)n * sizeof *y);
        serial_gap(z, gap);
        const double t0 = omp_get_wtime();
        if (k < 2)
          relu(y, n, k == 1);
        else
          dropout(y, x, n, k == 3);
        t[k][r] = (omp_get_wtime() - t0) * 1e6;
      }
    double m[4];
    for (int k = 0; k < 4; k++) m[k] = median(t[k], reps);
    printf("%9lld %12.1f %12.1f %7.2f %12.1f %12.1f %7.2f\n", (long long)n, m[0], m[1],
           m[1] / m[0], m[2], m[3], m[3] / m[2]);
  }
  printf("# checksum %g\n", (double)(y[0] + y[most / 2] + z[0]));
  for (int k = 0; k < 4; k++) free(t[k]);
  free(x);
  free(y);
  return 0;
}
