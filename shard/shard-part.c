/* One part file: DIR/part-PPPPP-of-QQQQQ.h5.  docs/shard-format.md is the
 * user-facing description of this layout; keep the two in step. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard-impl.h"

halo_status halo_shard_write(const char *path, const halo_shard *s) {
  halo_status st = HALO_OK;
  hid_t file = H5I_INVALID_HID;
  char tmp[4096] = "";
  int created = 0;
  halo_h5_quiet();
  if (!path || !s) HALO_FAIL(HALO_ERR_ARG, "halo_shard_write: NULL argument");
  HALO_TRY(halo__shard_check_counts(s, path));
  HALO_TRY(halo__shard_check_arrays(s, path));
  HALO_TRY(halo_h5_create(path, tmp, sizeof tmp, &file));
  created = 1;

  const struct {
    const char *name;
    halo_h5_kind kind;
    const void *value;
  } attrs[] = {
      {"format_version", HALO_H5_I32, &s->format_version},
      {"part", HALO_H5_I32, &s->part},
      {"parts", HALO_H5_I32, &s->parts},
      {"run_id", HALO_H5_U64, &s->run_id},
      {"nodes", HALO_H5_I64, &s->nodes},
      {"edges", HALO_H5_I64, &s->edges},
      {"features", HALO_H5_I32, &s->features},
      {"classes", HALO_H5_I32, &s->classes},
      {"n_owned", HALO_H5_I64, &s->n_owned},
      {"n_halo", HALO_H5_I64, &s->n_halo},
      {"nnz", HALO_H5_I64, &s->nnz},
  };
  for (size_t k = 0; k < sizeof attrs / sizeof attrs[0]; k++)
    HALO_TRY(halo_h5_attr_write(file, path, attrs[k].name, attrs[k].kind, attrs[k].value));
  if (s->format_version >= 2)
    HALO_TRY(halo_h5_attr_write(file, path, "n_interior", HALO_H5_I64, &s->n_interior));
  if (s->multilabel)
    HALO_TRY(halo_h5_attr_write(file, path, "multilabel", HALO_H5_I32, &s->multilabel));
  if (s->x_indptr) /* format 3: present exactly when the features are CSR */
    HALO_TRY(halo_h5_attr_write(file, path, "features_nnz", HALO_H5_I64, &s->x_nnz));

  hsize_t local = (hsize_t)(s->n_owned + s->n_halo), owned = (hsize_t)s->n_owned;
  hsize_t peers = (hsize_t)s->parts + 1;
  hsize_t xnnz = (hsize_t)s->x_nnz;
  const int csr = s->x_indptr != NULL; /* format 3: CSR features, no /features */
  const struct {
    const char *name;
    halo_h5_kind kind;
    int rank;
    hsize_t dims[2];
    const void *data;
    int present;
  } sets[] = {
      {"/nodes/global_id", HALO_H5_I64, 1, {local, 0}, s->global_id, 1},
      {"/nodes/halo_owner", HALO_H5_I32, 1, {(hsize_t)s->n_halo, 0}, s->halo_owner, 1},
      {"/nodes/degree", HALO_H5_I64, 1, {local, 0}, s->degree, 1},
      {"/graph/indptr", HALO_H5_I64, 1, {owned + 1, 0}, s->indptr, 1},
      {"/graph/indices", HALO_H5_I32, 1, {(hsize_t)s->nnz, 0}, s->indices, 1},
      {"/features", HALO_H5_F32, 2, {owned, (hsize_t)s->features}, s->x, s->features > 0 && !csr},
      {"/features_csr/indptr", HALO_H5_I64, 1, {owned + 1, 0}, s->x_indptr, csr},
      {"/features_csr/indices", HALO_H5_I32, 1, {xnnz, 0}, s->x_indices, csr},
      {"/features_csr/values", HALO_H5_F32, 1, {xnnz, 0}, s->x_values, csr},
      {"/labels", HALO_H5_I32, 1, {owned, 0}, s->labels, s->classes > 0 && !s->multilabel},
      {"/targets", HALO_H5_I8, 2, {owned, (hsize_t)s->classes}, s->targets, s->multilabel},
      {"/split/train", HALO_H5_I32, 1, {(hsize_t)s->n_train, 0}, s->train, 1},
      {"/split/valid", HALO_H5_I32, 1, {(hsize_t)s->n_valid, 0}, s->valid, 1},
      {"/split/test", HALO_H5_I32, 1, {(hsize_t)s->n_test, 0}, s->test, 1},
      {"/halo/send_ptr", HALO_H5_I64, 1, {peers, 0}, s->send_ptr, 1},
      {"/halo/send_idx", HALO_H5_I32, 1, {(hsize_t)s->send_ptr[s->parts], 0}, s->send_idx, 1},
      {"/halo/recv_ptr", HALO_H5_I64, 1, {peers, 0}, s->recv_ptr, 1},
      {"/nodes/original_id", HALO_H5_I64, 1, {owned, 0}, s->original_id, s->original_id != NULL},
      {"/graph/edge_weight", HALO_H5_F32, 1, {(hsize_t)s->nnz, 0}, s->edge_weight,
       s->edge_weight != NULL},
      {"/nodes/weighted_degree", HALO_H5_F64, 1, {local, 0}, s->weighted_degree,
       s->edge_weight != NULL},
  };
  for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++)
    if (sets[k].present)
      HALO_TRY(halo_h5_write(file, path, sets[k].name, sets[k].kind, sets[k].rank, sets[k].dims,
                             sets[k].data));
done:
  if (created) st = halo_h5_commit(st, file, tmp, path);
  return st;
}

/* Reads a dataset whose length must be exactly n. */
static halo_status read_exact(hid_t file, const char *path, const char *name, halo_h5_kind kind,
                              int64_t n, void **out) {
  hsize_t dims[2] = {(hsize_t)n, 0};
  return halo_h5_read(file, path, name, kind, 1, dims, 1, out);
}

/* Reads a dataset of at most max elements; *n receives its length. */
static halo_status read_upto(hid_t file, const char *path, const char *name, int64_t max,
                             int64_t *n, void **out) {
  hsize_t dims[2] = {(hsize_t)max, 0};
  halo_status st = halo_h5_read(file, path, name, HALO_H5_I32, 1, dims, 0, out);
  *n = (int64_t)dims[0];
  return st;
}

static halo_status check_manifest(const halo_shard *s, const halo_manifest *m, const char *path) {
  halo_status st = HALO_OK;
  if (s->run_id != m->run_id)
    HALO_FAIL(HALO_ERR_MISMATCH,
              "%s: run_id %016" PRIx64 " differs from the manifest's %016" PRIx64
              " (a shard from another partition run)",
              path, s->run_id, m->run_id);
  if (s->parts != m->parts || s->nodes != m->nodes || s->edges != m->edges ||
      s->features != m->features || s->classes != m->classes || s->multilabel != m->multilabel)
    HALO_FAIL(HALO_ERR_MISMATCH,
              "%s: counts (parts %d, nodes %" PRId64 ", edges %" PRId64
              ", features %d, classes %d, multilabel %d) differ from the "
              "manifest's (%d, %" PRId64 ", %" PRId64 ", %d, %d, %d)",
              path, (int)s->parts, s->nodes, s->edges, (int)s->features, (int)s->classes,
              (int)s->multilabel, (int)m->parts, m->nodes, m->edges, (int)m->features,
              (int)m->classes, (int)m->multilabel);
  int32_t p = s->part;
  if (s->n_owned != m->part_owned[p] || s->n_halo != m->part_halo[p])
    HALO_FAIL(HALO_ERR_MISMATCH,
              "%s: n_owned = %" PRId64 ", n_halo = %" PRId64 " but the manifest says %" PRId64
              ", %" PRId64,
              path, s->n_owned, s->n_halo, m->part_owned[p], m->part_halo[p]);
  /* Without /part (HALO_MANIFEST_NO_PART) the owners go unchecked here, and
   * need not be: the digest below covers global_id and halo_owner, and the
   * manifest's digest was taken by the run that wrote /part from the same
   * assignment, so a shard that matches it has the owners /part gives. */
  for (int64_t i = 0; m->part && i < s->n_owned + s->n_halo; i++) {
    int32_t owner = i < s->n_owned ? p : s->halo_owner[i - s->n_owned];
    if (m->part[s->global_id[i]] != owner)
      HALO_FAIL(HALO_ERR_MISMATCH,
                "%s: row %" PRId64 " (global %" PRId64
                ") belongs to part %d, but the manifest says %d",
                path, i, s->global_id[i], (int)owner, (int)m->part[s->global_id[i]]);
  }
  uint64_t digest = halo_shard_digest(s);
  if (digest != m->part_digest[p])
    HALO_FAIL(HALO_ERR_CORRUPT,
              "%s: content digest %016" PRIx64 " does not match the manifest's %016" PRIx64, path,
              digest, m->part_digest[p]);
  /* A run stores original ids in every part or in none. */
  if (!s->original_id != !m->part_original_id_digest)
    HALO_FAIL(HALO_ERR_MISMATCH,
              s->original_id ? "%s: has /nodes/original_id but the manifest lists no original ids"
                             : "%s: /nodes/original_id is missing but the manifest lists original "
                               "ids for every part",
              path);
  if (s->original_id) {
    digest = halo_shard_digest_original_id(s);
    if (digest != m->part_original_id_digest[p])
      HALO_FAIL(HALO_ERR_CORRUPT,
                "%s: /nodes/original_id digest %016" PRIx64
                " does not match the manifest's %016" PRIx64,
                path, digest, m->part_original_id_digest[p]);
  }
  /* A weighted run stores weights in every part. */
  if (!s->edge_weight != !m->part_edge_weight_digest)
    HALO_FAIL(HALO_ERR_MISMATCH,
              s->edge_weight ? "%s: has /graph/edge_weight but the manifest lists no edge weights"
                             : "%s: /graph/edge_weight is missing but the manifest lists edge "
                               "weights for every part",
              path);
  if (s->edge_weight) {
    digest = halo_shard_digest_edge_weight(s);
    if (digest != m->part_edge_weight_digest[p])
      HALO_FAIL(HALO_ERR_CORRUPT,
                "%s: /graph/edge_weight digest %016" PRIx64
                " does not match the manifest's %016" PRIx64,
                path, digest, m->part_edge_weight_digest[p]);
  }
done:
  return st;
}

halo_status halo_shard_read(const char *path, const halo_manifest *m, halo_shard **out) {
  halo_status st = HALO_OK;
  hid_t file = H5I_INVALID_HID;
  halo_shard *s = NULL;
  void *buf = NULL;
  halo_h5_quiet();
  if (!path || !out) HALO_FAIL(HALO_ERR_ARG, "halo_shard_read: NULL argument");
  *out = NULL;
  HALO_TRY(halo_h5_open(path, &file));
  HALO_ALLOC(s, 1, "a shard");

  /* The version decides how to read everything else, so it comes first. */
  HALO_TRY(halo_h5_attr_read(file, path, "format_version", HALO_H5_I32, &s->format_version));
  HALO_TRY(halo_shard_check_version(path, s->format_version));
  /* Every part of a run has its manifest's version: a part of another
   * version comes from another run or another halo, and may mean something
   * else by the same layout. */
  if (m && s->format_version != m->format_version)
    HALO_FAIL(HALO_ERR_MISMATCH,
              "%s: format_version %d differs from the manifest's %d (a part and its manifest "
              "come from one partition run)",
              path, (int)s->format_version, (int)m->format_version);
  HALO_TRY(halo_h5_attr_read(file, path, "part", HALO_H5_I32, &s->part));
  HALO_TRY(halo_h5_attr_read(file, path, "parts", HALO_H5_I32, &s->parts));
  HALO_TRY(halo_h5_attr_read(file, path, "run_id", HALO_H5_U64, &s->run_id));
  HALO_TRY(halo_h5_attr_read(file, path, "nodes", HALO_H5_I64, &s->nodes));
  HALO_TRY(halo_h5_attr_read(file, path, "edges", HALO_H5_I64, &s->edges));
  HALO_TRY(halo_h5_attr_read(file, path, "features", HALO_H5_I32, &s->features));
  HALO_TRY(halo_h5_attr_read(file, path, "classes", HALO_H5_I32, &s->classes));
  HALO_TRY(halo_h5_attr_read(file, path, "n_owned", HALO_H5_I64, &s->n_owned));
  HALO_TRY(halo_h5_attr_read(file, path, "n_halo", HALO_H5_I64, &s->n_halo));
  HALO_TRY(halo_h5_attr_read(file, path, "nnz", HALO_H5_I64, &s->nnz));
  if (s->format_version >= 2)
    HALO_TRY(halo_h5_attr_read(file, path, "n_interior", HALO_H5_I64, &s->n_interior));
  /* Optional: absent in single-label parts and in those of earlier runs. */
  int multi = halo_h5_attr_exists(file, path, "multilabel");
  if (multi < 0) HALO_TRY((halo_status)multi);
  if (multi) HALO_TRY(halo_h5_attr_read(file, path, "multilabel", HALO_H5_I32, &s->multilabel));
  /* Format 3: CSR features exactly when features_nnz is present. */
  int csr = s->format_version >= 3 ? halo_h5_attr_exists(file, path, "features_nnz") : 0;
  if (csr < 0) HALO_TRY((halo_status)csr);
  if (csr) HALO_TRY(halo_h5_attr_read(file, path, "features_nnz", HALO_H5_I64, &s->x_nnz));
  HALO_TRY(halo__shard_check_counts(s, path));
  if (m && (s->parts != m->parts))
    HALO_FAIL(HALO_ERR_MISMATCH, "%s: parts = %d but the manifest says %d", path, (int)s->parts,
              (int)m->parts);

  int64_t local = s->n_owned + s->n_halo;
  HALO_TRY(read_exact(file, path, "/nodes/global_id", HALO_H5_I64, local, &buf));
  s->global_id = buf;
  HALO_TRY(read_exact(file, path, "/nodes/halo_owner", HALO_H5_I32, s->n_halo, &buf));
  s->halo_owner = buf;
  HALO_TRY(read_exact(file, path, "/nodes/degree", HALO_H5_I64, local, &buf));
  s->degree = buf;
  HALO_TRY(read_exact(file, path, "/graph/indptr", HALO_H5_I64, s->n_owned + 1, &buf));
  s->indptr = buf;
  HALO_TRY(read_exact(file, path, "/graph/indices", HALO_H5_I32, s->nnz, &buf));
  s->indices = buf;
  if (csr) {
    HALO_TRY(read_exact(file, path, "/features_csr/indptr", HALO_H5_I64, s->n_owned + 1, &buf));
    s->x_indptr = buf;
    HALO_TRY(read_exact(file, path, "/features_csr/indices", HALO_H5_I32, s->x_nnz, &buf));
    s->x_indices = buf;
    HALO_TRY(read_exact(file, path, "/features_csr/values", HALO_H5_F32, s->x_nnz, &buf));
    s->x_values = buf;
  } else if (s->features > 0) {
    hsize_t dims[2] = {(hsize_t)s->n_owned, (hsize_t)s->features};
    HALO_TRY(halo_h5_read(file, path, "/features", HALO_H5_F32, 2, dims, 1, &buf));
    s->x = buf;
  }
  if (s->multilabel) {
    hsize_t dims[2] = {(hsize_t)s->n_owned, (hsize_t)s->classes};
    HALO_TRY(halo_h5_read(file, path, "/targets", HALO_H5_I8, 2, dims, 1, &buf));
    s->targets = buf;
  } else if (s->classes > 0) {
    HALO_TRY(read_exact(file, path, "/labels", HALO_H5_I32, s->n_owned, &buf));
    s->labels = buf;
  }
  HALO_TRY(read_upto(file, path, "/split/train", s->n_owned, &s->n_train, &buf));
  s->train = buf;
  HALO_TRY(read_upto(file, path, "/split/valid", s->n_owned, &s->n_valid, &buf));
  s->valid = buf;
  HALO_TRY(read_upto(file, path, "/split/test", s->n_owned, &s->n_test, &buf));
  s->test = buf;
  HALO_TRY(read_exact(file, path, "/halo/send_ptr", HALO_H5_I64, (int64_t)s->parts + 1, &buf));
  s->send_ptr = buf;
  /* send_ptr sizes send_idx, so it is checked before that read. */
  HALO_TRY(halo__shard_check_ptr(path, "/halo/send_ptr", s->send_ptr, s->parts,
                                 s->n_owned * (s->parts - 1)));
  HALO_TRY(read_exact(file, path, "/halo/send_idx", HALO_H5_I32, s->send_ptr[s->parts], &buf));
  s->send_idx = buf;
  HALO_TRY(read_exact(file, path, "/halo/recv_ptr", HALO_H5_I64, (int64_t)s->parts + 1, &buf));
  s->recv_ptr = buf;
  buf = NULL;
  /* Optional: a shard without it (an input whose ids were the node ids, or
   * a run before halo stored them) reads as before. */
  int has_original = halo_h5_exists(file, path, "/nodes/original_id");
  if (has_original < 0) HALO_TRY((halo_status)has_original); /* already logged */
  if (has_original) {
    HALO_TRY(read_exact(file, path, "/nodes/original_id", HALO_H5_I64, s->n_owned, &buf));
    s->original_id = buf;
    buf = NULL;
  }
  /* Optional too: an unweighted graph's parts have no weights. */
  int has_weights = halo_h5_exists(file, path, "/graph/edge_weight");
  if (has_weights < 0) HALO_TRY((halo_status)has_weights); /* already logged */
  if (has_weights) {
    HALO_TRY(read_exact(file, path, "/graph/edge_weight", HALO_H5_F32, s->nnz, &buf));
    s->edge_weight = buf;
    buf = NULL;
    HALO_TRY(read_exact(file, path, "/nodes/weighted_degree", HALO_H5_F64,
                        s->n_owned + s->n_halo, &buf));
    s->weighted_degree = buf;
    buf = NULL;
  }

  HALO_TRY(halo__shard_check_arrays(s, path));
  if (m) HALO_TRY(check_manifest(s, m, path));
  *out = s;
  s = NULL;
done:
  halo_shard_destroy(&s);
  if (file >= 0) H5Fclose(file);
  return st;
}

halo_status halo_shard_read_halo_counts(const char *path, int32_t parts, int64_t *from) {
  halo_status st = HALO_OK;
  hid_t file = H5I_INVALID_HID;
  void *buf = NULL;
  halo_h5_quiet();
  if (!path || !from || parts < 1)
    HALO_FAIL(HALO_ERR_ARG, "halo_shard_read_halo_counts: bad argument");
  HALO_TRY(halo_h5_open(path, &file));
  HALO_TRY(read_exact(file, path, "/halo/recv_ptr", HALO_H5_I64, (int64_t)parts + 1, &buf));
  const int64_t *ptr = buf;
  /* Not yet checked against the part's digest (halo_shard_read does that):
   * a damaged offset must only make a worse grouping, never a negative count. */
  for (int32_t q = 0; q < parts; q++) from[q] = ptr[q + 1] > ptr[q] ? ptr[q + 1] - ptr[q] : 0;
done:
  free(buf);
  if (file >= 0) H5Fclose(file);
  return st;
}
