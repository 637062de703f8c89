#include "shard-fixture.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "halo-rng.h"

uint64_t fixture_seed(const char *test, uint64_t fallback) {
  const char *env = getenv("HALO_TEST_SEED");
  uint64_t seed = env && *env ? strtoull(env, NULL, 0) : fallback;
  fprintf(stderr, "%s: seed %llu (set HALO_TEST_SEED to change)\n", test, (unsigned long long)seed);
  return seed;
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  cr_assert_not_null(p, "out of memory");
  return p;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* 1 when v has a neighbour outside part p. */
static int boundary(const fixture *f, int32_t p, int64_t v) {
  for (int64_t u = 0; u < f->n; u++)
    if (f->adj[v * f->n + u] && f->m->part[u] != p) return 1;
  return 0;
}

/* Shard `p` from the definitions, in format 2: owned rows interior first
 * (n_interior of them), then boundary, each group in DESCENDING id (legal,
 * and unlike any order format 1 allowed); halo grouped by owner. */
static halo_shard *build_shard(const fixture *f, int32_t p, int32_t features, int32_t classes,
                               uint64_t key) {
  int64_t n = f->n;
  const int32_t *part = f->m->part;
  halo_shard *s = xcalloc(1, sizeof *s);
  *s = (halo_shard){.format_version = HALO_SHARD_FORMAT_DENSE,
                    .part = p,
                    .parts = f->parts,
                    .run_id = f->m->run_id,
                    .nodes = n,
                    .edges = f->m->edges,
                    .features = features,
                    .classes = classes};
  int64_t *local = xcalloc((size_t)n, sizeof *local);
  uint8_t *is_halo = xcalloc((size_t)n, 1);
  for (int64_t v = 0; v < n; v++) {
    local[v] = -1;
    if (part[v] != p) continue;
    s->n_owned++;
    for (int64_t u = 0; u < n; u++)
      if (f->adj[v * n + u] && part[u] != p) is_halo[u] = 1;
  }
  for (int64_t u = 0; u < n; u++) s->n_halo += is_halo[u];
  int64_t rows = s->n_owned + s->n_halo;
  s->global_id = xcalloc((size_t)rows, sizeof *s->global_id);
  s->degree = xcalloc((size_t)rows, sizeof *s->degree);
  s->halo_owner = xcalloc((size_t)s->n_halo, sizeof *s->halo_owner);
  s->recv_ptr = xcalloc((size_t)f->parts + 1, sizeof *s->recv_ptr);
  int64_t row = 0;
  for (int group = 0; group < 2; group++)
    for (int64_t v = n - 1; v >= 0; v--)
      if (part[v] == p && boundary(f, p, v) == group) s->global_id[row++] = v;
  for (int64_t i = 0; i < s->n_owned && !boundary(f, p, s->global_id[i]); i++) s->n_interior++;
  for (int32_t q = 0; q < f->parts; q++) {
    for (int64_t u = 0; u < n; u++)
      if (is_halo[u] && part[u] == q) {
        s->halo_owner[row - s->n_owned] = q;
        s->global_id[row++] = u;
      }
    s->recv_ptr[q + 1] = row - s->n_owned;
  }
  for (int64_t i = 0; i < rows; i++) {
    int64_t v = s->global_id[i];
    local[v] = i;
    for (int64_t u = 0; u < n; u++) s->degree[i] += f->adj[v * n + u];
  }

  s->indptr = xcalloc((size_t)s->n_owned + 1, sizeof *s->indptr);
  for (int64_t i = 0; i < s->n_owned; i++) s->indptr[i + 1] = s->indptr[i] + s->degree[i];
  s->nnz = s->indptr[s->n_owned];
  s->indices = xcalloc((size_t)s->nnz, sizeof *s->indices);
  for (int64_t i = 0; i < s->n_owned; i++) {
    int64_t v = s->global_id[i], at = s->indptr[i];
    for (int64_t u = 0; u < n; u++)
      if (f->adj[v * n + u]) s->indices[at++] = (int32_t)local[u];
    qsort(s->indices + s->indptr[i], (size_t)s->degree[i], sizeof *s->indices, cmp_i32);
  }

  if (features > 0) {
    s->x = xcalloc((size_t)(s->n_owned * features), sizeof *s->x);
    for (int64_t k = 0; k < s->n_owned * features; k++)
      s->x[k] = 4.0f * halo_rng_uniform(key, (uint64_t)p, (uint64_t)k) - 2.0f;
  }
  if (classes > 0) {
    s->labels = xcalloc((size_t)s->n_owned, sizeof *s->labels);
    for (int64_t i = 0; i < s->n_owned; i++)
      s->labels[i] =
          (int32_t)(halo_rng_bits(key ^ 1, (uint64_t)p, (uint64_t)i) % (uint64_t)(classes + 1)) - 1;
  }
  s->train = xcalloc((size_t)s->n_owned, sizeof *s->train);
  s->valid = xcalloc((size_t)s->n_owned, sizeof *s->valid);
  s->test = xcalloc((size_t)s->n_owned, sizeof *s->test);
  for (int64_t i = 0; i < s->n_owned; i++) {
    switch (halo_rng_bits(key ^ 2, (uint64_t)p, (uint64_t)i) % 4) {
      case 0:
        s->train[s->n_train++] = (int32_t)i;
        break;
      case 1:
        s->valid[s->n_valid++] = (int32_t)i;
        break;
      case 2:
        s->test[s->n_test++] = (int32_t)i;
        break;
      default:
        break;
    }
  }

  /* Part p sends peer q each owned row that has a neighbour owned by q, in
   * ascending global id: the rows to send are boundary rows, which descend. */
  s->send_ptr = xcalloc((size_t)f->parts + 1, sizeof *s->send_ptr);
  s->send_idx = xcalloc((size_t)(s->n_owned * f->parts), sizeof *s->send_idx);
  int64_t sent = 0;
  for (int32_t q = 0; q < f->parts; q++) {
    for (int64_t i = s->n_owned - 1; i >= 0 && q != p; i--) {
      int64_t v = s->global_id[i];
      int hit = 0;
      for (int64_t u = 0; u < n && !hit; u++) hit = f->adj[v * n + u] && part[u] == q;
      if (hit) s->send_idx[sent++] = (int32_t)i;
    }
    s->send_ptr[q + 1] = sent;
  }
  free(local);
  free(is_halo);
  return s;
}

fixture *fixture_create(uint64_t seed, int64_t n, int32_t parts, int32_t features, int32_t classes,
                        int empty_last) {
  fixture *f = xcalloc(1, sizeof *f);
  f->seed = seed;
  f->n = n;
  f->parts = parts;
  uint64_t key = halo_rng_key(seed, HALO_RNG_GRAPH, (uint64_t)n, (uint64_t)parts);
  f->adj = xcalloc((size_t)(n * n), 1);
  for (int64_t v = 0; v < n; v++) {
    int tries = (int)(halo_rng_bits(key, (uint64_t)v, 0) % 6);
    for (int t = 0; t < tries; t++) {
      int64_t u = (int64_t)(halo_rng_bits(key, (uint64_t)v, (uint64_t)t + 1) % (uint64_t)n);
      if (u == v) continue;
      f->adj[v * n + u] = f->adj[u * n + v] = 1;
    }
  }
  halo_manifest *m = xcalloc(1, sizeof *m);
  f->m = m;
  *m = (halo_manifest){.format_version = HALO_SHARD_FORMAT_DENSE,
                       .nodes = n,
                       .features = features,
                       .classes = classes,
                       .parts = parts,
                       .seed = (int64_t)seed,
                       .ufactor = 30,
                       .source_digest = halo_rng_bits(key, 7, 7),
                       .run_id = halo_rng_bits(key, 8, 8)};
  snprintf(m->method, sizeof m->method, "metis");
  snprintf(m->objective, sizeof m->objective, "cut");
  snprintf(m->source, sizeof m->source, "test:random:n=%lld,seed=%llu", (long long)n,
           (unsigned long long)seed);
  for (int64_t k = 0; k < n * n; k++) m->edges += f->adj[k];
  m->part = xcalloc((size_t)n, sizeof *m->part);
  m->part_owned = xcalloc((size_t)parts, sizeof *m->part_owned);
  m->part_halo = xcalloc((size_t)parts, sizeof *m->part_halo);
  m->part_digest = xcalloc((size_t)parts, sizeof *m->part_digest);
  int32_t used = empty_last && parts > 1 ? parts - 1 : parts;
  for (int64_t v = 0; v < n; v++) {
    m->part[v] = (int32_t)(halo_rng_bits(key, (uint64_t)v, 99) % (uint64_t)used);
    m->part_owned[m->part[v]]++;
  }
  f->shards = xcalloc((size_t)parts, sizeof *f->shards);
  for (int32_t p = 0; p < parts; p++) {
    f->shards[p] = build_shard(f, p, features, classes, key);
    m->part_halo[p] = f->shards[p]->n_halo;
    m->part_digest[p] = halo_shard_digest(f->shards[p]);
  }
  snprintf(f->dir, sizeof f->dir, "/tmp/halo-shard-test-XXXXXX");
  cr_assert_not_null(mkdtemp(f->dir), "mkdtemp failed");
  return f;
}

void fixture_redigest(fixture *f, int32_t part) {
  f->m->part_digest[part] = halo_shard_digest(f->shards[part]);
  if (f->m->part_original_id_digest)
    f->m->part_original_id_digest[part] = halo_shard_digest_original_id(f->shards[part]);
}

int64_t *fixture_add_original_ids(fixture *f) {
  uint64_t key = halo_rng_key(f->seed, HALO_RNG_GRAPH, (uint64_t)f->n, 0x1d5);
  int64_t *ids = xcalloc((size_t)f->n, sizeof *ids);
  for (int64_t v = 0, next = 0; v < f->n; v++) {
    next += 1 + (int64_t)(halo_rng_bits(key, (uint64_t)v, 0) % 100000);
    ids[v] = next;
  }
  f->m->part_original_id_digest = xcalloc((size_t)f->parts, sizeof *f->m->part_original_id_digest);
  for (int32_t p = 0; p < f->parts; p++) {
    halo_shard *s = f->shards[p];
    s->original_id = xcalloc((size_t)s->n_owned + 1, sizeof *s->original_id);
    for (int64_t i = 0; i < s->n_owned; i++) s->original_id[i] = ids[s->global_id[i]];
    fixture_redigest(f, p);
  }
  return ids;
}

void fixture_destroy(fixture **fp) {
  fixture *f = *fp;
  if (!f) return;
  /* HALO_TEST_KEEP=1 keeps the files for a look with h5dump. */
  const char *keep = getenv("HALO_TEST_KEEP");
  DIR *d = keep && *keep == '1' ? NULL : opendir(f->dir);
  if (!d) fprintf(stderr, "files kept in %s\n", f->dir);
  if (d) {
    struct dirent *e;
    char path[1024];
    while ((e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      snprintf(path, sizeof path, "%s/%s", f->dir, e->d_name);
      unlink(path);
    }
    closedir(d);
    rmdir(f->dir);
  }
  for (int32_t p = 0; p < f->parts; p++) halo_shard_destroy(&f->shards[p]);
  free(f->shards);
  halo_manifest_destroy(&f->m);
  free(f->adj);
  for (int k = 0; k < f->npaths; k++) free(f->paths[k]);
  free(f);
  *fp = NULL;
}

const char *fixture_path(fixture *f, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", f->dir, name);
  for (int k = 0; k < f->npaths; k++)
    if (strcmp(f->paths[k], path) == 0) return f->paths[k];
  cr_assert_lt(f->npaths, FIXTURE_MAX_PATHS, "too many distinct paths");
  f->paths[f->npaths] = strdup(path);
  cr_assert_not_null(f->paths[f->npaths]);
  return f->paths[f->npaths++];
}

static void *clone_array(const void *src, size_t count, size_t size) {
  if (!src) return NULL;
  void *dst = xcalloc(count, size);
  memcpy(dst, src, count * size);
  return dst;
}

halo_shard *shard_clone(const halo_shard *s) {
  halo_shard *c = xcalloc(1, sizeof *c);
  *c = *s;
  size_t rows = (size_t)(s->n_owned + s->n_halo), owned = (size_t)s->n_owned,
         peers = (size_t)s->parts + 1;
  c->global_id = clone_array(s->global_id, rows, sizeof *s->global_id);
  c->halo_owner = clone_array(s->halo_owner, (size_t)s->n_halo, sizeof *s->halo_owner);
  c->degree = clone_array(s->degree, rows, sizeof *s->degree);
  c->indptr = clone_array(s->indptr, owned + 1, sizeof *s->indptr);
  c->indices = clone_array(s->indices, (size_t)s->nnz, sizeof *s->indices);
  c->x = clone_array(s->x, owned * (size_t)s->features, sizeof *s->x);
  c->labels = clone_array(s->labels, owned, sizeof *s->labels);
  c->train = clone_array(s->train, (size_t)s->n_train, sizeof *s->train);
  c->valid = clone_array(s->valid, (size_t)s->n_valid, sizeof *s->valid);
  c->test = clone_array(s->test, (size_t)s->n_test, sizeof *s->test);
  c->send_ptr = clone_array(s->send_ptr, peers, sizeof *s->send_ptr);
  c->send_idx = clone_array(s->send_idx, (size_t)s->send_ptr[s->parts], sizeof *s->send_idx);
  c->recv_ptr = clone_array(s->recv_ptr, peers, sizeof *s->recv_ptr);
  c->original_id = s->original_id ? clone_array(s->original_id, owned, sizeof *s->original_id)
                                  : NULL;
  return c;
}

#define EXPECT_ARRAY(field, count)                                            \
  do {                                                                        \
    size_t n_ = (size_t)(count);                                              \
    if (n_ == 0) break;                                                       \
    cr_assert_not_null(a->field, #field);                                     \
    cr_assert_not_null(b->field, #field);                                     \
    for (size_t k_ = 0; k_ < n_; k_++)                                        \
      if (memcmp(&a->field[k_], &b->field[k_], sizeof a->field[0]) != 0)      \
        cr_assert_fail("part %d: " #field "[%zu] differs", (int)a->part, k_); \
  } while (0)

void shard_expect_equal(const halo_shard *a, const halo_shard *b) {
  cr_assert_eq(a->format_version, b->format_version);
  cr_assert_eq(a->part, b->part);
  cr_assert_eq(a->parts, b->parts);
  cr_assert_eq(a->run_id, b->run_id);
  cr_assert_eq(a->nodes, b->nodes);
  cr_assert_eq(a->edges, b->edges);
  cr_assert_eq(a->features, b->features);
  cr_assert_eq(a->classes, b->classes);
  cr_assert_eq(a->n_owned, b->n_owned);
  cr_assert_eq(a->n_halo, b->n_halo);
  cr_assert_eq(a->nnz, b->nnz);
  cr_assert_eq(a->n_interior, b->n_interior);
  cr_assert_eq(a->n_train, b->n_train);
  cr_assert_eq(a->n_valid, b->n_valid);
  cr_assert_eq(a->n_test, b->n_test);
  int64_t rows = a->n_owned + a->n_halo;
  EXPECT_ARRAY(global_id, rows);
  EXPECT_ARRAY(halo_owner, a->n_halo);
  EXPECT_ARRAY(degree, rows);
  EXPECT_ARRAY(indptr, a->n_owned + 1);
  EXPECT_ARRAY(indices, a->nnz);
  cr_assert_eq(a->x_indptr == NULL, b->x_indptr == NULL, "part %d: one layout of features",
               (int)a->part);
  cr_assert_eq(a->x_nnz, b->x_nnz);
  if (a->x_indptr) {
    EXPECT_ARRAY(x_indptr, a->n_owned + 1);
    EXPECT_ARRAY(x_indices, a->x_nnz);
    EXPECT_ARRAY(x_values, a->x_nnz);
  } else {
    EXPECT_ARRAY(x, a->n_owned * a->features);
  }
  EXPECT_ARRAY(labels, a->classes > 0 ? a->n_owned : 0);
  EXPECT_ARRAY(train, a->n_train);
  EXPECT_ARRAY(valid, a->n_valid);
  EXPECT_ARRAY(test, a->n_test);
  EXPECT_ARRAY(send_ptr, a->parts + 1);
  EXPECT_ARRAY(send_idx, a->send_ptr[a->parts]);
  EXPECT_ARRAY(recv_ptr, a->parts + 1);
  cr_assert_eq(a->features == 0 || a->x_indptr, b->x == NULL,
               "x is NULL exactly when features == 0 or they are CSR");
  cr_assert_eq(a->classes == 0, b->labels == NULL, "labels is NULL exactly when classes == 0");
  cr_assert_eq(a->original_id == NULL, b->original_id == NULL,
               "part %d: original_id present in one shard only", (int)a->part);
  if (a->original_id) EXPECT_ARRAY(original_id, a->n_owned);
}

void capture_begin(capture *c) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  cr_assert_not_null(tmp);
  c->file_fd = dup(fileno(tmp));
  fclose(tmp);
  c->saved_fd = dup(STDERR_FILENO);
  cr_assert(c->file_fd >= 0 && c->saved_fd >= 0);
  dup2(c->file_fd, STDERR_FILENO);
}

char *capture_end(capture *c) {
  fflush(stderr);
  dup2(c->saved_fd, STDERR_FILENO);
  close(c->saved_fd);
  off_t len = lseek(c->file_fd, 0, SEEK_END);
  char *text = xcalloc((size_t)len + 1, 1);
  cr_assert_eq(pread(c->file_fd, text, (size_t)len, 0), (ssize_t)len);
  close(c->file_fd);
  return text;
}

static void expect_message(const char *what, const char *path, halo_status got, halo_status expect,
                           char *text, va_list needles) {
  fprintf(stderr, "%s -> %s | %s", what, halo_status_str(got), text);
  if (expect == HALO_OK)
    cr_assert(got < 0, "%s: status %d (%s), expected a failure; message: %s", path, got,
              halo_status_str(got), text);
  else
    cr_assert_eq(got, expect, "%s: status %d (%s), expected %d (%s); message: %s", path, got,
                 halo_status_str(got), expect, halo_status_str(expect), text);
  size_t len = strlen(text);
  cr_assert(len > 0 && text[len - 1] == '\n' && strchr(text, '\n') == text + len - 1,
            "expected exactly one line, got: %s", text);
  cr_assert_not_null(strstr(text, path), "message does not name %s: %s", path, text);
  for (const char *needle; (needle = va_arg(needles, const char *));)
    cr_assert_not_null(strstr(text, needle), "message lacks \"%s\": %s", needle, text);
  free(text);
}

void expect_shard_fails(const char *path, const halo_manifest *m, halo_status expect, ...) {
  capture c;
  halo_shard *s = (halo_shard *)0x1;
  capture_begin(&c);
  halo_status st = halo_shard_read(path, m, &s);
  char *text = capture_end(&c);
  va_list ap;
  va_start(ap, expect);
  expect_message("halo_shard_read", path, st, expect, text, ap);
  va_end(ap);
  cr_assert_null(s, "a failed read must leave *out NULL");
}

static void expect_manifest_fails_v(const char *path, unsigned flags, halo_status expect,
                                    va_list needles) {
  capture c;
  halo_manifest *m = (halo_manifest *)0x1;
  capture_begin(&c);
  halo_status st = halo_manifest_read_opts(path, flags, &m);
  char *text = capture_end(&c);
  expect_message(flags ? "halo_manifest_read_opts" : "halo_manifest_read", path, st, expect, text,
                 needles);
  cr_assert_null(m, "a failed read must leave *out NULL");
}

void expect_manifest_fails(const char *path, halo_status expect, ...) {
  va_list ap;
  va_start(ap, expect);
  expect_manifest_fails_v(path, 0, expect, ap);
  va_end(ap);
}

void expect_manifest_opts_fails(const char *path, unsigned flags, halo_status expect, ...) {
  va_list ap;
  va_start(ap, expect);
  expect_manifest_fails_v(path, flags, expect, ap);
  va_end(ap);
}

void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  cr_assert(in && out, "cannot copy %s to %s", from, to);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) cr_assert_eq(fwrite(buf, 1, n, out), n);
  fclose(in);
  cr_assert_eq(fclose(out), 0);
}

long file_size(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fclose(f);
  return size;
}

void flip_byte(const char *path, long offset) {
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f, "cannot open %s", path);
  cr_assert_eq(fseek(f, offset, SEEK_SET), 0);
  int c = fgetc(f);
  cr_assert_neq(c, EOF, "offset %ld is past the end of %s", offset, path);
  fseek(f, offset, SEEK_SET);
  fputc(c ^ 0x10, f);
  cr_assert_eq(fclose(f), 0);
}

void truncate_file(const char *path, long size) {
  cr_assert_eq(truncate(path, size), 0, "truncate %s", path);
}

void chunk_location(const char *path, const char *dataset, long *offset, long *size) {
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert(file >= 0, "cannot open %s", path);
  hid_t dset = H5Dopen2(file, dataset, H5P_DEFAULT);
  cr_assert(dset >= 0, "cannot open %s in %s", dataset, path);
  hsize_t origin[2] = {0, 0}, bytes = 0;
  haddr_t addr = HADDR_UNDEF;
  unsigned mask = 0;
  cr_assert(H5Dget_chunk_info_by_coord(dset, origin, &mask, &addr, &bytes) >= 0,
            "%s: no chunk info", dataset);
  cr_assert(addr != HADDR_UNDEF && bytes > 0, "%s: first chunk not allocated", dataset);
  *offset = (long)addr;
  *size = (long)bytes;
  H5Dclose(dset);
  H5Fclose(file);
}

char *run_command(const char *cmd, int *status) {
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "popen %s", cmd);
  size_t cap = 1 << 16, len = 0;
  char *out = xcalloc(cap, 1);
  size_t n;
  while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (cap - len < 4096) {
      out = realloc(out, cap *= 2);
      cr_assert_not_null(out);
    }
  }
  out[len] = '\0';
  *status = pclose(p);
  return out;
}

void fixture_write_run(fixture *f) {
  cr_assert_eq(halo_manifest_write(fixture_path(f, "manifest.h5"), f->m), HALO_OK);
  for (int32_t p = 0; p < f->parts; p++) {
    char path[512];
    cr_assert_eq(halo_shard_path(path, sizeof path, f->dir, p, f->parts), HALO_OK);
    cr_assert_eq(halo_shard_write(path, f->shards[p]), HALO_OK, "writing %s", path);
  }
}

void fixture_expect_manifest_equal(const halo_manifest *got, const halo_manifest *want) {
  cr_assert_eq(got->format_version, want->format_version);
  cr_assert_eq(got->nodes, want->nodes);
  cr_assert_eq(got->edges, want->edges);
  cr_assert_eq(got->features, want->features);
  cr_assert_eq(got->classes, want->classes);
  cr_assert_eq(got->parts, want->parts);
  cr_assert_str_eq(got->method, want->method);
  cr_assert_str_eq(got->objective, want->objective);
  cr_assert_eq(got->seed, want->seed);
  cr_assert_eq(got->ufactor, want->ufactor);
  cr_assert_str_eq(got->source, want->source);
  cr_assert_eq(got->source_digest, want->source_digest);
  cr_assert_eq(got->run_id, want->run_id);
  const size_t parts = (size_t)want->parts;
  cr_assert_arr_eq(got->part_digest, want->part_digest, parts * sizeof *want->part_digest);
  cr_assert_arr_eq(got->part_owned, want->part_owned, parts * sizeof *want->part_owned);
  cr_assert_arr_eq(got->part_halo, want->part_halo, parts * sizeof *want->part_halo);
  cr_assert_eq(got->part_original_id_digest == NULL, want->part_original_id_digest == NULL,
               "/parts/original_id_digest present in one manifest only");
  if (want->part_original_id_digest)
    cr_assert_arr_eq(got->part_original_id_digest, want->part_original_id_digest,
                     parts * sizeof *want->part_original_id_digest);
}
