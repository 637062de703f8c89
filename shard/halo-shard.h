/* The HDF5 shard format: one manifest per partition run and one file per part.
 *
 * This module alone knows the HDF5 layout; docs/shard-format.md documents it
 * for users of h5ls/h5dump.  Every dataset is chunked and Fletcher-32
 * checksummed, and each part's content digest is recorded in the manifest, so
 * a bit flip anywhere in the data is found on read.
 *
 * Local numbering inside a part: rows 0..n_owned-1 are the owned nodes, each
 * once, in the partitioner's order (format 1: ascending global id; format 2:
 * any order, halo-partition's default puts the n_interior rows without a halo
 * neighbour first, then groups neighbours together); rows
 * n_owned..n_owned+n_halo-1 are the halo nodes, grouped by owner part
 * (ascending), ascending global id within a group.  Send lists name owned
 * rows in ascending GLOBAL id per peer, so peer q sends part p its rows in
 * ascending global id, and they land in the contiguous halo range
 * recv_ptr[q]..recv_ptr[q+1], whatever order either side gives its own rows.
 */
#ifndef HALO_SHARD_H
#define HALO_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "halo-status.h"

/* The newest version, written by a run whose features are CSR.  The reader
 * accepts HALO_SHARD_FORMAT_OLDEST up to it; docs/shard-format.md says what
 * differs.  A run with dense features (or none) is written as
 * HALO_SHARD_FORMAT_DENSE, which it is exactly, so that an older halo still
 * reads it: halo_shard_format_for picks. */
#define HALO_SHARD_FORMAT_VERSION 3
#define HALO_SHARD_FORMAT_DENSE 2
#define HALO_SHARD_FORMAT_OLDEST 1

/* The version a run writes: HALO_SHARD_FORMAT_VERSION when its features are
 * CSR, else HALO_SHARD_FORMAT_DENSE. Local. */
static inline int32_t halo_shard_format_for(int csr_features) {
  return csr_features ? HALO_SHARD_FORMAT_VERSION : HALO_SHARD_FORMAT_DENSE;
}

/* HALO_OK when this build reads format `version` (HALO_SHARD_FORMAT_OLDEST
 * to HALO_SHARD_FORMAT_VERSION); otherwise logs "PATH: format_version 3 is
 * not supported (this build reads versions 1 to 2)" and returns
 * HALO_ERR_FORMAT.  `path` names the manifest or part in the message; every
 * reader and writer of the format checks through here. Local. */
halo_status halo_shard_check_version(const char *path, int32_t version);

/* Global facts of one partition run: DIR/manifest.h5. */
typedef struct halo_manifest {
  int32_t format_version;
  int64_t nodes;     /* n */
  int64_t edges;     /* directed edges of the cleaned graph, self-loops excluded */
  int32_t features;  /* F, 0 when none */
  int32_t classes;   /* C, 0 when unlabelled; multi-label: the number of tasks */
  int32_t multilabel; /* 1: the parts hold /targets (C binary tasks a node), not /labels */
  int32_t parts;     /* P */
  char method[16];   /* "metis", "random" or "block" */
  char objective[8]; /* "cut" or "vol" */
  int64_t seed;
  int32_t ufactor;
  char source[512];       /* input path or spec */
  uint64_t source_digest; /* digest of the input */
  uint64_t run_id;        /* identifies this run; every part carries the same value */
  int32_t *part;          /* size nodes: owner part of each global node;
                           * NULL when read with HALO_MANIFEST_NO_PART */
  uint64_t *part_digest;  /* size parts: halo_shard_digest() of each part */
  int64_t *part_owned;    /* size parts: owned nodes per part */
  int64_t *part_halo;     /* size parts: halo nodes per part */
  uint64_t *part_original_id_digest; /* size parts: halo_shard_digest_original_id() of each
                                      * part; NULL when the run stores no original ids (the
                                      * input's ids were the node ids) */
  uint64_t *part_edge_weight_digest; /* size parts: halo_shard_digest_edge_weight() of each
                                      * part; NULL for an unweighted graph */
} halo_manifest;

/* One part: DIR/part-00003-of-00008.h5. */
typedef struct halo_shard {
  int32_t format_version;
  int32_t part, parts;
  uint64_t run_id;
  int64_t nodes, edges; /* global counts, as in the manifest */
  int32_t features, classes;
  int64_t n_owned, n_halo;
  int64_t nnz;         /* local CSR entries, indptr[n_owned] */
  int64_t n_interior;  /* rows [0, n_interior) have no halo column (format 1 reads 0) */
  int64_t *global_id;  /* size n_owned+n_halo */
  int32_t *halo_owner; /* size n_halo: owner part of each halo row */
  int64_t *degree; /* size n_owned+n_halo: global degree in the cleaned graph, self-loop excluded */
  int64_t *indptr; /* size n_owned+1 */
  int32_t *indices; /* size nnz: local column ids in [0, n_owned+n_halo), ascending within a row, no
                       self-loops */
  float *x;         /* size n_owned*features, row-major; NULL when features == 0 or the
                       features are CSR: a shard holds one layout, never both */
  int64_t x_nnz;    /* CSR features (format 3): entries of x_indices and x_values; 0 when
                       dense */
  int64_t *x_indptr;  /* size n_owned+1 when the features are CSR (format 3), else NULL */
  int32_t *x_indices; /* size x_nnz: columns in [0, features), strictly ascending per row */
  float *x_values;    /* size x_nnz: finite */
  int32_t multilabel; /* 1: targets, not labels */
  int32_t *labels;  /* size n_owned, -1 = unlabelled; NULL when classes == 0 or multilabel */
  int8_t *targets;  /* size n_owned*classes when multilabel: 1, 0, or -1 for a missing entry */
  int64_t n_train, n_valid, n_test;
  int32_t *train;    /* size n_train: owned local rows, ascending */
  int32_t *valid;    /* size n_valid */
  int32_t *test;     /* size n_test */
  int64_t *send_ptr; /* size parts+1: rows for peer q are send_idx[send_ptr[q]..send_ptr[q+1]) */
  int32_t *send_idx; /* size send_ptr[parts]: owned local rows, ascending global id per peer */
  int64_t *recv_ptr; /* size parts+1: halo rows from peer q are n_owned+recv_ptr[q] ..
                        n_owned+recv_ptr[q+1]-1 */
  float *edge_weight;   /* size nnz: the weight of each local CSR entry (finite, >= 0), the
                           same for (u, v) and (v, u); NULL: an unweighted graph.  Optional
                           (/graph/edge_weight): not in halo_shard_digest, covered by
                           halo_shard_digest_edge_weight instead, so an unweighted part's
                           bits and digest are what they were before weights */
  double *weighted_degree; /* size n_owned+n_halo when edge_weight is set: the sum of the
                              weights of each row's edges in the whole clean graph, in
                              ascending neighbour id (a halo row's too, which the part cannot
                              sum itself); else NULL */
  int64_t *original_id; /* size n_owned: the input's id of each owned row (a SNAP list's ids,
                           which halo renumbers to 0..n-1 in ascending order); NULL when the
                           input's ids were the node ids.  Optional: not in halo_shard_digest,
                           covered by halo_shard_digest_original_id instead */
} halo_shard;

/* "DIR/part-00003-of-00008.h5" into buf; fails with HALO_ERR_ARG if it does
 * not fit. Local. */
halo_status halo_shard_path(char *buf, size_t size, const char *dir, int32_t part, int32_t parts);

/* A 64-bit digest of every array and count in the shard (not of the HDF5
 * bytes), recorded in the manifest and checked on read. Local. */
uint64_t halo_shard_digest(const halo_shard *s);

/* The digest of s->original_id alone (n_owned, then the array), recorded in
 * the manifest's /parts/original_id_digest.  Kept apart from
 * halo_shard_digest so that a reader that predates original ids still finds
 * the digest it knows.  Meaningless when s->original_id is NULL. Local. */
uint64_t halo_shard_digest_original_id(const halo_shard *s);

/* The digest of s->edge_weight and s->weighted_degree (nnz, n_owned +
 * n_halo, then the arrays), recorded in the manifest's
 * /parts/edge_weight_digest; kept apart from halo_shard_digest as
 * halo_shard_digest_original_id is.  Meaningless when s->edge_weight is
 * NULL. Local. */
uint64_t halo_shard_digest_edge_weight(const halo_shard *s);

/* Writes `s` to `path` (which must not exist yet), chunked, Fletcher-32. Local. */
halo_status halo_shard_write(const char *path, const halo_shard *s);

/* Reads and validates one part: format version, attribute/array consistency,
 * index ranges, checksums.  /nodes/original_id is optional: when present it
 * is read into s->original_id (size n_owned), else s->original_id is NULL.
 * When `m` is not NULL, also checks the shard against the manifest (the same
 * format version, run id, counts, digest, the original ids present exactly
 * when m->part_original_id_digest is, with its digest, and when m->part is
 * not NULL the owner of every row).  Every failure names the file. On success *out
 * owns a new shard. Local. */
halo_status halo_shard_read(const char *path, const halo_manifest *m, halo_shard **out);

/* The owned rows' features as a dense n_owned x features matrix into x
 * (caller-allocated, n_owned*features floats), from either layout. Local. */
void halo_shard_features_dense(const halo_shard *s, float *x);

/* Converts dense features to CSR (zeros dropped) and sets format_version to
 * HALO_SHARD_FORMAT_VERSION; a no-op for CSR features or none. Local. */
halo_status halo_shard_features_to_csr(halo_shard *s);

/* Any number of ranks from one partition: K parts in P <= K groups.
 * group_of[p] (size parts) gets the group of part p, each group at least one
 * part.  owned[] (size parts) is the manifest's /parts/owned; between[q *
 * parts + p] (size parts * parts, or NULL) is the halo rows part p receives
 * from part q (halo_shard_read_halo_counts).
 *
 * The baseline is contiguous runs of parts whose boundaries come closest to
 * g/groups of the nodes.  With `between`, parts are also merged greedily
 * along the quotient graph (the pair of groups that exchange the most rows
 * first, among pairs whose union is no larger than the baseline's largest
 * group; the fewest nodes when no pair fits), and that grouping is taken
 * when it is as balanced as the baseline and cuts fewer rows.  Groups are
 * numbered by their lowest part.  Integer arithmetic and fixed tie-breaks
 * only, so every rank computes the same grouping. Local. */
#define HALO_SHARD_GROUP_GREEDY_MAX_PARTS 1024
halo_status halo_shard_group(const int64_t *owned, const int64_t *between, int32_t parts,
                             int32_t groups, int32_t *group_of);

/* The rows between groups of a grouping: Σ between[q][p] over parts q, p of
 * different groups (an upper bound on the rows a grouped exchange moves: a
 * row two parts of one group both need crosses once).  Local. */
int64_t halo_shard_group_cut(const int64_t *between, int32_t parts, const int32_t *group_of);

/* from[q] (size parts) = the halo rows the part at `path` receives from part
 * q, read from its /halo/recv_ptr alone (not checked against the manifest:
 * halo_shard_read does that). Local. */
halo_status halo_shard_read_halo_counts(const char *path, int32_t parts, int64_t *from);

/* Merges the parts of one group, in[0..count) (ascending part, all of the
 * same run), into *out: a shard that reads exactly as part `group` of a
 * `groups`-part run.  Owned rows are the parts' owned rows in turn; halo rows
 * of a part owned inside the group become owned columns; the remaining halo
 * rows are kept once each, grouped by owner group, ascending global id; the
 * send list to group q is every row some part here sends to some part of q,
 * once, ascending global id.  The inputs are borrowed; *out is new. Local. */
halo_status halo_shard_merge(const halo_shard *const *in, int32_t count, const int32_t *group_of,
                             int32_t groups, int32_t group, halo_shard **out);

/* Frees every array; accepts NULL and sets *s = NULL. Local. */
void halo_shard_destroy(halo_shard **s);

/* Writes `m` (every array, `part` included) to `path`, which must not exist
 * yet. Local. */
halo_status halo_manifest_write(const char *path, const halo_manifest *m);

/* What halo_manifest_read_opts leaves out. */
enum {
  /* Do not load /part (4 bytes per GLOBAL node, on every rank that reads
   * the manifest): m->part stays NULL.  /part must still be present with
   * its type and shape, but its values are neither read nor checked, so
   * the checks that need them (each value in [0, parts), /parts/owned equal
   * to their counts) are skipped; /parts/owned must still sum to nodes.
   * halo_shard_read then skips only its row-owner cross-check against /part:
   * the part's content digest, checked against /parts/digest, already pins
   * the shard to the one the partitioner wrote alongside that /part. */
  HALO_MANIFEST_NO_PART = 1u << 0,
};

/* Reads and validates DIR/manifest.h5, /part included; on success *out owns
 * a new manifest. Equal to halo_manifest_read_opts(path, 0, out). Local. */
halo_status halo_manifest_read(const char *path, halo_manifest **out);
/* As halo_manifest_read, leaving out what `flags` (HALO_MANIFEST_*) name. */
halo_status halo_manifest_read_opts(const char *path, unsigned flags, halo_manifest **out);
void halo_manifest_destroy(halo_manifest **m);

#endif /* HALO_SHARD_H */
