/* halo-partition stores each owned node's id of the input file in the
 * shards (/nodes/original_id) when the loader renumbered the ids (SNAP edge
 * lists), and nothing when the ids were the node ids (OGB, a SNAP list of
 * 0..n-1).  The expected ids are computed here from the file alone: the
 * sorted distinct ids of the file, node v being the v-th. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-rng.h"
#include "halo-shard.h"
#include "partition-util.h"

#define EXE HALO_PARTITION_EXE

static int cmp_i64(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  return (a > b) - (a < b);
}

/* Writes a SNAP edge list of `edges` random edges between the `count` ids
 * of ids[] (plus a chain through all of them, so every id occurs), and
 * returns the sorted distinct ids in *sorted (count of them). */
static void write_snap(const char *path, const int64_t *ids, int64_t count, int64_t edges,
                       uint64_t seed, int64_t **sorted) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  fprintf(f, "# test list, seed %llu\n", (unsigned long long)seed);
  for (int64_t k = 0; k + 1 < count; k++)
    fprintf(f, "%lld\t%lld\n", (long long)ids[k], (long long)ids[k + 1]);
  uint64_t key = halo_rng_key(seed, 0x5a1, (uint64_t)count, (uint64_t)edges);
  for (int64_t e = 0; e < edges; e++) {
    int64_t a = (int64_t)(halo_rng_bits(key, (uint64_t)e, 0) % (uint64_t)count);
    int64_t b = (int64_t)(halo_rng_bits(key, (uint64_t)e, 1) % (uint64_t)count);
    fprintf(f, "%lld %lld\n", (long long)ids[a], (long long)ids[b]);
  }
  cr_assert_eq(fclose(f), 0);
  *sorted = malloc((size_t)count * sizeof **sorted);
  memcpy(*sorted, ids, (size_t)count * sizeof **sorted);
  qsort(*sorted, (size_t)count, sizeof **sorted, cmp_i64);
  for (int64_t k = 1; k < count; k++) cr_assert_neq((*sorted)[k], (*sorted)[k - 1], "ids repeat");
}

/* Partitions `input` into `parts` and checks every part's original ids
 * against sorted[] (NULL: the run must store none).  Every node must be
 * owned exactly once. */
static void partition_and_check(const char *input, const char *format, int32_t parts,
                                const int64_t *sorted, int64_t n) {
  char *dir = pt_temp_dir("orig-ids"), *out = NULL, od[512], path[4096];
  snprintf(od, sizeof od, "%s/o", dir);
  int rc = pt_run(&out, "%s --input %s --format %s --parts %d --out %s", EXE, input, format,
                  (int)parts, od);
  cr_assert_eq(rc, 0, "%s", out);
  halo_manifest *m = NULL;
  snprintf(path, sizeof path, "%s/manifest.h5", od);
  cr_assert_eq(halo_manifest_read(path, &m), HALO_OK, "%s", path);
  cr_assert_eq(m->nodes, n);
  cr_assert_eq(m->part_original_id_digest == NULL, sorted == NULL,
               "/parts/original_id_digest present: %d, expected %d",
               m->part_original_id_digest != NULL, sorted != NULL);
  uint8_t *seen = calloc((size_t)n, 1);
  for (int32_t p = 0; p < parts; p++) {
    halo_shard *s = NULL;
    cr_assert_eq(halo_shard_path(path, sizeof path, od, p, parts), HALO_OK);
    cr_assert_eq(halo_shard_read(path, m, &s), HALO_OK, "%s", path);
    cr_assert_eq(s->original_id == NULL, sorted == NULL, "part %d", (int)p);
    for (int64_t i = 0; i < s->n_owned; i++) {
      int64_t v = s->global_id[i];
      cr_assert(!seen[v], "node %lld owned twice", (long long)v);
      seen[v] = 1;
      if (sorted)
        cr_assert_eq(s->original_id[i], sorted[v],
                     "part %d row %lld (node %lld): original id %lld, the file's is %lld", (int)p,
                     (long long)i, (long long)v, (long long)s->original_id[i],
                     (long long)sorted[v]);
    }
    cr_assert_gt(s->n_owned, 0, "part %d owns nothing: the test would prove little", (int)p);
    halo_shard_destroy(&s);
  }
  for (int64_t v = 0; v < n; v++) cr_assert(seen[v], "node %lld owned by no part", (long long)v);
  free(seen);
  halo_manifest_destroy(&m);
  free(out);
  pt_remove_tree(dir);
}

/* Sparse ids (the loader's hash-set path), the 1000, 7, 42, 99999
 * among them, in file order unlike their sorted order. */
Test(original_ids, snap_sparse_ids_in_two_parts) {
  uint64_t seed = pt_seed("snap_sparse_ids_in_two_parts", 31);
  enum { COUNT = 60 };
  int64_t ids[COUNT] = {1000, 7, 42, 99999};
  uint64_t key = halo_rng_key(seed, 0x1d, COUNT, 0);
  for (int k = 4; k < COUNT; k++) {
    int fresh = 0;
    for (uint64_t attempt = 0; !fresh; attempt++) {
      ids[k] = (int64_t)(halo_rng_bits(key, (uint64_t)k, attempt) % 5000000000ull);
      fresh = 1;
      for (int j = 0; j < k; j++) fresh &= ids[j] != ids[k];
    }
  }
  char *dir = pt_temp_dir("snap-sparse");
  char input[512];
  snprintf(input, sizeof input, "%s/g.txt", dir);
  int64_t *sorted = NULL;
  write_snap(input, ids, COUNT, 120, seed, &sorted);
  partition_and_check(input, "snap", 2, sorted, COUNT);
  free(sorted);
  pt_remove_tree(dir);
}

/* Dense but gapped ids (the loader's bitmap path). */
Test(original_ids, snap_dense_ids_with_gaps_in_three_parts) {
  uint64_t seed = pt_seed("snap_dense_ids_with_gaps_in_three_parts", 32);
  enum { COUNT = 200 };
  int64_t ids[COUNT];
  uint64_t key = halo_rng_key(seed, 0x1e, COUNT, 0);
  for (int64_t k = 0, next = 3; k < COUNT; k++) {
    next += 1 + (int64_t)(halo_rng_bits(key, (uint64_t)k, 0) % 5);
    ids[(k * 7) % COUNT] = next; /* a permutation: 7 and 200 are coprime */
  }
  char *dir = pt_temp_dir("snap-dense");
  char input[512];
  snprintf(input, sizeof input, "%s/g.txt", dir);
  int64_t *sorted = NULL;
  write_snap(input, ids, COUNT, 500, seed, &sorted);
  cr_assert_lt(sorted[COUNT - 1], 64 * 500, "meant for the bitmap path");
  partition_and_check(input, "snap", 3, sorted, COUNT);
  free(sorted);
  pt_remove_tree(dir);
}

/* A SNAP list whose ids are 0..n-1 is not renumbered: no original ids. */
Test(original_ids, snap_ids_already_dense_store_none) {
  enum { COUNT = 50 };
  int64_t ids[COUNT];
  for (int k = 0; k < COUNT; k++) ids[k] = COUNT - 1 - k;
  char *dir = pt_temp_dir("snap-plain");
  char input[512];
  snprintf(input, sizeof input, "%s/g.txt", dir);
  int64_t *sorted = NULL;
  write_snap(input, ids, COUNT, 100, 33, &sorted);
  partition_and_check(input, "snap", 2, NULL, COUNT);
  free(sorted);
  pt_remove_tree(dir);
}

/* OGB's node ids are the node ids: Cora's shards carry none. */
Test(original_ids, cora_stores_none) {
  partition_and_check(HALO_DATASETS_DIR "/cora", "ogb", 4, NULL, 2708);
}

/* A run written before original ids existed (the committed fuzz base) still
 * reads, with s->original_id NULL. */
Test(original_ids, shards_written_before_still_read) {
  char path[4096];
  const char *dir = HALO_SOURCE_DIR "/tests/fuzz/shard-base";
  halo_manifest *m = NULL;
  snprintf(path, sizeof path, "%s/manifest.h5", dir);
  cr_assert_eq(halo_manifest_read(path, &m), HALO_OK, "%s", path);
  cr_assert_null(m->part_original_id_digest);
  for (int32_t p = 0; p < m->parts; p++) {
    halo_shard *s = NULL;
    cr_assert_eq(halo_shard_path(path, sizeof path, dir, p, m->parts), HALO_OK);
    cr_assert_eq(halo_shard_read(path, m, &s), HALO_OK, "%s", path);
    cr_assert_null(s->original_id);
    halo_shard_destroy(&s);
  }
  halo_manifest_destroy(&m);
}
