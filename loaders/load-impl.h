/* Internals shared by the loaders (private to loaders/).
 *
 * A loader is three layers: a line reader over a zlib stream (plain text and
 * gzip alike), number scanners that work in place on a line, and an edge
 * buffer that turns an unordered stream of (src, dst) pairs into a CSR without
 * a second copy of the edges.
 */
#ifndef HALO_LOAD_IMPL_H
#define HALO_LOAD_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "halo-digest.h"
#include "halo-graph.h"
#include "halo-load.h"
#include "halo-status.h"

/* ---- File kinds --------------------------------------------------------- */

/* What a file is, by its first LOAD_SNIFF_BYTES bytes. */
typedef enum {
  LOAD_FILE_TEXT = 0, /* anything not below: read as text */
  LOAD_FILE_GZIP,     /* \x1f\x8b: the line reader inflates it */
  LOAD_FILE_NPY,      /* \x93NUMPY */
  LOAD_FILE_NPZ,      /* a zip whose first member is NAME.npy (numpy.savez) */
  LOAD_FILE_TORCH,    /* torch.save: a zip of ARCHIVE/data.pkl, or the legacy pickle */
  LOAD_FILE_PICKLE,   /* another pickle (\x80 and protocol 2 to 5) */
  LOAD_FILE_HDF5,     /* \x89HDF\r\n\x1a\n */
  LOAD_FILE_PARQUET,  /* PAR1 */
  LOAD_FILE_DGL,      /* dgl.save_graphs: DGL's serialize magic */
  LOAD_FILE_ZIP,      /* another zip */
} load_file_kind;

enum { LOAD_SNIFF_BYTES = 512 };

/* The kind of the file at `path` (LOAD_FILE_TEXT when it cannot be read:
 * the reader that opens it names that), or of its first n bytes. */
load_file_kind load_sniff(const char *path);
load_file_kind load_sniff_bytes(const unsigned char *b, size_t n);

/* "a NumPy .npz archive", ...: the kind as messages name it. */
const char *load_file_kind_name(load_file_kind kind);

/* Where text is expected (every line reader calls it on the file's first
 * bytes): HALO_OK for text and gzip, else HALO_ERR_FORMAT and one line,
 * "PATH: looks like KIND, not a text file; WHAT TO DO". */
halo_status load_sniff_text(const char *path, const unsigned char *b, size_t n);

/* ---- Line reader ------------------------------------------------------- */

/* Reads a text file line by line, plain or gzip-compressed (a file that
 * starts with the gzip magic bytes is inflated, any other is read as it is,
 * so a ".gz" that is really plain text is read too).  A gzip file may hold
 * several members one after the other, as `cat a.gz b.gz` makes; anything
 * else after the last member is an error, because zlib's gzread would drop it
 * silently and a graph would lose its last edges.  Each line handed out is
 * NUL-terminated in place, without its "\n" or "\r\n"; a UTF-8 byte-order mark
 * before the first line is skipped.  Every decompressed byte (BOM included)
 * goes into `digest` when one is given. */
typedef struct load_reader {
  int fd;            /* valid when `opened` */
  int opened;        /* a zeroed reader owns no descriptor (fd 0 is stdin) */
  int gzip;          /* 1: inflating gzip members; 0: plain bytes */
  int z_live;        /* inflateInit2 succeeded: inflateEnd is owed */
  int member_done;   /* the last gzip member ended; the next bytes must start another */
  z_stream z;        /* inflate state over `in` */
  unsigned char *in; /* file bytes not yet consumed: z.next_in, z.avail_in */
  size_t in_cap;
  int in_eof;        /* read() has returned 0 */
  uint64_t in_bytes; /* file bytes read so far */
  const char *path;  /* borrowed, used in messages */
  char *buf;         /* size cap + 1 */
  size_t cap;
  size_t pos;                  /* first byte not yet handed out */
  size_t end;                  /* one past the last valid byte */
  int64_t line;                /* 1-based number of the line last handed out */
  int eof;                     /* the stream has been read to its end */
  uint64_t bytes;              /* decompressed bytes read so far */
  halo_digest_chunked *digest; /* borrowed, may be NULL */
  /* A slice (load_reader_open_slice): the lines that start in file bytes
   * [slice_begin, slice_end).  A whole-file reader has slice_end = -1. */
  int64_t slice_begin, slice_end;
  int64_t line_start; /* file offset of the next line to hand out */
  int64_t line_base;  /* lines before this reader's first: messages add it */
} load_reader;

/* Opens `path`; a missing, unreadable or empty file is an error naming it. */
halo_status load_reader_open(load_reader *r, const char *path, halo_digest_chunked *digest);

/* As load_reader_open, but an empty file (or a gzip stream of no bytes) is
 * read as one with no lines: for edge files, where no edges is no error. */
halo_status load_reader_open_maybe_empty(load_reader *r, const char *path,
                                         halo_digest_chunked *digest);

/* Opens slice `slice` of `slices` of a plain-text file: the lines whose
 * first byte lies in [size · slice / slices, size · (slice + 1) / slices),
 * so the slices hold every line exactly once, in order, whatever `slices`;
 * a slice may hold none.  A line "starts" just after a '\n' (or at byte 0),
 * so a slice reads past its end to finish its last line and skips the
 * partial line it begins in.  r->line counts from 1 within the slice; a
 * caller that knows the lines before it (the sum over lower slices) sets
 * r->line_base, which messages add.  Gzip files cannot be cut by bytes
 * (HALO_ERR_UNSUPPORTED, naming the file); no digest is kept. Local. */
halo_status load_reader_open_slice(load_reader *r, const char *path, int64_t slice, int64_t slices);

/* Hands out the next line: 1 when *line is set, 0 at the end of the file,
 * negative (already logged) when the stream is truncated or corrupt. */
int load_reader_next(load_reader *r, char **line, size_t *len);

/* Closes the file and frees the buffers.  Every gzip error (a bad trailer, a
 * truncated member, data after the last member) has already been reported by
 * load_reader_next, so this returns HALO_OK; it is safe to call twice and on
 * a zeroed reader or one that failed to open. */
halo_status load_reader_close(load_reader *r);

/* Logs "PATH:LINE: <message>" for the line last handed out. */
void load_reader_error(const load_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Logs "PATH:LINE: 'TOKEN' is not <what>", quoting the token at `tok`. */
void load_reader_bad_token(const load_reader *r, const char *tok, const char *what);

/* Log against the reader's current line, store `code` in `st`, goto done. */
#define LOAD_FAIL(r, code, ...)          \
  do {                                   \
    load_reader_error((r), __VA_ARGS__); \
    st = (code);                         \
    goto done;                           \
  } while (0)

/* Logs "PATH:LINE: 'WORD' is not <what>" for a format whose values are
 * separated by spaces or tabs (edge lists, Matrix Market): WORD runs to the
 * next space or tab, so "0,1" is quoted whole, and a ',' in it is named as
 * the wrong separator. */
void load_reader_bad_word(const load_reader *r, const char *tok, const char *what);

#define LOAD_FAIL_WORD(r, tok, what)          \
  do {                                        \
    load_reader_bad_word((r), (tok), (what)); \
    st = HALO_ERR_PARSE;                      \
    goto done;                                \
  } while (0)

#define LOAD_FAIL_TOKEN(r, tok, what)          \
  do {                                         \
    load_reader_bad_token((r), (tok), (what)); \
    st = HALO_ERR_PARSE;                       \
    goto done;                                 \
  } while (0)

/* ---- Text layouts (load-text.c) ---------------------------------------- */

/* How a text input lays out its values, the same for every reader of it
 * (whole, by slices, streamed): found once from its first lines. */
typedef struct load_text {
  char sep;            /* ',': values separated by commas (blanks around them allowed); ' ':
                          by runs of spaces and tabs */
  int64_t header_line; /* the line skipped as a header row (its number in the file); 0: none */
  int64_t first_row;   /* the line of the first row of data (messages: "as on line L") */
} load_text;

/* The layout of `path` (plain or gzip): the separator is ',' when the
 * first line that holds data (not blank and, with `comments`, not a '#'
 * comment) holds a comma, else blanks.  That line is a header row when
 * mode is HALO_HEADER_YES, or, for HALO_HEADER_AUTO, when one of its
 * values is not a number and the next such line's are all numbers;
 * HALO_HEADER_NO refuses a file that AUTO would find one in ("has a header
 * row"), naming its line.  An empty file is no error here. */
halo_status load_text_layout(const char *path, halo_header mode, int comments, load_text *out);

/* load_reader_next, past t's header row. */
halo_status load_text_next(load_reader *r, const load_text *t, char **line, size_t *len);

/* The values on a line, split by `sep` (a load_text's). */
int32_t load_text_fields(const char *line, char sep);

/* ---- Number scanners --------------------------------------------------- */

enum { LOAD_SCAN_OK = 0, LOAD_SCAN_BAD = -1, LOAD_SCAN_RANGE = -2 };

/* Scans a decimal integer with an optional sign at *p and advances *p past
 * it.  LOAD_SCAN_RANGE when it does not fit int64_t; LOAD_SCAN_BAD when there
 * is no digit or the token goes on with something that is not a separator. */
int load_scan_i64(const char **p, int64_t *out);

/* Scans a float token (decimal, exponent, "nan", "inf") at *p, correctly
 * rounded as strtof would, and advances *p past it.  LOAD_SCAN_BAD as above.
 * Non-finite values are returned as they are; callers decide. */
int load_scan_f32(const char **p, float *out);

/* True for the bytes that end a token: NUL, ',', space, tab. */
static inline int load_is_sep(char c) { return c == '\0' || c == ',' || c == ' ' || c == '\t'; }

/* Skips spaces and tabs. */
static inline const char *load_skip_blank(const char *p) {
  while (*p == ' ' || *p == '\t') p++;
  return p;
}

/* ---- Edge buffer and CSR ----------------------------------------------- */

/* Edges as they are read.  Narrow (set before the first push): one word
 * src << 32 | dst per edge, size cap, while every id is below 2^32.
 * Otherwise wide: interleaved (src, dst) words, size 2 * cap. */
typedef struct load_edges {
  int64_t *pair;
  int64_t count;
  int64_t cap;
  int narrow;
  const char *path; /* borrowed, may be NULL: the file named when memory runs out */
} load_edges;

halo_status load_edges_reserve(load_edges *e, int64_t cap);
halo_status load_edges_grow(load_edges *e);
void load_edges_free(load_edges *e);

/* Turns a narrow buffer into a wide one, in place after a realloc. */
halo_status load_edges_widen(load_edges *e);

/* Appends an edge; a narrow buffer widens itself for an id of 2^32 or more. */
static inline halo_status load_edges_push(load_edges *e, int64_t src, int64_t dst) {
  halo_status st = HALO_OK;
  if (e->narrow && ((uint64_t)src | (uint64_t)dst) >> 32) st = load_edges_widen(e);
  if (st == HALO_OK && e->count == e->cap) st = load_edges_grow(e);
  if (st < 0) return st;
  if (e->narrow) {
    e->pair[e->count] = (int64_t)((uint64_t)src << 32 | (uint64_t)dst);
  } else {
    e->pair[2 * e->count] = src;
    e->pair[2 * e->count + 1] = dst;
  }
  e->count++;
  return HALO_OK;
}

/* Edge j as (src, dst), and back; ids set on a narrow buffer must fit 32 bits. */
static inline void load_edges_get(const load_edges *e, int64_t j, int64_t id[2]) {
  if (e->narrow) {
    id[0] = (int64_t)((uint64_t)e->pair[j] >> 32);
    id[1] = (int64_t)((uint64_t)e->pair[j] & 0xffffffffu);
  } else {
    id[0] = e->pair[2 * j];
    id[1] = e->pair[2 * j + 1];
  }
}

static inline void load_edges_set(load_edges *e, int64_t j, const int64_t id[2]) {
  if (e->narrow) {
    e->pair[j] = (int64_t)((uint64_t)id[0] << 32 | (uint64_t)id[1]);
  } else {
    e->pair[2 * j] = id[0];
    e->pair[2 * j + 1] = id[1];
  }
}

/* Builds g->indptr/indices (g has n nodes) from the edges, all ids in
 * [0, n): rows by source, each row sorted by destination.  The edge buffer is
 * sorted in place and becomes g->indices, so a narrow buffer peaks at the
 * final CSR's 8 m + 8 n bytes; e is left empty. */
halo_status load_edges_to_csr(load_edges *e, halo_graph *g);

/* Edge weights as they are read, weight j belonging to edge j of a
 * load_edges buffer (a weighted input pushes both). */
typedef struct load_weights {
  float *w;   /* size cap */
  int64_t count, cap;
  const char *path; /* borrowed, may be NULL: the file named when memory runs out */
} load_weights;

halo_status load_weights_push(load_weights *w, float value);
void load_weights_free(load_weights *w);

/* Refuses a weight that is negative, NaN or infinite: one line "WHERE:
 * edge weight TOKEN is ..." (WHERE: "PATH:LINE" or "PATH: byte B"), as
 * every weighted reader checks them (docs/partition.md, "Edge weights").
 * HALO_OK for a finite weight >= 0. */
halo_status load_check_weight(const char *where, float value, const char *token);

/* load_edges_to_csr for a weighted input: w (w->count == e->count) goes
 * into g->edge_weight, aligned with g->indices, each row sorted by
 * (destination, weight), so that the clean-up's sum of repeated edges is
 * the same whatever the input's order.  Holds a second copy of the edges
 * while it sorts. e and w are left empty. */
halo_status load_edges_to_csr_weighted(load_edges *e, load_weights *w, halo_graph *g);

/* Refuses (HALO_ERR_NOMEM, one line naming `path` and, when positive,
 * `line`) to load a graph of `n` nodes and up to `edges` stored edges whose
 * CSR (8 bytes per row offset, 8 per edge) would not fit in
 * halo_memory_available(): a size line or node count typed a few digits too
 * long costs one line naming it, not the machine. */
halo_status load_check_memory(const char *path, int64_t line, int64_t n, int64_t edges);

/* The admission both checks share: HALO_OK when `need` bytes fit in
 * halo_memory_available() (or it is unknown); otherwise HALO_ERR_NOMEM and
 * one line, "SUBJECT need about X, but Y of memory is available", SUBJECT
 * formatted from `fmt`. */
halo_status load_admit(double need, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* halo_graph_create(n, 0) for a graph read from `path`: running out of
 * memory for the n + 1 row offsets is an error naming the file and the size. */
halo_status load_graph_create(const char *path, int64_t n, halo_graph **out);

/* Sorts every row of g's CSR by destination (OpenMP over rows). */
void load_csr_sort_rows(halo_graph *g);

/* ---- Binary arrays: .npy files and .npz members (load-npy.c, load-npz.c) */

/* Logs "NAME: byte AT: <message>": a binary file's (or an archive
 * member's, NAME "ARCHIVE:MEMBER") fault at its byte. */
void load_byte_error(const char *name, int64_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* load_byte_error, store `code` in `st`, goto done. */
#define LOAD_FAIL_BYTE(name, at, code, ...)              \
  do {                                                   \
    load_byte_error((name), (int64_t)(at), __VA_ARGS__); \
    st = (code);                                         \
    goto done;                                           \
  } while (0)

/* Bytes to read: [base, base + size) of fd as they are, or (deflated) the
 * raw deflate stream of csize bytes at base that inflates to `size` bytes,
 * as a zip archive stores a member.  load_src_read hands them out in order
 * (a deflated member can only be read so), load_src_pread anywhere (plain
 * bytes only). */
typedef struct load_src {
  const char *name; /* borrowed: "FILE" or "ARCHIVE:MEMBER", in messages */
  int fd;           /* borrowed */
  int64_t base, size;
  int64_t pos; /* bytes handed out by load_src_read */
  int deflated;
  int64_t csize, cpos; /* deflated: compressed bytes, and those consumed */
  z_stream z;
  int z_open;
  unsigned char *in;           /* deflated: compressed bytes not yet consumed */
  int check_crc;               /* compare the CRC-32 of the bytes with want_crc at the end */
  uint32_t crc, want_crc;
  halo_digest_chunked *digest; /* borrowed, may be NULL: gets the bytes handed out */
} load_src;

/* The next `len` bytes; a source that ends first, corrupt deflate data and
 * (at the end) a CRC that differs are refused, naming the byte. */
halo_status load_src_read(load_src *s, void *buf, size_t len);
/* Bytes [off, off + len) of a plain source. */
halo_status load_src_pread(const load_src *s, int64_t off, size_t len, void *buf);
void load_src_close(load_src *s);

/* A NumPy array of at most 2 dimensions (a vector is rows x 1, a scalar
 * 1 x 1) whose header has been read and checked against the bytes there
 * are. */
typedef struct load_npy {
  load_src src;
  int fd;               /* owned (load_npy_open), or -1 */
  char name[HALO_OGB_PATH + 256]; /* for messages */
  char descr[32];       /* the dtype as the header spells it: '<f4' */
  char kind;            /* 'b' bool, 'i' int, 'u' uint, 'f' float */
  int item;             /* bytes an element */
  int swap;             /* the file's byte order is not this machine's */
  int fortran;          /* column-major */
  int ndim;
  int64_t shape[2];
  int64_t rows, cols;
  int64_t data_at; /* offset of the first element in the source */
} load_npy;

typedef enum { LOAD_NPY_F32, LOAD_NPY_F64, LOAD_NPY_I64 } load_npy_type;

/* 1 when `path` starts with the .npy magic bytes. */
int load_npy_is_npy(const char *path);
/* A .npy file (its bytes go into digest when given), or an array at src
 * (a member of an archive: copied, with `name` for messages). */
halo_status load_npy_open(load_npy *a, const char *path, halo_digest_chunked *digest);
halo_status load_npy_open_src(load_npy *a, const load_src *src, const char *name);
void load_npy_close(load_npy *a);

/* Elements first..first+count-1 in the file's order (C or Fortran), as t. */
typedef halo_status (*load_npy_emit)(void *ctx, int64_t first, int64_t count, const void *vals);
/* Every element in the file's order, in blocks, converted to t (bool as
 * 0/1; a uint64 above INT64_MAX as INT64_MAX; a float as int64 truncates,
 * and a non-finite one is INT64_MIN), read sequentially. */
halo_status load_npy_stream(load_npy *a, load_npy_type t, load_npy_emit emit, void *ctx);
/* The whole array, row-major rows x cols of t, read sequentially. */
halo_status load_npy_read_all(load_npy *a, load_npy_type t, void *out);
/* Rows [r0, r1), row-major, read with pread (a plain source only). */
halo_status load_npy_read_rows(load_npy *a, int64_t r0, int64_t r1, load_npy_type t, void *out);
void load_npy_convert(const load_npy *a, const void *raw, int64_t count, load_npy_type t,
                      void *out);

/* Node data and edges from arrays (load-npy-data.c).  Features: n x F
 * (a vector: F = 1), NaN and Inf refused.  Labels: n or n x 1 (int, or
 * float with NaN for unlabelled), their class count under
 * halo_load_check_classes with `classes` (--classes; 0: none), or n x T,
 * T > 1, of 0/1 (NaN or -1: missing), multi-label.  Each installs its
 * result in g. */
halo_status load_npy_features(halo_graph *g, load_npy *a);
halo_status load_npy_labels(halo_graph *g, load_npy *a, int32_t classes);
/* An edge array, E x 2 or 2 x E (PyG's edge_index; a 2 x 2 array is read
 * so), its ids checked against [0, n) (n < 0: only below 2^32), into a
 * narrow buffer of E edges; *max_id gets the largest id (-1: none). */
halo_status load_npy_edges(load_npy *a, int64_t n, load_edges *e, int64_t *max_id);
/* The rows an edge array holds edges in: E for E x 2, else the columns. */
int load_npy_edge_count(const load_npy *a, int64_t *edges);
/* Elements [e0, e0 + count) in the file's order as int64, by pread. */
halo_status load_npy_read_elements(load_npy *a, int64_t e0, int64_t count, int64_t *out);
/* halo_load_npy_edge_slice and halo_load_npy_node_rows of an opened array
 * (a file, or a stored member); edge ids checked against [0, n) (n < 0:
 * only below 2^32). */
halo_status load_npy_edge_slice(load_npy *a, int64_t n, int64_t slice, int64_t slices,
                                halo_edge_slice *out);
halo_status load_npy_node_rows(load_npy *a, int is_labels, int32_t classes, int64_t nodes,
                               int64_t first, int64_t rows, halo_node_slice *out);

/* ---- Formats ------------------------------------------------------------ */

halo_status load_ogb(const char *dir, const halo_load_options *opt, halo_graph **out);
/* One line "src,dst" of an OGB edge.csv, ids in [0, n). */
halo_status load_ogb_edge(const load_reader *r, const char *line, int64_t n, int64_t id[2]);
/* The whole-file readers of the format table (load-formats.c), all of one
 * type (halo_format_row.load); a format without options ignores opt. */
halo_status load_edgelist(const char *path, const halo_load_options *opt, halo_graph **out);
halo_status load_mtx(const char *path, const halo_load_options *opt, halo_graph **out);
halo_status load_spec(const char *spec, const halo_load_options *opt, halo_graph **out);
halo_status load_npy_edgelist(const char *path, const halo_load_options *opt, halo_graph **out);
halo_status load_npz(const char *path, const halo_load_options *opt, halo_graph **out);
/* The split files of an OGB folder, as halo_load finds them (load-ogb.c):
 * split/ of data_dir or of top_dir (may be NULL), itself or its folder
 * `name` (or its only folder); *have 0 when there is no split/. */
halo_status load_ogb_find_splits(const char *data_dir, const char *top_dir, const char *name,
                                 char paths[3][HALO_OGB_PATH], int *have);
/* OGB's binary layout (raw/data.npz, raw/node-label.npz; load-npz.c):
 * data_dir holds data.npz, top_dir (or NULL) the split/ beside raw/. */
halo_status load_ogb_binary(const char *dir, const char *data_dir, const char *top_dir,
                            const halo_load_options *opt, halo_graph **out);

/* True when `input` starts with "NAME:" for a known generator. */
int load_spec_is_spec(const char *input);

/* Node data shared by the OGB loader and halo_load_node_data.  Each reads one
 * file for g's n nodes and installs the result in g (replacing what was
 * there); the file's bytes go into `digest` when given.  opt: the user's
 * options (header, classes, nodes), or NULL for an OGB folder's file.  A
 * .npy file (its magic bytes) is read as an array (load_npy_features,
 * load_npy_labels), anything else as text. */
halo_status load_features_file(halo_graph *g, const char *path, const halo_load_options *opt,
                               halo_digest_chunked *digest);
halo_status load_labels_file(halo_graph *g, const char *path, const halo_load_options *opt,
                             halo_digest_chunked *digest);

/* Reads the three split files (any may be NULL) into a new g->split. */
halo_status load_split_files(halo_graph *g, const char *const paths[3],
                             halo_digest_chunked *digest);

/* Class of node `u` as drawn by load_synth_node_data. */
int32_t load_synth_class(uint64_t seed, int32_t classes, int64_t u);

/* Gives every node of g the node data of s (halo_node_synth_rows). */
halo_status load_synth_node_data(halo_graph *g, const halo_node_synth *s);

/* Sets g->source, truncated to fit (load-reader.c). */
void load_set_source(halo_graph *g, const char *source);

#endif /* HALO_LOAD_IMPL_H */
