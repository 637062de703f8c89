/* The files are plain HDF5: the real h5ls and h5dump (hdf5-tools) list the
 * documented layout and print the values halo wrote. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard-fixture.h"

static void require_tool(const char *tool) {
  char cmd[128];
  int status;
  snprintf(cmd, sizeof cmd, "command -v %s", tool);
  free(run_command(cmd, &status));
  cr_assert_eq(status, 0, "%s not found: install hdf5-tools (scripts/install-deps.sh)", tool);
}

static char *tool_output(const char *tool, const char *args, const char *path) {
  char cmd[2048];
  int status;
  snprintf(cmd, sizeof cmd, "%s %s '%s' 2>&1", tool, args, path);
  char *out = run_command(cmd, &status);
  cr_assert_eq(status, 0, "%s failed (%d): %s", cmd, status, out);
  return out;
}

/* The line of `h5ls -r` for `name` must read "NAME  Dataset {SHAPE}". */
static void expect_listed(const char *listing, const char *name, const char *shape) {
  char want[128];
  snprintf(want, sizeof want, "Dataset {%s}", shape);
  for (const char *line = listing; line && *line;
       line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    size_t len = strlen(name);
    if (strncmp(line, name, len) != 0 || line[len] != ' ') continue;
    const char *end = strchr(line, '\n');
    const char *hit = strstr(line, want);
    cr_assert(hit && (!end || hit < end), "h5ls shows %.*s, expected %s",
              (int)(end ? end - line : 80), line, want);
    return;
  }
  cr_assert_fail("h5ls -r does not list %s:\n%s", name, listing);
}

/* The values in `h5dump -y -w 0 -m %.9g -d NAME`, as doubles. */
static double *dumped_values(const char *path, const char *name, size_t *count) {
  char args[256];
  snprintf(args, sizeof args, "-y -w 0 -m %%.9g -d %s", name);
  char *out = tool_output("h5dump", args, path);
  char *data = strstr(out, "DATA {");
  cr_assert_not_null(data, "h5dump shows no data for %s:\n%s", name, out);
  data += strlen("DATA {");
  size_t cap = 1024, n = 0;
  double *values = calloc(cap, sizeof *values);
  for (char *p = data;;) {
    while (*p == ' ' || *p == ',' || *p == '\n' || *p == '\r' || *p == '\t') p++;
    if (*p == '}' || *p == '\0') break;
    char *end;
    double v = strtod(p, &end);
    cr_assert(end != p, "h5dump %s: cannot parse \"%.20s\"", name, p);
    if (n == cap) values = realloc(values, (cap *= 2) * sizeof *values);
    values[n++] = v;
    p = end;
  }
  free(out);
  *count = n;
  return values;
}

/* Values compare as `type`: %.9g round-trips a float, not the double it came from. */
#define EXPECT_DUMPED(path, name, array, n, type)                                           \
  do {                                                                                      \
    size_t got_;                                                                            \
    double *v_ = dumped_values((path), (name), &got_);                                      \
    cr_assert_eq(got_, (size_t)(n), "h5dump %s: %zu values, expected %zu", (name), got_,    \
                 (size_t)(n));                                                              \
    for (size_t k_ = 0; k_ < got_; k_++)                                                    \
      cr_assert_eq((type)v_[k_], (type)(array)[k_], "h5dump %s[%zu] = %.9g, expected %.9g", \
                   (name), k_, v_[k_], (double)(array)[k_]);                                \
    free(v_);                                                                               \
  } while (0)

/* The scalar printed in the ATTRIBUTE "name" block of `h5dump -A`. */
static const char *dumped_attribute(const char *dump, const char *name, const char *type) {
  char head[128];
  snprintf(head, sizeof head, "ATTRIBUTE \"%s\" {", name);
  const char *block = strstr(dump, head);
  cr_assert_not_null(block, "h5dump -A lacks attribute %s", name);
  const char *t = strstr(block, "DATATYPE");
  cr_assert(t && strncmp(t + strlen("DATATYPE"), "  ", 2) == 0);
  cr_assert(strncmp(t + strlen("DATATYPE  "), type, strlen(type)) == 0,
            "attribute %s: type %.30s, expected %s", name, t + strlen("DATATYPE  "), type);
  const char *value = strstr(block, "(0): ");
  cr_assert_not_null(value);
  return value + strlen("(0): ");
}

Test(shard_tools, h5ls_lists_the_documented_layout) {
  require_tool("h5ls");
  fixture *f =
      fixture_create(fixture_seed("h5ls_lists_the_documented_layout", 41), 120, 3, 5, 3, 0);
  const halo_shard *s = f->shards[2];
  char path[512];
  halo_shard_path(path, sizeof path, f->dir, 2, 3);
  cr_assert_eq(halo_shard_write(path, s), HALO_OK);
  char *listing = tool_output("h5ls", "-r", path);
  char shape[64];
#define LISTED(name, fmt, ...)                       \
  do {                                               \
    snprintf(shape, sizeof shape, fmt, __VA_ARGS__); \
    expect_listed(listing, name, shape);             \
  } while (0)
  long long local = (long long)(s->n_owned + s->n_halo), owned = (long long)s->n_owned;
  LISTED("/nodes/global_id", "%lld", local);
  LISTED("/nodes/halo_owner", "%lld", (long long)s->n_halo);
  LISTED("/nodes/degree", "%lld", local);
  LISTED("/graph/indptr", "%lld", owned + 1);
  LISTED("/graph/indices", "%lld", (long long)s->nnz);
  LISTED("/features", "%lld, %d", owned, (int)s->features);
  LISTED("/labels", "%lld", owned);
  LISTED("/split/train", "%lld", (long long)s->n_train);
  LISTED("/split/valid", "%lld", (long long)s->n_valid);
  LISTED("/split/test", "%lld", (long long)s->n_test);
  LISTED("/halo/send_ptr", "%d", (int)s->parts + 1);
  LISTED("/halo/send_idx", "%lld", (long long)s->send_ptr[s->parts]);
  LISTED("/halo/recv_ptr", "%d", (int)s->parts + 1);
  free(listing);

  /* An empty part: every dataset is listed with length 0 (unlimited). */
  fixture *g = fixture_create(f->seed + 1, 30, 3, 0, 0, 1);
  halo_shard_path(path, sizeof path, g->dir, 2, 3);
  cr_assert_eq(halo_shard_write(path, g->shards[2]), HALO_OK);
  listing = tool_output("h5ls", "-r", path);
  expect_listed(listing, "/graph/indices", "0/Inf");
  expect_listed(listing, "/graph/indptr", "1");
  cr_assert_null(strstr(listing, "/features"), "no /features when features == 0");
  free(listing);
  fixture_destroy(&g);
  fixture_destroy(&f);
}

Test(shard_tools, h5dump_shows_the_values) {
  require_tool("h5dump");
  fixture *f = fixture_create(fixture_seed("h5dump_shows_the_values", 42), 120, 3, 5, 3, 0);
  const halo_shard *s = f->shards[0];
  const char *path = fixture_path(f, "part.h5");
  cr_assert_eq(halo_shard_write(path, s), HALO_OK);

  char *dump = tool_output("h5dump", "-A", path);
  cr_assert_eq(strtoll(dumped_attribute(dump, "format_version", "H5T_STD_I32LE"), NULL, 10),
               HALO_SHARD_FORMAT_DENSE, "dense features: format 2, as before CSR");
  cr_assert_eq(strtoll(dumped_attribute(dump, "n_owned", "H5T_STD_I64LE"), NULL, 10), s->n_owned);
  cr_assert_eq(strtoll(dumped_attribute(dump, "nnz", "H5T_STD_I64LE"), NULL, 10), s->nnz);
  cr_assert_eq(strtoull(dumped_attribute(dump, "run_id", "H5T_STD_U64LE"), NULL, 10), s->run_id);
  free(dump);

  EXPECT_DUMPED(path, "/graph/indptr", s->indptr, s->n_owned + 1, double);
  EXPECT_DUMPED(path, "/graph/indices", s->indices, s->nnz, double);
  EXPECT_DUMPED(path, "/nodes/global_id", s->global_id, s->n_owned + s->n_halo, double);
  EXPECT_DUMPED(path, "/halo/send_idx", s->send_idx, s->send_ptr[s->parts], double);
  EXPECT_DUMPED(path, "/features", s->x, s->n_owned * s->features, float);
  EXPECT_DUMPED(path, "/labels", s->labels, s->n_owned, double);

  /* Every dataset is chunked and Fletcher-32 checksummed. */
  const char *names[] = {"/nodes/global_id", "/graph/indices", "/features", "/split/test",
                         "/halo/recv_ptr"};
  for (int k = 0; k < 5; k++) {
    char args[128];
    snprintf(args, sizeof args, "-p -H -d %s", names[k]);
    char *props = tool_output("h5dump", args, path);
    cr_assert_not_null(strstr(props, "CHUNKED"), "%s is not chunked:\n%s", names[k], props);
    cr_assert_not_null(strstr(props, "CHECKSUM FLETCHER32"), "%s has no Fletcher-32:\n%s", names[k],
                       props);
    free(props);
  }
  fixture_destroy(&f);
}

Test(shard_tools, h5dump_shows_the_manifest) {
  require_tool("h5dump");
  fixture *f = fixture_create(fixture_seed("h5dump_shows_the_manifest", 43), 90, 4, 2, 2, 0);
  const char *path = fixture_path(f, "manifest.h5");
  cr_assert_eq(halo_manifest_write(path, f->m), HALO_OK);
  char *dump = tool_output("h5dump", "-A", path);
  const char *method = dumped_attribute(dump, "method", "H5T_STRING");
  cr_assert(strncmp(method, "\"metis\"\n", 8) == 0, "method shows as %.20s", method);
  cr_assert_eq(strtoull(dumped_attribute(dump, "run_id", "H5T_STD_U64LE"), NULL, 10), f->m->run_id);
  cr_assert_eq(strtoull(dumped_attribute(dump, "source_digest", "H5T_STD_U64LE"), NULL, 10),
               f->m->source_digest);
  cr_assert_eq(strtoll(dumped_attribute(dump, "parts", "H5T_STD_I32LE"), NULL, 10), 4);
  free(dump);
  EXPECT_DUMPED(path, "/part", f->m->part, f->m->nodes, double);
  EXPECT_DUMPED(path, "/parts/owned", f->m->part_owned, f->m->parts, double);
  EXPECT_DUMPED(path, "/parts/halo", f->m->part_halo, f->m->parts, double);
  char *listing = tool_output("h5ls", "-r", path);
  expect_listed(listing, "/parts/digest", "4");
  free(listing);
  fixture_destroy(&f);
}

/* A part with CSR features (format 3): h5dump shows the version, the count
 * and the three arrays, each chunked with Fletcher-32, and the rows they
 * spell are the dense rows the part was made from; the reader gives the
 * same shard back. */
Test(shard_tools, h5dump_shows_csr_features) {
  require_tool("h5dump");
  fixture *f = fixture_create(fixture_seed("h5dump_shows_csr_features", 43), 120, 3, 7, 3, 0);
  halo_shard *s = shard_clone(f->shards[1]);
  const int64_t count = s->n_owned * s->features;
  for (int64_t k = 0; k < count; k++)
    if (k % 3) s->x[k] = 0.0f; /* two thirds zero */
  float *dense = malloc((size_t)count * sizeof *dense);
  cr_assert_not_null(dense);
  memcpy(dense, s->x, (size_t)count * sizeof *dense);
  cr_assert_eq(halo_shard_features_to_csr(s), HALO_OK);
  cr_assert_null(s->x);
  cr_assert_eq(s->format_version, HALO_SHARD_FORMAT_VERSION);
  const char *path = fixture_path(f, "sparse.h5");
  cr_assert_eq(halo_shard_write(path, s), HALO_OK);

  char *dump = tool_output("h5dump", "-A", path);
  cr_assert_eq(strtoll(dumped_attribute(dump, "format_version", "H5T_STD_I32LE"), NULL, 10), 3);
  cr_assert_eq(strtoll(dumped_attribute(dump, "features_nnz", "H5T_STD_I64LE"), NULL, 10),
               s->x_nnz);
  free(dump);
  char *listing = tool_output("h5ls", "-r", path);
  cr_assert_null(strstr(listing, "/features "), "no dense /features in a CSR part:\n%s", listing);
  free(listing);
  EXPECT_DUMPED(path, "/features_csr/indptr", s->x_indptr, s->n_owned + 1, double);
  EXPECT_DUMPED(path, "/features_csr/indices", s->x_indices, s->x_nnz, double);
  EXPECT_DUMPED(path, "/features_csr/values", s->x_values, s->x_nnz, float);

  /* The rows h5dump shows, spelled out, are the dense rows. */
  size_t n_ptr, n_idx, n_val;
  double *ptr = dumped_values(path, "/features_csr/indptr", &n_ptr);
  double *idx = dumped_values(path, "/features_csr/indices", &n_idx);
  double *val = dumped_values(path, "/features_csr/values", &n_val);
  float *rows = calloc((size_t)count, sizeof *rows);
  for (int64_t i = 0; i < s->n_owned; i++)
    for (int64_t k = (int64_t)ptr[i]; k < (int64_t)ptr[i + 1]; k++)
      rows[i * s->features + (int64_t)idx[k]] = (float)val[k];
  cr_expect_arr_eq(rows, dense, (size_t)count * sizeof *rows, "h5dump's CSR spells the rows");
  free(rows);
  free(ptr);
  free(idx);
  free(val);

  char *props = tool_output("h5dump", "-p -H -d /features_csr/values", path);
  cr_assert_not_null(strstr(props, "CHECKSUM FLETCHER32"), "%s", props);
  free(props);

  halo_shard *back = NULL;
  cr_assert_eq(halo_shard_read(path, NULL, &back), HALO_OK);
  shard_expect_equal(back, s);
  cr_assert_eq(halo_shard_digest(back), halo_shard_digest(s));
  float *again = malloc((size_t)count * sizeof *again);
  halo_shard_features_dense(back, again);
  cr_expect_arr_eq(again, dense, (size_t)count * sizeof *again);
  free(again);
  halo_shard_destroy(&back);
  halo_shard_destroy(&s);
  free(dense);
  fixture_destroy(&f);
}
