/* spmm-stream: how close halo_spmm_cpu comes to the machine's memory bandwidth.
 *
 * One run measures a STREAM triad (a[i] = b[i] + s·c[i], arrays far larger
 * than the last-level cache, best of N, all OpenMP threads) and then
 * halo_spmm_cpu on a random CSR matrix, and prints the ratio of the two
 * bandwidths.  SpMM bandwidth is counted with a minimal traffic model: every
 * byte the kernel must move at least once when X does not fit in cache and
 * columns are random, and nothing else (no write-allocate, no reuse):
 *
 *   bytes = 8·(rows+1)       indptr
 *         + 4·nnz            indices
 *         + 4·nnz            values (0 when values are all ones)
 *         + 4·rows·ncols     Y written
 *         + 4·nnz·ncols      X rows gathered, one per nonzero
 *
 * STREAM counts its traffic the same way (24 bytes per element, no
 * write-allocate), so the ratio compares like with like.
 *
 *   spmm-stream [--rows N] [--degree D] [--ncols 16,64] [--reps R]
 *               [--stream-mib M] [--seed S] [--no-values]
 */
#include <errno.h>
#include <inttypes.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-rng.h"
#include "halo-spmm.h"

enum { MAX_WIDTHS = 8 };

typedef struct options {
  int64_t rows;
  int64_t degree;
  int64_t ncols[MAX_WIDTHS];
  int nwidths;
  int reps;
  int64_t stream_mib;
  uint64_t seed;
  int values;
} options;

static int parse_int(const char *flag, const char *text, int64_t lo, int64_t hi, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "spmm-stream: error: %s %s: expected an integer in [%lld, %lld]\n", flag,
            text, (long long)lo, (long long)hi);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_widths(const char *text, options *opt) {
  char buf[256];
  if (strlen(text) >= sizeof buf) {
    fprintf(stderr, "spmm-stream: error: --ncols %s: list too long\n", text);
    return -1;
  }
  strcpy(buf, text);
  opt->nwidths = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    if (opt->nwidths == MAX_WIDTHS) {
      fprintf(stderr, "spmm-stream: error: --ncols %s: at most %d widths\n", text, MAX_WIDTHS);
      return -1;
    }
    if (parse_int("--ncols", tok, 1, 4096, &opt->ncols[opt->nwidths]) < 0) return -1;
    opt->nwidths++;
  }
  if (opt->nwidths == 0) {
    fprintf(stderr, "spmm-stream: error: --ncols %s: no width given\n", text);
    return -1;
  }
  return 0;
}

static int parse_options(int argc, char **argv, options *opt) {
  *opt = (options){.rows = 1000000, .degree = 16, .ncols = {16, 64}, .nwidths = 2, .reps = 10,
                   .stream_mib = 128, .seed = 1, .values = 1};
  for (int i = 1; i < argc; i++) {
    const char *flag = argv[i];
    int64_t v = 0;
    if (strcmp(flag, "--no-values") == 0) {
      opt->values = 0;
      continue;
    }
    if (i + 1 == argc) {
      fprintf(stderr, "spmm-stream: error: %s: unknown flag or missing value\n", flag);
      return -1;
    }
    const char *arg = argv[++i];
    if (strcmp(flag, "--rows") == 0) {
      if (parse_int(flag, arg, 1, INT32_MAX, &opt->rows) < 0) return -1;
    } else if (strcmp(flag, "--degree") == 0) {
      if (parse_int(flag, arg, 1, 1 << 20, &opt->degree) < 0) return -1;
    } else if (strcmp(flag, "--ncols") == 0) {
      if (parse_widths(arg, opt) < 0) return -1;
    } else if (strcmp(flag, "--reps") == 0) {
      if (parse_int(flag, arg, 2, 1000, &v) < 0) return -1;
      opt->reps = (int)v;
    } else if (strcmp(flag, "--stream-mib") == 0) {
      if (parse_int(flag, arg, 1, 1 << 16, &opt->stream_mib) < 0) return -1;
    } else if (strcmp(flag, "--seed") == 0) {
      if (parse_int(flag, arg, 0, INT64_MAX, &v) < 0) return -1;
      opt->seed = (uint64_t)v;
    } else {
      fprintf(stderr, "spmm-stream: error: %s: unknown flag\n", flag);
      return -1;
    }
  }
  return 0;
}

/* Best bandwidth of the triad over `reps` timed runs after one warm-up. */
static double stream_triad(int64_t n, int reps) {
  double *a = malloc((size_t)n * sizeof *a);
  double *b = malloc((size_t)n * sizeof *b);
  double *c = malloc((size_t)n * sizeof *c);
  double best = 0.0;
  if (!a || !b || !c) {
    fprintf(stderr, "spmm-stream: error: out of memory for the STREAM arrays\n");
    goto done;
  }
  /* First touch by the threads that will use the pages. */
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    a[i] = 1.0;
    b[i] = 2.0;
    c[i] = 0.5;
  }
  const double s = 3.0;
  for (int rep = 0; rep <= reps; rep++) {
    const double t0 = omp_get_wtime();
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
    const double t = omp_get_wtime() - t0;
    const double gbs = 3.0 * 8.0 * (double)n / t * 1e-9;
    if (rep > 0 && gbs > best) best = gbs;
  }
  /* Reading a result keeps the compiler from dropping the loop. */
  if (a[n / 2] != 2.0 + s * 0.5) {
    fprintf(stderr, "spmm-stream: error: STREAM triad gave a wrong result\n");
    best = 0.0;
  }
done:
  free(a);
  free(b);
  free(c);
  return best;
}

/* A rows × rows CSR with degrees uniform in [0, 2·degree] and columns
 * uniform at random: no locality for the gathers to exploit. */
static int make_graph(const options *opt, halo_csr *a) {
  const uint64_t key = halo_rng_key(opt->seed, HALO_RNG_GRAPH, 0, 0);
  *a = (halo_csr){.rows = opt->rows, .cols = opt->rows};
  a->indptr = malloc((size_t)(opt->rows + 1) * sizeof *a->indptr);
  if (!a->indptr) return -1;
  a->indptr[0] = 0;
  for (int64_t r = 0; r < opt->rows; r++) {
    const int64_t deg = (int64_t)(halo_rng_bits(key, (uint64_t)r, 0) % (uint64_t)(2 * opt->degree + 1));
    a->indptr[r + 1] = a->indptr[r] + deg;
  }
  a->nnz = a->indptr[opt->rows];
  a->indices = malloc((size_t)a->nnz * sizeof *a->indices);
  a->values = opt->values ? malloc((size_t)a->nnz * sizeof *a->values) : NULL;
  if (!a->indices || (opt->values && !a->values)) return -1;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < a->nnz; k++) {
    const uint64_t bits = halo_rng_bits(key, (uint64_t)k, 1);
    a->indices[k] = (int32_t)(bits % (uint64_t)opt->rows);
    if (a->values) a->values[k] = 0.5f + (float)(bits >> 40) * (1.0f / 16777216.0f);
  }
  return 0;
}

/* Times halo_spmm_cpu at one width; returns the best bandwidth in GB/s. */
static double time_spmm(const halo_csr *a, int64_t ncols, int reps, uint64_t seed,
                        double *best_s, double *mean_s) {
  const size_t n = (size_t)a->rows * (size_t)ncols;
  const size_t size = (n * sizeof(float) + 63) / 64 * 64; /* aligned_alloc wants a multiple */
  float *x = aligned_alloc(64, size);
  float *y = aligned_alloc(64, size);
  double gbs = 0.0;
  if (!x || !y) {
    fprintf(stderr, "spmm-stream: error: out of memory for X and Y (ncols %" PRId64 ")\n", ncols);
    goto done;
  }
  const uint64_t key = halo_rng_key(seed, HALO_RNG_FEATURES, (uint64_t)ncols, 0);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < a->rows; r++) {
    for (int64_t j = 0; j < ncols; j++) {
      x[r * ncols + j] = halo_rng_uniform(key, (uint64_t)r, (uint64_t)j) - 0.5f;
      y[r * ncols + j] = 0.0f;
    }
  }
  const double bytes = 8.0 * (double)(a->rows + 1) + 4.0 * (double)a->nnz +
                       (a->values ? 4.0 * (double)a->nnz : 0.0) +
                       4.0 * (double)a->rows * (double)ncols +
                       4.0 * (double)a->nnz * (double)ncols;
  double best = 1e30, sum = 0.0;
  for (int rep = 0; rep <= reps; rep++) {
    const double t0 = omp_get_wtime();
    halo_spmm_cpu(a, x, ncols, ncols, 0.0f, y, ncols, NULL, a->rows);
    const double t = omp_get_wtime() - t0;
    if (rep == 0) continue; /* warm-up */
    sum += t;
    if (t < best) best = t;
  }
  *best_s = best;
  *mean_s = sum / reps;
  gbs = bytes / best * 1e-9;
done:
  free(x);
  free(y);
  return gbs;
}

int main(int argc, char **argv) {
  options opt;
  halo_csr a = {0};
  int rc = 1;
  if (parse_options(argc, argv, &opt) < 0) return 2;

  const int threads = omp_get_max_threads();
  printf("spmm-stream: %d OpenMP threads, seed %" PRIu64 "\n", threads, opt.seed);
  printf("traffic model: bytes = 8*(rows+1) indptr + 4*nnz indices + 4*nnz values"
         " + 4*rows*ncols Y written + 4*nnz*ncols X rows gathered\n");

  const int64_t n = opt.stream_mib * 1024 * 1024 / 8;
  const double stream = stream_triad(n, opt.reps);
  if (stream <= 0.0) goto done;
  printf("stream triad: %" PRId64 " doubles per array (%" PRId64 " MiB each), best of %d:"
         " %.2f GB/s\n", n, opt.stream_mib, opt.reps, stream);

  if (make_graph(&opt, &a) < 0) {
    fprintf(stderr, "spmm-stream: error: out of memory for the graph\n");
    goto done;
  }
  printf("graph: %" PRId64 " rows, %" PRId64 " nonzeros (mean degree %.2f), uniform random"
         " columns, values %s\n", a.rows, a.nnz, (double)a.nnz / (double)a.rows,
         a.values ? "random" : "NULL (all ones)");
  printf("%6s %10s %10s %9s %8s\n", "ncols", "best_s", "mean_s", "GB/s", "stream");
  for (int w = 0; w < opt.nwidths; w++) {
    double best_s = 0.0, mean_s = 0.0;
    const double gbs = time_spmm(&a, opt.ncols[w], opt.reps, opt.seed, &best_s, &mean_s);
    if (gbs <= 0.0) goto done;
    printf("%6" PRId64 " %10.4f %10.4f %9.2f %7.1f%%\n", opt.ncols[w], best_s, mean_s, gbs,
           100.0 * gbs / stream);
  }
  rc = 0;
done:
  free(a.indptr);
  free(a.indices);
  free(a.values);
  return rc;
}
