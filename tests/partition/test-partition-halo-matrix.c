/* halo-partition --json's "halo_bytes_between_parts": the P x P matrix of
 * bytes part s sends part r in one training epoch.  Checked against the
 * shards themselves, read back with the shard API: entry [s][r] is the
 * length of s's send list for r, and of r's receive range from s, times the
 * epoch's columns (GCN 1433 -> 16 -> 7 with input dropout: forward 16 + 7,
 * backward 16 + 7, docs/partition.md) times 4 bytes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-shard.h"
#include "partition-util.h"

#define EXE HALO_PARTITION_EXE

/* Parses the matrix after "key": in json into want x want values; returns
 * its row count (the rows must each hold `want` numbers). */
static int json_matrix(const char *json, const char *key, int64_t *out, int want) {
  char needle[128];
  snprintf(needle, sizeof needle, "\"%s\": [", key);
  const char *p = strstr(json, needle);
  cr_assert_not_null(p, "no key %s", key);
  p += strlen(needle);
  int rows = 0;
  for (;;) {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ']') break;
    cr_assert_eq(*p, '[', "row %d of %s does not start with [: %.20s", rows, key, p);
    cr_assert_lt(rows, want, "%s has more than %d rows", key, want);
    p++;
    int cols = 0;
    for (;;) {
      while (*p == ' ' || *p == ',') p++;
      if (*p == ']') break;
      char *end = NULL;
      long long v = strtoll(p, &end, 10);
      cr_assert_neq(end, p, "%s[%d][%d] is not an integer: %.20s", key, rows, cols, p);
      cr_assert_lt(cols, want, "%s[%d] has more than %d entries", key, rows, want);
      out[rows * want + cols++] = v;
      p = end;
    }
    cr_assert_eq(cols, want, "%s[%d] has %d entries, expected %d", key, rows, cols, want);
    p++;
    rows++;
  }
  return rows;
}

Test(halo_matrix, cora_four_parts_against_the_shards) {
  enum { P = 4, COLUMNS = 16 + 7 + 16 + 7 };
  char *dir = pt_temp_dir("halo-matrix"), *out = NULL, od[512], json_path[512], path[4096];
  snprintf(od, sizeof od, "%s/o", dir);
  snprintf(json_path, sizeof json_path, "%s/c.json", dir);
  int rc = pt_run(&out, "%s --input %s/cora --parts %d --out %s --dims 1433,16,7 --json %s", EXE,
                  HALO_DATASETS_DIR, P, od, json_path);
  cr_assert_eq(rc, 0, "%s", out);
  char *json = pt_read_file(json_path);
  cr_assert_not_null(json);
  int64_t matrix[P * P];
  cr_assert_eq(json_matrix(json, "halo_bytes_between_parts", matrix, P), P);

  int64_t total = 0;
  for (int k = 0; k < P * P; k++) total += matrix[k];
  cr_assert_eq(total, (int64_t)pt_json_number(json, "predicted_halo_bytes_per_epoch"));
  cr_assert_gt(total, 0);

  halo_manifest *m = NULL;
  snprintf(path, sizeof path, "%s/manifest.h5", od);
  cr_assert_eq(halo_manifest_read(path, &m), HALO_OK, "%s", path);
  halo_shard *shard[P] = {NULL};
  for (int p = 0; p < P; p++) {
    cr_assert_eq(halo_shard_path(path, sizeof path, od, p, P), HALO_OK);
    cr_assert_eq(halo_shard_read(path, m, &shard[p]), HALO_OK, "%s", path);
  }
  for (int s = 0; s < P; s++) {
    cr_assert_eq(matrix[s * P + s], 0, "part %d sends itself %lld bytes", s,
                 (long long)matrix[s * P + s]);
    const int64_t *send_ptr = shard[s]->send_ptr;
    cr_assert_eq(matrix[s * P + 0] + matrix[s * P + 1] + matrix[s * P + 2] + matrix[s * P + 3],
                 send_ptr[P] * COLUMNS * 4, "row %d: what part %d sends in all", s, s);
    for (int r = 0; r < P; r++) {
      int64_t sent = send_ptr[r + 1] - send_ptr[r];
      int64_t received = shard[r]->recv_ptr[s + 1] - shard[r]->recv_ptr[s];
      cr_assert_eq(matrix[s * P + r], sent * COLUMNS * 4,
                   "[%d][%d]: %lld bytes, send list %lld rows", s, r, (long long)matrix[s * P + r],
                   (long long)sent);
      cr_assert_eq(sent, received, "part %d sends %d %lld rows, which receives %lld", s, r,
                   (long long)sent, (long long)received);
    }
  }
  for (int p = 0; p < P; p++) halo_shard_destroy(&shard[p]);
  halo_manifest_destroy(&m);
  free(json);
  free(out);
  pt_remove_tree(dir);
}

/* Without --dims there are no bytes to give; above
 * HALO_PARTITION_MATRIX_MAX_PARTS parts a note replaces the matrix. */
Test(halo_matrix, left_out_without_dims_or_beyond_the_limit) {
  char *dir = pt_temp_dir("halo-matrix-out"), *out = NULL, od[512];
  snprintf(od, sizeof od, "%s/a", dir);
  int rc =
      pt_run(&out, "%s --input %s/cora --parts 2 --out %s --json -", EXE, HALO_DATASETS_DIR, od);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert_null(strstr(out, "halo_bytes_between_parts"), "%s", out);
  free(out);

  snprintf(od, sizeof od, "%s/b", dir);
  rc = pt_run(&out,
              "%s --input %s/cora --parts %d --method block --out %s --dims 1433,16,7 --json -",
              EXE, HALO_DATASETS_DIR, HALO_PARTITION_MATRIX_MAX_PARTS + 1, od);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert_null(strstr(out, "\"halo_bytes_between_parts\""), "the matrix is there");
  const char *note = strstr(out, "\"halo_bytes_between_parts_omitted\": \"1025 parts exceed 1024");
  cr_assert_not_null(note, "no note: %.300s", out);
  free(out);

  snprintf(od, sizeof od, "%s/c", dir);
  rc = pt_run(&out, "%s --input %s/cora --parts 1 --out %s --dims 1433,16,7 --json -", EXE,
              HALO_DATASETS_DIR, od);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert_not_null(strstr(out, "\"halo_bytes_between_parts\": [[0]]"), "%s", out);
  free(out);
  pt_remove_tree(dir);
}
