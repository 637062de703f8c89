/* The optional /nodes/original_id of a part and /parts/original_id_digest of
 * its manifest: written only when present, read back equal, absent in a
 * shard without them (which reads as before), checksummed, covered by their
 * own digest and never by halo_shard_digest, so that a reader that predates
 * them still finds the digests it knows. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard-fixture.h"

/* A 3-part run with original ids, every part and the manifest on disk. */
static fixture *run_with_ids(const char *test, uint64_t fallback_seed, int64_t **ids) {
  fixture *f = fixture_create(fixture_seed(test, fallback_seed), 120, 3, 4, 3, 0);
  *ids = fixture_add_original_ids(f);
  fixture_write_run(f);
  return f;
}

static const char *part_path(fixture *f, int32_t p) {
  char name[64];
  snprintf(name, sizeof name, "part-%05d-of-%05d.h5", (int)p, (int)f->parts);
  return fixture_path(f, name);
}

Test(shard_original_id, round_trip_with_and_without_the_manifest) {
  int64_t *ids = NULL;
  fixture *f = run_with_ids("round_trip", 61, &ids);
  halo_manifest *m = NULL;
  cr_assert_eq(halo_manifest_read(fixture_path(f, "manifest.h5"), &m), HALO_OK);
  fixture_expect_manifest_equal(m, f->m);
  cr_assert_not_null(m->part_original_id_digest);
  for (int32_t p = 0; p < f->parts; p++) {
    for (int pass = 0; pass < 2; pass++) {
      halo_shard *s = NULL;
      cr_assert_eq(halo_shard_read(part_path(f, p), pass ? m : NULL, &s), HALO_OK);
      shard_expect_equal(s, f->shards[p]);
      cr_assert_not_null(s->original_id);
      /* Against the ids the fixture drew, not against the shard it wrote. */
      for (int64_t i = 0; i < s->n_owned; i++)
        cr_assert_eq(s->original_id[i], ids[s->global_id[i]], "part %d row %lld", (int)p,
                     (long long)i);
      halo_shard_destroy(&s);
    }
  }
  halo_manifest_destroy(&m);
  free(ids);
  fixture_destroy(&f);
}

/* The dataset is outside halo_shard_digest: the digest a reader without
 * original ids computes, and the manifest's /parts/digest, are those of the
 * same shard without them. */
Test(shard_original_id, content_digest_leaves_it_out) {
  fixture *f = fixture_create(fixture_seed("content_digest", 62), 90, 2, 3, 2, 0);
  uint64_t before[2] = {f->m->part_digest[0], f->m->part_digest[1]};
  int64_t *ids = fixture_add_original_ids(f);
  for (int32_t p = 0; p < 2; p++) {
    cr_assert_eq(halo_shard_digest(f->shards[p]), before[p]);
    cr_assert_eq(f->m->part_digest[p], before[p]);
    /* ... but its own digest sees every id. */
    uint64_t own = halo_shard_digest_original_id(f->shards[p]);
    f->shards[p]->original_id[0]++;
    cr_assert_neq(halo_shard_digest_original_id(f->shards[p]), own);
    f->shards[p]->original_id[0]--;
  }
  free(ids);
  fixture_destroy(&f);
}

/* A run without original ids writes neither dataset and reads NULL. */
Test(shard_original_id, absent_when_the_run_has_none) {
  fixture *f = fixture_create(fixture_seed("absent", 63), 100, 2, 3, 2, 0);
  fixture_write_run(f);
  hid_t file = H5Fopen(part_path(f, 0), H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert(file >= 0);
  cr_assert_eq(H5Lexists(file, "/nodes/original_id", H5P_DEFAULT), 0);
  H5Fclose(file);
  file = H5Fopen(fixture_path(f, "manifest.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert(file >= 0);
  cr_assert_eq(H5Lexists(file, "/parts/original_id_digest", H5P_DEFAULT), 0);
  H5Fclose(file);
  halo_manifest *m = NULL;
  cr_assert_eq(halo_manifest_read(fixture_path(f, "manifest.h5"), &m), HALO_OK);
  cr_assert_null(m->part_original_id_digest);
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_read(part_path(f, 1), m, &s), HALO_OK);
  cr_assert_null(s->original_id);
  halo_shard_destroy(&s);
  halo_manifest_destroy(&m);
  fixture_destroy(&f);
}

/* Written with Fletcher-32 like every dataset: a flipped bit is caught,
 * with or without the manifest; so is one in the manifest's digests. */
Test(shard_original_id, bit_flip_fails_fletcher32) {
  int64_t *ids = NULL;
  fixture *f = run_with_ids("bit_flip", 64, &ids);
  const char *bad = fixture_path(f, "flipped.h5");
  copy_file(part_path(f, 1), bad);
  long offset, size;
  chunk_location(bad, "/nodes/original_id", &offset, &size);
  cr_assert_gt(size, 8);
  flip_byte(bad, offset + size / 2);
  expect_shard_fails(bad, NULL, HALO_ERR_CORRUPT, "/nodes/original_id",
                     "checksum mismatch (Fletcher-32)", NULL);
  expect_shard_fails(bad, f->m, HALO_ERR_CORRUPT, "/nodes/original_id", "Fletcher-32", NULL);

  const char *manifest = fixture_path(f, "manifest-flipped.h5");
  copy_file(fixture_path(f, "manifest.h5"), manifest);
  chunk_location(manifest, "/parts/original_id_digest", &offset, &size);
  flip_byte(manifest, offset + size / 3);
  expect_manifest_fails(manifest, HALO_ERR_CORRUPT, "/parts/original_id_digest", "Fletcher-32",
                        NULL);
  free(ids);
  fixture_destroy(&f);
}

/* Rewrites the part's /nodes/original_id, valid HDF5 with a good checksum. */
static void rewrite_ids(const char *path, const int64_t *values, hsize_t count) {
  hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert(file >= 0);
  cr_assert(H5Ldelete(file, "/nodes/original_id", H5P_DEFAULT) >= 0);
  hid_t space = H5Screate_simple(1, &count, NULL);
  hid_t dset = H5Dcreate2(file, "/nodes/original_id", H5T_STD_I64LE, space, H5P_DEFAULT,
                          H5P_DEFAULT, H5P_DEFAULT);
  cr_assert(dset >= 0);
  cr_assert(H5Dwrite(dset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0);
  H5Dclose(dset);
  H5Sclose(space);
  H5Fclose(file);
}

/* What only the shard's own checks or the manifest can catch: a wrong
 * length, an impossible id, an edit with a valid checksum, and a part and a
 * manifest that disagree on whether the run has original ids. */
Test(shard_original_id, forged_or_mismatched) {
  int64_t *ids = NULL;
  fixture *f = run_with_ids("forged", 65, &ids);
  const halo_shard *good = f->shards[0];
  const char *bad = fixture_path(f, "bad.h5");
  int64_t n = good->n_owned;
  int64_t *values = calloc((size_t)n + 1, sizeof *values);
  memcpy(values, good->original_id, (size_t)n * sizeof *values);

  copy_file(part_path(f, 0), bad);
  rewrite_ids(bad, values, (hsize_t)n - 1);
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "/nodes/original_id", NULL);

  values[n / 2] = good->global_id[n / 2] - 1;
  copy_file(part_path(f, 0), bad);
  rewrite_ids(bad, values, (hsize_t)n);
  expect_shard_fails(bad, NULL, HALO_ERR_RANGE, "/nodes/original_id", "below its global id", NULL);

  values[n / 2] = good->original_id[n / 2] + 1; /* plausible, but not what was written */
  copy_file(part_path(f, 0), bad);
  rewrite_ids(bad, values, (hsize_t)n);
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_read(bad, NULL, &s), HALO_OK, "without a manifest it is plausible");
  halo_shard_destroy(&s);
  expect_shard_fails(bad, f->m, HALO_ERR_CORRUPT, "/nodes/original_id digest", NULL);

  /* The part lacks the dataset that the manifest lists. */
  copy_file(part_path(f, 0), bad);
  hid_t file = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert(file >= 0);
  cr_assert(H5Ldelete(file, "/nodes/original_id", H5P_DEFAULT) >= 0);
  H5Fclose(file);
  cr_assert_eq(halo_shard_read(bad, NULL, &s), HALO_OK, "alone, a part without ids is valid");
  cr_assert_null(s->original_id);
  halo_shard_destroy(&s);
  expect_shard_fails(bad, f->m, HALO_ERR_MISMATCH, "/nodes/original_id is missing", NULL);

  /* The manifest lists none, the part has them. */
  uint64_t *digests = f->m->part_original_id_digest;
  f->m->part_original_id_digest = NULL;
  expect_shard_fails(part_path(f, 0), f->m, HALO_ERR_MISMATCH, "manifest lists no original ids",
                     NULL);
  f->m->part_original_id_digest = digests;
  free(values);
  free(ids);
  fixture_destroy(&f);
}
