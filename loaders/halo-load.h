/* Loaders: every input format halo reads, behind one entry point.
 *
 *   OGB raw dataset folder   edge.csv[.gz], node-feat, node-label, split/, num-node-list
 *   SNAP edge list           '#' comments, whitespace-separated ids, remapped to 0..n-1
 *   Matrix Market            coordinate pattern|real|integer, general|symmetric
 *   synthetic spec           sbm:nodes=..,classes=..,avg-degree=..,homophily=..,feat=..,seed=..
 *                            rmat:scale=..,edge-factor=..,seed=..
 *   NumPy edge array         E.npy: E x 2 or 2 x E (edge_index) integer ids in [0, N)
 *   NumPy archive            G.npz: heterophilous-graphs (node_features, node_labels, edges,
 *                            *_masks) or gnn-benchmark CSR (adj_*, attr_*, labels)
 *   OGB binary folder        raw/data.npz (edge_index, node_feat, num_nodes_list, ...),
 *                            raw/node-label.npz, split/ as in the CSV layout
 *
 * Bad input is reported once, as "FILE:LINE: what is wrong", and returned as a
 * negative status; nothing exits.
 */
#ifndef HALO_LOAD_H
#define HALO_LOAD_H

#include "halo-digest.h"
#include "halo-graph.h"

typedef enum {
  HALO_FORMAT_AUTO = 0,
  HALO_FORMAT_OGB,
  HALO_FORMAT_EDGELIST,
  HALO_FORMAT_MTX,
  HALO_FORMAT_SPEC,
  HALO_FORMAT_NPY,
  HALO_FORMAT_NPZ,
} halo_format;

/* Parses "auto", "ogb", "edgelist" (alias "snap"), "mtx", "spec"; anything
 * else fails with HALO_ERR_ARG and one line, "unknown format 'NAME'
 * (expected ...)", which a program prefixes with its flag
 * (halo_log_set_context). Local. */
halo_status halo_format_parse(const char *name, halo_format *out);

/* Loads `input` (a path or a synthetic spec) in format `fmt`; AUTO picks by
 * what the path is: a folder is OGB, *.mtx[.gz] is Matrix Market, a string
 * with "name:" of a known generator is a spec, anything else an edge list.
 * On success *out owns a new graph. Local. */
halo_status halo_load(const char *input, halo_format fmt, halo_graph **out);

/* The format AUTO picks for `input` (above). Local. */
halo_format halo_load_detect_format(const char *input);

/* Whether line 1 of a text input is a header row (--header): AUTO finds
 * one when a value of the first line that holds data is not a number and
 * the next line's values all are; YES skips that line whatever it holds
 * (a header of numbers, as pandas writes "0,1,2" for unnamed columns); NO
 * refuses a file where AUTO would find one.  The edge list (its first line
 * that is not blank or a '#' comment), --features and --labels follow it;
 * an OGB folder's files and --split's are read with AUTO. */
typedef enum { HALO_HEADER_AUTO = 0, HALO_HEADER_YES, HALO_HEADER_NO } halo_header;

/* What halo_load_opts does beyond halo_load. */
typedef struct halo_load_options {
  const char *split_name; /* OGB: the folder split/NAME to read (NULL: split/ itself, or its only
                             folder); npz of S splits (train_masks S x N): the 0-based index of
                             the split (NULL: 0) */
  int skip_split;         /* OGB: read no split (another one replaces it) */
  halo_header header;     /* text inputs' header row (above) */
  int64_t nodes;          /* an edge list: its ids are the nodes 0..nodes-1, kept as they are
                             (isolated nodes included; an id >= nodes is refused at its line);
                             0: inferred, a text edge list's ids renumbered 0..n-1, an npy
                             edge list's kept (N the largest id + 1, or min_nodes when more) */
  int64_t min_nodes;      /* npy edge list, N inferred: at least this many (the rows of
                             --features and --labels: halo_load_npy_rows) */
  int32_t classes;        /* labels: the class count, a label >= classes refused at its line
                             (row); 0: the largest label + 1, under halo_load_check_classes'
                             rule */
  const char *edge_weights; /* --edge-weights W.npy: E weights for the E edges of an npy edge
                               array, in its order (another input refuses it: its own format
                               carries weights); NULL: none */
  int64_t max_nodes;        /* an npy edge array: refuse more nodes than this (an inferred N is
                               its largest id + 1, so one stray id sizes the graph); 0: the
                               loaders' limit of 2^32 */
} halo_load_options;

/* The rows of a .npy file (its header's first dimension), or 0 when `path`
 * is NULL or not a .npy file: what --features X.npy and --labels Y.npy add
 * to an npy edge list's node count. Local. */
halo_status halo_load_npy_rows(const char *path, int64_t *rows);

/* halo_load with options (opt may be NULL). Local. */
halo_status halo_load_opts(const char *input, halo_format fmt, const halo_load_options *opt,
                           halo_graph **out);

/* Reads DIR/train.csv[.gz], DIR/valid.csv[.gz] and DIR/test.csv[.gz] (one
 * node id per line, OGB's format; all three must exist) into a new g->split,
 * replacing g's own.  The ids are g's node ids, except for a renumbered input
 * (g->original_id set: a SNAP edge list), where they are the ids of the file.
 * A node named twice, unknown, or without a label (-1 in g->labels) is
 * refused at its line.  The files' bytes go into g->source_digest. Local. */
halo_status halo_load_split(halo_graph *g, const char *dir);

/* A new g->split drawn per node: node v is train when u(v) < frac[0], valid
 * when below frac[0] + frac[1], test when below their sum with frac[2], else
 * in no split, u(v) the counter-based uniform of (seed, v) (core/halo-rng.h),
 * so the split depends on the global id only.  Nodes labelled -1 are left
 * out.  frac[] and the seed go into g->source_digest. Local. */
halo_status halo_graph_synthesize_split(halo_graph *g, const double frac[3], uint64_t seed);

/* Reads features (CSV rows, one per node) and/or labels (one per line) from files into g; either
 * path may be NULL. */
halo_status halo_load_node_data(halo_graph *g, const char *feat_path, const char *label_path);

/* The same with options (opt may be NULL): their header, classes and
 * nodes (a file of more rows than g's nodes is refused, and without
 * opt->nodes the line says that --nodes keeps an edge list's isolated
 * nodes). Local. */
halo_status halo_load_node_data_opts(halo_graph *g, const char *feat_path, const char *label_path,
                                     const halo_load_options *opt);

/* ---- The class count of single-label data ----------------------------- */

/* A label file without --classes makes max label + 1 classes, unless that
 * leaves most classes without a node: with HALO_CLASSES_SPARSE_LABEL <=
 * the largest label M and M + 1 > HALO_CLASSES_SPARSE_FACTOR x the
 * distinct labels in use, it is refused (a stray 99 in a file of labels
 * 0..3 would make 100 classes).  Real datasets that leave a few classes
 * unused pass: the rule needs more than half of them empty. */
enum { HALO_CLASSES_SPARSE_LABEL = 8, HALO_CLASSES_SPARSE_FACTOR = 2 };

/* The class count of labels whose largest is max_label (-1: none), of
 * which `distinct` values are in use, given --classes `classes` (0: none):
 * classes when given, a max_label >= classes refused; else max_label + 1,
 * refused under the rule above.  A refusal is one line that starts with
 * `where` (the file and line of the first max_label: "FILE:LINE", or
 * "FILE: row R" for a binary file) and says what to do (--classes).  Every
 * label reader calls it, whatever the file's format. Local. */
halo_status halo_load_check_classes(const char *where, int32_t max_label, int64_t distinct,
                                    int32_t classes, int32_t *out);

/* halo_load_check_classes' `where` for the first of a file's largest
 * labels: "PATH:AT", AT its line, in a text file; "PATH: row AT", AT its
 * 0-based row, in a binary one (a .npy file or an archive's member). Local. */
void halo_load_label_where(char *where, size_t size, const char *path, int binary, int64_t at);

/* The distinct labels >= 0 among labels[0..rows), whose largest is
 * max_label; rows when max_label + 1 > 2 rows, where the rule's verdict is
 * the exact count's. Local. */
halo_status halo_load_label_distinct(const int32_t *labels, int64_t rows, int32_t max_label,
                                     int64_t *distinct);

/* Gives g `classes` labels, class-dependent features of width `features`, and a 10/10/80 split,
 * from `seed`. */
halo_status halo_graph_synthesize_node_data(halo_graph *g, int32_t features, int32_t classes,
                                            uint64_t seed);

/* ---- Node data drawn per node ---------------------------------------- */

/* Class-dependent node data, a pure function of (seed, node id), so that
 * any process can draw the rows it holds: class = uniform in [0, classes),
 * features = a random class mean in [-1, 1)^F plus noise of standard
 * deviation `noise`, split = train with probability `train`, valid with
 * `valid`, else test.  sbm specs and --synthetic-features draw theirs so.
 * With `density` > 0 (sbm's feat-density) the features are a binary bag of
 * words instead: feature f of a node of class c is 1 with probability
 * density · (1 + mean[c][f]), else 0, so `density` of them are 1 on
 * average, and the graph holds them as CSR. */
typedef struct halo_node_synth {
  int32_t features; /* 0: labels and split only */
  int32_t classes;  /* >= 1 */
  double noise;
  double density; /* 0: mean plus noise; in (0, 0.5]: binary, this density */
  double train;
  double valid;
  uint64_t seed;
} halo_node_synth;

/* What halo_graph_synthesize_node_data draws: noise 1, a 10/10/80 split. */
halo_node_synth halo_node_synth_default(int32_t features, int32_t classes, uint64_t seed);

/* The node data of nodes ids[0..count): x (count x features, row-major;
 * NULL when features = 0), labels and split, the values a whole graph
 * drawn from s gives those nodes. Local. */
halo_status halo_node_synth_rows(const halo_node_synth *s, const int64_t *ids, int64_t count,
                                 float *x, int32_t *labels, uint8_t *split);

/* The features of nodes ids[0..count) as CSR, the non-zeros of the rows
 * halo_node_synth_rows draws (counted, then drawn into place, never the
 * count x features rows): *indptr (size count+1, from 0), *indices and
 * *values (size (*indptr)[count]) are new malloc'd arrays. Local. */
halo_status halo_node_synth_rows_csr(const halo_node_synth *s, const int64_t *ids, int64_t count,
                                     int64_t **indptr, int32_t **indices, float **values);

/* The non-zero features of nodes [first, first + count): what
 * halo_node_synth_rows would draw, counted without holding the rows. Local. */
halo_status halo_node_synth_nnz(const halo_node_synth *s, int64_t first, int64_t count,
                                int64_t *nnz);

/* Node u's split in halo_graph_synthesize_split, for a labelled node, and
 * the source digest that function leaves. Local. */
uint8_t halo_split_draw(const double frac[3], uint64_t seed, int64_t u);
uint64_t halo_split_digest(uint64_t source_digest, const double frac[3], uint64_t seed);

/* ---- Slices of an input (the distributed partitioner) ------------------ */

/* One slice of an input's edges: `slices` processes each read their own, and
 * together they hold the input's edges exactly once, the same for any
 * number of slices. */
typedef struct halo_edge_slice {
  char source[512];       /* what was read, as halo_graph.source */
  uint64_t source_digest; /* as halo_graph.source_digest (a spec's is its text) */
  int64_t nodes;          /* the input's node count; -1 when `renumber` */
  int64_t count;          /* pairs in this slice */
  int64_t *pair;          /* size 2 count: (source, destination) node ids in [0, nodes) */
  int renumber;           /* 1: the pairs hold the file's own ids (an edge list's), which the
                           * whole graph renumbers 0..n-1 in ascending order, as halo_load
                           * does: the caller renumbers over all slices */
  int has_node_data;      /* 1: the input draws its node data from `synth` (sbm) */
  halo_node_synth synth;
} halo_edge_slice;

/* Slice `slice` of `slices` of a synthetic spec, drawn by this process
 * alone: sbm's nodes [n·slice/slices, n·(slice+1)/slices) with the edges
 * they draw (both directions, as halo_load stores them), rmat's edges
 * [m·slice/slices, m·(slice+1)/slices).  Memory: the slice's pairs, and
 * for sbm 12 bytes per node of the whole graph (classes and members). The
 * union over the slices is the edge multiset halo_load's graph holds.
 * Anything but a spec is HALO_ERR_UNSUPPORTED. Local. */
halo_status halo_load_spec_slice(const char *spec, int64_t slice, int64_t slices,
                                 halo_edge_slice *out);

/* Slice `slice` of `slices` of a plain-text edge list (SNAP): the edges of
 * the lines that start in its byte range [size·slice/slices,
 * size·(slice+1)/slices), in the file's own ids (`renumber` is set, `nodes`
 * is -1; with opt->nodes, the ids are nodes in [0, opt->nodes), `renumber`
 * 0), parsed and refused exactly as halo_load parses them with opt (the
 * header row, found from the file's head, is skipped by the slice that
 * holds it); a bad line is
 * named by its line number in the whole file, line_base + its line in the
 * slice (line_base: the lines of the lower slices, which
 * halo_load_slice_lines counts).  A gzip file is
 * HALO_ERR_UNSUPPORTED; source_digest is left 0 (the ranks digest the file
 * together: halo_load_chunk_digests). Local. */
halo_status halo_load_edgelist_slice(const char *path, const halo_load_options *opt, int64_t slice,
                                     int64_t slices, int64_t line_base, halo_edge_slice *out);

/* The lines of slice `slice` of `slices` of a plain-text file (as
 * halo_load_edgelist_slice cuts it), blank and comment lines included.
 * Local. */
halo_status halo_load_slice_lines(const char *path, int64_t slice, int64_t slices, int64_t *lines);

/* An edge list read whole by this process (a gzip stream, which cannot be
 * cut into byte ranges), handed to emit() in blocks of `block` edges (the
 * last may be shorter), in the file's own ids, parsed and refused as
 * halo_load parses them; *digest gets halo_load's digest of the file.  A
 * failure of emit() stops the read and is returned. Local. */
halo_status halo_load_edgelist_stream(const char *path, const halo_load_options *opt, int64_t block,
                                      halo_status (*emit)(void *ctx, const int64_t *pair,
                                                          int64_t count),
                                      void *ctx, uint64_t *digest);

/* Rows of a node-data file by slices (the distributed partitioner): line v
 * of the file is node v's row, as halo_load_node_data reads it. */
typedef struct halo_node_slice {
  int64_t first;     /* node of the slice's first row: the lines before it */
  int64_t rows;      /* rows in the slice */
  int32_t width;     /* the file's width (its line 1): features, or labels' tasks (1: one
                        label a node) */
  float *x;          /* features: rows x width, row-major, when dense; else NULL */
  int64_t *indptr;   /* features of a plain-text slice, kept as CSR while the density rule
                        (halo_csr_is_smaller) holds over the slice's lines: size rows+1,
                        from 0; else NULL (then x holds them) */
  int32_t *indices;  /* CSR: size indptr[rows], the columns, ascending in each row */
  float *values;     /* CSR: size indptr[rows], the non-zero values */
  int32_t *labels;   /* labels of width 1: rows, -1 for unlabelled ("nan"); else NULL */
  int8_t *targets;   /* labels of width > 1 (multi-label): rows x width of 1, 0 or -1
                        (missing); else NULL */
  int32_t max_label; /* labels: the largest label of the slice (-1 when none) */
  int64_t max_line;  /* labels: the line (in the file) of its first occurrence, 0 when none;
                        of a .npy file's rows, 1 + its row */
  int header;        /* 1: the file's line 1 is a header row, row v is on line v + 2 */
} halo_node_slice;

/* The feature rows of slice `slice` of `slices` of a plain-text CSV of
 * `nodes` rows, whose first line lies `line_base` lines into the file
 * (halo_load_slice_lines), parsed and refused as halo_load_node_data_opts
 * parses them with opt (NULL: an OGB folder's file), against the width of
 * the file's first row; the slice holding a header row skips it; a row
 * past `nodes` is refused at its line.  The rows come back as CSR
 * (out->indptr) while the density rule holds over the slice's lines, as
 * the sequential reader keeps them, else dense (out->x). Local. */
halo_status halo_load_features_slice(const char *path, const halo_load_options *opt, int64_t slice,
                                     int64_t slices, int64_t line_base, int64_t nodes,
                                     halo_node_slice *out);

/* The same for a labels file: one label per line, or (several columns)
 * one row of binary tasks, as halo_load_node_data reads them (a label >=
 * opt->classes refused at its line); the class count is the caller's,
 * over all slices (halo_load_check_classes). Local. */
halo_status halo_load_labels_slice(const char *path, const halo_load_options *opt, int64_t slice,
                                   int64_t slices, int64_t line_base, int64_t nodes,
                                   halo_node_slice *out);

/* Frees the rows; accepts a zeroed slice. Local. */
void halo_node_slice_free(halo_node_slice *s);

/* Slice `slice` of `slices` of a .npy edge array (E x 2 or 2 x E): its
 * edges [E·slice/slices, E·(slice+1)/slices), read with pread, ids kept
 * (`renumber` 0); `nodes` is opt->nodes (an id >= it refused at its byte),
 * else -1 (the largest id over all slices + 1 gives it), and an id
 * outside [0, 2^32) is refused at its byte; line_base is unused (the
 * row's `slice` type). source_digest is left 0. Local. */
halo_status halo_load_npy_edge_slice(const char *path, const halo_load_options *opt, int64_t slice,
                                     int64_t slices, int64_t line_base, halo_edge_slice *out);

/* The heterophilous-graphs .npz (node_features, node_labels, edges,
 * *_masks) by slices, its members stored (numpy.savez; a deflated member
 * is refused by name): the edges as halo_load_npy_edge_slice, `nodes` the
 * rows of node_features; the rows [first, first + rows) of node_features
 * or node_labels as halo_load_npy_node_rows; and their split (split_name:
 * its index, NULL 0) into split[0..rows) (HALO_SPLIT_*), checked against
 * the rows' labels (-1: none; NULL: all labelled), *has_split 0 when the
 * archive has no masks. Local. */
halo_status halo_load_npz_edge_slice(const char *path, const halo_load_options *opt, int64_t slice,
                                     int64_t slices, int64_t line_base, halo_edge_slice *out);
halo_status halo_load_npz_node_rows(const char *path, int is_labels, int64_t first, int64_t rows,
                                    halo_node_slice *out);
halo_status halo_load_npz_split_rows(const char *path, const char *split_name, int64_t first,
                                     int64_t rows, const int32_t *labels, uint8_t *split,
                                     int *has_split);

/* Rows [first, first + rows) of a .npy node-data file of `nodes` rows, read
 * with pread and checked as halo_load_node_data_opts checks the whole file
 * with opt (opt->classes against a multi-label array's columns): x
 * (features), labels (N or N x 1) or targets (N x T, T > 1), width,
 * max_label and max_line (1 + its row) as halo_load_labels_slice gives
 * them; the class count is the caller's, over all rows
 * (halo_load_check_classes). Local. */
halo_status halo_load_npy_node_rows(const char *path, const halo_load_options *opt, int is_labels,
                                    int64_t nodes, int64_t first, int64_t rows,
                                    halo_node_slice *out);

/* 1 when `path` starts with the .npy magic bytes. Local. */
int halo_load_is_npy(const char *path);

/* 1 when `path` starts with gzip's magic bytes. Local. */
int halo_load_is_gzip(const char *path);

/* halo_load's digest of a file is the chunked digest of its bytes
 * (halo_digest_chunked; of a gzip file, of the bytes it inflates to), so K
 * ranks can share the reading of a plain file.  halo_load_chunk_digests
 * gives the digests of `count` whole chunks starting at byte `from` (size
 * count), halo_load_read_at the bytes [from, from + len) (size len); both
 * read with pread, and a file shorter than asked is refused (it changed
 * since its size was taken). Local. */
halo_status halo_load_chunk_digests(const char *path, int64_t from, int64_t count, uint64_t *out);
halo_status halo_load_read_at(const char *path, int64_t from, int64_t len, void *out);

/* Frees the pairs; accepts a zeroed slice. Local. */
void halo_edge_slice_free(halo_edge_slice *s);

/* ---- Matrix Market by pieces (the distributed partitioner) ------------- */

enum { HALO_MTX_PATTERN, HALO_MTX_REAL, HALO_MTX_INTEGER };

/* A Matrix Market file's banner and size line. */
typedef struct halo_mtx_header {
  int field;     /* HALO_MTX_* */
  int symmetric; /* one triangle stored: both directions of each entry are edges */
  int64_t rows, cols, nnz;
  int64_t size_line; /* the size line's line number */
} halo_mtx_header;

/* Reads and checks the header as halo_load does. Local. */
halo_status halo_load_mtx_header(const char *path, halo_mtx_header *h);

/* The entries of the lines that start in slice `slice` of `slices` of a
 * plain-text Matrix Market file (the lines up to the size line skipped), as
 * 0-based edges (both directions of a symmetric file's off-diagonal
 * entries), parsed and refused as halo_load parses them; *entries counts
 * the slice's entries (on a failure, those before it; *where then gets its
 * line).  limit >= 0: an entry past the limit-th is refused as one past
 * the size line's count ("more entries than ..."), at its line.  line_base
 * as for halo_load_edgelist_slice. Local. */
halo_status halo_load_mtx_slice(const char *path, const halo_mtx_header *h, int64_t slice,
                                int64_t slices, int64_t line_base, int64_t limit,
                                halo_edge_slice *out, int64_t *entries, int64_t *where);

/* A Matrix Market file read whole by this process (a gzip stream), its
 * edges handed to emit() in blocks of about `block`, with every check of
 * halo_load (the entry count included); *h gets the header, *digest
 * halo_load's digest of the file. Local. */
halo_status halo_load_mtx_stream(const char *path, int64_t block,
                                 halo_status (*emit)(void *ctx, const int64_t *pair, int64_t count),
                                 void *ctx, halo_mtx_header *h, uint64_t *digest);

/* ---- OGB folders by pieces (the distributed partitioner) --------------- */

enum { HALO_OGB_PATH = 4096 };

/* The files of an OGB dataset folder, found as halo_load finds them (the
 * folder or its raw/, split/ or split/NAME per opt's split_name and
 * skip_split); an absent optional file is "". */
typedef struct halo_ogb_files {
  char nodes[HALO_OGB_PATH];      /* num-node-list.csv[.gz] */
  char edge_count[HALO_OGB_PATH]; /* num-edge-list.csv[.gz], or "" */
  char edges[HALO_OGB_PATH];      /* edge.csv[.gz] */
  char features[HALO_OGB_PATH];   /* node-feat.csv[.gz], or "" */
  char labels[HALO_OGB_PATH];     /* node-label.csv[.gz], or "" */
  char edge_feat[HALO_OGB_PATH];  /* edge-feat.csv[.gz], or "": of width 1, the edge weights
                                     (line k weighs edge.csv's line k); wider, not read */
  int edge_weighted;              /* 1: edge_feat is of width 1, the graph is weighted (the
                                     distributed partitioner refuses it) */
  char split[3][HALO_OGB_PATH];   /* train, valid, test, when has_split */
  int has_split;
} halo_ogb_files;

/* halo_load's digest of an OGB folder is one chunked digest over, in this
 * order, num-node-list, edge, node-feat, node-label and the split files.
 * Local. */
halo_status halo_load_ogb_files(const char *dir, const halo_load_options *opt, halo_ogb_files *out);

/* The count of a num-node-list or num-edge-list file; digest continues
 * (NULL: none). Local. */
halo_status halo_load_count(const char *path, halo_digest_chunked *digest, int64_t *count);

/* As halo_load_edgelist_slice and halo_load_edgelist_stream, for an OGB
 * edge.csv of `nodes` nodes: "src,dst" lines with ids in [0, nodes), kept
 * as they are (`renumber` 0); the stream continues *digest. Local. */
halo_status halo_load_ogb_edge_slice(const char *path, int64_t nodes, int64_t slice, int64_t slices,
                                     int64_t line_base, halo_edge_slice *out);
halo_status halo_load_ogb_edge_stream(const char *path, int64_t nodes, int64_t block,
                                      halo_status (*emit)(void *ctx, const int64_t *pair,
                                                          int64_t count),
                                      void *ctx, halo_digest_chunked *digest);

/* The width of a node-data file: its first row's fields, past a header
 * row by opt (NULL: an OGB folder's file) (features, or a labels file's
 * tasks: 1 for one label a node); *header (unless NULL) gets 1 when its
 * line 1 is a header row. Local. */
halo_status halo_load_node_width(const char *path, const halo_load_options *opt, int32_t *width,
                                 int *header);

/* The bytes of one item of a node-data row (a float feature, an int32
 * label, an int8 task of a multi-label row), and what the rows are called
 * in messages. Local. */
size_t halo_load_node_item(int is_labels, int32_t width);
const char *halo_load_node_rows_name(int is_labels, int32_t width);

/* Rows [first, first + rows) of a node-data file: rows x width items of
 * halo_load_node_item's size (floats, int32 labels, -1 unlabelled, or int8
 * tasks). */
typedef halo_status (*halo_node_emit)(void *ctx, int64_t first, int64_t rows, const void *data);

/* A node-data file read whole by this process (a gzip stream), handed to
 * emit() in blocks of `block` rows, parsed and refused as
 * halo_load_node_data_opts parses it with opt (NULL: an OGB folder's
 * file), a row past `nodes` refused at its line; *max_label gets the
 * largest label (-1: none, or features), *max_line the line of its first
 * occurrence; digest continues (NULL: none). Local. */
halo_status halo_load_node_stream(const char *path, const halo_load_options *opt, int is_labels,
                                  int64_t nodes, int64_t block, halo_node_emit emit, void *ctx,
                                  int32_t *max_label, int64_t *max_line,
                                  halo_digest_chunked *digest);

/* One rank's block of rows, for the split files. */
typedef struct halo_split_block {
  int64_t nodes, begin, rows;       /* the rows [begin, begin + rows) of `nodes` */
  const int32_t *labels;            /* rows labels (-1: none), or NULL: every node labelled */
  const int64_t *original;          /* a renumbered input: the rows' input ids (ascending), which
                                       the files name; NULL: the files name the nodes */
  int64_t original_lo, original_hi; /* with original: the input ids the block answers for,
                                       the gaps between blocks' ids included */
  const char *source;               /* the input, for messages */
  int multilabel;                   /* for messages: labels are rows of tasks */
} halo_split_block;

/* Split files (train, valid, test: one node id per line, OGB's format),
 * read whole by this process, into split[v - begin] (HALO_SPLIT_*) for the
 * block's nodes v: every line is parsed, and the ids the block answers for
 * are checked as halo_load checks them (a node of the graph, labelled, in
 * one split at most), with its messages; digest continues (NULL: none).
 * On a failure *where (unless NULL) gets its place, file index << 40 plus
 * line, to find the failure a sequential read meets first. Local. */
halo_status halo_load_split_block(const char *const paths[3], const halo_split_block *b,
                                  uint8_t *split, halo_digest_chunked *digest, int64_t *where);

/* The three split files of folder `dir` (--split DIR), all of which must
 * exist. Local. */
halo_status halo_load_split_paths(const char *dir, char paths[3][HALO_OGB_PATH]);

/* ---- The format table ------------------------------------------------- */

/* How the distributed partitioner (halo-partition --method ptscotch,
 * partition/dist-read.c) reads a format, each rank its slice. */
typedef enum {
  HALO_SLICING_NONE = 0, /* not by slices: --method ptscotch refuses it, naming the format */
  HALO_SLICING_SPEC,     /* each rank draws its slice (halo_load_spec_slice) */
  /* A file of one edge a line in its own ids: plain text by slices of lines
   * (the row's `slice`), a gzip stream read by rank 0 and dealt out (its
   * `stream`), the ids renumbered 0..n-1 over the ranks, as halo_load
   * numbers them. */
  HALO_SLICING_LINES,
  HALO_SLICING_MTX,    /* Matrix Market: slices checked against the size line over the ranks */
  HALO_SLICING_FOLDER, /* an OGB folder: its edge.csv by lines, its node data to the blocks */
  HALO_SLICING_NPY,    /* a .npy edge array: each rank preads its edges (the row's `slice`) */
  HALO_SLICING_NPZ,    /* a heterophilous-graphs .npz of stored members: edges by the row's
                          `slice`, node data and masks by each block's rows */
} halo_format_slicing;

/* One input format: a row of the table in load-formats.c, read by
 * --format's parser, --format auto, halo_load and the distributed reader.
 * A new format is a row there, its halo_format value, and its reader. */
typedef struct halo_format_row {
  halo_format format;
  const char *name;  /* --format's name */
  const char *alias; /* another name for it, or NULL */
  /* --format auto tries the guesses in ascending guess_order (from 1); the
   * row of order 0, which has no guess, is what none of them claims. */
  int guess_order;
  int (*guess)(const char *input);
  /* The whole input into a new graph (halo_load). Local. */
  halo_status (*load)(const char *input, const halo_load_options *opt, halo_graph **out);
  /* 1: --nodes N (halo_load_options.nodes) fixes the node count, the ids
   * kept (an edge list's, a .npy edge array's); 0: the input gives it. */
  int takes_nodes;
  halo_format_slicing slicing;
  /* HALO_SLICING_LINES: a plain file's slice and a gzip file's stream, as
   * halo_load_edgelist_slice and halo_load_edgelist_stream (NULL otherwise). */
  halo_status (*slice)(const char *path, const halo_load_options *opt, int64_t slice,
                       int64_t slices, int64_t line_base, halo_edge_slice *out);
  halo_status (*stream)(const char *path, const halo_load_options *opt, int64_t block,
                        halo_status (*emit)(void *ctx, const int64_t *pair, int64_t count),
                        void *ctx, uint64_t *digest);
} halo_format_row;

/* The row of `format`, or NULL for HALO_FORMAT_AUTO and unknown values.
 * The table is static: the row is borrowed for the program's life. Local. */
const halo_format_row *halo_format_row_of(halo_format format);

/* --nodes `nodes` (0: not given) against the input `input` of row `row`:
 * refused in one line unless the row takes_nodes. Local. */
halo_status halo_load_check_nodes(const halo_format_row *row, const char *input, int64_t nodes);

#endif /* HALO_LOAD_H */
