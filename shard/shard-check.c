/* What makes a shard or a manifest valid, its digest, and its file name.
 *
 * The same checks run before writing (so that a partitioner bug never reaches
 * disk) and after reading (so that a damaged or forged file never reaches the
 * trainer).  Messages name objects by their dataset path in the file.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-csr.h"
#include "halo-digest.h"
#include "halo-search.h"
#include "shard-impl.h"

halo_status halo_shard_path(char *buf, size_t size, const char *dir, int32_t part, int32_t parts) {
  halo_status st = HALO_OK;
  if (!buf || size == 0 || !dir) HALO_FAIL(HALO_ERR_ARG, "halo_shard_path: NULL argument");
  if (parts < 1 || part < 0 || part >= parts)
    HALO_FAIL(HALO_ERR_ARG, "halo_shard_path: part %d of %d is out of range", (int)part,
              (int)parts);
  int n = snprintf(buf, size, "%s/part-%05d-of-%05d.h5", dir, (int)part, (int)parts);
  if (n < 0 || (size_t)n >= size)
    HALO_FAIL(HALO_ERR_ARG, "%s: shard path does not fit in %zu bytes", dir, size);
done:
  return st;
}

void halo_shard_destroy(halo_shard **s) {
  if (!s || !*s) return;
  halo_shard *p = *s;
  free(p->global_id);
  free(p->halo_owner);
  free(p->degree);
  free(p->indptr);
  free(p->indices);
  free(p->x);
  free(p->x_indptr);
  free(p->x_indices);
  free(p->x_values);
  free(p->labels);
  free(p->targets);
  free(p->train);
  free(p->valid);
  free(p->test);
  free(p->send_ptr);
  free(p->send_idx);
  free(p->recv_ptr);
  free(p->original_id);
  free(p->edge_weight);
  free(p->weighted_degree);
  free(p);
  *s = NULL;
}

/* The digest is defined over little-endian byte images, so that it does not
 * depend on the machine that computes it. */
static void digest_feed(halo_digest *d, const void *data, size_t count, size_t size) {
  if (!data || count == 0) return;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  const uint8_t *p = data;
  uint8_t block[4096];
  size_t per_block = sizeof block / size;
  while (count > 0) {
    size_t n = count < per_block ? count : per_block;
    for (size_t i = 0; i < n; i++)
      for (size_t b = 0; b < size; b++) block[i * size + b] = p[i * size + size - 1 - b];
    halo_digest_update(d, block, n * size);
    p += n * size;
    count -= n;
  }
#else
  halo_digest_update(d, data, count * size);
#endif
}

static void digest_count(halo_digest *d, int64_t value) { digest_feed(d, &value, 1, sizeof value); }

uint64_t halo_shard_digest(const halo_shard *s) {
  halo_digest d;
  halo_digest_init(&d);
  /* Counts first, each as a 64-bit word, then the arrays in file order. */
  digest_count(&d, s->format_version);
  digest_count(&d, s->part);
  digest_count(&d, s->parts);
  digest_count(&d, (int64_t)s->run_id);
  digest_count(&d, s->nodes);
  digest_count(&d, s->edges);
  digest_count(&d, s->features);
  digest_count(&d, s->classes);
  digest_count(&d, s->n_owned);
  digest_count(&d, s->n_halo);
  digest_count(&d, s->nnz);
  digest_count(&d, s->n_train);
  digest_count(&d, s->n_valid);
  digest_count(&d, s->n_test);
  if (s->format_version >= 2)
    digest_count(&d, s->n_interior); /* format 1 digests stay as they were */
  if (s->x_indptr) digest_count(&d, s->x_nnz); /* format 3, CSR features only */
  size_t local = (size_t)(s->n_owned + s->n_halo);
  size_t owned = (size_t)s->n_owned;
  size_t peers = (size_t)s->parts + 1;
  digest_feed(&d, s->global_id, local, sizeof *s->global_id);
  digest_feed(&d, s->halo_owner, (size_t)s->n_halo, sizeof *s->halo_owner);
  digest_feed(&d, s->degree, local, sizeof *s->degree);
  digest_feed(&d, s->indptr, owned + 1, sizeof *s->indptr);
  digest_feed(&d, s->indices, (size_t)s->nnz, sizeof *s->indices);
  if (s->x_indptr) {
    digest_feed(&d, s->x_indptr, owned + 1, sizeof *s->x_indptr);
    digest_feed(&d, s->x_indices, (size_t)s->x_nnz, sizeof *s->x_indices);
    digest_feed(&d, s->x_values, (size_t)s->x_nnz, sizeof *s->x_values);
  } else if (s->features > 0) {
    digest_feed(&d, s->x, owned * (size_t)s->features, sizeof *s->x);
  }
  if (s->multilabel) /* a single-label part's digest stays what it was */
    digest_feed(&d, s->targets, owned * (size_t)s->classes, sizeof *s->targets);
  else if (s->classes > 0)
    digest_feed(&d, s->labels, owned, sizeof *s->labels);
  digest_feed(&d, s->train, (size_t)s->n_train, sizeof *s->train);
  digest_feed(&d, s->valid, (size_t)s->n_valid, sizeof *s->valid);
  digest_feed(&d, s->test, (size_t)s->n_test, sizeof *s->test);
  digest_feed(&d, s->send_ptr, peers, sizeof *s->send_ptr);
  if (s->send_ptr) digest_feed(&d, s->send_idx, (size_t)s->send_ptr[s->parts], sizeof *s->send_idx);
  digest_feed(&d, s->recv_ptr, peers, sizeof *s->recv_ptr);
  /* Not s->original_id: a version 2 reader that predates it must still find
   * the digest it computes (docs/shard-format.md, "Digest"). */
  return halo_digest_final(&d);
}

uint64_t halo_shard_digest_original_id(const halo_shard *s) {
  halo_digest d;
  halo_digest_init(&d);
  digest_count(&d, s->n_owned);
  digest_feed(&d, s->original_id, (size_t)s->n_owned, sizeof *s->original_id);
  return halo_digest_final(&d);
}

uint64_t halo_shard_digest_edge_weight(const halo_shard *s) {
  halo_digest d;
  halo_digest_init(&d);
  digest_count(&d, s->nnz);
  digest_count(&d, s->n_owned + s->n_halo);
  digest_feed(&d, s->edge_weight, (size_t)s->nnz, sizeof *s->edge_weight);
  digest_feed(&d, s->weighted_degree, (size_t)(s->n_owned + s->n_halo),
              sizeof *s->weighted_degree);
  return halo_digest_final(&d);
}

halo_status halo_shard_check_version(const char *path, int32_t version) {
  halo_status st = HALO_OK;
  if (version < HALO_SHARD_FORMAT_OLDEST || version > HALO_SHARD_FORMAT_VERSION)
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: format_version %d is not supported (this build reads versions %d to %d)", path,
              (int)version, HALO_SHARD_FORMAT_OLDEST, HALO_SHARD_FORMAT_VERSION);
done:
  return st;
}

halo_status halo__shard_check_counts(const halo_shard *s, const char *path) {
  halo_status st = HALO_OK;
  HALO_TRY(halo_shard_check_version(path, s->format_version));
  if (s->parts < 1)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: parts = %d, expected at least 1", path, (int)s->parts);
  if (s->part < 0 || s->part >= s->parts)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: part = %d is out of range [0, %d)", path, (int)s->part,
              (int)s->parts);
  if (s->nodes < 0 || s->edges < 0 || s->features < 0 || s->classes < 0)
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: negative count (nodes %" PRId64 ", edges %" PRId64 ", features %d, classes %d)",
              path, s->nodes, s->edges, (int)s->features, (int)s->classes);
  if (s->multilabel != 0 && (s->multilabel != 1 || s->classes < 1))
    HALO_FAIL(HALO_ERR_FORMAT, "%s: multilabel = %d with %d tasks; expected 0, or 1 with tasks > 0",
              path, (int)s->multilabel, (int)s->classes);
  if (s->n_owned < 0 || s->n_halo < 0 || s->n_owned > s->nodes || s->n_halo > s->nodes - s->n_owned)
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: n_owned = %" PRId64 " and n_halo = %" PRId64 " do not fit in %" PRId64 " nodes",
              path, s->n_owned, s->n_halo, s->nodes);
  if (s->n_owned + s->n_halo > INT32_MAX)
    HALO_FAIL(HALO_ERR_LIMIT, "%s: %" PRId64 " local rows exceed the int32 local index range", path,
              s->n_owned + s->n_halo);
  if (s->nnz < 0 || s->nnz > s->edges)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: nnz = %" PRId64 " is out of range [0, edges = %" PRId64 "]",
              path, s->nnz, s->edges);
  if (s->n_interior < 0 || s->n_interior > s->n_owned ||
      (s->format_version < 2 && s->n_interior != 0))
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: n_interior = %" PRId64 " is out of range [0, n_owned = %" PRId64 "]%s", path,
              s->n_interior, s->n_owned, s->format_version < 2 ? " (format 1 has none: 0)" : "");
  if (s->features > 0 && s->n_owned > INT64_MAX / 4 / s->features)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: %" PRId64 " x %d features overflow", path, s->n_owned,
              (int)s->features);
  if (s->x_indptr && s->format_version < 3)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: CSR features need format_version 3, not %d", path,
              (int)s->format_version);
  if (s->x_nnz < 0 || s->x_nnz > s->n_owned * (int64_t)s->features)
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: features_nnz = %" PRId64 " is out of range [0, n_owned x features = %" PRId64
              "]",
              path, s->x_nnz, s->n_owned * (int64_t)s->features);
  const struct {
    const char *name;
    int64_t n;
  } splits[] = {
      {"/split/train", s->n_train}, {"/split/valid", s->n_valid}, {"/split/test", s->n_test}};
  for (int k = 0; k < 3; k++)
    if (splits[k].n < 0 || splits[k].n > s->n_owned)
      HALO_FAIL(HALO_ERR_FORMAT,
                "%s: %s: length %" PRId64 " is out of range [0, n_owned = %" PRId64 "]", path,
                splits[k].name, splits[k].n, s->n_owned);
done:
  return st;
}

halo_status halo__shard_check_ptr(const char *path, const char *name, const int64_t *ptr,
                                  int32_t parts, int64_t max_total) {
  halo_status st = HALO_OK;
  if (ptr[0] != 0)
    HALO_FAIL(HALO_ERR_RANGE, "%s: %s[0] = %" PRId64 ", expected 0", path, name, ptr[0]);
  for (int32_t q = 0; q < parts; q++)
    if (ptr[q + 1] < ptr[q])
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: %s[%d] = %" PRId64 " is below %s[%d] = %" PRId64 " (not monotone)", path, name,
                (int)q + 1, ptr[q + 1], name, (int)q, ptr[q]);
  if (ptr[parts] > max_total)
    HALO_FAIL(HALO_ERR_RANGE, "%s: %s[%d] = %" PRId64 " exceeds %" PRId64, path, name, (int)parts,
              ptr[parts], max_total);
done:
  return st;
}

/* Fails unless arr[0..n) is strictly ascending within [lo, hi). */
static halo_status check_rows(const char *path, const char *name, const int32_t *arr, int64_t begin,
                              int64_t end, int64_t lo, int64_t hi) {
  halo_status st = HALO_OK;
  for (int64_t i = begin; i < end; i++) {
    if (arr[i] < lo || arr[i] >= hi)
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: %s[%" PRId64 "] = %d is out of range [%" PRId64 ", %" PRId64 ")", path, name,
                i, (int)arr[i], lo, hi);
    if (i > begin && arr[i] <= arr[i - 1])
      HALO_FAIL(HALO_ERR_RANGE, "%s: %s[%" PRId64 "] = %d does not ascend after %d", path, name, i,
                (int)arr[i], (int)arr[i - 1]);
  }
done:
  return st;
}

static int owns(const int64_t *sorted, int64_t n, int64_t gid) {
  return halo_sorted_has(sorted, n, gid);
}

/* The owned global ids in ascending order, for the halo check: the array
 * itself in format 1 (where it must ascend), a sorted copy in format 2
 * (where it must hold each id once).  *copy receives the copy to free. */
static halo_status owned_sorted(const halo_shard *s, const char *path, const int64_t **sorted,
                                int64_t **copy) {
  halo_status st = HALO_OK;
  const int64_t *gid = s->global_id;
  *sorted = gid;
  *copy = NULL;
  if (s->format_version < 2) {
    for (int64_t i = 1; i < s->n_owned; i++)
      if (gid[i] <= gid[i - 1])
        HALO_FAIL(HALO_ERR_RANGE,
                  "%s: /nodes/global_id[%" PRId64 "] = %" PRId64 " does not ascend (owned rows)",
                  path, i, gid[i]);
    goto done;
  }
  HALO_ALLOC(*copy, s->n_owned, "the sorted owned ids");
  memcpy(*copy, gid, (size_t)s->n_owned * sizeof *gid);
  qsort(*copy, (size_t)s->n_owned, sizeof **copy, halo_compare_i64);
  for (int64_t k = 1; k < s->n_owned; k++)
    if ((*copy)[k] == (*copy)[k - 1]) {
      /* Name both rows: the slow search runs only on a bad file. */
      int64_t first = -1, second = -1;
      for (int64_t i = 0; i < s->n_owned && second < 0; i++)
        if (gid[i] == (*copy)[k]) {
          if (first < 0)
            first = i;
          else
            second = i;
        }
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /nodes/global_id[%" PRId64 "] = %" PRId64 " repeats owned row %" PRId64, path,
                second, gid[second], first);
    }
  *sorted = *copy;
done:
  return st;
}

static halo_status check_nodes(const halo_shard *s, const char *path) {
  halo_status st = HALO_OK;
  int64_t *copy = NULL;
  const int64_t *sorted = NULL;
  int64_t local = s->n_owned + s->n_halo;
  for (int64_t i = 0; i < local; i++) {
    int64_t gid = s->global_id[i];
    if (gid < 0 || gid >= s->nodes)
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /nodes/global_id[%" PRId64 "] = %" PRId64 " is out of range [0, %" PRId64 ")",
                path, i, gid, s->nodes);
    int64_t deg = s->degree[i];
    if (deg < 0 || deg >= (s->nodes > 0 ? s->nodes : 1))
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /nodes/degree[%" PRId64 "] = %" PRId64 " is out of range [0, %" PRId64 ")",
                path, i, deg, s->nodes);
  }
  HALO_TRY(owned_sorted(s, path, &sorted, &copy));
  for (int64_t h = 0; h < s->n_halo; h++) {
    int32_t q = s->halo_owner[h];
    int64_t row = s->n_owned + h;
    if (q < 0 || q >= s->parts || q == s->part)
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /nodes/halo_owner[%" PRId64 "] = %d is not another part in [0, %d)", path, h,
                (int)q, (int)s->parts);
    if (h > 0) {
      int32_t prev = s->halo_owner[h - 1];
      if (q < prev)
        HALO_FAIL(HALO_ERR_RANGE,
                  "%s: /nodes/halo_owner[%" PRId64 "] = %d is not grouped (follows %d)", path, h,
                  (int)q, (int)prev);
      if (q == prev && s->global_id[row] <= s->global_id[row - 1])
        HALO_FAIL(HALO_ERR_RANGE,
                  "%s: /nodes/global_id[%" PRId64 "] = %" PRId64
                  " does not ascend within its owner",
                  path, row, s->global_id[row]);
    }
    if (owns(sorted, s->n_owned, s->global_id[row]))
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /nodes/global_id[%" PRId64 "] = %" PRId64 " is both owned and halo", path, row,
                s->global_id[row]);
  }
done:
  free(copy);
  return st;
}

static halo_status check_graph(const halo_shard *s, const char *path) {
  halo_status st = HALO_OK;
  uint8_t *seen = NULL;
  int64_t local = s->n_owned + s->n_halo;
  const int64_t *indptr = s->indptr;
  if (indptr[0] != 0)
    HALO_FAIL(HALO_ERR_RANGE, "%s: /graph/indptr[0] = %" PRId64 ", expected 0", path, indptr[0]);
  for (int64_t i = 0; i < s->n_owned; i++) {
    if (indptr[i + 1] < indptr[i] || indptr[i + 1] > s->nnz)
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /graph/indptr[%" PRId64 "] = %" PRId64
                " is not monotone within [0, nnz = %" PRId64 "]",
                path, i + 1, indptr[i + 1], s->nnz);
    /* An owned row holds every neighbour, so its length is the global degree. */
    if (indptr[i + 1] - indptr[i] != s->degree[i])
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /graph/indptr: row %" PRId64 " has %" PRId64
                " entries but /nodes/degree[%" PRId64 "] = %" PRId64,
                path, i, indptr[i + 1] - indptr[i], i, s->degree[i]);
  }
  if (indptr[s->n_owned] != s->nnz)
    HALO_FAIL(HALO_ERR_RANGE,
              "%s: /graph/indptr[%" PRId64 "] = %" PRId64 ", expected nnz = %" PRId64, path,
              s->n_owned, indptr[s->n_owned], s->nnz);
  HALO_ALLOC(seen, s->n_halo, "the halo coverage map");
  for (int64_t i = 0; i < s->n_owned; i++) {
    HALO_TRY(check_rows(path, "/graph/indices", s->indices, indptr[i], indptr[i + 1], 0, local));
    for (int64_t j = indptr[i]; j < indptr[i + 1]; j++) {
      int32_t col = s->indices[j];
      if (col == i)
        HALO_FAIL(HALO_ERR_RANGE,
                  "%s: /graph/indices[%" PRId64 "] = %d is a self-loop of row %" PRId64, path, j,
                  (int)col, i);
      if (col >= s->n_owned) {
        if (i < s->n_interior)
          HALO_FAIL(HALO_ERR_RANGE,
                    "%s: /graph/indices[%" PRId64 "] = %d is a halo row, but row %" PRId64
                    " is below n_interior = %" PRId64,
                    path, j, (int)col, i, s->n_interior);
        seen[col - s->n_owned] = 1;
      }
    }
  }
  /* The halo is exactly the remote neighbourhood: no row is shipped for nothing. */
  for (int64_t h = 0; h < s->n_halo; h++)
    if (!seen[h])
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: halo row %" PRId64 " (global %" PRId64 ") is not a neighbour of any owned row",
                path, s->n_owned + h, s->global_id[s->n_owned + h]);
done:
  free(seen);
  return st;
}

/* CSR features: offsets from 0 to x_nnz, monotone; columns in [0, F),
 * strictly ascending per row; values finite. */
static halo_status check_features_csr(const halo_shard *s, const char *path) {
  halo_status st = HALO_OK;
  const int64_t *ptr = s->x_indptr;
  if (ptr[0] != 0)
    HALO_FAIL(HALO_ERR_RANGE, "%s: /features_csr/indptr[0] = %" PRId64 ", expected 0", path,
              ptr[0]);
  for (int64_t i = 0; i < s->n_owned; i++)
    if (ptr[i + 1] < ptr[i] || ptr[i + 1] > s->x_nnz)
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /features_csr/indptr[%" PRId64 "] = %" PRId64 " is below indptr[%" PRId64
                "] = %" PRId64 " or above features_nnz = %" PRId64 " (not monotone)",
                path, i + 1, ptr[i + 1], i, ptr[i], s->x_nnz);
  if (ptr[s->n_owned] != s->x_nnz)
    HALO_FAIL(HALO_ERR_RANGE,
              "%s: /features_csr/indptr[%" PRId64 "] = %" PRId64
              ", expected features_nnz = %" PRId64,
              path, s->n_owned, ptr[s->n_owned], s->x_nnz);
  for (int64_t i = 0; i < s->n_owned; i++)
    HALO_TRY(check_rows(path, "/features_csr/indices", s->x_indices, ptr[i], ptr[i + 1], 0,
                        s->features));
  for (int64_t k = 0; k < s->x_nnz; k++)
    if (!isfinite(s->x_values[k]))
      HALO_FAIL(HALO_ERR_RANGE, "%s: /features_csr/values[%" PRId64 "] = %g is not finite", path, k,
                (double)s->x_values[k]);
done:
  return st;
}

static halo_status check_node_data(const halo_shard *s, const char *path) {
  halo_status st = HALO_OK;
  if (s->x_indptr) {
    HALO_TRY(check_features_csr(s, path));
  } else if (s->features > 0) {
    int64_t count = s->n_owned * s->features;
    for (int64_t k = 0; k < count; k++)
      if (!isfinite(s->x[k]))
        HALO_FAIL(HALO_ERR_RANGE, "%s: /features[%" PRId64 "][%" PRId64 "] = %g is not finite",
                  path, k / s->features, k % s->features, (double)s->x[k]);
  }
  if (s->multilabel)
    for (int64_t k = 0; k < s->n_owned * s->classes; k++)
      if (s->targets[k] < -1 || s->targets[k] > 1)
        HALO_FAIL(HALO_ERR_RANGE,
                  "%s: /targets[%" PRId64 "][%" PRId64 "] = %d: a task is 1, 0 or -1 (missing)",
                  path, k / s->classes, k % s->classes, (int)s->targets[k]);
  if (s->classes > 0 && !s->multilabel)
    for (int64_t i = 0; i < s->n_owned; i++)
      if (s->labels[i] < -1 || s->labels[i] >= s->classes)
        HALO_FAIL(HALO_ERR_RANGE, "%s: /labels[%" PRId64 "] = %d is out of range [-1, %d)", path, i,
                  (int)s->labels[i], (int)s->classes);
  HALO_TRY(check_rows(path, "/split/train", s->train, 0, s->n_train, 0, s->n_owned));
  HALO_TRY(check_rows(path, "/split/valid", s->valid, 0, s->n_valid, 0, s->n_owned));
  HALO_TRY(check_rows(path, "/split/test", s->test, 0, s->n_test, 0, s->n_owned));
done:
  return st;
}

static halo_status check_halo(const halo_shard *s, const char *path) {
  halo_status st = HALO_OK;
  int32_t p = s->part;
  int64_t max_send = s->n_owned * (s->parts - 1);
  HALO_TRY(halo__shard_check_ptr(path, "/halo/send_ptr", s->send_ptr, s->parts, max_send));
  if (s->send_ptr[p + 1] != s->send_ptr[p])
    HALO_FAIL(HALO_ERR_RANGE, "%s: /halo/send_ptr sends %" PRId64 " rows to part %d itself", path,
              s->send_ptr[p + 1] - s->send_ptr[p], (int)p);
  /* Ascending GLOBAL id per peer: the order the peer's halo range has. */
  for (int32_t q = 0; q < s->parts; q++)
    for (int64_t k = s->send_ptr[q]; k < s->send_ptr[q + 1]; k++) {
      int32_t row = s->send_idx[k];
      if (row < 0 || row >= s->n_owned)
        HALO_FAIL(HALO_ERR_RANGE,
                  "%s: /halo/send_idx[%" PRId64 "] = %d is out of range [0, %" PRId64 ")", path, k,
                  (int)row, s->n_owned);
      if (k > s->send_ptr[q] && s->global_id[row] <= s->global_id[s->send_idx[k - 1]])
        HALO_FAIL(HALO_ERR_RANGE,
                  "%s: /halo/send_idx[%" PRId64 "] = %d (global %" PRId64
                  ") does not ascend in global id after "
                  "global %" PRId64 " (peer %d)",
                  path, k, (int)row, s->global_id[row], s->global_id[s->send_idx[k - 1]], (int)q);
    }
  HALO_TRY(halo__shard_check_ptr(path, "/halo/recv_ptr", s->recv_ptr, s->parts, s->n_halo));
  if (s->recv_ptr[s->parts] != s->n_halo)
    HALO_FAIL(HALO_ERR_RANGE, "%s: /halo/recv_ptr[%d] = %" PRId64 ", expected n_halo = %" PRId64,
              path, (int)s->parts, s->recv_ptr[s->parts], s->n_halo);
  for (int32_t q = 0; q < s->parts; q++)
    for (int64_t h = s->recv_ptr[q]; h < s->recv_ptr[q + 1]; h++)
      if (s->halo_owner[h] != q)
        HALO_FAIL(HALO_ERR_RANGE,
                  "%s: /halo/recv_ptr gives halo row %" PRId64
                  " to part %d but /nodes/halo_owner[%" PRId64 "] = %d",
                  path, s->n_owned + h, (int)q, h, (int)s->halo_owner[h]);
done:
  return st;
}

halo_status halo__shard_check_arrays(const halo_shard *s, const char *path) {
  halo_status st = HALO_OK;
  int64_t local = s->n_owned + s->n_halo;
  const struct {
    const char *name;
    const void *ptr;
    int needed;
  } arrays[] = {
      {"/nodes/global_id", s->global_id, local > 0},
      {"/nodes/halo_owner", s->halo_owner, s->n_halo > 0},
      {"/nodes/degree", s->degree, local > 0},
      {"/graph/indptr", s->indptr, 1},
      {"/graph/indices", s->indices, s->nnz > 0},
      {"/features", s->x, s->features > 0 && s->n_owned > 0 && !s->x_indptr},
      {"/features_csr/indptr", s->x_indptr, s->x_nnz > 0},
      {"/features_csr/indices", s->x_indices, s->x_nnz > 0},
      {"/features_csr/values", s->x_values, s->x_nnz > 0},
      {"/labels", s->labels, s->classes > 0 && !s->multilabel && s->n_owned > 0},
      {"/targets", s->targets, s->multilabel && s->n_owned > 0},
      {"/split/train", s->train, s->n_train > 0},
      {"/split/valid", s->valid, s->n_valid > 0},
      {"/split/test", s->test, s->n_test > 0},
      {"/halo/send_ptr", s->send_ptr, 1},
      {"/halo/recv_ptr", s->recv_ptr, 1},
  };
  for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++)
    if (arrays[k].needed && !arrays[k].ptr)
      HALO_FAIL(HALO_ERR_ARG, "%s: %s: array is NULL", path, arrays[k].name);
  HALO_TRY(check_nodes(s, path));
  HALO_TRY(check_graph(s, path));
  HALO_TRY(check_node_data(s, path));
  if (s->send_ptr[s->parts] > 0 && !s->send_idx)
    HALO_FAIL(HALO_ERR_ARG, "%s: /halo/send_idx: array is NULL", path);
  HALO_TRY(check_halo(s, path));
  /* The loaders renumber distinct non-negative ids in ascending order, so
   * node v's id in the input is at least v. */
  for (int64_t i = 0; s->original_id && i < s->n_owned; i++)
    if (s->original_id[i] < s->global_id[i])
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /nodes/original_id[%" PRId64 "] = %" PRId64 " is below its global id %" PRId64
                " (input ids are renumbered in ascending order)",
                path, i, s->original_id[i], s->global_id[i]);
  /* Edge weights: both arrays or neither, each value finite and >= 0
   * (what the loaders admit), every row's degree at least its own sum's
   * share of the part's columns. */
  if (!s->edge_weight != !s->weighted_degree)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: /graph/edge_weight and /nodes/weighted_degree come together",
              path);
  for (int64_t k = 0; s->edge_weight && k < s->nnz; k++)
    if (!(s->edge_weight[k] >= 0.0f) || isinf(s->edge_weight[k]))
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /graph/edge_weight[%" PRId64 "] = %g is not a finite weight >= 0", path, k,
                (double)s->edge_weight[k]);
  for (int64_t r = 0; s->weighted_degree && r < s->n_owned + s->n_halo; r++)
    if (!(s->weighted_degree[r] >= 0.0) || isinf(s->weighted_degree[r]))
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /nodes/weighted_degree[%" PRId64 "] = %g is not a finite sum >= 0", path, r,
                s->weighted_degree[r]);
done:
  return st;
}

halo_status halo__manifest_check(const halo_manifest *m, const char *path, int with_part) {
  halo_status st = HALO_OK;
  int64_t *count = NULL;
  HALO_TRY(halo_shard_check_version(path, m->format_version));
  if (m->nodes < 0 || m->edges < 0 || m->features < 0 || m->classes < 0 || m->parts < 1)
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: implausible counts (nodes %" PRId64 ", edges %" PRId64
              ", features %d, classes %d, parts %d)",
              path, m->nodes, m->edges, (int)m->features, (int)m->classes, (int)m->parts);
  if (m->multilabel != 0 && (m->multilabel != 1 || m->classes < 1))
    HALO_FAIL(HALO_ERR_FORMAT, "%s: multilabel = %d with %d tasks; expected 0, or 1 with tasks > 0",
              path, (int)m->multilabel, (int)m->classes);
  if (!memchr(m->method, '\0', sizeof m->method) ||
      !memchr(m->objective, '\0', sizeof m->objective) ||
      !memchr(m->source, '\0', sizeof m->source))
    HALO_FAIL(HALO_ERR_ARG, "%s: method, objective or source is not NUL-terminated", path);
  if ((with_part && m->nodes > 0 && !m->part) || !m->part_digest || !m->part_owned || !m->part_halo)
    HALO_FAIL(HALO_ERR_ARG, "%s: a manifest array is NULL", path);
  for (int32_t q = 0; q < m->parts; q++) {
    if (m->part_owned[q] < 0 || m->part_owned[q] > m->nodes)
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /parts/owned[%d] = %" PRId64 " is out of range [0, %" PRId64 "]", path, (int)q,
                m->part_owned[q], m->nodes);
    if (m->part_halo[q] < 0 || m->part_halo[q] > m->nodes - m->part_owned[q])
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: /parts/halo[%d] = %" PRId64 " is out of range [0, %" PRId64 "]", path, (int)q,
                m->part_halo[q], m->nodes - m->part_owned[q]);
  }
  if (with_part) {
    HALO_ALLOC(count, m->parts, "the per-part counts");
    for (int64_t v = 0; v < m->nodes; v++) {
      if (m->part[v] < 0 || m->part[v] >= m->parts)
        HALO_FAIL(HALO_ERR_RANGE, "%s: /part[%" PRId64 "] = %d is out of range [0, %d)", path, v,
                  (int)m->part[v], (int)m->parts);
      count[m->part[v]]++;
    }
    for (int32_t q = 0; q < m->parts; q++)
      if (m->part_owned[q] != count[q])
        HALO_FAIL(HALO_ERR_RANGE,
                  "%s: /parts/owned[%d] = %" PRId64 " but /part assigns %" PRId64
                  " nodes to part %d",
                  path, (int)q, m->part_owned[q], count[q], (int)q);
  }
  /* Every node has one owner, so the sizes add up to nodes.  With /part this
   * follows from the counts above; without it, it is all that is left to
   * check them against.  Each term is at most nodes: the sum cannot wrap. */
  int64_t owned = 0;
  for (int32_t q = 0; q < m->parts && owned <= m->nodes; q++) owned += m->part_owned[q];
  if (owned != m->nodes)
    HALO_FAIL(HALO_ERR_RANGE, "%s: /parts/owned sums to %s%" PRId64 ", expected nodes = %" PRId64,
              path, owned > m->nodes ? "more than " : "", owned > m->nodes ? m->nodes : owned,
              m->nodes);
done:
  free(count);
  return st;
}

void halo_shard_features_dense(const halo_shard *s, float *x) {
  const int64_t F = s->features;
  if (!s->x_indptr) {
    if (s->x) memcpy(x, s->x, (size_t)(s->n_owned * F) * sizeof *x);
    return;
  }
  const halo_csr a = {.rows = s->n_owned, .cols = F, .nnz = s->x_nnz, .indptr = s->x_indptr,
                      .indices = s->x_indices, .values = s->x_values};
  halo_csr_to_dense(&a, x);
}

halo_status halo_shard_features_to_csr(halo_shard *s) {
  halo_status st = HALO_OK;
  halo_csr a = {0};
  if (s->features == 0 || s->x_indptr) return HALO_OK;
  HALO_TRY(halo_csr_from_dense(s->x, s->n_owned, s->features, "a part's features", &a));
  free(s->x);
  s->x = NULL;
  s->x_nnz = a.nnz;
  s->x_indptr = a.indptr;
  s->x_indices = a.indices;
  s->x_values = a.values;
  s->format_version = HALO_SHARD_FORMAT_VERSION;
  a = (halo_csr){0};
done:
  halo_csr_free(&a);
  return st;
}
