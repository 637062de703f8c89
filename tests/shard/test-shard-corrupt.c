/* Damaged, forged or mismatched files are refused with one line that names
 * the file and what is wrong.  Bad files are made by flipping bytes on disk
 * and by rewriting objects with raw HDF5 calls. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-rng.h"
#include "shard-fixture.h"

/* Part 1 of a 4-part run, written to DIR/good.h5: every dataset non-empty. */
static fixture *good_part(const char *test, uint64_t fallback_seed) {
  fixture *f = fixture_create(fixture_seed(test, fallback_seed), 150, 4, 6, 4, 0);
  const halo_shard *s = f->shards[1];
  cr_assert(s->n_halo > 0 && s->nnz > 0 && s->n_train > 0 && s->n_valid > 0 && s->n_test > 0 &&
                s->send_ptr[s->parts] > 0,
            "fixture too trivial");
  cr_assert_eq(halo_shard_write(fixture_path(f, "good.h5"), s), HALO_OK);
  cr_assert_eq(halo_manifest_write(fixture_path(f, "manifest.h5"), f->m), HALO_OK);
  return f;
}

static const char *const DATASETS[] = {
    "/nodes/global_id", "/nodes/halo_owner", "/nodes/degree",  "/graph/indptr", "/graph/indices",
    "/features",        "/labels",           "/split/train",   "/split/valid",  "/split/test",
    "/halo/send_ptr",   "/halo/send_idx",    "/halo/recv_ptr",
};
enum { NDATASETS = sizeof DATASETS / sizeof DATASETS[0] };

/* One flipped bit in the raw data of any dataset fails its Fletcher-32
 * checksum, with or without a manifest. */
Test(shard_corrupt, bit_flip_in_each_dataset) {
  fixture *f = good_part("bit_flip_in_each_dataset", 21);
  const char *good = fixture_path(f, "good.h5");
  for (int k = 0; k < NDATASETS; k++) {
    const char *bad = fixture_path(f, "flipped.h5");
    copy_file(good, bad);
    long offset, size;
    chunk_location(bad, DATASETS[k], &offset, &size);
    flip_byte(bad, offset + (size - 4) / 2);
    expect_shard_fails(bad, NULL, HALO_ERR_CORRUPT, DATASETS[k], "checksum mismatch (Fletcher-32)",
                       NULL);
    expect_shard_fails(bad, f->m, HALO_ERR_CORRUPT, DATASETS[k], "Fletcher-32", NULL);
  }
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_read(good, f->m, &s), HALO_OK, "the untouched file still reads");
  halo_shard_destroy(&s);
  fixture_destroy(&f);
}

Test(shard_corrupt, bit_flip_in_the_manifest) {
  fixture *f = good_part("bit_flip_in_the_manifest", 22);
  const char *names[] = {"/part", "/parts/digest", "/parts/owned", "/parts/halo"};
  for (int k = 0; k < 4; k++) {
    const char *bad = fixture_path(f, "manifest-flipped.h5");
    copy_file(fixture_path(f, "manifest.h5"), bad);
    long offset, size;
    chunk_location(bad, names[k], &offset, &size);
    flip_byte(bad, offset + size / 3);
    expect_manifest_fails(bad, HALO_ERR_CORRUPT, names[k], "Fletcher-32", NULL);
  }
  fixture_destroy(&f);
}

/* A byte flipped anywhere (metadata included) is either reported, in one
 * line naming the file, or provably harmless: the shard reads back equal. */
Test(shard_corrupt, byte_flip_anywhere) {
  fixture *f = good_part("byte_flip_anywhere", 23);
  const char *good = fixture_path(f, "good.h5");
  long size = file_size(good);
  int refused = 0, harmless = 0;
  for (int trial = 0; trial < 64; trial++) {
    const char *bad = fixture_path(f, "anywhere.h5");
    copy_file(good, bad);
    long offset = (long)(halo_rng_bits(f->seed, 23, (uint64_t)trial) % (uint64_t)size);
    flip_byte(bad, offset);
    capture c;
    halo_shard *s = NULL;
    capture_begin(&c);
    halo_status st = halo_shard_read(bad, f->m, &s);
    char *text = capture_end(&c);
    if (st == HALO_OK) {
      cr_assert_str_empty(text, "offset %ld: success but printed %s", offset, text);
      shard_expect_equal(f->shards[1], s);
      harmless++;
    } else {
      cr_assert_null(s);
      cr_assert_not_null(strstr(text, bad), "offset %ld: message does not name the file: %s",
                         offset, text);
      cr_assert_eq(strchr(text, '\n'), text + strlen(text) - 1, "offset %ld: not one line: %s",
                   offset, text);
      refused++;
    }
    free(text);
    halo_shard_destroy(&s);
    ssize_t open_ids = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    cr_assert_eq(open_ids, 0, "offset %ld: %zd HDF5 objects left open", offset, open_ids);
  }
  fprintf(stderr,
          "byte_flip_anywhere: %d refused, %d harmless (unused bytes) of 64 in a %ld-byte file\n",
          refused, harmless, size);
  cr_assert_gt(refused, 0);
  fixture_destroy(&f);
}

Test(shard_corrupt, truncated_file) {
  fixture *f = good_part("truncated_file", 24);
  const char *good = fixture_path(f, "good.h5");
  long size = file_size(good);
  const char *bad = fixture_path(f, "short.h5");
  long lengths[] = {size - 1, size - 100, size / 2, 600, 8, 1};
  for (int k = 0; k < 6; k++) {
    copy_file(good, bad);
    truncate_file(bad, lengths[k]);
    expect_shard_fails(bad, NULL, HALO_OK, NULL);
  }
  copy_file(good, bad);
  truncate_file(bad, size - 1);
  expect_shard_fails(bad, NULL, HALO_ERR_CORRUPT, "truncated", NULL);
  truncate_file(bad, 0);
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "empty file", NULL);
  const char *manifest = fixture_path(f, "manifest-short.h5");
  copy_file(fixture_path(f, "manifest.h5"), manifest);
  truncate_file(manifest, file_size(manifest) / 2);
  expect_manifest_fails(manifest, HALO_OK, NULL);
  fixture_destroy(&f);
}

Test(shard_corrupt, not_an_hdf5_file) {
  fixture *f = good_part("not_an_hdf5_file", 25);
  const char *text = fixture_path(f, "text.h5");
  FILE *out = fopen(text, "w");
  for (int i = 0; i < 200; i++) fprintf(out, "0,%d\n", i);
  fclose(out);
  expect_shard_fails(text, NULL, HALO_ERR_FORMAT, "not an HDF5 file", NULL);
  expect_manifest_fails(text, HALO_ERR_FORMAT, "not an HDF5 file", NULL);
  const char *missing = fixture_path(f, "missing.h5");
  expect_shard_fails(missing, NULL, HALO_ERR_IO, "No such file", NULL);
  fixture_destroy(&f);
}

/* A valid shard from another partition run reads alone, but not against
 * this run's manifest. */
Test(shard_corrupt, shard_from_another_run) {
  fixture *f = good_part("shard_from_another_run", 26);
  halo_shard *other = shard_clone(f->shards[1]);
  other->run_id ^= 0x5a5a;
  const char *path = fixture_path(f, "other.h5");
  cr_assert_eq(halo_shard_write(path, other), HALO_OK);
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_read(path, NULL, &s), HALO_OK);
  halo_shard_destroy(&s);
  expect_shard_fails(path, f->m, HALO_ERR_MISMATCH, "run_id", "another partition run", NULL);
  halo_shard_destroy(&other);

  /* A different partition of a different graph: counts disagree first. */
  fixture *g = fixture_create(f->seed + 1, 90, 3, 6, 4, 0);
  g->m->run_id = f->m->run_id;
  expect_shard_fails(fixture_path(f, "good.h5"), g->m, HALO_ERR_MISMATCH, "parts = 4",
                     "manifest says 3", NULL);
  fixture_destroy(&g);
  fixture_destroy(&f);
}

/* The same run id but edited content: only the digest can tell. */
Test(shard_corrupt, digest_mismatch) {
  fixture *f = good_part("digest_mismatch", 27);
  halo_shard *edited = shard_clone(f->shards[1]);
  edited->x[edited->n_owned * edited->features - 1] += 0.5f;
  const char *path = fixture_path(f, "edited.h5");
  cr_assert_eq(halo_shard_write(path, edited), HALO_OK);
  expect_shard_fails(path, f->m, HALO_ERR_CORRUPT, "digest", NULL);
  halo_shard_destroy(&edited);
  fixture_destroy(&f);
}

/* Opens DIR/bad.h5 (a fresh copy of good.h5) for raw editing. */
static hid_t open_copy(fixture *f) {
  copy_file(fixture_path(f, "good.h5"), fixture_path(f, "bad.h5"));
  hid_t file = H5Fopen(fixture_path(f, "bad.h5"), H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert(file >= 0);
  return file;
}

static void set_attr(hid_t file, const char *name, hid_t type, const void *value) {
  if (H5Aexists(file, name) > 0) cr_assert(H5Adelete(file, name) >= 0);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  cr_assert(attr >= 0, "create attribute %s", name);
  cr_assert(H5Awrite(attr, type, value) >= 0);
  H5Aclose(attr);
  H5Sclose(space);
}

/* Replaces `name` by a contiguous dataset of the given type and shape. */
static void replace_dataset(hid_t file, const char *name, hid_t type, int rank, const hsize_t *dims,
                            const void *data) {
  cr_assert(H5Ldelete(file, name, H5P_DEFAULT) >= 0, "delete %s", name);
  hid_t space = H5Screate_simple(rank, dims, NULL);
  hid_t dset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  cr_assert(dset >= 0, "create %s", name);
  cr_assert(H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Dclose(dset);
  H5Sclose(space);
}

Test(shard_corrupt, other_format_version) {
  fixture *f = good_part("other_format_version", 28);
  hid_t file = open_copy(f);
  int32_t version = HALO_SHARD_FORMAT_VERSION + 1;
  set_attr(file, "format_version", H5T_NATIVE_INT32, &version);
  H5Fclose(file);
  char have[64], want[64];
  snprintf(have, sizeof have, "format_version %d", version);
  snprintf(want, sizeof want, "reads versions %d to %d", HALO_SHARD_FORMAT_OLDEST,
           HALO_SHARD_FORMAT_VERSION);
  expect_shard_fails(fixture_path(f, "bad.h5"), NULL, HALO_ERR_FORMAT, have, want, NULL);

  const char *manifest = fixture_path(f, "manifest-v2.h5");
  copy_file(fixture_path(f, "manifest.h5"), manifest);
  file = H5Fopen(manifest, H5F_ACC_RDWR, H5P_DEFAULT);
  set_attr(file, "format_version", H5T_NATIVE_INT32, &version);
  H5Fclose(file);
  expect_manifest_fails(manifest, HALO_ERR_FORMAT, have, want, NULL);
  fixture_destroy(&f);
}

Test(shard_corrupt, missing_dataset_or_attribute) {
  fixture *f = good_part("missing_dataset", 29);
  const char *bad = fixture_path(f, "bad.h5");
  for (int k = 0; k < NDATASETS; k++) {
    hid_t file = open_copy(f);
    cr_assert(H5Ldelete(file, DATASETS[k], H5P_DEFAULT) >= 0);
    H5Fclose(file);
    expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, DATASETS[k], "missing", NULL);
  }
  hid_t file = open_copy(f);
  cr_assert(H5Ldelete(file, "/halo", H5P_DEFAULT) >= 0);
  H5Fclose(file);
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "/halo/send_ptr", "missing", NULL);
  file = open_copy(f);
  cr_assert(H5Adelete(file, "nnz") >= 0);
  H5Fclose(file);
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "attribute nnz is missing", NULL);
  fixture_destroy(&f);
}

Test(shard_corrupt, wrong_type_or_shape) {
  fixture *f = good_part("wrong_type_or_shape", 30);
  const halo_shard *s = f->shards[1];
  const char *bad = fixture_path(f, "bad.h5");
  double *wide = calloc((size_t)s->nnz, sizeof *wide);

  hid_t file = open_copy(f);
  hsize_t dims[2] = {(hsize_t)s->nnz, 0};
  replace_dataset(file, "/graph/indices", H5T_NATIVE_DOUBLE, 1, dims, wide);
  H5Fclose(file);
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "/graph/indices", "float64", "expected int32",
                     NULL);

  file = open_copy(f);
  dims[0] = (hsize_t)s->n_halo;
  replace_dataset(file, "/nodes/halo_owner", H5T_STD_U32LE, 1, dims, s->halo_owner);
  H5Fclose(file);
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "/nodes/halo_owner", "uint32", NULL);

  file = open_copy(f);
  dims[0] = (hsize_t)(s->n_owned + s->n_halo - 1);
  replace_dataset(file, "/nodes/degree", H5T_NATIVE_INT64, 1, dims, s->degree);
  H5Fclose(file);
  char expect[128];
  snprintf(expect, sizeof expect, "length is %lld, expected %lld", (long long)dims[0],
           (long long)(s->n_owned + s->n_halo));
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "/nodes/degree", expect, NULL);

  file = open_copy(f);
  dims[0] = (hsize_t)(s->n_owned * s->features);
  replace_dataset(file, "/features", H5T_NATIVE_FLOAT, 1, dims, s->x);
  H5Fclose(file);
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "/features", "rank 1, expected 2", NULL);

  file = open_copy(f);
  dims[0] = (hsize_t)s->n_owned;
  dims[1] = (hsize_t)s->features - 1;
  replace_dataset(file, "/features", H5T_NATIVE_FLOAT, 2, dims, s->x);
  H5Fclose(file);
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "/features", "shape is", NULL);

  file = open_copy(f);
  dims[0] = (hsize_t)s->n_owned + 1;
  int32_t *rows = calloc(dims[0], sizeof *rows);
  for (hsize_t i = 0; i < dims[0]; i++) rows[i] = (int32_t)i;
  replace_dataset(file, "/split/train", H5T_NATIVE_INT32, 1, dims, rows);
  H5Fclose(file);
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "/split/train", "at most", NULL);
  free(rows);

  /* Attributes that disagree with the datasets, or have the wrong type. */
  file = open_copy(f);
  int64_t owned = s->n_owned + 1;
  set_attr(file, "n_owned", H5T_NATIVE_INT64, &owned);
  H5Fclose(file);
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "/nodes/global_id", "length", NULL);

  file = open_copy(f);
  double nodes = (double)s->nodes;
  set_attr(file, "nodes", H5T_NATIVE_DOUBLE, &nodes);
  H5Fclose(file);
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "attribute nodes", "float64", NULL);

  file = open_copy(f);
  int32_t part = s->parts;
  set_attr(file, "part", H5T_NATIVE_INT32, &part);
  H5Fclose(file);
  expect_shard_fails(bad, NULL, HALO_ERR_FORMAT, "part = 4 is out of range", NULL);
  free(wide);
  fixture_destroy(&f);
}

/* Rewrites one element of a dataset in place (its checksum is recomputed,
 * so only the range checks can catch it). */
static void poke(hid_t file, const char *name, hsize_t index, hid_t type, const void *value) {
  hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
  cr_assert(dset >= 0, "open %s", name);
  hid_t space = H5Dget_space(dset);
  hsize_t one = 1, start[2] = {index, 0}, count[2] = {1, 1};
  if (H5Sget_simple_extent_ndims(space) == 2) {
    hsize_t dims[2];
    H5Sget_simple_extent_dims(space, dims, NULL);
    start[0] = index / dims[1];
    start[1] = index % dims[1];
  }
  cr_assert(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL) >= 0);
  hid_t mem = H5Screate_simple(1, &one, NULL);
  cr_assert(H5Dwrite(dset, type, mem, space, H5P_DEFAULT, value) >= 0, "write %s", name);
  H5Sclose(mem);
  H5Sclose(space);
  H5Dclose(dset);
}

Test(shard_corrupt, values_out_of_range) {
  fixture *f = good_part("values_out_of_range", 31);
  const halo_shard *s = f->shards[1];
  int32_t local = (int32_t)(s->n_owned + s->n_halo), owned = (int32_t)s->n_owned;
  int64_t row = s->indptr[1];
  const struct {
    const char *name;
    hsize_t index;
    int wide;
    int64_t value;
    const char *needle;
  } cases[] = {
      {"/graph/indices", (hsize_t)row, 0, local, "/graph/indices["},
      {"/graph/indices", (hsize_t)row, 0, -1, "is out of range"},
      {"/graph/indptr", 0, 1, 1, "/graph/indptr[0] = 1"},
      {"/graph/indptr", (hsize_t)s->n_owned, 1, s->nnz - 1, "/graph/indptr"},
      {"/nodes/global_id", 0, 1, s->nodes, "/nodes/global_id[0]"},
      {"/nodes/halo_owner", 0, 0, s->part, "/nodes/halo_owner[0]"},
      {"/nodes/halo_owner", 0, 0, s->parts, "/nodes/halo_owner[0]"},
      {"/labels", 2, 0, s->classes, "/labels[2]"},
      {"/labels", 2, 0, -2, "/labels[2] = -2"},
      {"/split/train", 0, 0, owned, "/split/train[0]"},
      {"/split/valid", 0, 0, -1, "/split/valid[0]"},
      {"/split/test", (hsize_t)s->n_test - 1, 0, owned, "/split/test["},
      {"/halo/send_idx", 0, 0, owned, "/halo/send_idx[0]"},
      {"/halo/send_ptr", (hsize_t)s->parts, 1, s->send_ptr[s->parts] - 1, "/halo/send_"},
      {"/halo/recv_ptr", 1, 1, s->recv_ptr[1] + 1, "/halo/recv_ptr"},
      {"/nodes/degree", 0, 1, s->degree[0] + 1, "/nodes/degree[0]"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    hid_t file = open_copy(f);
    int32_t narrow = (int32_t)cases[k].value;
    if (cases[k].wide)
      poke(file, cases[k].name, cases[k].index, H5T_NATIVE_INT64, &cases[k].value);
    else
      poke(file, cases[k].name, cases[k].index, H5T_NATIVE_INT32, &narrow);
    H5Fclose(file);
    /* indptr[n_owned] and send_ptr[parts] size other datasets, so a wrong
     * value there surfaces as a shape or range error. */
    expect_shard_fails(fixture_path(f, "bad.h5"), NULL, HALO_OK, cases[k].needle, NULL);
  }
  /* NaN features are refused too. */
  hid_t file = open_copy(f);
  float nan = 0.0f / 0.0f;
  poke(file, "/features", 7, H5T_NATIVE_FLOAT, &nan);
  H5Fclose(file);
  expect_shard_fails(fixture_path(f, "bad.h5"), NULL, HALO_ERR_RANGE, "/features[1][1]",
                     "not finite", NULL);
  fixture_destroy(&f);
}

Test(shard_corrupt, manifest_values_out_of_range) {
  fixture *f = good_part("manifest_values_out_of_range", 32);
  const char *bad = fixture_path(f, "manifest-bad.h5");
  copy_file(fixture_path(f, "manifest.h5"), bad);
  hid_t file = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
  int32_t part = f->parts;
  poke(file, "/part", 5, H5T_NATIVE_INT32, &part);
  H5Fclose(file);
  expect_manifest_fails(bad, HALO_ERR_RANGE, "/part[5] = 4", NULL);

  copy_file(fixture_path(f, "manifest.h5"), bad);
  file = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
  int64_t owned = f->m->part_owned[2] + 1;
  poke(file, "/parts/owned", 2, H5T_NATIVE_INT64, &owned);
  H5Fclose(file);
  expect_manifest_fails(bad, HALO_ERR_RANGE, "/parts/owned[2]", NULL);

  copy_file(fixture_path(f, "manifest.h5"), bad);
  file = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert(H5Adelete(file, "method") >= 0);
  H5Fclose(file);
  expect_manifest_fails(bad, HALO_ERR_FORMAT, "attribute method is missing", NULL);
  fixture_destroy(&f);
}

/* A manifest that disagrees on counts or on who owns a node. */
Test(shard_corrupt, manifest_disagrees) {
  fixture *f = good_part("manifest_disagrees", 33);
  const char *good = fixture_path(f, "good.h5");
  halo_manifest *m = f->m;
  m->part_halo[1] += 1;
  expect_shard_fails(good, m, HALO_ERR_MISMATCH, "n_halo", "manifest says", NULL);
  m->part_halo[1] -= 1;
  /* Swap the owners of one node of part 1 and one of part 2: counts stay. */
  int64_t a = f->shards[1]->global_id[0], b = f->shards[2]->global_id[0];
  m->part[a] = 2;
  m->part[b] = 1;
  expect_shard_fails(good, m, HALO_ERR_MISMATCH, "row 0",
                     "belongs to part 1, but the manifest says 2", NULL);
  m->part[a] = 1;
  m->part[b] = 2;
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_read(good, m, &s), HALO_OK);
  halo_shard_destroy(&s);
  fixture_destroy(&f);
}

/* ---- format versions --------------------------------------------------- */

/* A partition written by format 1 (tests/fuzz/shard-base, made by the
 * halo-partition of that time) still reads: owned ids ascend, no interior
 * prefix is promised. */
Test(shard_version, reads_format_1) {
  const char *base = HALO_SOURCE_DIR "/tests/fuzz/shard-base";
  char path[1024];
  snprintf(path, sizeof path, "%s/manifest.h5", base);
  halo_manifest *m = NULL;
  cr_assert_eq(halo_manifest_read(path, &m), HALO_OK, "%s", path);
  cr_assert_eq(m->format_version, 1);
  for (int32_t p = 0; p < m->parts; p++) {
    halo_shard *s = NULL;
    cr_assert_eq(halo_shard_path(path, sizeof path, base, p, m->parts), HALO_OK);
    cr_assert_eq(halo_shard_read(path, m, &s), HALO_OK, "%s", path);
    cr_expect_eq(s->format_version, 1);
    cr_expect_eq(s->n_interior, 0);
    for (int64_t i = 1; i < s->n_owned; i++) cr_expect_gt(s->global_id[i], s->global_id[i - 1]);
    halo_shard_destroy(&s);
  }
  halo_manifest_destroy(&m);
}

/* A part is read at its manifest's version only: either of two readable
 * versions against the other is refused, before the digest (which the
 * in-memory edit of the manifest leaves matching). */
Test(shard_version, part_and_manifest_versions_agree) {
  fixture *f = good_part("part_and_manifest_versions_agree", 43);
  const char *good = fixture_path(f, "good.h5");
  f->m->format_version = 1;
  expect_shard_fails(good, f->m, HALO_ERR_MISMATCH,
                     "format_version 2 differs from the manifest's 1", NULL);
  f->m->format_version = 2;
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_read(good, f->m, &s), HALO_OK, "%s at its own version", good);
  halo_shard_destroy(&s);
  fixture_destroy(&f);

  const char *base = HALO_SOURCE_DIR "/tests/fuzz/shard-base";
  char path[1024];
  snprintf(path, sizeof path, "%s/manifest.h5", base);
  halo_manifest *m = NULL;
  cr_assert_eq(halo_manifest_read(path, &m), HALO_OK, "%s", path);
  cr_assert_eq(halo_shard_path(path, sizeof path, base, 1, m->parts), HALO_OK);
  m->format_version = 2;
  expect_shard_fails(path, m, HALO_ERR_MISMATCH, "format_version 1 differs from the manifest's 2",
                     NULL);
  m->format_version = 1;
  cr_assert_eq(halo_shard_read(path, m, &s), HALO_OK, "%s at its own version", path);
  halo_shard_destroy(&s);
  halo_manifest_destroy(&m);
}

/* The fixture's owned rows descend within each group: legal in format 2,
 * refused as format 1, whose owned ids must ascend. */
Test(shard_version, format_1_owned_rows_ascend) {
  fixture *f = good_part("format_1_owned_rows_ascend", 41);
  cr_assert_gt(f->shards[1]->global_id[0], f->shards[1]->global_id[1],
               "fixture rows should descend");
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_read(fixture_path(f, "good.h5"), f->m, &s), HALO_OK);
  cr_expect_eq(s->format_version, 2);
  cr_expect_eq(s->n_interior, f->shards[1]->n_interior);
  halo_shard_destroy(&s);
  hid_t file = open_copy(f);
  int32_t version = 1;
  set_attr(file, "format_version", H5T_NATIVE_INT32, &version);
  H5Fclose(file);
  expect_shard_fails(fixture_path(f, "bad.h5"), NULL, HALO_ERR_RANGE, "/nodes/global_id[1]",
                     "does not ascend (owned rows)", NULL);
  fixture_destroy(&f);
}

/* What format 2 checks instead: distinct owned ids, send lists in ascending
 * global id, a true interior prefix, and the n_interior attribute itself. */
Test(shard_version, format_2_rules) {
  fixture *f = good_part("format_2_rules", 42);
  const halo_shard *s = f->shards[1];
  cr_assert(s->n_interior > 0 && s->n_interior < s->n_owned, "fixture needs both kinds of rows");

  hid_t file = open_copy(f);
  poke(file, "/nodes/global_id", 2, H5T_NATIVE_INT64, &s->global_id[0]);
  H5Fclose(file);
  expect_shard_fails(fixture_path(f, "bad.h5"), NULL, HALO_ERR_RANGE, "/nodes/global_id[2]",
                     "repeats owned row 0", NULL);

  int32_t q = 0;
  while (q < s->parts && s->send_ptr[q + 1] - s->send_ptr[q] < 2) q++;
  cr_assert_lt(q, s->parts, "fixture needs a send list of two rows");
  int64_t k = s->send_ptr[q];
  file = open_copy(f);
  poke(file, "/halo/send_idx", (hsize_t)k, H5T_NATIVE_INT32, &s->send_idx[k + 1]);
  poke(file, "/halo/send_idx", (hsize_t)k + 1, H5T_NATIVE_INT32, &s->send_idx[k]);
  H5Fclose(file);
  expect_shard_fails(fixture_path(f, "bad.h5"), NULL, HALO_ERR_RANGE, "/halo/send_idx[",
                     "does not ascend in global id", NULL);

  int64_t interior = s->n_interior + 1;
  file = open_copy(f);
  set_attr(file, "n_interior", H5T_NATIVE_INT64, &interior);
  H5Fclose(file);
  expect_shard_fails(fixture_path(f, "bad.h5"), NULL, HALO_ERR_RANGE, "is a halo row", "n_interior",
                     NULL);

  interior = s->n_owned + 1;
  file = open_copy(f);
  set_attr(file, "n_interior", H5T_NATIVE_INT64, &interior);
  H5Fclose(file);
  expect_shard_fails(fixture_path(f, "bad.h5"), NULL, HALO_ERR_FORMAT, "n_interior", "out of range",
                     NULL);

  file = open_copy(f);
  cr_assert(H5Adelete(file, "n_interior") >= 0);
  H5Fclose(file);
  expect_shard_fails(fixture_path(f, "bad.h5"), NULL, HALO_ERR_FORMAT, "n_interior", "missing",
                     NULL);

  /* A smaller n_interior is still true (a prefix of interior rows). */
  interior = s->n_interior - 1;
  file = open_copy(f);
  set_attr(file, "n_interior", H5T_NATIVE_INT64, &interior);
  H5Fclose(file);
  halo_shard *read = NULL;
  cr_assert_eq(halo_shard_read(fixture_path(f, "bad.h5"), NULL, &read), HALO_OK);
  cr_expect_eq(read->n_interior, interior);
  halo_shard_destroy(&read);
  fixture_destroy(&f);
}

/* A CSR part (format 3) whose arrays were edited in place (checksums
 * recomputed): a descending indptr, a column past F, a row's columns out of
 * order, a last offset short of features_nnz, a CSR part labelled format 2.
 * Each is refused in one line naming the file and the dataset. */
Test(shard_corrupt, csr_features_out_of_range) {
  fixture *f = good_part("csr_features_out_of_range", 36);
  halo_shard *s = shard_clone(f->shards[1]);
  for (int64_t k = 0; k < s->n_owned * s->features; k++)
    if (k % 4 == 1) s->x[k] = 0.0f;
  cr_assert_eq(halo_shard_features_to_csr(s), HALO_OK);
  cr_assert_gt(s->x_indptr[2], s->x_indptr[1] + 1, "row 1 needs two entries");
  remove(fixture_path(f, "good.h5")); /* good_part's dense part */
  cr_assert_eq(halo_shard_write(fixture_path(f, "good.h5"), s), HALO_OK);
  halo_shard *ok = NULL;
  cr_assert_eq(halo_shard_read(fixture_path(f, "good.h5"), NULL, &ok), HALO_OK);
  halo_shard_destroy(&ok);
  const int32_t F = s->features;
  const struct {
    const char *name;
    hsize_t index;
    int wide;
    int64_t value;
    const char *needle;
  } cases[] = {
      {"/features_csr/indptr", 2, 1, s->x_indptr[1] - 1, "/features_csr/indptr[2]"},
      {"/features_csr/indptr", 2, 1, s->x_indptr[1] - 1, "not monotone"},
      {"/features_csr/indptr", (hsize_t)s->n_owned, 1, s->x_nnz - 1, "features_nnz"},
      {"/features_csr/indices", 0, 0, F, "/features_csr/indices[0]"},
      {"/features_csr/indices", 0, 0, F, "out of range"},
      {"/features_csr/indices", (hsize_t)s->x_indptr[1] + 1, 0, s->x_indices[s->x_indptr[1]],
       "does not ascend"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    hid_t file = open_copy(f);
    int32_t narrow = (int32_t)cases[c].value;
    poke(file, cases[c].name, cases[c].index, cases[c].wide ? H5T_NATIVE_INT64 : H5T_NATIVE_INT32,
         cases[c].wide ? (const void *)&cases[c].value : (const void *)&narrow);
    H5Fclose(file);
    expect_shard_fails(fixture_path(f, "bad.h5"), NULL, HALO_ERR_RANGE, "bad.h5", cases[c].needle,
                       NULL);
  }
  /* CSR features in a part that claims format 2: a format 2 reader would
   * look for /features and miss them. */
  hid_t file = open_copy(f);
  int32_t two = 2;
  set_attr(file, "format_version", H5T_NATIVE_INT32, &two);
  H5Fclose(file);
  expect_shard_fails(fixture_path(f, "bad.h5"), NULL, HALO_ERR_FORMAT, "bad.h5", "/features", NULL);
  halo_shard_destroy(&s);
  fixture_destroy(&f);
}
