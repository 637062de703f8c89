/* spmm-stream: how close halo_spmm_cpu comes to the machine's memory bandwidth.
 *
 * One run times a STREAM triad (a[i] = b[i] + s·c[i], arrays far larger
 * than the last-level cache, all OpenMP threads) and halo_spmm_cpu on a
 * random CSR matrix in alternating rounds, keeps the best of N for each,
 * checks sampled rows of Y, and prints the ratio of the two bandwidths.
 * SpMM bandwidth is counted with a minimal traffic model: every
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
 * write-allocate), so the ratio compares like with like.  When gathers have
 * locality, X rows come from cache more than once and the kernel moves
 * fewer bytes than the model counts, so the ratio may pass 100%: it is then
 * "the speed at which the model's bytes were consumed", as on any graph.
 *
 * A second reference is this machine's ceiling for random gathers: the
 * same number of X rows as the graph has nonzeros, from uniformly random
 * places in the same X, every cache line of a row loaded once, prefetched
 * ahead, nothing stored (gather_run).  STREAM moves bytes in order; no
 * SpMM whose columns are random can gather faster than this, so it is the
 * limit the `uniform` graph runs against, and the "gather" column is the
 * SpMM's rate over it (graphs with locality pass 100%).
 *
 * Each round runs the triad, then every width's product twice in a row,
 * then the gathers.
 * The second ("warm") run is the one the ratios use: it starts from what a
 * product leaves in the caches, as in training, where a layer's SpMM
 * follows the GEMM that wrote its X.  The first ("cold") starts right after
 * the triad has flushed the last-level cache; its paired ratio is printed
 * too, so that the difference stays visible.
 *
 *   spmm-stream [--rows N] [--degree D] [--ncols 16,64] [--reps R]
 *               [--graphs uniform,sbm-class] [--sbm KEYS]
 *               [--stream-mib M] [--seed S] [--no-values] [--hugepages]
 *
 * Graph kinds (--graphs, a comma list, each measured in turn):
 *   uniform    degrees uniform in [0, 2·degree], columns uniform at random:
 *              the worst case for the gathers
 *   sbm        the loader's stochastic block model
 *              (halo_load("sbm:nodes=rows,avg-degree=degree,KEYS")), node
 *              ids as generated: classes are scattered over the ids, so the
 *              gathers are nearly as random as `uniform`
 *   sbm-class  the same graph with nodes renumbered class block by class
 *              block (in id order inside a block): the order a partitioner
 *              that cuts along the blocks would give a part's owned rows
 *   sbm-rcm    the same graph in reverse Cuthill-McKee order, found from the
 *              structure alone
 *   sbm-part1  the same graph as halo-partition --parts 1 numbers it: the
 *              local CSR of the one shard, built by halo_partition_plan_shard
 *              (default --order community: greedy blocks of 500-1000 rows)
 *   sbm-part4  the owned rows of part 0 of halo-partition --parts 4 (METIS
 *              k-way, then the same plan): a rectangular CSR whose columns
 *              are the part's owned and halo rows, as the trainer multiplies
 *   (the last two need the partitioner, built when HDF5 is found)
 *
 * --hugepages asks for transparent huge pages (madvise) on every array,
 * STREAM's included: random gathers then miss the TLB far less often.
 */
#define _DEFAULT_SOURCE /* strtok_r */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-hostmem.h"
#include "halo-load.h"
#include "halo-partition.h"
#include "halo-rng.h"
#include "halo-spmm.h"

typedef enum {
  GRAPH_UNIFORM,
  GRAPH_SBM,
  GRAPH_SBM_CLASS,
  GRAPH_SBM_RCM,
  GRAPH_SBM_PART1,
  GRAPH_SBM_PART4,
  GRAPH_KINDS
} graph_kind;

static const char *const GRAPH_NAMES[GRAPH_KINDS] = {"uniform", "sbm",       "sbm-class",
                                                     "sbm-rcm", "sbm-part1", "sbm-part4"};

enum { MAX_WIDTHS = 8, MAX_GRAPHS = 8 };

typedef struct options {
  int64_t rows;
  int64_t degree;
  int64_t ncols[MAX_WIDTHS];
  int nwidths;
  int reps;
  graph_kind graphs[MAX_GRAPHS];
  int ngraphs;
  char sbm_keys[256];
  int64_t stream_mib;
  uint64_t seed;
  int values;
  int hugepages;
} options;

/* `bytes` of memory aligned to 2 MiB either way (so that the two page
 * settings differ in nothing else), with transparent huge pages requested
 * (halo_hostmem_alloc) if asked; NULL when out of memory.  Released with
 * free(). */
static void *bench_alloc(size_t bytes, int hugepages) {
  if (hugepages) return halo_hostmem_alloc(bytes);
  const size_t align = HALO_HOSTMEM_HUGE;
  return aligned_alloc(align, bytes ? (bytes + align - 1) / align * align : align);
}

static int parse_int(const char *flag, const char *text, int64_t lo, int64_t hi, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "spmm-stream: error: %s %s: expected an integer in [%lld, %lld]\n", flag, text,
            (long long)lo, (long long)hi);
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
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
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

static int parse_graphs(const char *text, options *opt) {
  char buf[256];
  if (strlen(text) >= sizeof buf) {
    fprintf(stderr, "spmm-stream: error: --graphs %s: list too long\n", text);
    return -1;
  }
  strcpy(buf, text);
  opt->ngraphs = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int kind = -1;
    for (int k = 0; k < GRAPH_KINDS; k++)
      if (strcmp(tok, GRAPH_NAMES[k]) == 0) kind = k;
    if (kind < 0) {
      fprintf(stderr,
              "spmm-stream: error: --graphs %s: unknown graph '%s' (known: uniform, sbm,"
              " sbm-class, sbm-rcm, sbm-part1, sbm-part4)\n",
              text, tok);
      return -1;
    }
    if (opt->ngraphs == MAX_GRAPHS) {
      fprintf(stderr, "spmm-stream: error: --graphs %s: at most %d graphs\n", text, MAX_GRAPHS);
      return -1;
    }
    opt->graphs[opt->ngraphs++] = (graph_kind)kind;
  }
  if (opt->ngraphs == 0) {
    fprintf(stderr, "spmm-stream: error: --graphs %s: no graph given\n", text);
    return -1;
  }
  return 0;
}

static int parse_options(int argc, char **argv, options *opt) {
  *opt = (options){.rows = 1000000,
                   .degree = 16,
                   .ncols = {16, 64},
                   .nwidths = 2,
                   .reps = 10,
                   .graphs = {GRAPH_UNIFORM, GRAPH_SBM_CLASS},
                   .ngraphs = 2,
                   .sbm_keys = "classes=1024,homophily=0.8",
                   .stream_mib = 128,
                   .seed = 1,
                   .values = 1};
  for (int i = 1; i < argc; i++) {
    const char *flag = argv[i];
    int64_t v = 0;
    if (strcmp(flag, "--no-values") == 0) {
      opt->values = 0;
      continue;
    }
    if (strcmp(flag, "--hugepages") == 0) {
      opt->hugepages = 1;
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
    } else if (strcmp(flag, "--graphs") == 0) {
      if (parse_graphs(arg, opt) < 0) return -1;
    } else if (strcmp(flag, "--sbm") == 0) {
      if (strlen(arg) >= sizeof opt->sbm_keys) {
        fprintf(stderr, "spmm-stream: error: --sbm %s: too long\n", arg);
        return -1;
      }
      strcpy(opt->sbm_keys, arg);
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

/* The triad's arrays. */
typedef struct stream_arrays {
  int64_t n;
  double *a, *b, *c;
} stream_arrays;

static int stream_setup(stream_arrays *st, int64_t n, int hugepages) {
  st->n = n;
  st->a = bench_alloc((size_t)n * sizeof *st->a, hugepages);
  st->b = bench_alloc((size_t)n * sizeof *st->b, hugepages);
  st->c = bench_alloc((size_t)n * sizeof *st->c, hugepages);
  if (!st->a || !st->b || !st->c) return -1;
    /* First touch by the threads that will use the pages. */
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    st->a[i] = 1.0;
    st->b[i] = 2.0;
    st->c[i] = 0.5;
  }
  return 0;
}

/* One triad a = b + 3·c; returns its time in seconds. */
static double stream_run(const stream_arrays *st) {
  double *restrict a = st->a;
  const double *restrict b = st->b, *restrict c = st->c;
  const double t0 = omp_get_wtime();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < st->n; i++) a[i] = b[i] + 3.0 * c[i];
  return omp_get_wtime() - t0;
}

static void stream_free(stream_arrays *st) {
  free(st->a);
  free(st->b);
  free(st->c);
}

/* Rows the random gather prefetches ahead: 32 rows ran faster than 16 or
 * 64 at width 16 on a 64 MiB table (4.4 against 4.8 ns per row, 2 threads,
 * 2026-11-30). */
enum { GATHER_AHEAD = 32 };

/* Keeps the compiler from dropping the gathers' loads. */
static volatile float gather_sink;

/* The start of the cache line that holds *p. */
static const char *line_of(const float *p) { return (const char *)((uintptr_t)p & ~(uintptr_t)63); }

/* Loads the first float of every cache line that X rows idx[0 .. n) span,
 * X having ncols floats per row and starting on a line (bench_alloc);
 * returns the time in seconds. */
static double gather_run(const float *x, int64_t ncols, const int32_t *idx, int64_t n) {
  float sum = 0.0f;
  const double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static) reduction(+ : sum)
  for (int64_t k = 0; k < n; k++) {
    if (k + GATHER_AHEAD < n) {
      const float *ahead = x + (int64_t)idx[k + GATHER_AHEAD] * ncols;
      for (const char *l = line_of(ahead); l <= line_of(ahead + ncols - 1); l += 64)
        __builtin_prefetch(l, 0, 3);
    }
    const float *xr = x + (int64_t)idx[k] * ncols;
    for (const char *l = line_of(xr); l <= line_of(xr + ncols - 1); l += 64)
      sum += *(const float *)l;
  }
  const double t = omp_get_wtime() - t0;
  gather_sink = sum;
  return t;
}

/* Random values in [0.5, 1.5), a pure function of (seed, position). */
static void fill_values(halo_csr *a, uint64_t key) {
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < a->nnz; k++)
    a->values[k] = 0.5f + (float)(halo_rng_bits(key, (uint64_t)k, 2) >> 40) * (1.0f / 16777216.0f);
}

/* A rows × rows CSR with degrees uniform in [0, 2·degree] and columns
 * uniform at random: no locality for the gathers to exploit. */
static int make_uniform(const options *opt, halo_csr *a) {
  const uint64_t key = halo_rng_key(opt->seed, HALO_RNG_GRAPH, 0, 0);
  *a = (halo_csr){.rows = opt->rows, .cols = opt->rows};
  a->indptr = bench_alloc((size_t)(opt->rows + 1) * sizeof *a->indptr, opt->hugepages);
  if (!a->indptr) return -1;
  a->indptr[0] = 0;
  for (int64_t r = 0; r < opt->rows; r++) {
    const int64_t deg =
        (int64_t)(halo_rng_bits(key, (uint64_t)r, 0) % (uint64_t)(2 * opt->degree + 1));
    a->indptr[r + 1] = a->indptr[r] + deg;
  }
  a->nnz = a->indptr[opt->rows];
  a->indices = bench_alloc((size_t)a->nnz * sizeof *a->indices, opt->hugepages);
  a->values = opt->values ? bench_alloc((size_t)a->nnz * sizeof *a->values, opt->hugepages) : NULL;
  if (!a->indices || (opt->values && !a->values)) return -1;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < a->nnz; k++) {
    const uint64_t bits = halo_rng_bits(key, (uint64_t)k, 1);
    a->indices[k] = (int32_t)(bits % (uint64_t)opt->rows);
    if (a->values) a->values[k] = 0.5f + (float)(bits >> 40) * (1.0f / 16777216.0f);
  }
  return 0;
}

/* Reverse Cuthill-McKee order of g's (symmetric) structure: perm[new] =
 * old.  Each component is searched breadth-first from a node of least
 * degree, the unvisited neighbours of a node taken in increasing degree, and
 * the whole order reversed.  Returns -1 when out of memory. */
static int rcm_order(const halo_graph *g, int64_t *perm) {
  const int64_t n = g->n;
  int64_t max_deg = 0;
  for (int64_t u = 0; u < n; u++)
    if (g->indptr[u + 1] - g->indptr[u] > max_deg) max_deg = g->indptr[u + 1] - g->indptr[u];
  uint8_t *seen = calloc((size_t)n, 1);
  int64_t *by_deg = malloc((size_t)n * sizeof *by_deg);
  int64_t *count = calloc((size_t)max_deg + 2, sizeof *count);
  int rc = -1;
  if (!seen || !by_deg || !count) goto done;
  /* Start candidates: every node, in increasing degree (a counting sort). */
  for (int64_t u = 0; u < n; u++) count[g->indptr[u + 1] - g->indptr[u] + 1]++;
  for (int64_t d = 0; d <= max_deg; d++) count[d + 1] += count[d];
  for (int64_t u = 0; u < n; u++) by_deg[count[g->indptr[u + 1] - g->indptr[u]]++] = u;

  int64_t head = 0, tail = 0, next_start = 0;
  while (tail < n) {
    while (seen[by_deg[next_start]]) next_start++;
    perm[tail++] = by_deg[next_start];
    seen[by_deg[next_start]] = 1;
    while (head < tail) {
      const int64_t u = perm[head++], first = tail;
      for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++) {
        const int64_t v = g->indices[k];
        if (!seen[v]) {
          seen[v] = 1;
          perm[tail++] = v;
        }
      }
      /* Insertion sort by degree: a node adds a few dozen at most. */
      for (int64_t i = first + 1; i < tail; i++) {
        const int64_t v = perm[i], dv = g->indptr[v + 1] - g->indptr[v];
        int64_t j = i;
        for (; j > first && g->indptr[perm[j - 1] + 1] - g->indptr[perm[j - 1]] > dv; j--)
          perm[j] = perm[j - 1];
        perm[j] = v;
      }
    }
  }
  for (int64_t i = 0, j = n - 1; i < j; i++, j--) {
    const int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  rc = 0;
done:
  free(count);
  free(by_deg);
  free(seen);
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0 .. n), n > 0; sorts v. */
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int cmp_int32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The loader's SBM on opt->rows nodes, renumbered as `kind` says, as a CSR
 * with columns sorted inside each row (as a shard stores them). */
static int make_sbm(const options *opt, graph_kind kind, halo_csr *a) {
  char spec[512];
  halo_graph *g = NULL;
  int64_t *perm = NULL, *inv = NULL;
  int rc = -1;
  *a = (halo_csr){0};
  snprintf(spec, sizeof spec,
           "sbm:nodes=%" PRId64 ",avg-degree=%" PRId64 ",feat=0,seed=%" PRIu64 ",%s", opt->rows,
           opt->degree, opt->seed, opt->sbm_keys);
  const halo_status st = halo_load(spec, HALO_FORMAT_SPEC, &g);
  if (st != HALO_OK) goto done; /* the loader has said what is wrong */
  const int64_t n = g->n;
  perm = malloc((size_t)n * sizeof *perm);
  inv = malloc((size_t)n * sizeof *inv);
  if (!perm || !inv) goto oom;
  if (kind == GRAPH_SBM) {
    for (int64_t u = 0; u < n; u++) perm[u] = u;
  } else if (kind == GRAPH_SBM_CLASS) {
    /* A stable counting sort by class: blocks in class order, ids rising. */
    int64_t *start = calloc((size_t)g->classes + 1, sizeof *start);
    if (!start) goto oom;
    for (int64_t u = 0; u < n; u++) start[g->labels[u] + 1]++;
    for (int32_t c = 0; c < g->classes; c++) start[c + 1] += start[c];
    for (int64_t u = 0; u < n; u++) perm[start[g->labels[u]]++] = u;
    free(start);
  } else if (rcm_order(g, perm) < 0) {
    goto oom;
  }
  for (int64_t i = 0; i < n; i++) inv[perm[i]] = i;

  *a = (halo_csr){.rows = n, .cols = n, .nnz = g->m};
  a->indptr = bench_alloc((size_t)(n + 1) * sizeof *a->indptr, opt->hugepages);
  a->indices = bench_alloc((size_t)a->nnz * sizeof *a->indices, opt->hugepages);
  a->values = opt->values ? bench_alloc((size_t)a->nnz * sizeof *a->values, opt->hugepages) : NULL;
  if (!a->indptr || !a->indices || (opt->values && !a->values)) goto oom;
  a->indptr[0] = 0;
  for (int64_t i = 0; i < n; i++)
    a->indptr[i + 1] = a->indptr[i] + g->indptr[perm[i] + 1] - g->indptr[perm[i]];
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t i = 0; i < n; i++) {
    const int64_t u = perm[i];
    int32_t *row = a->indices + a->indptr[i];
    for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++)
      row[k - g->indptr[u]] = (int32_t)inv[g->indices[k]];
    qsort(row, (size_t)(a->indptr[i + 1] - a->indptr[i]), sizeof *row, cmp_int32);
  }
  if (a->values) fill_values(a, halo_rng_key(opt->seed, HALO_RNG_GRAPH, 0, 0));
  rc = 0;
  goto done;
oom:
  fprintf(stderr, "spmm-stream: error: out of memory building the %s graph\n", GRAPH_NAMES[kind]);
done:
  free(inv);
  free(perm);
  halo_graph_destroy(&g);
  return rc;
}

/* The loader's SBM partitioned as halo-partition does it (clean-up, METIS
 * k-way into `parts`, seed 1, then halo_partition_plan_shard in the default
 * row order), and part 0's local CSR copied out: rows are its owned nodes,
 * columns its owned and halo rows. */
static int make_part(const options *opt, int32_t parts, halo_csr *a) {
  char spec[512];
  halo_graph *g = NULL;
  int32_t *part = NULL;
  halo_partition_plan *plan = NULL;
  halo_shard *s = NULL;
  int rc = -1;
  *a = (halo_csr){0};
  snprintf(spec, sizeof spec,
           "sbm:nodes=%" PRId64 ",avg-degree=%" PRId64 ",feat=0,seed=%" PRIu64 ",%s", opt->rows,
           opt->degree, opt->seed, opt->sbm_keys);
  halo_partition_options popt = HALO_PARTITION_OPTIONS_INIT;
  popt.parts = parts;
  /* Every library call below logs its own failure. */
  if (halo_load(spec, HALO_FORMAT_SPEC, &g) != HALO_OK) goto done;
  if (halo_partition_clean(g, NULL) != HALO_OK) goto done;
  part = malloc((size_t)g->n * sizeof *part);
  if (!part) goto oom;
  const double t0 = omp_get_wtime();
  if (halo_partition_metis(g, &popt, part) != HALO_OK) goto done;
  const double t1 = omp_get_wtime();
  if (halo_partition_plan_create(g, part, parts, popt.order, 0, &plan) != HALO_OK) goto done;
  if (halo_partition_plan_shard(plan, 0, &s) != HALO_OK) goto done;
  printf("  partition: METIS %d parts %.1f s, part 0 planned (%s order) in %.1f s: %" PRId64
         " owned rows (%" PRId64 " interior), %" PRId64 " halo rows\n",
         parts, t1 - t0, halo_order_name(popt.order), omp_get_wtime() - t1, s->n_owned,
         s->n_interior, s->n_halo);

  *a = (halo_csr){.rows = s->n_owned, .cols = s->n_owned + s->n_halo, .nnz = s->nnz};
  a->indptr = bench_alloc((size_t)(a->rows + 1) * sizeof *a->indptr, opt->hugepages);
  a->indices = bench_alloc((size_t)a->nnz * sizeof *a->indices, opt->hugepages);
  a->values = opt->values ? bench_alloc((size_t)a->nnz * sizeof *a->values, opt->hugepages) : NULL;
  if (!a->indptr || !a->indices || (opt->values && !a->values)) goto oom;
  memcpy(a->indptr, s->indptr, (size_t)(a->rows + 1) * sizeof *a->indptr);
  memcpy(a->indices, s->indices, (size_t)a->nnz * sizeof *a->indices);
  if (a->values) fill_values(a, halo_rng_key(opt->seed, HALO_RNG_GRAPH, 0, 0));
  rc = 0;
  goto done;
oom:
  fprintf(stderr, "spmm-stream: error: out of memory building the partitioned graph\n");
done:
  halo_shard_destroy(&s);
  halo_partition_plan_destroy(&plan);
  free(part);
  halo_graph_destroy(&g);
  return rc;
}

/* Builds graph `kind` into a; returns 0 or -1 (the error is printed). */
static int make_graph(const options *opt, graph_kind kind, halo_csr *a) {
  switch (kind) {
    case GRAPH_UNIFORM:
      return make_uniform(opt, a);
    case GRAPH_SBM_PART1:
      return make_part(opt, 1, a);
    case GRAPH_SBM_PART4:
      return make_part(opt, 4, a);
    default:
      return make_sbm(opt, kind, a);
  }
}

/* The share of nonzeros whose column lies within `window` rows of their
 * row: how local the gathers are. */
static double near_share(const halo_csr *a, int64_t window) {
  int64_t near = 0;
#pragma omp parallel for schedule(static) reduction(+ : near)
  for (int64_t r = 0; r < a->rows; r++)
    for (int64_t k = a->indptr[r]; k < a->indptr[r + 1]; k++)
      near += llabs((int64_t)a->indices[k] - r) <= window;
  return a->nnz ? (double)near / (double)a->nnz : 0.0;
}

static void csr_free(halo_csr *a) {
  free(a->indptr);
  free(a->indices);
  free(a->values);
  *a = (halo_csr){0};
}

/* X and Y at one width. */
typedef struct spmm_operands {
  int64_t ncols;
  float *x, *y;
} spmm_operands;

/* X has a->cols rows (a part's owned and halo rows), Y a->rows. */
static int spmm_setup(spmm_operands *op, const halo_csr *a, int64_t ncols, const options *opt) {
  op->ncols = ncols;
  op->x = bench_alloc((size_t)a->cols * (size_t)ncols * sizeof *op->x, opt->hugepages);
  op->y = bench_alloc((size_t)a->rows * (size_t)ncols * sizeof *op->y, opt->hugepages);
  if (!op->x || !op->y) return -1;
  const uint64_t key = halo_rng_key(opt->seed, HALO_RNG_FEATURES, (uint64_t)ncols, 0);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < a->cols; r++)
    for (int64_t j = 0; j < ncols; j++)
      op->x[r * ncols + j] = halo_rng_uniform(key, (uint64_t)r, (uint64_t)j) - 0.5f;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < a->rows; r++)
    for (int64_t j = 0; j < ncols; j++) op->y[r * ncols + j] = 0.0f;
  return 0;
}

/* Bytes of the random gather: its indices and the rows. */
static double gather_bytes(int64_t n, int64_t ncols) {
  return 4.0 * (double)n + 4.0 * (double)n * (double)ncols;
}

/* Bytes of the traffic model (see the top of the file). */
static double spmm_bytes(const halo_csr *a, int64_t ncols) {
  return 8.0 * (double)(a->rows + 1) + 4.0 * (double)a->nnz +
         (a->values ? 4.0 * (double)a->nnz : 0.0) + 4.0 * (double)a->rows * (double)ncols +
         4.0 * (double)a->nnz * (double)ncols;
}

/* One Y = A·X over all rows; returns its time in seconds. */
static double spmm_run(const halo_csr *a, const spmm_operands *op) {
  const double t0 = omp_get_wtime();
  halo_spmm_cpu(a, op->x, op->ncols, op->ncols, 0.0f, op->y, op->ncols, NULL, a->rows);
  return omp_get_wtime() - t0;
}

/* Checks 1000 sampled rows of Y against a double-precision sum, so that a
 * fast but wrong kernel cannot pass; returns the worst error relative to
 * Σ|terms|, or -1 for an error above float rounding. */
static double spmm_check(const halo_csr *a, const spmm_operands *op, uint64_t seed) {
  double worst = 0.0;
  for (uint64_t s = 0; s < 1000; s++) {
    const int64_t r = (int64_t)(halo_rng_bits(seed, s, 7) % (uint64_t)a->rows);
    const int64_t deg = a->indptr[r + 1] - a->indptr[r];
    for (int64_t j = 0; j < op->ncols; j++) {
      double ref = 0.0, mag = 0.0;
      for (int64_t k = a->indptr[r]; k < a->indptr[r + 1]; k++) {
        const double term =
            (a->values ? a->values[k] : 1.0) * op->x[(int64_t)a->indices[k] * op->ncols + j];
        ref += term;
        mag += fabs(term);
      }
      const double err = fabs(op->y[r * op->ncols + j] - ref);
      if (err > (double)(deg + 1) * FLT_EPSILON * mag + FLT_MIN) return -1.0;
      if (mag > 0.0 && err / mag > worst) worst = err / mag;
    }
  }
  return worst;
}

/* Best and total time of one measured kernel. */
typedef struct timing {
  double best, sum, last;
} timing;

static void timing_add(timing *t, double s) {
  if (t->sum == 0.0 || s < t->best) t->best = s;
  t->sum += s;
  t->last = s;
}

/* Builds one graph kind, times it against STREAM in alternating rounds,
 * checks Y and prints one line per width; returns 0 or -1. */
static int bench_graph(const options *opt, graph_kind kind, const stream_arrays *st) {
  halo_csr a = {0};
  spmm_operands ops[MAX_WIDTHS] = {{0}};
  timing stream_t = {0}, spmm_t[MAX_WIDTHS] = {{0}}, gather_t[MAX_WIDTHS] = {{0}};
  /* [w * reps + rep - 1]: a warm (cold) SpMM rate over the STREAM rate of
   * its round; the warm SpMM rate over the gather rate of its round */
  double *paired = NULL, *paired_cold = NULL, *paired_gather = NULL;
  int32_t *gather_idx = NULL;
  int rc = -1;

  const double t_build = omp_get_wtime();
  printf("\ngraph %s:\n", GRAPH_NAMES[kind]);
  if (make_graph(opt, kind, &a) < 0) goto done;
  printf("  %" PRId64 " rows, %" PRId64 " columns, %" PRId64
         " nonzeros (mean degree %.2f), values %s, built in %.1f s\n",
         a.rows, a.cols, a.nnz, a.rows ? (double)a.nnz / (double)a.rows : 0.0,
         a.values ? "random" : "NULL (all ones)", omp_get_wtime() - t_build);
  if (kind != GRAPH_UNIFORM)
    printf("  sbm:nodes=%" PRId64 ",avg-degree=%" PRId64 ",feat=0,seed=%" PRIu64 ",%s\n", opt->rows,
           opt->degree, opt->seed, opt->sbm_keys);
  printf("  locality: %.1f%% of nonzeros within 1024 rows of their row, %.1f%% within 16384\n",
         100.0 * near_share(&a, 1024), 100.0 * near_share(&a, 16384));
  paired = malloc((size_t)opt->nwidths * (size_t)opt->reps * sizeof *paired);
  paired_cold = malloc((size_t)opt->nwidths * (size_t)opt->reps * sizeof *paired_cold);
  paired_gather = malloc((size_t)opt->nwidths * (size_t)opt->reps * sizeof *paired_gather);
  gather_idx = bench_alloc((size_t)a.nnz * sizeof *gather_idx, opt->hugepages);
  if (!paired || !paired_cold || !paired_gather || !gather_idx) goto done;
  const uint64_t gather_key = halo_rng_key(opt->seed, HALO_RNG_GRAPH, 1, 0);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < a.nnz; k++)
    gather_idx[k] = (int32_t)(halo_rng_bits(gather_key, (uint64_t)k, 0) % (uint64_t)a.cols);
  for (int w = 0; w < opt->nwidths; w++) {
    if (spmm_setup(&ops[w], &a, opt->ncols[w], opt) < 0) {
      fprintf(stderr, "spmm-stream: error: out of memory for X and Y (ncols %" PRId64 ")\n",
              opt->ncols[w]);
      goto done;
    }
  }

  /* The kernels take turns, so that a burst of load from elsewhere on the
   * machine slows STREAM and SpMM alike.  Round 0 is a warm-up. */
  for (int rep = 0; rep <= opt->reps; rep++) {
    const double ts = stream_run(st);
    if (rep > 0) timing_add(&stream_t, ts);
    for (int w = 0; w < opt->nwidths; w++) {
      const double t_cold = spmm_run(&a, &ops[w]);
      const double t_warm = spmm_run(&a, &ops[w]);
      if (rep == 0) continue;
      timing_add(&spmm_t[w], t_warm);
      const double per_triad = spmm_bytes(&a, opt->ncols[w]) / (24.0 * (double)st->n / ts);
      paired[w * opt->reps + rep - 1] = per_triad / t_warm;
      paired_cold[w * opt->reps + rep - 1] = per_triad / t_cold;
    }
    for (int w = 0; w < opt->nwidths; w++) {
      const double tg = gather_run(ops[w].x, opt->ncols[w], gather_idx, a.nnz);
      if (rep == 0) continue;
      timing_add(&gather_t[w], tg);
      const double t_warm = spmm_t[w].last;
      paired_gather[w * opt->reps + rep - 1] =
          spmm_bytes(&a, opt->ncols[w]) / t_warm / (gather_bytes(a.nnz, opt->ncols[w]) / tg);
    }
  }
  /* Reading a result keeps the compiler from dropping the triad. */
  if (st->a[st->n / 2] != 2.0 + 3.0 * 0.5) {
    fprintf(stderr, "spmm-stream: error: STREAM triad gave a wrong result\n");
    goto done;
  }
  for (int w = 0; w < opt->nwidths; w++) {
    const double err = spmm_check(&a, &ops[w], opt->seed);
    if (err < 0.0) {
      fprintf(stderr, "spmm-stream: error: %s: Y is wrong at width %" PRId64 "\n",
              GRAPH_NAMES[kind], opt->ncols[w]);
      goto done;
    }
    printf("  check: width %" PRId64 ", 1000 sampled rows, worst relative error %.2g\n",
           opt->ncols[w], err);
  }

  const double stream = 24.0 * (double)st->n / stream_t.best * 1e-9;
  printf("  stream triad: best of %d %.2f GB/s (mean %.2f)\n", opt->reps, stream,
         24.0 * (double)st->n / (stream_t.sum / opt->reps) * 1e-9);
  for (int w = 0; w < opt->nwidths; w++) {
    const double gbs = gather_bytes(a.nnz, opt->ncols[w]) / gather_t[w].best * 1e-9;
    printf("  random gather, width %" PRId64 ": best of %d %.2f GB/s (%.1f%% of the triad)\n",
           opt->ncols[w], opt->reps, gbs, 100.0 * gbs / stream);
  }
  /* "stream": best SpMM rate over best STREAM rate.  "paired": the median
   * over rounds of the SpMM rate over the rate of the triad just before it,
   * which a quiet spell that helps one kernel and not the other moves less.
   * "cold": the paired ratio of the run right after the triad.  "gather":
   * the median over rounds of the SpMM rate over the random-gather rate. */
  printf("  %-10s %6s %10s %10s %9s %9s %8s %8s %8s %8s\n", "graph", "ncols", "best_s", "mean_s",
         "MB", "GB/s", "stream", "paired", "cold", "gather");
  for (int w = 0; w < opt->nwidths; w++) {
    const double bytes = spmm_bytes(&a, opt->ncols[w]);
    const double gbs = bytes / spmm_t[w].best * 1e-9;
    printf("  %-10s %6" PRId64 " %10.4f %10.4f %9.1f %9.2f %7.1f%% %7.1f%% %7.1f%% %7.1f%%\n",
           GRAPH_NAMES[kind], opt->ncols[w], spmm_t[w].best, spmm_t[w].sum / opt->reps,
           bytes * 1e-6, gbs, 100.0 * gbs / stream,
           100.0 * median(paired + w * opt->reps, opt->reps),
           100.0 * median(paired_cold + w * opt->reps, opt->reps),
           100.0 * median(paired_gather + w * opt->reps, opt->reps));
  }
  rc = 0;
done:
  for (int w = 0; w < opt->nwidths; w++) {
    free(ops[w].x);
    free(ops[w].y);
  }
  csr_free(&a);
  free(paired);
  free(paired_cold);
  free(paired_gather);
  free(gather_idx);
  return rc;
}

int main(int argc, char **argv) {
  options opt;
  stream_arrays st = {0};
  int rc = 1;
  if (parse_options(argc, argv, &opt) < 0) return 2;

  printf("spmm-stream: %d OpenMP threads, seed %" PRIu64 ", %s pages\n", omp_get_max_threads(),
         opt.seed, opt.hugepages ? "transparent huge" : "default");
  printf(
      "traffic model: bytes = 8*(rows+1) indptr + 4*nnz indices + 4*nnz values"
      " + 4*rows*ncols Y written + 4*nnz*ncols X rows gathered\n");
  const int64_t n = opt.stream_mib * 1024 * 1024 / 8;
  if (stream_setup(&st, n, opt.hugepages) < 0) {
    fprintf(stderr, "spmm-stream: error: out of memory for the STREAM arrays\n");
    goto done;
  }
  printf("stream triad: %" PRId64 " doubles per array (%" PRId64 " MiB each)\n", n, opt.stream_mib);
  for (int g = 0; g < opt.ngraphs; g++)
    if (bench_graph(&opt, opt.graphs[g], &st) < 0) goto done;
  rc = 0;
done:
  stream_free(&st);
  return rc;
}
