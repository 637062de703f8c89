#include "partition-util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "halo-load.h"
#include "halo-rng.h"

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  cr_assert_not_null(p, "out of memory");
  return p;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

uint64_t pt_seed(const char *test, uint64_t fallback) {
  const char *env = getenv("HALO_TEST_SEED");
  uint64_t seed = env && *env ? strtoull(env, NULL, 0) : fallback;
  fprintf(stderr, "%s: seed %llu (set HALO_TEST_SEED to change)\n", test, (unsigned long long)seed);
  return seed;
}

halo_graph *pt_graph_from_edges(int64_t n, int64_t m, const int64_t *src, const int64_t *dst) {
  halo_graph *g = NULL;
  cr_assert_eq(halo_graph_create(n, m, &g), HALO_OK);
  snprintf(g->source, sizeof g->source, "test-graph");
  for (int64_t k = 0; k < m; k++) g->indptr[src[k] + 1]++;
  for (int64_t v = 0; v < n; v++) g->indptr[v + 1] += g->indptr[v];
  int64_t *next = xcalloc((size_t)n + 1, sizeof *next);
  memcpy(next, g->indptr, (size_t)(n + 1) * sizeof *next);
  for (int64_t k = 0; k < m; k++) g->indices[next[src[k]]++] = dst[k];
  free(next);
  return g;
}

halo_graph *pt_graph_random(int64_t n, int64_t m, uint64_t seed) {
  int64_t *src = xcalloc((size_t)m * 2, sizeof *src), *dst = xcalloc((size_t)m * 2, sizeof *dst);
  uint64_t key = halo_rng_key(seed, 99, 1, 0);
  int64_t count = 0;
  for (int64_t k = 0; k < m; k++) {
    uint64_t r = halo_rng_bits(key, (uint64_t)k, 0);
    int64_t u = (int64_t)(halo_rng_bits(key, (uint64_t)k, 1) % (uint64_t)n);
    int64_t v = (int64_t)(halo_rng_bits(key, (uint64_t)k, 2) % (uint64_t)n);
    if (u % 11 == 5 || v % 11 == 5) continue; /* these nodes stay isolated */
    switch (r % 20) {
      case 0:
        v = u;
        break; /* self-loop */
      case 1:  /* repeat an earlier edge */
        if (count > 0) {
          int64_t j = (int64_t)(r / 20 % (uint64_t)count);
          u = src[j];
          v = dst[j];
        }
        break;
      default:
        break;
    }
    src[count] = u;
    dst[count++] = v;
    if (r % 3 == 0) { /* about a third of the edges come with their reverse */
      src[count] = v;
      dst[count++] = u;
    }
  }
  halo_graph *g = pt_graph_from_edges(n, count, src, dst);
  free(src);
  free(dst);
  g->features = 5;
  g->classes = 3;
  g->x = xcalloc((size_t)(n * g->features), sizeof *g->x);
  g->labels = xcalloc((size_t)n, sizeof *g->labels);
  g->split = xcalloc((size_t)n, sizeof *g->split);
  for (int64_t v = 0; v < n; v++) {
    for (int f = 0; f < g->features; f++)
      g->x[v * g->features + f] = halo_rng_uniform(key, 1000 + (uint64_t)v, (uint64_t)f);
    g->labels[v] =
        (int32_t)(halo_rng_bits(key, 2000 + (uint64_t)v, 0) % 4) - 1; /* -1 = unlabelled */
    g->split[v] = (uint8_t)(halo_rng_bits(key, 3000 + (uint64_t)v, 0) % 4);
  }
  g->source_digest = seed;
  return g;
}

halo_graph *pt_graph_cora(void) {
  halo_graph *g = NULL;
  halo_status st = halo_load(HALO_DATASETS_DIR "/cora", HALO_FORMAT_OGB, &g);
  cr_assert_eq(st, HALO_OK, "cannot load %s: %s", HALO_DATASETS_DIR "/cora", halo_status_str(st));
  return g;
}

halo_graph *pt_graph_copy(const halo_graph *g) {
  halo_graph *c = NULL;
  cr_assert_eq(halo_graph_create(g->n, g->m, &c), HALO_OK);
  memcpy(c->indptr, g->indptr, (size_t)(g->n + 1) * sizeof *c->indptr);
  memcpy(c->indices, g->indices, (size_t)g->m * sizeof *c->indices);
  c->features = g->features;
  c->classes = g->classes;
  if (g->x) {
    c->x = xcalloc((size_t)(g->n * g->features), sizeof *c->x);
    memcpy(c->x, g->x, (size_t)(g->n * g->features) * sizeof *c->x);
  }
  if (g->x_indptr) {
    const int64_t nnz = g->x_indptr[g->n];
    c->x_indptr = xcalloc((size_t)g->n + 1, sizeof *c->x_indptr);
    c->x_indices = xcalloc((size_t)nnz + 1, sizeof *c->x_indices);
    c->x_values = xcalloc((size_t)nnz + 1, sizeof *c->x_values);
    memcpy(c->x_indptr, g->x_indptr, (size_t)(g->n + 1) * sizeof *c->x_indptr);
    memcpy(c->x_indices, g->x_indices, (size_t)nnz * sizeof *c->x_indices);
    memcpy(c->x_values, g->x_values, (size_t)nnz * sizeof *c->x_values);
  }
  if (g->labels) {
    c->labels = xcalloc((size_t)g->n, sizeof *c->labels);
    memcpy(c->labels, g->labels, (size_t)g->n * sizeof *c->labels);
  }
  if (g->split) {
    c->split = xcalloc((size_t)g->n, 1);
    memcpy(c->split, g->split, (size_t)g->n);
  }
  memcpy(c->source, g->source, sizeof c->source);
  c->source_digest = g->source_digest;
  return c;
}

halo_graph *pt_clean_dense(const halo_graph *g) {
  int64_t n = g->n;
  uint8_t *a = xcalloc((size_t)(n * n), 1);
  for (int64_t u = 0; u < n; u++)
    for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++) {
      int64_t v = g->indices[k];
      if (u == v) continue;
      a[u * n + v] = 1;
      a[v * n + u] = 1;
    }
  int64_t m = 0;
  for (int64_t i = 0; i < n * n; i++) m += a[i];
  halo_graph *c = NULL;
  cr_assert_eq(halo_graph_create(n, m, &c), HALO_OK);
  int64_t k = 0;
  for (int64_t u = 0; u < n; u++) {
    for (int64_t v = 0; v < n; v++)
      if (a[u * n + v]) c->indices[k++] = v;
    c->indptr[u + 1] = k;
  }
  free(a);
  return c;
}

int64_t pt_edge_cut(const halo_graph *g, const int32_t *part) {
  int64_t cut = 0;
  for (int64_t u = 0; u < g->n; u++)
    for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++) cut += part[u] != part[g->indices[k]];
  return cut / 2;
}

/* ---- plan checks ----------------------------------------------------- */

/* 1 when u has a neighbour in another part. */
static int is_boundary(const halo_graph *g, const int32_t *part, int64_t u) {
  for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++)
    if (part[g->indices[k]] != part[u]) return 1;
  return 0;
}

/* Owned rows of shard s in `order`: a permutation of expect[0..n_owned)
 * (the part's nodes, ascending).  ID: ascending.  COMMUNITY: the interior
 * nodes first (exactly n_interior of them), then the boundary nodes; ids
 * ascend inside a locality block, so each group is at most one ascending
 * run per block. */
static void check_owned_order(const halo_graph *g, const int32_t *part, const halo_shard *s,
                              halo_order order, const int64_t *expect, int64_t n_owned,
                              int *owned_count) {
  const int32_t p = s->part;
  int64_t *sorted = xcalloc((size_t)n_owned + 1, sizeof *sorted);
  memcpy(sorted, s->global_id, (size_t)n_owned * sizeof *sorted);
  qsort(sorted, (size_t)n_owned, sizeof *sorted, cmp_i64);
  for (int64_t r = 0; r < n_owned; r++) {
    cr_assert_eq(sorted[r], expect[r], "part %d: owned rows are not the part's nodes (sorted %lld)",
                 p, (long long)r);
    owned_count[s->global_id[r]]++;
  }
  free(sorted);

  int64_t interior = 0, prefix = 0;
  for (int64_t r = 0; r < n_owned; r++) interior += !is_boundary(g, part, s->global_id[r]);
  while (prefix < n_owned && !is_boundary(g, part, s->global_id[prefix])) prefix++;
  cr_assert_eq(s->n_interior, prefix, "part %d: n_interior %lld, leading interior rows %lld", p,
               (long long)s->n_interior, (long long)prefix);
  if (order == HALO_ORDER_ID) {
    for (int64_t r = 0; r < n_owned; r++)
      cr_assert_eq(s->global_id[r], expect[r], "part %d owned row %lld (--order id)", p,
                   (long long)r);
    return;
  }
  cr_assert_eq(prefix, interior, "part %d: %lld interior rows but only %lld come first", p,
               (long long)interior, (long long)prefix);
  /* Every block but the last holds at least ceil(B / 2) of the B rows per
   * block (partition-blocks.c); a part of at most B rows is one block. */
  const int64_t min_rows = (HALO_PARTITION_BLOCK_ROWS + 1) / 2;
  const int64_t blocks =
      n_owned <= HALO_PARTITION_BLOCK_ROWS ? 1 : (n_owned + min_rows - 1) / min_rows;
  int64_t runs[2] = {interior > 0, n_owned > interior};
  for (int64_t r = 1; r < n_owned; r++)
    if (r != interior) runs[r > interior] += s->global_id[r] < s->global_id[r - 1];
  for (int k = 0; k < 2; k++)
    cr_assert_leq(runs[k], blocks, "part %d: %lld ascending runs of %s rows in %lld blocks", p,
                  (long long)runs[k], k ? "boundary" : "interior", (long long)blocks);
}

void pt_check_shards(const halo_graph *g, const int32_t *part, int32_t parts, halo_order order,
                     halo_shard **shards) {
  const int64_t n = g->n;
  int *owned_count = xcalloc((size_t)n, sizeof *owned_count);
  int64_t *expect = xcalloc((size_t)n, sizeof *expect);
  uint8_t *is_halo = xcalloc((size_t)n, 1);
  int64_t *scratch = xcalloc((size_t)n, sizeof *scratch);

  for (int32_t p = 0; p < parts; p++) {
    const halo_shard *s = shards[p];
    cr_assert_eq(s->part, p);
    cr_assert_eq(s->parts, parts);
    cr_assert_eq(s->nodes, n);
    cr_assert_eq(s->edges, g->m);
    cr_assert_eq(s->features, g->features);
    cr_assert_eq(s->classes, g->classes);
    cr_assert_eq(s->format_version, halo_shard_format_for(g->x_indptr != NULL));
    cr_assert_eq(s->x_indptr != NULL, g->x_indptr != NULL, "the graph's feature layout");

    /* Owned rows: exactly {v : part[v] = p}, in the order asked for. */
    int64_t n_owned = 0;
    for (int64_t v = 0; v < n; v++)
      if (part[v] == p) expect[n_owned++] = v;
    cr_assert_eq(s->n_owned, n_owned, "part %d owns %lld, expected %lld", p, (long long)s->n_owned,
                 (long long)n_owned);
    check_owned_order(g, part, s, order, expect, n_owned, owned_count);

    /* Halo: the remote neighbours of owned nodes, by owner then id. */
    memset(is_halo, 0, (size_t)n);
    for (int64_t r = 0; r < n_owned; r++)
      for (int64_t k = g->indptr[expect[r]]; k < g->indptr[expect[r] + 1]; k++)
        if (part[g->indices[k]] != p) is_halo[g->indices[k]] = 1;
    int64_t n_halo = 0;
    for (int32_t q = 0; q < parts; q++) {
      int64_t from_q = 0;
      for (int64_t v = 0; v < n; v++)
        if (is_halo[v] && part[v] == q) {
          cr_assert_lt(n_halo, s->n_halo, "part %d: halo too short", p);
          cr_assert_eq(s->global_id[n_owned + n_halo], v, "part %d halo row %lld", p,
                       (long long)n_halo);
          cr_assert_eq(s->halo_owner[n_halo], q);
          n_halo++;
          from_q++;
        }
      cr_assert_eq(s->recv_ptr[q + 1] - s->recv_ptr[q], from_q, "part %d recv from %d", p, q);
    }
    cr_assert_eq(s->recv_ptr[0], 0);
    cr_assert_eq(s->n_halo, n_halo, "part %d: %lld halo rows, expected %lld", p,
                 (long long)s->n_halo, (long long)n_halo);

    /* Degrees of owned and halo rows. */
    for (int64_t r = 0; r < n_owned + n_halo; r++) {
      int64_t v = s->global_id[r];
      cr_assert_eq(s->degree[r], g->indptr[v + 1] - g->indptr[v], "part %d degree of row %lld", p,
                   (long long)r);
    }

    /* Local CSR, renumbered back, equals the global rows. */
    cr_assert_eq(s->indptr[0], 0);
    cr_assert_eq(s->nnz, s->indptr[n_owned]);
    for (int64_t r = 0; r < n_owned; r++) {
      int64_t v = s->global_id[r], len = s->indptr[r + 1] - s->indptr[r];
      cr_assert_eq(len, g->indptr[v + 1] - g->indptr[v], "part %d row %lld length", p,
                   (long long)r);
      for (int64_t k = 0; k < len; k++) {
        int32_t col = s->indices[s->indptr[r] + k];
        cr_assert(col >= 0 && col < n_owned + n_halo, "part %d: column %d out of range", p, col);
        if (k > 0)
          cr_assert_lt(s->indices[s->indptr[r] + k - 1], col, "part %d row %lld not ascending", p,
                       (long long)r);
        scratch[k] = s->global_id[col];
      }
      qsort(scratch, (size_t)len, sizeof *scratch, cmp_i64);
      for (int64_t k = 0; k < len; k++)
        cr_assert_eq(scratch[k], g->indices[g->indptr[v] + k], "part %d row %lld entry %lld", p,
                     (long long)r, (long long)k);
    }

    /* Node data of the owned rows. */
    for (int64_t r = 0; r < n_owned; r++) {
      int64_t v = s->global_id[r];
      if (g->features && g->x)
        cr_assert_eq(memcmp(s->x + r * g->features, g->x + v * g->features,
                            (size_t)g->features * sizeof(float)),
                     0);
      if (g->x_indptr) { /* the row's non-zeros, columns and values alike */
        const int64_t len = g->x_indptr[v + 1] - g->x_indptr[v];
        cr_assert_eq(s->x_indptr[r + 1] - s->x_indptr[r], len, "part %d row %lld", p, (long long)r);
        cr_assert_eq(memcmp(s->x_indices + s->x_indptr[r], g->x_indices + g->x_indptr[v],
                            (size_t)len * sizeof *s->x_indices),
                     0);
        cr_assert_eq(memcmp(s->x_values + s->x_indptr[r], g->x_values + g->x_indptr[v],
                            (size_t)len * sizeof *s->x_values),
                     0);
      }
      if (g->classes) cr_assert_eq(s->labels[r], g->labels[v]);
    }
    int32_t *lists[4] = {NULL, s->train, s->valid, s->test};
    int64_t counts[4] = {0, s->n_train, s->n_valid, s->n_test};
    for (int which = 1; which <= 3; which++) {
      int64_t k = 0;
      for (int64_t r = 0; r < n_owned; r++)
        if (g->split && g->split[s->global_id[r]] == which) {
          cr_assert_lt(k, counts[which]);
          cr_assert_eq(lists[which][k], r, "part %d split %d entry %lld", p, which, (long long)k);
          k++;
        }
      cr_assert_eq(k, counts[which], "part %d split %d count", p, which);
    }
  }
  for (int64_t v = 0; v < n; v++)
    cr_assert_eq(owned_count[v], 1, "node %lld owned %d times", (long long)v, owned_count[v]);

  /* Send lists agree with the receivers' halo ranges, pairwise. */
  for (int32_t p = 0; p < parts; p++)
    for (int32_t q = 0; q < parts; q++) {
      const halo_shard *from = shards[p], *to = shards[q];
      int64_t len = from->send_ptr[q + 1] - from->send_ptr[q];
      cr_assert_eq(len, to->recv_ptr[p + 1] - to->recv_ptr[p], "send %d->%d: %lld rows vs %lld", p,
                   q, (long long)len, (long long)(to->recv_ptr[p + 1] - to->recv_ptr[p]));
      if (p == q) cr_assert_eq(len, 0);
      for (int64_t k = 0; k < len; k++) {
        int32_t row = from->send_idx[from->send_ptr[q] + k];
        cr_assert(row >= 0 && row < from->n_owned, "send %d->%d row %d not owned", p, q, row);
        if (k > 0)
          cr_assert_lt(from->global_id[from->send_idx[from->send_ptr[q] + k - 1]],
                       from->global_id[row], "send %d->%d: global ids do not ascend at %lld", p, q,
                       (long long)k);
        cr_assert_eq(from->global_id[row], to->global_id[to->n_owned + to->recv_ptr[p] + k],
                     "send %d->%d position %lld", p, q, (long long)k);
      }
    }
  free(scratch);
  free(is_halo);
  free(expect);
  free(owned_count);
}

void pt_build_and_check(const halo_graph *g, const int32_t *part, int32_t parts, halo_order order) {
  halo_partition_plan *plan = NULL;
  halo_shard **shards = xcalloc((size_t)parts, sizeof *shards);
  cr_assert_eq(halo_partition_plan_create(g, part, parts, order, 42, &plan), HALO_OK);
  for (int32_t p = 0; p < parts; p++) {
    cr_assert_eq(halo_partition_plan_shard(plan, p, &shards[p]), HALO_OK);
    cr_assert_eq(shards[p]->run_id, 42);
  }
  pt_check_shards(g, part, parts, order, shards);
  for (int32_t p = 0; p < parts; p++) halo_shard_destroy(&shards[p]);
  halo_partition_plan_destroy(&plan);
  free(shards);
}

/* ---- processes and files --------------------------------------------- */

int pt_run(char **output, const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(cmd, sizeof cmd - 8, fmt, ap);
  va_end(ap);
  cr_assert(len > 0 && len < (int)sizeof cmd - 8, "command too long");
  strcat(cmd, " 2>&1");
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f, "popen failed");
  size_t cap = 1 << 16, used = 0;
  char *buf = xcalloc(cap, 1);
  size_t got;
  while ((got = fread(buf + used, 1, cap - used - 1, f)) > 0) {
    used += got;
    if (cap - used < 4096) {
      cap *= 2;
      buf = realloc(buf, cap);
      cr_assert_not_null(buf);
    }
  }
  buf[used] = '\0';
  int status = pclose(f);
  *output = buf;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double pt_json_number(const char *json, const char *key) {
  char pattern[128];
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  const char *at = strstr(json, pattern);
  cr_assert_not_null(at, "JSON has no key %s", key);
  char *end = NULL;
  double v = strtod(at + strlen(pattern), &end);
  cr_assert(end != at + strlen(pattern), "JSON key %s is not a number", key);
  return v;
}

char *pt_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = xcalloc((size_t)size + 1, 1);
  size_t got = fread(buf, 1, (size_t)size, f);
  buf[got] = '\0';
  fclose(f);
  return buf;
}

char *pt_temp_dir(const char *tag) {
  char *dir = xcalloc(256, 1);
  snprintf(dir, 256, "/tmp/halo-test-%s-XXXXXX", tag);
  cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
  return dir;
}

void pt_remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
      pt_remove_tree(path);
    else
      unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

int32_t *pt_partition(halo_graph *g, halo_method method, int32_t parts, int64_t seed) {
  halo_partition_options opt = HALO_PARTITION_OPTIONS_INIT;
  opt.parts = parts;
  opt.method = method;
  opt.seed = seed;
  int32_t *part = calloc((size_t)g->n, sizeof *part);
  cr_assert_not_null(part);
  cr_assert_eq(halo_partition_lookup(method)(g, &opt, part), HALO_OK, "%s P=%d",
               halo_method_name(method), parts);
  return part;
}
