/* Shards and manifests survive a write and a read unchanged, and the writer
 * never leaves a file that looks valid when it fails. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shard-fixture.h"

static void roundtrip(fixture *f) {
  fixture_write_run(f);
  halo_manifest *m = NULL;
  cr_assert_eq(halo_manifest_read(fixture_path(f, "manifest.h5"), &m), HALO_OK);
  fixture_expect_manifest_equal(m, f->m);
  cr_assert_arr_eq(m->part, f->m->part, (size_t)f->m->nodes * sizeof *f->m->part);
  for (int32_t p = 0; p < f->parts; p++) {
    char path[512];
    halo_shard *s = NULL;
    cr_assert_eq(halo_shard_path(path, sizeof path, f->dir, p, f->parts), HALO_OK);
    cr_assert_eq(halo_shard_read(path, m, &s), HALO_OK, "reading %s", path);
    shard_expect_equal(f->shards[p], s);
    cr_assert_eq(halo_shard_digest(s), m->part_digest[p]);
    halo_shard_destroy(&s);
    cr_assert_null(s);
  }
  halo_manifest_destroy(&m);
  cr_assert_null(m);
}

Test(shard_io, roundtrip_four_parts) {
  fixture *f = fixture_create(fixture_seed("roundtrip_four_parts", 11), 150, 4, 7, 5, 0);
  for (int32_t p = 0; p < f->parts; p++)
    cr_assert(f->shards[p]->n_halo > 0 && f->shards[p]->nnz > 0, "fixture too trivial (part %d)",
              p);
  roundtrip(f);
  fixture_destroy(&f);
}

/* An empty part, no features and no labels: every dataset has length 0 or
 * is absent, which HDF5 can only chunk with an unlimited dimension. */
Test(shard_io, roundtrip_empty_part_without_node_data) {
  fixture *f = fixture_create(fixture_seed("roundtrip_empty_part", 12), 40, 3, 0, 0, 1);
  cr_assert_eq(f->shards[2]->n_owned, 0);
  roundtrip(f);
  char path[512];
  halo_shard_path(path, sizeof path, f->dir, 2, 3);
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert(file >= 0);
  cr_assert_eq(H5Lexists(file, "/features", H5P_DEFAULT), 0,
               "/features is omitted when features == 0");
  cr_assert_eq(H5Lexists(file, "/labels", H5P_DEFAULT), 0, "/labels is omitted when classes == 0");
  H5Fclose(file);
  fixture_destroy(&f);
}

/* Features over 1 MiB span several chunks. */
Test(shard_io, roundtrip_multi_chunk_features) {
  fixture *f = fixture_create(fixture_seed("roundtrip_multi_chunk", 13), 1000, 2, 1200, 4, 0);
  cr_assert_gt(f->shards[0]->n_owned * 1200 * 4, 2 << 20);
  roundtrip(f);
  char path[512];
  halo_shard_path(path, sizeof path, f->dir, 0, 2);
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t dset = H5Dopen2(file, "/features", H5P_DEFAULT);
  hid_t space = H5Dget_space(dset);
  hsize_t chunks = 0;
  cr_assert(H5Dget_num_chunks(dset, space, &chunks) >= 0);
  H5Sclose(space);
  cr_assert_geq(chunks, 3, "expected the features to span several chunks, got %llu",
                (unsigned long long)chunks);
  hid_t dcpl = H5Dget_create_plist(dset);
  hsize_t chunk[2];
  cr_assert_eq(H5Pget_chunk(dcpl, 2, chunk), 2);
  cr_assert_leq(chunk[0] * chunk[1] * 4, 4 << 20, "chunks stay within 4 MiB");
  H5Pclose(dcpl);
  H5Dclose(dset);
  H5Fclose(file);
  fixture_destroy(&f);
}

/* Any single changed value changes the digest. */
Test(shard_io, digest_covers_every_array) {
  fixture *f = fixture_create(fixture_seed("digest_covers_every_array", 14), 80, 3, 4, 3, 0);
  halo_shard *s = f->shards[1];
  uint64_t base = halo_shard_digest(s);
  cr_assert_eq(base, halo_shard_digest(s), "the digest is deterministic");
  halo_shard *c = shard_clone(s);
  cr_assert_eq(halo_shard_digest(c), base, "a copy has the same digest");
#define FLIP(field)                                    \
  do {                                                 \
    c->field ^= 1;                                     \
    cr_expect_neq(halo_shard_digest(c), base, #field); \
    c->field ^= 1;                                     \
  } while (0)
  /* Counts that size arrays only shrink, so that the digest stays in bounds. */
#define SHRINK(field)                                  \
  do {                                                 \
    c->field -= 1;                                     \
    cr_expect_neq(halo_shard_digest(c), base, #field); \
    c->field += 1;                                     \
  } while (0)
  FLIP(part);
  FLIP(run_id);
  FLIP(nodes);
  FLIP(edges);
  SHRINK(features);
  SHRINK(classes);
  SHRINK(parts);
  SHRINK(n_owned);
  SHRINK(n_halo);
  SHRINK(nnz);
  SHRINK(n_train);
  FLIP(n_interior);
  FLIP(global_id[s->n_owned + s->n_halo - 1]);
  FLIP(halo_owner[0]);
  FLIP(degree[3]);
  FLIP(indptr[2]);
  FLIP(indices[s->nnz - 1]);
  FLIP(labels[0]);
  FLIP(train[0]);
  FLIP(valid[0]);
  FLIP(test[0]);
  FLIP(send_ptr[s->parts]);
  FLIP(send_idx[0]);
  FLIP(recv_ptr[1]);
#undef FLIP
#undef SHRINK
  c->x[5] = -c->x[5];
  cr_expect_neq(halo_shard_digest(c), base, "x");
  c->x[5] = -c->x[5];
  cr_assert_eq(halo_shard_digest(c), base);
  halo_shard_destroy(&c);
  fixture_destroy(&f);
}

Test(shard_io, path_names) {
  char buf[64];
  cr_assert_eq(halo_shard_path(buf, sizeof buf, "out", 3, 8), HALO_OK);
  cr_assert_str_eq(buf, "out/part-00003-of-00008.h5");
  cr_assert_eq(halo_shard_path(buf, sizeof buf, "runs/a", 0, 1), HALO_OK);
  cr_assert_str_eq(buf, "runs/a/part-00000-of-00001.h5");
  halo_log_set_quiet(1);
  cr_assert_eq(halo_shard_path(buf, 20, "out", 3, 8), HALO_ERR_ARG,
               "26 characters do not fit in 20");
  cr_assert_eq(halo_shard_path(buf, sizeof buf, "out", 8, 8), HALO_ERR_ARG);
  cr_assert_eq(halo_shard_path(buf, sizeof buf, "out", -1, 8), HALO_ERR_ARG);
  cr_assert_eq(halo_shard_path(buf, sizeof buf, "out", 0, 0), HALO_ERR_ARG);
  halo_log_set_quiet(0);
}

Test(shard_io, write_refuses_an_existing_file) {
  fixture *f = fixture_create(fixture_seed("write_refuses_existing", 15), 50, 2, 3, 2, 0);
  const char *path = fixture_path(f, "part.h5");
  const char *tmp = fixture_path(f, "part.h5.tmp");
  cr_assert_eq(halo_shard_write(path, f->shards[0]), HALO_OK);
  long size = file_size(path);
  capture c;
  capture_begin(&c);
  halo_status st = halo_shard_write(path, f->shards[1]);
  char *text = capture_end(&c);
  cr_assert_eq(st, HALO_ERR_EXISTS, "%s", text);
  cr_assert_not_null(strstr(text, path), "%s", text);
  free(text);
  cr_assert_eq(file_size(path), size);
  cr_assert_neq(access(tmp, F_OK), 0, "no temporary file is left behind");
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_read(path, f->m, &s), HALO_OK, "the first file is untouched");
  shard_expect_equal(f->shards[0], s);
  halo_shard_destroy(&s);
  fixture_destroy(&f);
}

/* A stale temporary from an interrupted run does not block a new write. */
Test(shard_io, write_replaces_a_stale_temporary) {
  fixture *f = fixture_create(fixture_seed("write_replaces_stale_tmp", 16), 50, 2, 3, 2, 0);
  const char *path = fixture_path(f, "part.h5");
  const char *tmp = fixture_path(f, "part.h5.tmp");
  FILE *junk = fopen(tmp, "w");
  fputs("half a shard", junk);
  fclose(junk);
  cr_assert_eq(halo_shard_write(path, f->shards[0]), HALO_OK);
  cr_assert_neq(access(tmp, F_OK), 0);
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_read(path, f->m, &s), HALO_OK);
  halo_shard_destroy(&s);
  fixture_destroy(&f);
}

/* An invalid shard never reaches the disk, not even as a temporary. */
Test(shard_io, write_rejects_an_invalid_shard) {
  fixture *f = fixture_create(fixture_seed("write_rejects_invalid", 17), 60, 2, 3, 2, 0);
  const char *path = fixture_path(f, "bad.h5");
  struct {
    const char *needle;
    halo_status status;
  } cases[] = {
      {"/graph/indices[", HALO_ERR_RANGE},   {"/labels[0]", HALO_ERR_RANGE},
      {"/halo/recv_ptr", HALO_ERR_RANGE},    {"/nodes/degree", HALO_ERR_RANGE},
      {"format_version 7", HALO_ERR_FORMAT},
  };
  for (int k = 0; k < 5; k++) {
    halo_shard *c = shard_clone(f->shards[0]);
    switch (k) {
      case 0:
        c->indices[c->nnz / 2] = (int32_t)(c->n_owned + c->n_halo);
        break;
      case 1:
        c->labels[0] = c->classes;
        break;
      case 2:
        c->recv_ptr[c->parts] += 1;
        break;
      case 3:
        c->degree[0] += 1;
        break;
      case 4:
        c->format_version = 7;
        break;
    }
    capture cap;
    capture_begin(&cap);
    halo_status st = halo_shard_write(path, c);
    char *text = capture_end(&cap);
    cr_assert_eq(st, cases[k].status, "case %d: %s", k, text);
    cr_assert_not_null(strstr(text, cases[k].needle), "case %d lacks %s: %s", k, cases[k].needle,
                       text);
    cr_assert_not_null(strstr(text, path), "%s", text);
    free(text);
    cr_assert_neq(access(path, F_OK), 0, "case %d left a file", k);
    cr_assert_neq(access(fixture_path(f, "bad.h5.tmp"), F_OK), 0, "case %d left a temporary", k);
    halo_shard_destroy(&c);
  }
  fixture_destroy(&f);
}

Test(shard_io, write_into_a_missing_folder_fails_cleanly) {
  fixture *f = fixture_create(fixture_seed("write_missing_folder", 18), 30, 2, 2, 2, 0);
  const char *path = fixture_path(f, "no/such/folder/part.h5");
  capture c;
  capture_begin(&c);
  halo_status st = halo_shard_write(path, f->shards[0]);
  char *text = capture_end(&c);
  cr_assert_lt(st, 0);
  cr_assert_not_null(strstr(text, "no/such/folder/part.h5"), "%s", text);
  cr_assert_eq(strchr(text, '\n'), text + strlen(text) - 1, "one line: %s", text);
  free(text);
  fixture_destroy(&f);
}

Test(shard_io, manifest_refuses_an_inconsistent_manifest) {
  fixture *f = fixture_create(fixture_seed("manifest_inconsistent", 19), 30, 3, 2, 2, 0);
  f->m->part_owned[1] += 1;
  const char *path = fixture_path(f, "manifest.h5");
  capture c;
  capture_begin(&c);
  halo_status st = halo_manifest_write(path, f->m);
  char *text = capture_end(&c);
  cr_assert_eq(st, HALO_ERR_RANGE, "%s", text);
  cr_assert_not_null(strstr(text, "/parts/owned[1]"), "%s", text);
  free(text);
  cr_assert_neq(access(path, F_OK), 0);
  f->m->part_owned[1] -= 1;
  fixture_destroy(&f);
}

/* No timestamps are stored: the same shard, written a second apart, gives
 * byte-identical files (reproducible runs can be compared with cmp). */
Test(shard_io, same_content_same_bytes) {
  fixture *f = fixture_create(fixture_seed("same_content_same_bytes", 20), 60, 2, 3, 2, 0);
  const char *a = fixture_path(f, "a.h5"), *b = fixture_path(f, "b.h5");
  cr_assert_eq(halo_shard_write(a, f->shards[0]), HALO_OK);
  sleep(1);
  cr_assert_eq(halo_shard_write(b, f->shards[0]), HALO_OK);
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
  cr_assert_eq(system(cmd), 0, "%s and %s differ", a, b);
  fixture_destroy(&f);
}
