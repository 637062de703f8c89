/* The manifest read without /part (HALO_MANIFEST_NO_PART), as halo-train
 * reads it: m->part stays NULL, every manifest check that does not need the
 * values of /part still runs, and a shard is still held to its run by
 * run_id, counts and content digest.  Only the row-owner cross-check against
 * /part is left out, and the digest covers what it checked. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard-fixture.h"

static halo_manifest *read_no_part(const char *path) {
  halo_manifest *m = NULL;
  cr_assert_eq(halo_manifest_read_opts(path, HALO_MANIFEST_NO_PART, &m), HALO_OK, "%s", path);
  cr_assert_null(m->part, "HALO_MANIFEST_NO_PART must leave part NULL");
  return m;
}

static halo_shard *read_ok(const char *path, const halo_manifest *m) {
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_read(path, m, &s), HALO_OK, "%s", path);
  return s;
}

/* Writes one element of an existing dataset in place, through HDF5, so that
 * its checksum stays right and only halo's own checks can object. */
static void poke_i64(const char *path, const char *name, hsize_t index, hid_t type, int64_t value) {
  hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert(file >= 0, "open %s", path);
  hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
  cr_assert(dset >= 0, "open %s", name);
  hid_t space = H5Dget_space(dset);
  hsize_t one = 1;
  cr_assert(H5Sselect_hyperslab(space, H5S_SELECT_SET, &index, NULL, &one, NULL) >= 0);
  hid_t mem = H5Screate_simple(1, &one, NULL);
  int32_t narrow = (int32_t)value;
  const void *data =
      H5Tequal(type, H5T_NATIVE_INT32) > 0 ? (const void *)&narrow : (const void *)&value;
  cr_assert(H5Dwrite(dset, type, mem, space, H5P_DEFAULT, data) >= 0, "write %s", name);
  H5Sclose(mem);
  H5Sclose(space);
  H5Dclose(dset);
  H5Fclose(file);
}

/* (a) and (c): every part of a good run reads against a manifest without
 * /part, equal to what was written; the manifest holds everything but part. */
Test(shard_no_part, reads_every_good_shard) {
  fixture *f = fixture_create(fixture_seed("no_part_reads_every_good_shard", 51), 150, 4, 7, 5, 0);
  fixture_write_run(f);
  halo_manifest *m = read_no_part(fixture_path(f, "manifest.h5"));
  const halo_manifest *w = f->m;
  fixture_expect_manifest_equal(m, w);
  for (int32_t p = 0; p < f->parts; p++) {
    char path[512];
    cr_assert_eq(halo_shard_path(path, sizeof path, f->dir, p, f->parts), HALO_OK);
    halo_shard *s = read_ok(path, m);
    shard_expect_equal(f->shards[p], s);
    halo_shard_destroy(&s);
  }
  halo_manifest_destroy(&m);
  cr_assert_null(m);
  fixture_destroy(&f);
}

/* (b): part 1's last halo row is handed to part 3, which owns nothing (so
 * the halo stays grouped and recv_ptr can follow).  The shard is valid on
 * its own and rewritten with good checksums, but its digest no longer
 * matches the manifest's: refused without /part as with it. */
Test(shard_no_part, refuses_a_reassigned_halo_row) {
  fixture *f =
      fixture_create(fixture_seed("no_part_refuses_a_reassigned_halo_row", 52), 150, 4, 6, 4, 1);
  cr_assert_eq(f->m->part_owned[3], 0, "part 3 should own nothing");
  fixture_write_run(f);
  halo_shard *s = shard_clone(f->shards[1]);
  cr_assert_gt(s->n_halo, 0, "fixture too trivial");
  int64_t h = s->n_halo - 1;
  int32_t was = s->halo_owner[h];
  cr_assert_lt(was, 3);
  s->halo_owner[h] = 3;
  for (int32_t q = was + 1; q <= 3; q++) s->recv_ptr[q] -= 1;
  const char *path = fixture_path(f, "reassigned.h5");
  cr_assert_eq(halo_shard_write(path, s), HALO_OK, "the edited shard must be valid on its own");
  halo_shard *back = read_ok(path, NULL);
  shard_expect_equal(s, back);
  halo_shard_destroy(&back);

  halo_manifest *m = read_no_part(fixture_path(f, "manifest.h5"));
  expect_shard_fails(path, m, HALO_ERR_CORRUPT, "content digest", "does not match the manifest's",
                     NULL);
  char says[96];
  snprintf(says, sizeof says, "belongs to part 3, but the manifest says %d", (int)was);
  expect_shard_fails(path, f->m, HALO_ERR_MISMATCH, says, NULL);

  /* With the manifest's digest forged to match, only /part could still
   * tell: that is the one check left out without it. */
  m->part_digest[1] = halo_shard_digest(s);
  f->m->part_digest[1] = m->part_digest[1];
  back = read_ok(path, m);
  halo_shard_destroy(&back);
  expect_shard_fails(path, f->m, HALO_ERR_MISMATCH, says, NULL);
  halo_manifest_destroy(&m);
  halo_shard_destroy(&s);
  fixture_destroy(&f);
}

/* run_id and counts still tie a shard to its run without /part. */
Test(shard_no_part, refuses_another_run) {
  fixture *f = fixture_create(fixture_seed("no_part_refuses_another_run", 53), 120, 3, 5, 3, 0);
  fixture_write_run(f);
  halo_manifest *m = read_no_part(fixture_path(f, "manifest.h5"));
  halo_shard *other = shard_clone(f->shards[2]);
  other->run_id ^= 0x5a5a;
  const char *path = fixture_path(f, "other.h5");
  cr_assert_eq(halo_shard_write(path, other), HALO_OK);
  expect_shard_fails(path, m, HALO_ERR_MISMATCH, "run_id", "another partition run", NULL);
  halo_shard_destroy(&other);

  char good[512];
  cr_assert_eq(halo_shard_path(good, sizeof good, f->dir, 2, f->parts), HALO_OK);
  m->part_halo[2] += 1;
  expect_shard_fails(good, m, HALO_ERR_MISMATCH, "n_halo", "manifest says", NULL);
  m->part_halo[2] -= 1;
  m->part_digest[2] ^= 1;
  expect_shard_fails(good, m, HALO_ERR_CORRUPT, "content digest", NULL);
  m->part_digest[2] ^= 1;
  halo_shard *s = read_ok(good, m);
  halo_shard_destroy(&s);
  halo_manifest_destroy(&m);
  fixture_destroy(&f);
}

/* Every manifest check that does not need the values of /part still runs;
 * the ones that do run only in the full read. */
Test(shard_no_part, manifest_checks_that_remain) {
  fixture *f =
      fixture_create(fixture_seed("no_part_manifest_checks_that_remain", 54), 150, 4, 6, 4, 0);
  fixture_write_run(f);
  const char *good = fixture_path(f, "manifest.h5"), *bad = fixture_path(f, "manifest-bad.h5");
  const unsigned NO_PART = HALO_MANIFEST_NO_PART;
  expect_manifest_opts_fails(good, 0x80u, HALO_ERR_ARG, "unknown flags 0x80", NULL);

  /* A /part value out of range: read only by the full read. */
  copy_file(good, bad);
  poke_i64(bad, "/part", 5, H5T_NATIVE_INT32, f->parts);
  expect_manifest_fails(bad, HALO_ERR_RANGE, "/part[5] = 4", NULL);
  halo_manifest *m = read_no_part(bad);
  halo_manifest_destroy(&m);

  /* /part must still be there, with its type and shape. */
  copy_file(good, bad);
  hid_t file = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert(H5Ldelete(file, "/part", H5P_DEFAULT) >= 0);
  hsize_t short_len = (hsize_t)f->n - 1;
  hid_t space = H5Screate_simple(1, &short_len, NULL);
  hid_t dset =
      H5Dcreate2(file, "/part", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  cr_assert(dset >= 0);
  cr_assert(H5Dwrite(dset, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, f->m->part) >= 0);
  H5Dclose(dset);
  H5Sclose(space);
  H5Fclose(file);
  char length[64];
  snprintf(length, sizeof length, "length is %lld, expected %lld", (long long)f->n - 1,
           (long long)f->n);
  expect_manifest_opts_fails(bad, NO_PART, HALO_ERR_FORMAT, "/part", length, NULL);
  file = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert(H5Ldelete(file, "/part", H5P_DEFAULT) >= 0);
  H5Fclose(file);
  expect_manifest_opts_fails(bad, NO_PART, HALO_ERR_FORMAT, "/part: dataset is missing", NULL);

  /* Part sizes must add up to nodes; with /part each must match its count. */
  int64_t owned2 = f->m->part_owned[2];
  cr_assert_gt(owned2, 0, "fixture too trivial");
  char sums[64];
  snprintf(sums, sizeof sums, "sums to %lld, expected nodes = %lld", (long long)f->n - 1,
           (long long)f->n);
  copy_file(good, bad);
  poke_i64(bad, "/parts/owned", 2, H5T_NATIVE_INT64, owned2 - 1);
  expect_manifest_opts_fails(bad, NO_PART, HALO_ERR_RANGE, "/parts/owned", sums, NULL);
  expect_manifest_fails(bad, HALO_ERR_RANGE, "/parts/owned[2]", "but /part assigns", NULL);
  snprintf(sums, sizeof sums, "sums to more than %lld", (long long)f->n);
  poke_i64(bad, "/parts/owned", 2, H5T_NATIVE_INT64, owned2 + 1);
  expect_manifest_opts_fails(bad, NO_PART, HALO_ERR_RANGE, "/parts/owned", sums, NULL);
  poke_i64(bad, "/parts/owned", 2, H5T_NATIVE_INT64, -1);
  expect_manifest_opts_fails(bad, NO_PART, HALO_ERR_RANGE, "/parts/owned[2] = -1", "out of range",
                             NULL);

  copy_file(good, bad);
  poke_i64(bad, "/parts/halo", 1, H5T_NATIVE_INT64, f->n);
  expect_manifest_opts_fails(bad, NO_PART, HALO_ERR_RANGE, "/parts/halo[1]", "out of range", NULL);

  copy_file(good, bad);
  file = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert(H5Adelete(file, "run_id") >= 0);
  H5Fclose(file);
  expect_manifest_opts_fails(bad, NO_PART, HALO_ERR_FORMAT, "attribute run_id is missing", NULL);

  const char *names[] = {"/parts/digest", "/parts/owned", "/parts/halo"};
  for (int k = 0; k < 3; k++) {
    copy_file(good, bad);
    long offset, size;
    chunk_location(bad, names[k], &offset, &size);
    flip_byte(bad, offset + size / 3);
    expect_manifest_opts_fails(bad, NO_PART, HALO_ERR_CORRUPT, names[k], "Fletcher-32", NULL);
  }
  fixture_destroy(&f);
}
