/* The shard reader on mutated shards, structure-aware: the input is a list
 * of edits applied through HDF5 to a copy of a real partition (two parts of
 * the tiny OGB graph, tests/fuzz/shard-base/), which is then read back with
 * halo_manifest_read and halo_shard_read.  Every edit leaves a well-formed
 * HDF5 file whose checksums are right, so what is exercised is halo's own
 * validation: counts against shapes, index ranges, types, missing objects.
 * (fuzz-shard-bytes mutates the bytes instead.)
 *
 * Input: byte 0 picks the part; then 12-byte edits
 *   [op] [target] [index lo] [index hi] [value: 8 bytes little-endian]
 * op % 6: 0 set an attribute, 1 set one element of a dataset, 2 delete a
 * dataset (or, with an odd index, an attribute), 3 rewrite a dataset with
 * another element type and length, 4 rewrite an attribute with another
 * type, 5 set an attribute or element of the manifest.  When op's top bit
 * is set, the value is the small signed number in its first byte. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz-util.h"
#include "halo-shard.h"

#ifndef HALO_FUZZ_SHARD_BASE
#error "HALO_FUZZ_SHARD_BASE must name the folder of the base partition"
#endif

static const char *const ATTRS[] = {"format_version", "part",   "parts",    "run_id",
                                    "nodes",          "edges",  "features", "classes",
                                    "n_owned",        "n_halo", "nnz"};
static const char *const SETS[] = {
    "/nodes/global_id", "/nodes/halo_owner", "/nodes/degree", "/graph/indptr", "/graph/indices",
    "/features",        "/labels",           "/split/train",  "/split/valid",  "/split/test",
    "/halo/send_ptr",   "/halo/send_idx",    "/halo/recv_ptr"};
static const char *const MANIFEST_ATTRS[] = {"format_version", "nodes", "edges",  "features",
                                             "classes",        "parts", "run_id", "source_digest"};
static const char *const MANIFEST_SETS[] = {"/part", "/parts/digest", "/parts/owned",
                                            "/parts/halo"};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct edit {
  uint8_t op, target;
  uint16_t index;
  int64_t value;
} edit;

static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  if (!in || !out) fuzz_fail("cannot copy %s to %s", from, to);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, n, out) != n) fuzz_fail("cannot write %s", to);
  fclose(in);
  fclose(out);
}

static void set_attr(hid_t file, const char *name, int64_t value) {
  hid_t attr = H5Aopen(file, name, H5P_DEFAULT);
  if (attr < 0) return; /* deleted by an earlier edit */
  H5Awrite(attr, H5T_NATIVE_INT64, &value);
  H5Aclose(attr);
}

static void set_element(hid_t file, const char *name, uint16_t index, int64_t value, int small) {
  hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
  if (dset < 0) return;
  hid_t space = H5Dget_space(dset), type = H5Dget_type(dset);
  hssize_t points = H5Sget_simple_extent_npoints(space);
  if (points > 0) {
    /* One element, by its coordinates (rank 1, or rank 2 for /features). */
    hsize_t dims[2] = {(hsize_t)points, 1}, one = 1, at = index % (hsize_t)points;
    int rank = H5Sget_simple_extent_ndims(space);
    H5Sget_simple_extent_dims(space, dims, NULL);
    hsize_t coord[2] = {rank == 2 ? at / dims[1] : at, rank == 2 ? at % dims[1] : 0};
    H5Sselect_elements(space, H5S_SELECT_SET, 1, coord);
    hid_t mem = H5Screate_simple(1, &one, NULL);
    if (H5Tget_class(type) == H5T_FLOAT) {
      /* A float's bits, or a small number: NaN and Inf come from the bits. */
      uint32_t bits = (uint32_t)value;
      float f;
      memcpy(&f, &bits, sizeof f);
      if (small) f = (float)value;
      H5Dwrite(dset, H5T_NATIVE_FLOAT, mem, space, H5P_DEFAULT, &f);
    } else {
      H5Dwrite(dset, H5T_NATIVE_INT64, mem, space, H5P_DEFAULT, &value);
    }
    H5Sclose(mem);
  }
  H5Tclose(type);
  H5Sclose(space);
  H5Dclose(dset);
}

/* Rewrites dataset `name` with element type `type` and its length changed
 * by `delta` (rank and the other dimension kept), values converted. */
static void retype(hid_t file, const char *name, hid_t type, int delta) {
  hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
  if (dset < 0) return;
  hid_t space = H5Dget_space(dset);
  int rank = H5Sget_simple_extent_ndims(space);
  hsize_t dims[2] = {0, 1};
  H5Sget_simple_extent_dims(space, dims, NULL);
  hsize_t cols = rank == 2 ? dims[1] : 1, rows = dims[0];
  double *old = calloc(rows * cols + 1, sizeof *old);
  if (rows * cols > 0) H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, old);
  H5Sclose(space);
  H5Dclose(dset);
  H5Ldelete(file, name, H5P_DEFAULT);
  hsize_t new_rows = delta < 0 && (hsize_t)-delta > rows ? 0 : rows + (hsize_t)delta;
  double *fresh = calloc(new_rows * cols + 1, sizeof *fresh);
  memcpy(fresh, old, (new_rows < rows ? new_rows : rows) * cols * sizeof *fresh);
  hsize_t new_dims[2] = {new_rows, cols};
  space = H5Screate_simple(rank, new_dims, NULL);
  dset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (dset >= 0 && new_rows * cols > 0)
    H5Dwrite(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, fresh);
  if (dset >= 0) H5Dclose(dset);
  H5Sclose(space);
  free(fresh);
  free(old);
}

/* Rewrites attribute `name` as a double, an int16 or a string. */
static void retype_attr(hid_t file, const char *name, int how, int64_t value) {
  if (H5Aexists(file, name) <= 0) return;
  H5Adelete(file, name);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t type = how == 0   ? H5Tcopy(H5T_IEEE_F64LE)
               : how == 1 ? H5Tcopy(H5T_STD_I16LE)
                          : H5Tcopy(H5T_C_S1);
  if (how == 2) H5Tset_size(type, 8);
  hid_t attr = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (attr >= 0) {
    double d = (double)value;
    int16_t h = (int16_t)value;
    char text[8] = "1";
    H5Awrite(attr,
             how == 0   ? H5T_NATIVE_DOUBLE
             : how == 1 ? H5T_NATIVE_INT16
                        : type,
             how == 0   ? (void *)&d
             : how == 1 ? (void *)&h
                        : (void *)text);
    H5Aclose(attr);
  }
  H5Tclose(type);
  H5Sclose(space);
}

static void apply(hid_t part, hid_t manifest, const edit *e) {
  int small = e->op & 0x80;
  int64_t v = small ? (int8_t)(e->value & 0xff) : e->value;
  switch ((e->op & 0x7f) % 6) {
    case 0:
      set_attr(part, ATTRS[e->target % COUNT(ATTRS)], v);
      break;
    case 1:
      set_element(part, SETS[e->target % COUNT(SETS)], e->index, v, small);
      break;
    case 2:
      if (e->index & 1)
        H5Adelete(part, ATTRS[e->target % COUNT(ATTRS)]);
      else
        H5Ldelete(part, SETS[e->target % COUNT(SETS)], H5P_DEFAULT);
      break;
    case 3: {
      static const hid_t *const TYPES[] = {&H5T_STD_I16LE_g, &H5T_STD_I32LE_g,  &H5T_STD_I64LE_g,
                                           &H5T_STD_U32LE_g, &H5T_IEEE_F64LE_g, &H5T_IEEE_F32LE_g};
      retype(part, SETS[e->target % COUNT(SETS)], *TYPES[e->index % 6], (int8_t)(e->index >> 8));
      break;
    }
    case 4:
      retype_attr(part, ATTRS[e->target % COUNT(ATTRS)], e->index % 3, v);
      break;
    case 5:
      if (e->index & 1)
        set_attr(manifest, MANIFEST_ATTRS[e->target % COUNT(MANIFEST_ATTRS)], v);
      else
        set_element(manifest, MANIFEST_SETS[e->target % COUNT(MANIFEST_SETS)],
                    (uint16_t)(e->index >> 1), v, small);
      break;
  }
}

/* What a caller relies on once a shard is returned, checked independently
 * of the reader: every index addresses memory that exists. */
static void check_shard(const halo_shard *s) {
  int64_t local = s->n_owned + s->n_halo;
  if (s->n_owned < 0 || s->n_halo < 0 || s->parts < 1 || s->part < 0 || s->part >= s->parts)
    fuzz_fail("implausible counts accepted");
  if (s->indptr[0] != 0 || s->indptr[s->n_owned] != s->nnz) fuzz_fail("indptr does not span nnz");
  for (int64_t i = 0; i < s->n_owned; i++)
    if (s->indptr[i + 1] < s->indptr[i]) fuzz_fail("indptr decreases at %lld", (long long)i);
  for (int64_t k = 0; k < s->nnz; k++)
    if (s->indices[k] < 0 || s->indices[k] >= local)
      fuzz_fail("indices[%lld] out of range", (long long)k);
  for (int64_t i = 0; i < local; i++)
    if (s->global_id[i] < 0 || s->global_id[i] >= s->nodes)
      fuzz_fail("global_id[%lld] out of range", (long long)i);
  for (int64_t h = 0; h < s->n_halo; h++)
    if (s->halo_owner[h] < 0 || s->halo_owner[h] >= s->parts)
      fuzz_fail("halo_owner[%lld] out of range", (long long)h);
  for (int64_t k = 0; k < s->n_owned * s->features; k++)
    if (!isfinite(s->x[k])) fuzz_fail("feature %lld not finite", (long long)k);
  for (int64_t i = 0; s->classes > 0 && i < s->n_owned; i++)
    if (s->labels[i] < -1 || s->labels[i] >= s->classes)
      fuzz_fail("label %lld out of range", (long long)i);
  const int32_t *splits[3] = {s->train, s->valid, s->test};
  const int64_t lens[3] = {s->n_train, s->n_valid, s->n_test};
  for (int k = 0; k < 3; k++)
    for (int64_t i = 0; i < lens[k]; i++)
      if (splits[k][i] < 0 || splits[k][i] >= s->n_owned)
        fuzz_fail("split %d row %lld out of range", k, (long long)i);
  for (int32_t q = 0; q < s->parts; q++) {
    if (s->send_ptr[q + 1] < s->send_ptr[q] || s->recv_ptr[q + 1] < s->recv_ptr[q])
      fuzz_fail("ptr decreases");
    for (int64_t k = s->send_ptr[q]; k < s->send_ptr[q + 1]; k++)
      if (s->send_idx[k] < 0 || s->send_idx[k] >= s->n_owned)
        fuzz_fail("send_idx[%lld] out of range", (long long)k);
  }
  if (s->send_ptr[0] != 0 || s->recv_ptr[0] != 0 || s->recv_ptr[s->parts] != s->n_halo)
    fuzz_fail("ptr ends wrong");
}

int fuzz_shard(const uint8_t *data, size_t size) {
  fuzz_init();
  if (size < 1 || size > 1 + 12 * 64) return 0;
  int which = data[0] & 1;
  char from[1024], part_name[64];
  snprintf(part_name, sizeof part_name, "part-%05d-of-00002.h5", which);
  snprintf(from, sizeof from, "%s/%s", HALO_FUZZ_SHARD_BASE, part_name);
  const char *part = fuzz_write("shard/part.h5", "", 0);
  copy_file(from, part);
  snprintf(from, sizeof from, "%s/manifest.h5", HALO_FUZZ_SHARD_BASE);
  const char *manifest = fuzz_write("shard/manifest.h5", "", 0);
  copy_file(from, manifest);

  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t pf = H5Fopen(part, H5F_ACC_RDWR, H5P_DEFAULT),
        mf = H5Fopen(manifest, H5F_ACC_RDWR, H5P_DEFAULT);
  if (pf < 0 || mf < 0) fuzz_fail("cannot open the base partition in %s", HALO_FUZZ_SHARD_BASE);
  for (size_t at = 1; at + 12 <= size; at += 12) {
    const uint8_t *b = data + at;
    edit e = {.op = b[0], .target = b[1], .index = (uint16_t)(b[2] | b[3] << 8), .value = 0};
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = v << 8 | b[4 + k];
    e.value = (int64_t)v;
    apply(pf, mf, &e);
  }
  H5Fclose(pf);
  H5Fclose(mf);
  H5Eclear2(H5E_DEFAULT);

  halo_manifest *m = NULL;
  halo_shard *s = NULL;
  fuzz_capture_begin();
  halo_status mst = halo_manifest_read(manifest, &m);
  const char *text = fuzz_capture_end();
  fuzz_expect_outcome(mst, text, manifest);
  fuzz_capture_begin();
  halo_status st = halo_shard_read(part, m, &s);
  text = fuzz_capture_end();
  fuzz_expect_outcome(st, text, part);
  if (st == HALO_OK)
    check_shard(s);
  else if (s)
    fuzz_fail("failure left a shard behind");
  if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0) fuzz_fail("HDF5 objects left open");
  halo_shard_destroy(&s);
  halo_manifest_destroy(&m);
  return 0;
}

FUZZ_ENTRY(fuzz_shard)
