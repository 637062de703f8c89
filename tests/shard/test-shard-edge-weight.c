/* The optional edge weights of a part (/graph/edge_weight, /nodes/weighted_degree)
 * and /parts/edge_weight_digest of its manifest (docs/shard-format.md, "Edge
 * weights"): written only for a weighted graph, read back equal, absent
 * otherwise (the part's bits and digest unchanged), covered by their own
 * digest, refused when negative or when part and manifest disagree, and
 * carried through halo_shard_merge entry by entry. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-rng.h"
#include "shard-fixture.h"

/* w(u, v) = w(v, u): k/8, k in [0, 24), from the pair (0 included). */
static float pair_weight(uint64_t seed, int64_t u, int64_t v) {
  const int64_t lo = u < v ? u : v, hi = u < v ? v : u;
  return (float)(halo_rng_bits(halo_rng_key(seed, HALO_RNG_GRAPH, 5, 0), (uint64_t)lo,
                               (uint32_t)hi) %
                 24) /
         8.0f;
}

/* Gives every part of f its weights and weighted degrees (from the dense
 * adjacency: the definition, not the partitioner's code) and the manifest
 * their digests. */
static void add_weights(fixture *f) {
  f->m->part_edge_weight_digest = calloc((size_t)f->parts, sizeof(uint64_t));
  for (int32_t p = 0; p < f->parts; p++) {
    halo_shard *s = f->shards[p];
    s->edge_weight = calloc((size_t)s->nnz + 1, sizeof *s->edge_weight);
    s->weighted_degree = calloc((size_t)(s->n_owned + s->n_halo), sizeof *s->weighted_degree);
    for (int64_t r = 0; r < s->n_owned; r++)
      for (int64_t k = s->indptr[r]; k < s->indptr[r + 1]; k++)
        s->edge_weight[k] = pair_weight(f->seed, s->global_id[r], s->global_id[s->indices[k]]);
    for (int64_t r = 0; r < s->n_owned + s->n_halo; r++)
      for (int64_t u = 0; u < f->n; u++)
        if (f->adj[s->global_id[r] * f->n + u])
          s->weighted_degree[r] += pair_weight(f->seed, s->global_id[r], u);
    f->m->part_edge_weight_digest[p] = halo_shard_digest_edge_weight(s);
  }
}

static const char *part_path(fixture *f, int32_t p) {
  char name[64];
  snprintf(name, sizeof name, "part-%05d-of-%05d.h5", (int)p, (int)f->parts);
  return fixture_path(f, name);
}

Test(shard_edge_weight, round_trip_and_digests) {
  fixture *f = fixture_create(fixture_seed("edge_weight.round_trip", 71), 110, 3, 4, 3, 0);
  uint64_t before[3];
  for (int32_t p = 0; p < 3; p++) before[p] = f->m->part_digest[p];
  add_weights(f);
  fixture_write_run(f);
  halo_manifest *m = NULL;
  cr_assert_eq(halo_manifest_read(fixture_path(f, "manifest.h5"), &m), HALO_OK);
  cr_assert_not_null(m->part_edge_weight_digest);
  for (int32_t p = 0; p < 3; p++) {
    /* The content digest leaves the weights out; their own sees each. */
    cr_expect_eq(halo_shard_digest(f->shards[p]), before[p]);
    cr_expect_eq(m->part_edge_weight_digest[p], f->m->part_edge_weight_digest[p]);
    for (int pass = 0; pass < 2; pass++) {
      halo_shard *s = NULL;
      cr_assert_eq(halo_shard_read(part_path(f, p), pass ? m : NULL, &s), HALO_OK);
      shard_expect_equal(s, f->shards[p]);
      cr_assert(s->edge_weight && s->weighted_degree, "part %d: no weights read", p);
      for (int64_t r = 0; r < s->n_owned; r++)
        for (int64_t k = s->indptr[r]; k < s->indptr[r + 1]; k++)
          cr_assert_eq(s->edge_weight[k],
                       pair_weight(f->seed, s->global_id[r], s->global_id[s->indices[k]]));
      cr_assert_arr_eq(s->weighted_degree, f->shards[p]->weighted_degree,
                       (size_t)(s->n_owned + s->n_halo) * sizeof *s->weighted_degree);
      halo_shard_destroy(&s);
    }
    const uint64_t own = halo_shard_digest_edge_weight(f->shards[p]);
    f->shards[p]->edge_weight[0] += 1.0f;
    cr_expect_neq(halo_shard_digest_edge_weight(f->shards[p]), own);
    f->shards[p]->edge_weight[0] -= 1.0f;
    f->shards[p]->weighted_degree[0] += 1.0;
    cr_expect_neq(halo_shard_digest_edge_weight(f->shards[p]), own);
    f->shards[p]->weighted_degree[0] -= 1.0;
  }
  halo_manifest_destroy(&m);
  fixture_destroy(&f);
}

Test(shard_edge_weight, absent_when_unweighted) {
  fixture *f = fixture_create(fixture_seed("edge_weight.absent", 72), 80, 2, 3, 2, 0);
  fixture_write_run(f);
  hid_t file = H5Fopen(part_path(f, 0), H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert(file >= 0);
  cr_expect_eq(H5Lexists(file, "/graph/edge_weight", H5P_DEFAULT), 0);
  cr_expect_eq(H5Lexists(file, "/nodes/weighted_degree", H5P_DEFAULT), 0);
  H5Fclose(file);
  halo_manifest *m = NULL;
  cr_assert_eq(halo_manifest_read(fixture_path(f, "manifest.h5"), &m), HALO_OK);
  cr_expect_null(m->part_edge_weight_digest);
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_read(part_path(f, 1), m, &s), HALO_OK);
  cr_expect_null(s->edge_weight);
  cr_expect_null(s->weighted_degree);
  halo_shard_destroy(&s);
  halo_manifest_destroy(&m);
  fixture_destroy(&f);
}

/* A part and a manifest that disagree, a forged digest, and values no
 * loader admits: one line each, naming the file. */
Test(shard_edge_weight, refused) {
  fixture *f = fixture_create(fixture_seed("edge_weight.refused", 73), 90, 2, 3, 2, 0);
  add_weights(f);
  fixture_write_run(f);
  /* The manifest without weights, the parts with them. */
  uint64_t *digests = f->m->part_edge_weight_digest;
  f->m->part_edge_weight_digest = NULL;
  expect_shard_fails(part_path(f, 0), f->m, HALO_ERR_MISMATCH,
                     "has /graph/edge_weight but the manifest lists no edge weights", NULL);
  /* A digest that is not the part's. */
  f->m->part_edge_weight_digest = digests;
  digests[1] ^= 1;
  expect_shard_fails(part_path(f, 1), f->m, HALO_ERR_CORRUPT, "/graph/edge_weight digest",
                     "does not match the manifest's", NULL);
  digests[1] ^= 1;
  /* A negative weight: the writer refuses it, as the reader would. */
  halo_shard *s = shard_clone(f->shards[0]);
  cr_assert_gt(s->nnz, 0);
  s->edge_weight = malloc((size_t)s->nnz * sizeof *s->edge_weight);
  s->weighted_degree =
      calloc((size_t)(s->n_owned + s->n_halo), sizeof *s->weighted_degree);
  memcpy(s->edge_weight, f->shards[0]->edge_weight, (size_t)s->nnz * sizeof *s->edge_weight);
  s->edge_weight[s->nnz - 1] = -0.5f;
  capture c;
  capture_begin(&c);
  halo_status st = halo_shard_write(fixture_path(f, "negative.h5"), s);
  char *said = capture_end(&c);
  cr_expect_eq(st, HALO_ERR_RANGE);
  cr_expect(strstr(said, "/graph/edge_weight[") && strstr(said, "is not a finite weight >= 0"),
            "%s", said);
  free(said);
  halo_shard_destroy(&s);
  fixture_destroy(&f);
}

/* K parts on P ranks: the merged shard holds each entry's weight and each
 * row's weighted degree, by global id. */
Test(shard_edge_weight, merge_keeps_each_entry) {
  fixture *f = fixture_create(fixture_seed("edge_weight.merge", 74), 120, 4, 3, 2, 0);
  add_weights(f);
  int32_t group_of[4];
  cr_assert_eq(halo_shard_group(f->m->part_owned, NULL, 4, 2, group_of), HALO_OK);
  for (int32_t g = 0; g < 2; g++) {
    const halo_shard *in[4];
    int32_t count = 0;
    for (int32_t p = 0; p < 4; p++)
      if (group_of[p] == g) in[count++] = f->shards[p];
    halo_shard *s = NULL;
    cr_assert_eq(halo_shard_merge(in, count, group_of, 2, g, &s), HALO_OK);
    cr_assert(s->edge_weight && s->weighted_degree);
    for (int64_t r = 0; r < s->n_owned; r++)
      for (int64_t k = s->indptr[r]; k < s->indptr[r + 1]; k++)
        cr_assert_eq(s->edge_weight[k],
                     pair_weight(f->seed, s->global_id[r], s->global_id[s->indices[k]]),
                     "group %d row %lld", g, (long long)r);
    for (int64_t r = 0; r < s->n_owned + s->n_halo; r++) {
      double d = 0.0;
      for (int64_t u = 0; u < f->n; u++)
        if (f->adj[s->global_id[r] * f->n + u]) d += pair_weight(f->seed, s->global_id[r], u);
      cr_assert_eq(s->weighted_degree[r], d, "group %d row %lld", g, (long long)r);
    }
    halo_shard_destroy(&s);
  }
  fixture_destroy(&f);
}
