#include "loader-test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

enum { MAX_SCRATCH = 256 };

static char scratch[64];
static char *created[MAX_SCRATCH];
static int created_count;

static void scratch_cleanup(void) {
  for (int k = created_count - 1; k >= 0; k--) {
    remove(created[k]);
    free(created[k]);
  }
  if (scratch[0]) rmdir(scratch);
}

const char *scratch_dir(void) {
  if (!scratch[0]) {
    snprintf(scratch, sizeof scratch, "/tmp/halo-loaders-XXXXXX");
    cr_assert_not_null(mkdtemp(scratch), "mkdtemp: %s", strerror(errno));
    atexit(scratch_cleanup);
  }
  return scratch;
}

/* Records a path for removal at exit; returns the stored copy, which lives
 * until then. */
static const char *remember(const char *path) {
  for (int k = 0; k < created_count; k++)
    if (strcmp(created[k], path) == 0) return created[k];
  cr_assert_lt(created_count, MAX_SCRATCH);
  created[created_count] = strdup(path);
  return created[created_count++];
}

/* Creates the folders on the way to scratch_dir()/name. */
static const char *scratch_path(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", scratch_dir(), name);
  for (char *slash = path + strlen(scratch_dir()) + 1; (slash = strchr(slash, '/')); slash++) {
    *slash = '\0';
    if (mkdir(path, 0700) == 0) remember(path);
    *slash = '/';
  }
  return remember(path);
}

const char *scratch_write_bytes(const char *name, const void *data, size_t len) {
  const char *path = scratch_path(name);
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  cr_assert_eq(fwrite(data, 1, len, f), len);
  fclose(f);
  return path;
}

const char *scratch_write(const char *name, const char *text) {
  size_t len = strlen(name);
  if (len > 3 && strcmp(name + len - 3, ".gz") == 0) {
    const char *path = scratch_path(name);
    gzFile gz = gzopen(path, "wb");
    cr_assert_not_null(gz, "%s", path);
    if (*text) cr_assert_eq(gzwrite(gz, text, (unsigned)strlen(text)), (int)strlen(text));
    cr_assert_eq(gzclose(gz), Z_OK);
    return path;
  }
  return scratch_write_bytes(name, text, strlen(text));
}

void *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  rewind(f);
  char *buf = malloc((size_t)size + 1);
  cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
  buf[size] = '\0';
  fclose(f);
  *len = (size_t)size;
  return buf;
}

static FILE *capture_file;
static int saved_stderr = -1;
static char captured[16384];

void capture_begin(void) {
  fflush(stderr);
  capture_file = tmpfile();
  cr_assert_not_null(capture_file);
  saved_stderr = dup(STDERR_FILENO);
  dup2(fileno(capture_file), STDERR_FILENO);
}

const char *capture_end(void) {
  fflush(stderr);
  dup2(saved_stderr, STDERR_FILENO);
  close(saved_stderr);
  rewind(capture_file);
  size_t got = fread(captured, 1, sizeof captured - 1, capture_file);
  captured[got] = '\0';
  fclose(capture_file);
  return captured;
}

void expect_load_error(const char *input, halo_format fmt, halo_status want,
                       const char *const *words) {
  halo_graph *g = NULL;
  capture_begin();
  halo_status st = halo_load(input, fmt, &g);
  const char *text = capture_end();
  fprintf(stderr, "expected failure, got: %s", text);
  cr_expect_eq(st, want, "status %d (%s), expected %d (%s)", st, halo_status_str(st), want,
               halo_status_str(want));
  cr_expect_null(g);
  int lines = 0;
  for (const char *p = text; *p; p++) lines += *p == '\n';
  cr_expect_eq(lines, 1, "expected one line, got %d: %s", lines, text);
  for (const char *const *w = words; *w; w++)
    cr_expect(strstr(text, *w) != NULL, "'%s' not in: %s", *w, text);
  halo_graph_destroy(&g);
}

void expect_csr(const halo_graph *g, int64_t n, const int64_t *indptr, int64_t m,
                const int64_t *indices) {
  cr_assert_eq(g->n, n, "n = %lld, expected %lld", (long long)g->n, (long long)n);
  cr_assert_eq(g->m, m, "m = %lld, expected %lld", (long long)g->m, (long long)m);
  for (int64_t v = 0; v <= n; v++)
    cr_expect_eq(g->indptr[v], indptr[v], "indptr[%lld] = %lld, expected %lld", (long long)v,
                 (long long)g->indptr[v], (long long)indptr[v]);
  for (int64_t k = 0; k < m; k++)
    cr_expect_eq(g->indices[k], indices[k], "indices[%lld] = %lld, expected %lld", (long long)k,
                 (long long)g->indices[k], (long long)indices[k]);
}

void expect_csr_valid(const halo_graph *g) {
  cr_assert_eq(g->indptr[0], 0);
  cr_assert_eq(g->indptr[g->n], g->m);
  for (int64_t v = 0; v < g->n; v++) {
    cr_assert_leq(g->indptr[v], g->indptr[v + 1], "row %lld", (long long)v);
    for (int64_t k = g->indptr[v]; k < g->indptr[v + 1]; k++) {
      cr_assert(g->indices[k] >= 0 && g->indices[k] < g->n, "edge %lld -> %lld", (long long)v,
                (long long)g->indices[k]);
      if (k > g->indptr[v])
        cr_assert_leq(g->indices[k - 1], g->indices[k], "row %lld unsorted", (long long)v);
    }
  }
}

float *features_dense(const halo_graph *g, int stored_zeros) {
  const size_t count = (size_t)g->n * (size_t)g->features;
  float *x = calloc(count > 0 ? count : 1, sizeof *x);
  cr_assert_not_null(x);
  cr_assert(!(g->x && g->x_indptr), "one layout, never both");
  if (g->x) memcpy(x, g->x, count * sizeof *x);
  for (int64_t v = 0; g->x_indptr && v < g->n; v++)
    for (int64_t k = g->x_indptr[v]; k < g->x_indptr[v + 1]; k++) {
      cr_assert(k == g->x_indptr[v] || g->x_indices[k] > g->x_indices[k - 1], "row %lld ascends",
                (long long)v);
      cr_assert(stored_zeros || g->x_values[k] != 0.0f, "row %lld: no stored zero", (long long)v);
      x[v * g->features + g->x_indices[k]] = g->x_values[k];
    }
  return x;
}
