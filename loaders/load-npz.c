/* NumPy .npz archives (zip files of .npy members) and the graph layouts
 * stored in them:
 *
 *   heterophilous-graphs (Platonov et al.)   node_features N x F, node_labels N,
 *                                             edges E x 2, train_masks / val_masks /
 *                                             test_masks S x N bool (or N x S, or N)
 *   gnn-benchmark CSR (Shchur et al.)         adj_data, adj_indices, adj_indptr, adj_shape;
 *                                             attr_matrix N x F, or attr_data, attr_indices,
 *                                             attr_indptr, attr_shape (CSR); labels N
 *   OGB binary (ogb's binary=True)            raw/data.npz: edge_index 2 x E, num_nodes_list,
 *                                             num_edges_list, node_feat; raw/node-label.npz:
 *                                             node_label; split/ as in the CSV layout
 *
 * The zip reader takes the central directory (ZIP64 included) as the truth,
 * reads stored members by pread and deflated ones by streaming them through
 * zlib, and checks every member's CRC-32 when it has been read to its end.
 * An archive's digest is that of its file's bytes, read once more in order.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halo-rng.h"
#include "halo-search.h"
#include "load-impl.h"

/* ---- Zip archives ------------------------------------------------------- */

typedef struct zip_member {
  char name[256];
  int64_t header; /* offset of the local header */
  int64_t csize, usize;
  uint32_t crc;
  int method; /* 0 stored, 8 deflated */
} zip_member;

typedef struct zip_archive {
  const char *path; /* borrowed */
  int fd;
  int64_t size;
  int64_t directory; /* offset of the central directory */
  zip_member *m;
  int count;
} zip_archive;

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const unsigned char *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

static halo_status zip_read(const zip_archive *z, int64_t off, size_t len, void *buf) {
  const load_src s = {.name = z->path, .fd = z->fd, .size = z->size};
  return load_src_pread(&s, off, len, buf);
}

/* Fails with "ARCHIVE: byte OFF: ..." at the archive's byte `at`. */
#define ZIP_FAIL(code, at, ...) LOAD_FAIL_BYTE(z->path, (at), (code), __VA_ARGS__)

/* The end of central directory record (and ZIP64's): where the directory
 * is and how many entries it has. */
static halo_status zip_find_directory(zip_archive *z, int64_t *entries, int64_t *dir_size) {
  halo_status st = HALO_OK;
  unsigned char *tail = NULL;
  const int64_t span = z->size < 65557 ? z->size : 65557;
  if (z->size < 22) ZIP_FAIL(HALO_ERR_FORMAT, 0, "%" PRId64 " bytes: too short for a zip archive", z->size);
  HALO_ALLOC(tail, (size_t)span, "zip tail");
  HALO_TRY(zip_read(z, z->size - span, (size_t)span, tail));
  int64_t at = -1;
  for (int64_t k = span - 22; k >= 0 && at < 0; k--)
    if (le32(tail + k) == 0x06054b50) at = k;
  if (at < 0)
    ZIP_FAIL(HALO_ERR_FORMAT, z->size,
             "no end of central directory record: not a zip archive, or truncated");
  const unsigned char *e = tail + at;
  *entries = le16(e + 10);
  *dir_size = le32(e + 12);
  z->directory = le32(e + 16);
  const int64_t eocd = z->size - span + at;
  if (*entries == 0xffff || *dir_size == 0xffffffff || z->directory == 0xffffffff) {
    unsigned char loc[20], rec[56];
    if (eocd < 20) ZIP_FAIL(HALO_ERR_FORMAT, eocd, "ZIP64 archive without its locator");
    HALO_TRY(zip_read(z, eocd - 20, 20, loc));
    if (le32(loc) != 0x07064b50) ZIP_FAIL(HALO_ERR_FORMAT, eocd - 20, "no ZIP64 locator");
    const int64_t at64 = (int64_t)le64(loc + 8);
    HALO_TRY(zip_read(z, at64, 56, rec));
    if (le32(rec) != 0x06064b50) ZIP_FAIL(HALO_ERR_FORMAT, at64, "no ZIP64 end record");
    *entries = (int64_t)le64(rec + 32);
    *dir_size = (int64_t)le64(rec + 40);
    z->directory = (int64_t)le64(rec + 48);
  }
  if (z->directory < 0 || *dir_size < 0 || z->directory + *dir_size > z->size)
    ZIP_FAIL(HALO_ERR_FORMAT, eocd, "the central directory (%" PRId64 " bytes at %" PRId64
                                    ") lies past the end of the file (truncated?)",
             *dir_size, z->directory);
  if (*dir_size > (1 << 26) || *entries > 100000)
    ZIP_FAIL(HALO_ERR_UNSUPPORTED, eocd, "%" PRId64 " members: too many for a NumPy archive",
             *entries);
done:
  free(tail);
  return st;
}

static halo_status zip_open(zip_archive *z, const char *path) {
  halo_status st = HALO_OK;
  unsigned char *dir = NULL;
  struct stat sb;
  *z = (zip_archive){.path = path, .fd = -1};
  z->fd = open(path, O_RDONLY);
  if (z->fd < 0) HALO_FAIL(HALO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(z->fd, &sb) != 0) HALO_FAIL(HALO_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
  z->size = (int64_t)sb.st_size;
  int64_t entries = 0, dir_size = 0;
  HALO_TRY(zip_find_directory(z, &entries, &dir_size));
  HALO_ALLOC(dir, (size_t)dir_size + 1, "zip central directory");
  HALO_ALLOC(z->m, (size_t)entries + 1, "zip members");
  HALO_TRY(zip_read(z, z->directory, (size_t)dir_size, dir));
  int64_t p = 0;
  for (int64_t k = 0; k < entries; k++) {
    const int64_t at = z->directory + p;
    if (p + 46 > dir_size || le32(dir + p) != 0x02014b50)
      ZIP_FAIL(HALO_ERR_FORMAT, at, "central directory entry %" PRId64 " is corrupt", k);
    const unsigned char *c = dir + p;
    zip_member *m = &z->m[z->count];
    const int flags = le16(c + 8), nlen = le16(c + 28), xlen = le16(c + 30), clen = le16(c + 32);
    if (p + 46 + nlen + xlen + clen > dir_size)
      ZIP_FAIL(HALO_ERR_FORMAT, at, "central directory entry %" PRId64 " runs past its end", k);
    m->method = le16(c + 10);
    m->crc = le32(c + 16);
    m->csize = le32(c + 20);
    m->usize = le32(c + 24);
    m->header = le32(c + 42);
    /* The name reaches error lines: control bytes (never in a member
     * numpy writes) become '?', so an error stays one printable line. */
    snprintf(m->name, sizeof m->name, "%.*s", nlen, (const char *)c + 46);
    for (char *n = m->name; *n; n++)
      if ((unsigned char)*n < 0x20 || *n == 0x7f) *n = '?';
    /* ZIP64's extra field holds the sizes and offset too large for 32 bits, in this order. */
    for (int64_t x = 0; x + 4 <= xlen;) {
      const unsigned char *f = c + 46 + nlen + x;
      const int id = le16(f), len = le16(f + 2);
      if (id == 1) {
        int q = 4;
        if (m->usize == 0xffffffff && q + 8 <= 4 + len) m->usize = (int64_t)le64(f + q), q += 8;
        if (m->csize == 0xffffffff && q + 8 <= 4 + len) m->csize = (int64_t)le64(f + q), q += 8;
        if (m->header == 0xffffffff && q + 8 <= 4 + len) m->header = (int64_t)le64(f + q);
      }
      x += 4 + len;
    }
    if (flags & 1) ZIP_FAIL(HALO_ERR_UNSUPPORTED, at, "member '%s' is encrypted", m->name);
    if (m->method != 0 && m->method != 8)
      ZIP_FAIL(HALO_ERR_UNSUPPORTED, at,
               "member '%s' is compressed with method %d: only stored (0) and deflated (8) "
               "members are read",
               m->name, m->method);
    z->count++;
    p += 46 + nlen + xlen + clen;
  }
done:
  free(dir);
  return st;
}

static void zip_close(zip_archive *z) {
  if (z->fd >= 0) close(z->fd);
  z->fd = -1;
  free(z->m);
  z->m = NULL;
}

static const zip_member *zip_find(const zip_archive *z, const char *key) {
  char name[256];
  snprintf(name, sizeof name, "%s.npy", key);
  for (int k = 0; k < z->count; k++)
    if (strcmp(z->m[k].name, name) == 0) return &z->m[k];
  return NULL;
}

/* Member KEY.npy as an array; a missing member is refused when `required`
 * (*found 0 otherwise). */
static halo_status zip_open_npy(const zip_archive *z, const char *key, int required,
                                const char *layout, load_npy *a, int *found) {
  halo_status st = HALO_OK;
  unsigned char lh[30];
  char name[HALO_OGB_PATH + 256];
  const zip_member *m = zip_find(z, key);
  *a = (load_npy){.fd = -1};
  if (found) *found = m != NULL;
  if (!m && !required) goto done;
  if (!m)
    ZIP_FAIL(HALO_ERR_FORMAT, z->directory, "no member '%s.npy' in the central directory (%s)",
             key, layout);
  HALO_TRY(zip_read(z, m->header, 30, lh));
  if (le32(lh) != 0x04034b50)
    ZIP_FAIL(HALO_ERR_FORMAT, m->header, "member '%s': no local header there", m->name);
  const int64_t data = m->header + 30 + le16(lh + 26) + le16(lh + 28);
  if (data + m->csize > z->size)
    ZIP_FAIL(HALO_ERR_FORMAT, data, "member '%s' (%" PRId64 " bytes) runs past the end of the file (truncated?)",
             m->name, m->csize);
  if (m->method == 0 && m->csize != m->usize)
    ZIP_FAIL(HALO_ERR_FORMAT, m->header, "stored member '%s' has sizes %" PRId64 " and %" PRId64,
             m->name, m->csize, m->usize);
  const load_src src = {.fd = z->fd,
                        .base = data,
                        .size = m->usize,
                        .deflated = m->method == 8,
                        .csize = m->csize,
                        .check_crc = 1,
                        .want_crc = m->crc};
  snprintf(name, sizeof name, "%s:%s", z->path, m->name);
  HALO_TRY(load_npy_open_src(a, &src, name));
done:
  return st;
}

/* The archive's bytes into digest, in order. */
static halo_status digest_file(const char *path, halo_digest_chunked *digest) {
  halo_status st = HALO_OK;
  unsigned char *buf = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) HALO_FAIL(HALO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  HALO_ALLOC(buf, 1 << 20, "digest buffer");
  size_t got;
  while ((got = fread(buf, 1, 1 << 20, f)) > 0) halo_digest_chunked_update(digest, buf, got);
  if (ferror(f)) HALO_FAIL(HALO_ERR_IO, "%s: read failed", path);
done:
  if (f) fclose(f);
  free(buf);
  return st;
}

/* ---- Small arrays --------------------------------------------------------- */

/* A whole small integer array (counts, shapes, row offsets) as int64. */
static halo_status read_ints(load_npy *a, int64_t **out) {
  halo_status st = HALO_OK;
  *out = NULL;
  if (a->kind == 'f')
    HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": dtype '%s': expected integers", a->name,
              a->data_at, a->descr);
  HALO_ALLOC(*out, (size_t)(a->rows * a->cols + 1), "integer array");
  HALO_TRY(load_npy_read_all(a, LOAD_NPY_I64, *out));
done:
  return st;
}

/* ---- Splits from masks ------------------------------------------------- */

static int has_label(const halo_graph *g, int64_t v) {
  if (g->labels) return g->labels[v] >= 0;
  return g->classes > 0 || g->targets != NULL;
}

typedef struct mask_ctx {
  const load_npy *a;
  const halo_graph *g;
  uint8_t *split; /* size g->n: the split being read */
  int64_t pick;   /* the split's row (S x N) or column (N x S) */
  int by_column;
  uint8_t which;
} mask_ctx;

static const char *const SPLIT_WORDS[4] = {"no", "train", "valid", "test"};

static halo_status put_mask(void *ctx, int64_t first, int64_t count, const void *vals) {
  halo_status st = HALO_OK;
  const mask_ctx *mc = ctx;
  const load_npy *a = mc->a;
  const int64_t *v = vals;
  for (int64_t k = 0; k < count; k++) {
    const int64_t e = first + k;
    const int64_t r = a->fortran ? e % a->rows : e / a->cols;
    const int64_t c = a->fortran ? e / a->rows : e % a->cols;
    const int64_t node = mc->by_column ? r : c, split = mc->by_column ? c : r;
    if (split != mc->pick || !v[k]) continue;
    uint8_t *at = &mc->split[node];
    if (!has_label(mc->g, node))
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: byte %" PRId64 ": node %" PRId64
                " is in the %s split but has no label (-1 or NaN in the labels)",
                a->name, a->data_at + e * a->item, node, SPLIT_WORDS[mc->which]);
    if (*at != HALO_SPLIT_NONE)
      HALO_FAIL(HALO_ERR_PARSE,
                "%s: byte %" PRId64 ": node %" PRId64 " is in the %s split, but already in the %s "
                "split",
                a->name, a->data_at + e * a->item, node, SPLIT_WORDS[mc->which], SPLIT_WORDS[*at]);
    *at = mc->which;
  }
done:
  return st;
}

/* The splits S of mask array `a` of n nodes: S x N, N x S (*by_column
 * set), or N (one split, *by_column set); *splits (-1 before the first
 * mask, named first_key) must agree, and split `pick` exist in `path`. */
static halo_status mask_shape(const load_npy *a, int64_t n, const char *first_key, int64_t pick,
                              const char *path, int64_t *splits, int *by_column) {
  halo_status st = HALO_OK;
  int64_t have = 0;
  *by_column = 0;
  if (a->ndim == 1 && a->rows == n) {
    have = 1;
    *by_column = 1;
  } else if (a->ndim == 2 && a->cols == n) {
    have = a->rows;
  } else if (a->ndim == 2 && a->rows == n) {
    have = a->cols;
    *by_column = 1;
  } else {
    HALO_FAIL(HALO_ERR_MISMATCH,
              "%s: byte %" PRId64 ": shape (%" PRId64 ", %" PRId64 ") is not masks of the %" PRId64
              " nodes (S x N, N x S or N)",
              a->name, a->data_at, a->rows, a->cols, n);
  }
  if (*splits >= 0 && have != *splits)
    HALO_FAIL(HALO_ERR_MISMATCH, "%s: byte %" PRId64 ": %" PRId64 " splits, but %s has %" PRId64,
              a->name, a->data_at, have, first_key, *splits);
  *splits = have;
  if (pick >= have)
    HALO_FAIL(HALO_ERR_ARG, "--split-name %" PRId64 ": %s holds splits 0 to %" PRId64, pick, path,
              have - 1);
done:
  return st;
}

/* Split `pick` of three masks (train, val, test), each S x N, N x S, or N
 * (one split), into a new g->split. */
static halo_status read_masks(const zip_archive *z, halo_graph *g, const char *const keys[3],
                              int64_t pick, const char *layout) {
  halo_status st = HALO_OK;
  load_npy a = {.fd = -1};
  uint8_t *split = NULL;
  int64_t splits = -1;
  HALO_ALLOC(split, g->n > 0 ? g->n : 1, "node split");
  memset(split, HALO_SPLIT_NONE, (size_t)g->n);
  for (int s = 0; s < 3; s++) {
    HALO_TRY(zip_open_npy(z, keys[s], 1, layout, &a, NULL));
    mask_ctx mc = {.a = &a, .g = g, .split = split, .pick = pick,
                   .which = (uint8_t)(HALO_SPLIT_TRAIN + s)};
    HALO_TRY(mask_shape(&a, g->n, keys[0], pick, z->path, &splits, &mc.by_column));
    HALO_TRY(load_npy_stream(&a, LOAD_NPY_I64, put_mask, &mc));
    load_npy_close(&a);
  }
  free(g->split);
  g->split = split;
  split = NULL;
done:
  load_npy_close(&a);
  free(split);
  return st;
}

/* ---- The layouts ----------------------------------------------------------- */

static halo_status parse_split_index(const char *path, const char *name, int64_t *pick) {
  halo_status st = HALO_OK;
  *pick = 0;
  if (!name) goto done;
  char *end = NULL;
  errno = 0;
  const long long v = strtoll(name, &end, 10);
  if (end == name || *end || v < 0 || errno)
    HALO_FAIL(HALO_ERR_ARG, "--split-name %s: %s holds numbered splits; give the index (0, 1, ...)",
              name, path);
  *pick = v;
done:
  return st;
}

/* Edges from a CSR's row offsets (N + 1) and column ids (nnz). */
typedef struct csr_ctx {
  const load_npy *a;
  const int64_t *indptr;
  int64_t n, row;
  load_edges *e;
} csr_ctx;

static halo_status put_csr(void *ctx, int64_t first, int64_t count, const void *vals) {
  halo_status st = HALO_OK;
  csr_ctx *c = ctx;
  const int64_t *v = vals;
  for (int64_t k = 0; k < count; k++) {
    const int64_t j = first + k;
    while (c->row < c->n && c->indptr[c->row + 1] <= j) c->row++;
    if (v[k] < 0 || v[k] >= c->n) {
      halo_log_error("%s: byte %" PRId64 ": column %" PRId64 " is out of range [0, %" PRId64 ")",
                     c->a->name, c->a->data_at + j * c->a->item, v[k], c->n);
      return HALO_ERR_RANGE;
    }
    HALO_TRY(load_edges_push(c->e, c->row, v[k]));
  }
done:
  return st;
}

/* Checks CSR row offsets: indptr[0] = 0, non-decreasing, indptr[n] = nnz. */
static halo_status check_indptr(const load_npy *a, const int64_t *p, int64_t n, int64_t nnz) {
  halo_status st = HALO_OK;
  if (a->rows * a->cols != n + 1)
    HALO_FAIL(HALO_ERR_MISMATCH, "%s: byte %" PRId64 ": %" PRId64 " row offsets, expected %" PRId64,
              a->name, a->data_at, a->rows * a->cols, n + 1);
  for (int64_t r = 0; r < n; r++)
    if (p[r] > p[r + 1] || p[0] != 0)
      HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": row offsets decrease at row %" PRId64,
                a->name, a->data_at + r * a->item, r);
  if (p[n] != nnz)
    HALO_FAIL(HALO_ERR_MISMATCH,
              "%s: byte %" PRId64 ": the last row offset is %" PRId64 ", but there are %" PRId64
              " entries",
              a->name, a->data_at + n * a->item, p[n], nnz);
done:
  return st;
}

/* Row r's entries [lo, hi) in ascending column order, a column named twice
 * summed (as scipy's toarray() adds duplicates): key[] is scratch of
 * hi - lo entries.  Returns the entries kept, written from `at` on. */
static int64_t sort_row(int32_t *indices, float *values, int64_t lo, int64_t hi, int64_t at,
                        int64_t *key, float *held) {
  for (int64_t k = lo; k < hi; k++) {
    key[k - lo] = (int64_t)indices[k] << 32 | (k - lo);
    held[k - lo] = values[k];
  }
  qsort(key, (size_t)(hi - lo), sizeof *key, halo_compare_i64);
  for (int64_t k = 0; k < hi - lo; k++) {
    const int32_t c = (int32_t)(key[k] >> 32);
    const float v = held[key[k] & 0xffffffff];
    if (k > 0 && indices[at - 1] == c) {
      values[at - 1] += v;
    } else {
      indices[at] = c;
      values[at++] = v;
    }
  }
  return at;
}

/* Sparse attributes (attr_data, attr_indices, attr_indptr, attr_shape)
 * into g's CSR features as they are (halo_graph_set_features_csr), never
 * a dense n x F matrix: halo_csr_is_smaller decides the shards' layout, as
 * for a CSV.  A row whose columns are not ascending (scipy allows it) is
 * sorted, a repeated column summed. */
static halo_status csr_attributes(const zip_archive *z, halo_graph *g, const char *layout) {
  halo_status st = HALO_OK;
  load_npy a = {.fd = -1};
  int64_t *shape = NULL, *indptr = NULL, *wide = NULL, *key = NULL;
  int32_t *indices = NULL;
  float *data = NULL, *held = NULL;
  HALO_TRY(zip_open_npy(z, "attr_shape", 1, layout, &a, NULL));
  HALO_TRY(read_ints(&a, &shape));
  if (a.rows * a.cols != 2 || shape[0] != g->n || shape[1] <= 0 || shape[1] > INT32_MAX)
    HALO_FAIL(HALO_ERR_MISMATCH, "%s: attr_shape is not (%" PRId64 ", F)", a.name, g->n);
  load_npy_close(&a);
  const int64_t F = shape[1];
  HALO_TRY(zip_open_npy(z, "attr_data", 1, layout, &a, NULL));
  const int64_t nnz = a.rows * a.cols;
  HALO_ALLOC(data, (size_t)nnz + 1, "attribute values");
  HALO_TRY(load_npy_read_all(&a, LOAD_NPY_F32, data));
  for (int64_t j = 0; j < nnz; j++)
    if (!isfinite(data[j]))
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: byte %" PRId64 ": entry %" PRId64 " is %s: NaN and Inf are not allowed",
                a.name, a.data_at + j * a.item, j,
                isnan(data[j]) ? "NaN" : "Inf (or beyond float32)");
  load_npy_close(&a);
  HALO_TRY(zip_open_npy(z, "attr_indices", 1, layout, &a, NULL));
  if (a.rows * a.cols != nnz)
    HALO_FAIL(HALO_ERR_MISMATCH, "%s: %" PRId64 " column ids for %" PRId64 " values", a.name,
              a.rows * a.cols, nnz);
  HALO_TRY(read_ints(&a, &wide));
  HALO_ALLOC(indices, (size_t)nnz + 1, "attribute columns");
  for (int64_t j = 0; j < nnz; j++) {
    if (wide[j] < 0 || wide[j] >= F)
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: byte %" PRId64 ": entry %" PRId64 ": column %" PRId64
                " is out of range [0, %" PRId64 ")",
                a.name, a.data_at + j * a.item, j, wide[j], F);
    indices[j] = (int32_t)wide[j];
  }
  load_npy_close(&a);
  HALO_TRY(zip_open_npy(z, "attr_indptr", 1, layout, &a, NULL));
  HALO_TRY(read_ints(&a, &indptr));
  HALO_TRY(check_indptr(&a, indptr, g->n, nnz));
  int64_t at = 0;
  for (int64_t r = 0; r < g->n; r++) {
    const int64_t lo = indptr[r], hi = indptr[r + 1];
    int ascending = 1;
    for (int64_t k = lo + 1; k < hi && ascending; k++) ascending = indices[k] > indices[k - 1];
    indptr[r] = at;
    if (ascending) {
      memmove(indices + at, indices + lo, (size_t)(hi - lo) * sizeof *indices);
      memmove(data + at, data + lo, (size_t)(hi - lo) * sizeof *data);
      at += hi - lo;
      continue;
    }
    if (hi - lo > UINT32_MAX)
      HALO_FAIL(HALO_ERR_LIMIT, "%s: row %" PRId64 " holds %" PRId64 " entries", a.name, r,
                hi - lo);
    free(key);
    free(held);
    key = NULL;
    held = NULL;
    HALO_ALLOC(key, (size_t)(hi - lo), "a row's columns");
    HALO_ALLOC(held, (size_t)(hi - lo), "a row's values");
    at = sort_row(indices, data, lo, hi, at, key, held);
  }
  indptr[g->n] = at;
  st = halo_graph_set_features_csr(g, (int32_t)F, indptr, indices, data);
  indptr = NULL; /* taken over by g, or freed */
  indices = NULL;
  data = NULL;
  HALO_TRY(st);
done:
  load_npy_close(&a);
  free(shape);
  free(indptr);
  free(wide);
  free(indices);
  free(data);
  free(key);
  free(held);
  return st;
}

static const char *const HETERO =
    "heterophilous-graphs layout: node_features, node_labels, edges, "
    "train_masks, val_masks, test_masks";
static const char *const SHCHUR =
    "gnn-benchmark layout: adj_data, adj_indices, adj_indptr, "
    "adj_shape, attr_matrix or attr_*, labels";

static halo_status load_hetero(const zip_archive *z, const halo_load_options *opt, halo_graph **g) {
  halo_status st = HALO_OK;
  load_npy a = {.fd = -1}, feat = {.fd = -1};
  load_edges e = {0};
  int64_t pick = 0, max_id = -1;
  HALO_TRY(parse_split_index(z->path, opt->split_name, &pick));
  HALO_TRY(zip_open_npy(z, "node_features", 1, HETERO, &feat, NULL));
  const int64_t n = feat.rows;
  if (n > ((int64_t)1 << 32))
    HALO_FAIL(HALO_ERR_LIMIT, "%s: %" PRId64 " nodes exceed the loaders' limit of 2^32", feat.name, n);
  HALO_TRY(zip_open_npy(z, "edges", 1, HETERO, &a, NULL));
  e.path = z->path;
  HALO_TRY(load_npy_edges(&a, n, &e, &max_id));
  load_npy_close(&a);
  HALO_TRY(load_graph_create(z->path, n, g));
  HALO_TRY(load_edges_to_csr(&e, *g));
  HALO_TRY(load_npy_features(*g, &feat));
  HALO_TRY(zip_open_npy(z, "node_labels", 1, HETERO, &a, NULL));
  HALO_TRY(load_npy_labels(*g, &a, 0));
  load_npy_close(&a);
  if (!opt->skip_split) {
    static const char *const KEYS[3] = {"train_masks", "val_masks", "test_masks"};
    int found = 0;
    if (zip_find(z, KEYS[0]) || zip_find(z, KEYS[1]) || zip_find(z, KEYS[2])) found = 1;
    if (found) HALO_TRY(read_masks(z, *g, KEYS, pick, HETERO));
  }
done:
  load_npy_close(&feat);
  load_npy_close(&a);
  load_edges_free(&e);
  return st;
}

static halo_status load_shchur(const zip_archive *z, const halo_load_options *opt, halo_graph **g) {
  halo_status st = HALO_OK;
  load_npy a = {.fd = -1}, idx = {.fd = -1};
  load_edges e = {0};
  int64_t *shape = NULL, *indptr = NULL;
  int found = 0;
  if (opt->split_name)
    HALO_FAIL(HALO_ERR_ARG,
              "--split-name %s: %s (gnn-benchmark layout) holds no split; give one with --split "
              "DIR or --synthetic-split",
              opt->split_name, z->path);
  HALO_TRY(zip_open_npy(z, "adj_shape", 1, SHCHUR, &a, NULL));
  HALO_TRY(read_ints(&a, &shape));
  if (a.rows * a.cols != 2 || shape[0] != shape[1] || shape[0] < 0)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: adj_shape is not (N, N)", a.name);
  const int64_t n = shape[0];
  if (n > ((int64_t)1 << 32))
    HALO_FAIL(HALO_ERR_LIMIT, "%s: %" PRId64 " nodes exceed the loaders' limit of 2^32", a.name, n);
  load_npy_close(&a);
  HALO_TRY(zip_open_npy(z, "adj_indices", 1, SHCHUR, &idx, NULL));
  const int64_t nnz = idx.rows * idx.cols;
  HALO_TRY(zip_open_npy(z, "adj_indptr", 1, SHCHUR, &a, NULL));
  st = read_ints(&a, &indptr);
  if (st == HALO_OK) st = check_indptr(&a, indptr, n, nnz);
  load_npy_close(&a);
  if (st == HALO_OK) st = load_check_memory(z->path, 0, n, nnz);
  e.narrow = 1;
  e.path = z->path;
  if (st == HALO_OK) st = load_edges_reserve(&e, nnz > 0 ? nnz : 1);
  csr_ctx c = {.a = &idx, .indptr = indptr, .n = n, .e = &e};
  if (st == HALO_OK && idx.kind == 'f') {
    halo_log_error("%s: byte %" PRId64 ": dtype '%s': node ids must be integers", idx.name,
                   idx.data_at, idx.descr);
    st = HALO_ERR_FORMAT;
  }
  if (st == HALO_OK) st = load_npy_stream(&idx, LOAD_NPY_I64, put_csr, &c);
  HALO_TRY(st);
  HALO_TRY(load_graph_create(z->path, n, g));
  HALO_TRY(load_edges_to_csr(&e, *g));
  HALO_TRY(zip_open_npy(z, "attr_matrix", 0, SHCHUR, &a, &found));
  if (found) {
    HALO_TRY(load_npy_features(*g, &a));
    load_npy_close(&a);
  } else if (zip_find(z, "attr_data")) {
    HALO_TRY(csr_attributes(z, *g, SHCHUR));
  }
  HALO_TRY(zip_open_npy(z, "labels", 0, SHCHUR, &a, &found));
  if (found) {
    HALO_TRY(load_npy_labels(*g, &a, 0));
  } else if (zip_find(z, "labels_data")) {
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "%s: labels stored as a sparse matrix (labels_data, ...) are not read; give "
              "--labels Y.npy",
              z->path);
  }
done:
  load_npy_close(&idx);
  load_npy_close(&a);
  load_edges_free(&e);
  free(shape);
  free(indptr);
  return st;
}

halo_status load_npz(const char *path, const halo_load_options *opt, halo_graph **out) {
  halo_status st = HALO_OK;
  zip_archive z = {.fd = -1};
  halo_graph *g = NULL;
  halo_digest_chunked digest;
  halo_digest_chunked_init(&digest);
  *out = NULL;
  HALO_TRY(zip_open(&z, path));
  if (zip_find(&z, "node_features") || zip_find(&z, "edges")) {
    HALO_TRY(load_hetero(&z, opt, &g));
  } else if (zip_find(&z, "adj_indptr") || zip_find(&z, "adj_shape")) {
    HALO_TRY(load_shchur(&z, opt, &g));
  } else if (zip_find(&z, "edge_index")) {
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: holds edge_index: an OGB binary data.npz is read through its dataset folder "
              "(--input DATASET, with raw/data.npz)",
              path);
  } else {
    char names[512] = "";
    size_t used = 0;
    for (int k = 0; k < z.count && used < sizeof names; k++)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", k ? ", " : "",
                               z.m[k].name);
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: byte %" PRId64 ": members %s match no graph layout (%s; or %s)", path,
              z.directory, z.count ? names : "(none)", HETERO, SHCHUR);
  }
  HALO_TRY(digest_file(path, &digest));
  load_set_source(g, path);
  g->source_digest = halo_digest_chunked_final(&digest);
  *out = g;
  g = NULL;
done:
  zip_close(&z);
  halo_graph_destroy(&g);
  return st;
}

/* ---- OGB's binary layout ------------------------------------------------ */

static const char *const OGB_BIN = "OGB binary layout: edge_index, num_nodes_list, num_edges_list";

halo_status load_ogb_binary(const char *dir, const char *data_dir, const char *top_dir,
                            const halo_load_options *opt, halo_graph **out) {
  halo_status st = HALO_OK;
  zip_archive z = {.fd = -1}, zl = {.fd = -1};
  load_npy a = {.fd = -1};
  load_edges e = {0};
  halo_graph *g = NULL;
  int64_t *counts = NULL, max_id = -1;
  char data[HALO_OGB_PATH], labels[HALO_OGB_PATH], split[3][HALO_OGB_PATH];
  int found = 0, have_split = 0;
  halo_digest_chunked digest;
  halo_digest_chunked_init(&digest);
  *out = NULL;
  if (snprintf(data, sizeof data, "%s/data.npz", data_dir) >= (int)sizeof data ||
      snprintf(labels, sizeof labels, "%s/node-label.npz", data_dir) >= (int)sizeof labels)
    HALO_FAIL(HALO_ERR_ARG, "%s: path too long", data_dir);
  HALO_TRY(zip_open(&z, data));
  HALO_TRY(zip_open_npy(&z, "num_nodes_list", 1, OGB_BIN, &a, NULL));
  HALO_TRY(read_ints(&a, &counts));
  if (a.rows * a.cols != 1)
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "%s: byte %" PRId64 ": %" PRId64 " graphs: one graph a folder is read (OGB's "
              "graph-property datasets are not node datasets)",
              a.name, a.data_at, a.rows * a.cols);
  const int64_t n = counts[0];
  load_npy_close(&a);
  free(counts);
  counts = NULL;
  if (n < 0 || n > ((int64_t)1 << 32))
    HALO_FAIL(HALO_ERR_LIMIT, "%s:num_nodes_list.npy: %" PRId64 " nodes exceed the loaders' limit of 2^32",
              data, n);
  HALO_TRY(zip_open_npy(&z, "edge_index", 1, OGB_BIN, &a, NULL));
  int64_t m = 0;
  if (load_npy_edge_count(&a, &m)) HALO_TRY(load_check_memory(data, 0, n, m));
  e.path = data;
  HALO_TRY(load_npy_edges(&a, n, &e, &max_id));
  load_npy_close(&a);
  HALO_TRY(zip_open_npy(&z, "num_edges_list", 0, OGB_BIN, &a, &found));
  if (found) {
    HALO_TRY(read_ints(&a, &counts));
    if (a.rows * a.cols != 1 || counts[0] != m)
      HALO_FAIL(HALO_ERR_MISMATCH, "%s: byte %" PRId64 ": num_edges_list is not [%" PRId64
                                   "], the edges of edge_index",
                a.name, a.data_at, m);
    load_npy_close(&a);
  }
  HALO_TRY(load_graph_create(data, n, &g));
  HALO_TRY(load_edges_to_csr(&e, g));
  HALO_TRY(zip_open_npy(&z, "node_feat", 0, OGB_BIN, &a, &found));
  if (found) HALO_TRY(load_npy_features(g, &a));
  load_npy_close(&a);
  HALO_TRY(digest_file(data, &digest));
  struct stat sb;
  if (stat(labels, &sb) == 0) {
    HALO_TRY(zip_open(&zl, labels));
    HALO_TRY(zip_open_npy(&zl, "node_label", 1, "OGB binary node-label.npz: node_label", &a,
                          NULL));
    HALO_TRY(load_npy_labels(g, &a, 0));
    load_npy_close(&a);
    HALO_TRY(digest_file(labels, &digest));
  }
  load_set_source(g, dir);
  if (!opt->skip_split) HALO_TRY(load_ogb_find_splits(data_dir, top_dir, opt->split_name, split, &have_split));
  if (have_split) {
    const char *const paths[3] = {split[0], split[1], split[2]};
    HALO_TRY(load_split_files(g, paths, &digest));
  }
  g->source_digest = halo_digest_chunked_final(&digest);
  *out = g;
  g = NULL;
done:
  load_npy_close(&a);
  zip_close(&z);
  zip_close(&zl);
  load_edges_free(&e);
  free(counts);
  halo_graph_destroy(&g);
  return st;
}

/* ---- The heterophilous-graphs layout by slices (--method ptscotch) ------ */

/* Member KEY of a heterophilous-graphs archive, which must be stored (a
 * deflated member cannot be read from the middle). */
static halo_status open_stored(const zip_archive *z, const char *key, load_npy *a) {
  halo_status st = HALO_OK;
  if (!zip_find(z, "node_features") || !zip_find(z, "edges"))
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "%s: only the heterophilous-graphs layout (node_features, edges, ...) is read by "
              "slices, so --method ptscotch cannot partition this archive (use another --method)",
              z->path);
  HALO_TRY(zip_open_npy(z, key, 1, HETERO, a, NULL));
  if (a->src.deflated)
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "%s: member is deflated (numpy.savez_compressed), which cannot be read by slices, "
              "so --method ptscotch cannot partition it (store it with numpy.savez, or use "
              "another --method)",
              a->name);
done:
  return st;
}

halo_status halo_load_npz_edge_slice(const char *path, const halo_load_options *opt, int64_t slice,
                                     int64_t slices, int64_t line_base, halo_edge_slice *out) {
  halo_status st = HALO_OK;
  zip_archive z = {.fd = -1};
  load_npy a = {.fd = -1};
  (void)opt; /* the archive gives its node count */
  (void)line_base;
  *out = (halo_edge_slice){.nodes = -1};
  snprintf(out->source, sizeof out->source, "%s", path);
  HALO_TRY(zip_open(&z, path));
  HALO_TRY(open_stored(&z, "node_features", &a));
  const int64_t n = a.rows;
  load_npy_close(&a);
  if (n > ((int64_t)1 << 32))
    HALO_FAIL(HALO_ERR_LIMIT, "%s: %" PRId64 " nodes exceed the loaders' limit of 2^32", path, n);
  HALO_TRY(open_stored(&z, "edges", &a));
  HALO_TRY(load_npy_edge_slice(&a, n, slice, slices, out));
  out->nodes = n;
done:
  load_npy_close(&a);
  zip_close(&z);
  return st;
}

halo_status halo_load_npz_node_rows(const char *path, int is_labels, int64_t first, int64_t rows,
                                    halo_node_slice *out) {
  halo_status st = HALO_OK;
  zip_archive z = {.fd = -1};
  load_npy a = {.fd = -1};
  *out = (halo_node_slice){.first = first, .rows = rows, .max_label = -1};
  HALO_TRY(zip_open(&z, path));
  HALO_TRY(open_stored(&z, "node_features", &a));
  const int64_t n = a.rows;
  if (is_labels) {
    load_npy_close(&a);
    HALO_TRY(open_stored(&z, "node_labels", &a));
  }
  HALO_TRY(load_npy_node_rows(&a, is_labels, 0, n, first, rows, out));
done:
  load_npy_close(&a);
  zip_close(&z);
  return st;
}

halo_status halo_load_npz_split_rows(const char *path, const char *split_name, int64_t first,
                                     int64_t rows, const int32_t *labels, uint8_t *split,
                                     int *has_split) {
  halo_status st = HALO_OK;
  zip_archive z = {.fd = -1};
  load_npy a = {.fd = -1};
  int64_t *v = NULL, pick = 0, splits = -1;
  static const char *const KEYS[3] = {"train_masks", "val_masks", "test_masks"};
  *has_split = 0;
  memset(split, HALO_SPLIT_NONE, (size_t)rows);
  HALO_TRY(parse_split_index(path, split_name, &pick));
  HALO_TRY(zip_open(&z, path));
  HALO_TRY(open_stored(&z, "node_features", &a));
  const int64_t n = a.rows;
  load_npy_close(&a);
  if (!zip_find(&z, KEYS[0]) && !zip_find(&z, KEYS[1]) && !zip_find(&z, KEYS[2])) goto done;
  *has_split = 1;
  for (int s = 0; s < 3; s++) {
    HALO_TRY(open_stored(&z, KEYS[s], &a));
    /* Node v of split `pick` is element base + v * stride, as read_masks
     * places it: S x N (or N) C order and N x S Fortran order hold a split
     * contiguously, the other two every S-th element. */
    int by_column = 0;
    HALO_TRY(mask_shape(&a, n, KEYS[0], pick, path, &splits, &by_column));
    const int64_t have = splits;
    const int contiguous = a.ndim == 1 || (by_column != 0) == (a.fortran != 0);
    const int64_t stride = contiguous ? 1 : have;
    const int64_t base = contiguous ? pick * n : pick;
    free(v);
    v = NULL;
    if (rows > 0) {
      HALO_ALLOC(v, (size_t)((rows - 1) * stride + 1), "split rows");
      HALO_TRY(load_npy_read_elements(&a, base + first * stride, (rows - 1) * stride + 1, v));
    }
    const uint8_t which = (uint8_t)(HALO_SPLIT_TRAIN + s);
    for (int64_t r = 0; r < rows; r++) {
      if (!v[r * stride]) continue;
      const int64_t node = first + r, at = a.data_at + (base + node * stride) * a.item;
      if (labels && labels[r] < 0)
        HALO_FAIL(HALO_ERR_RANGE,
                  "%s: byte %" PRId64 ": node %" PRId64
                  " is in the %s split but has no label (-1 or NaN in the labels)",
                  a.name, at, node, SPLIT_WORDS[which]);
      if (split[r] != HALO_SPLIT_NONE)
        HALO_FAIL(HALO_ERR_PARSE,
                  "%s: byte %" PRId64 ": node %" PRId64 " is in the %s split, but already in the "
                  "%s split",
                  a.name, at, node, SPLIT_WORDS[which], SPLIT_WORDS[split[r]]);
      split[r] = which;
    }
    load_npy_close(&a);
  }
done:
  free(v);
  load_npy_close(&a);
  zip_close(&z);
  return st;
}
