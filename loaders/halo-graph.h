/* The in-memory graph every loader produces and the partitioner consumes.
 *
 * Structure is CSR over global node ids 0..n-1, int64 throughout.  Loaders
 * return the edges of the input as they are (possibly one-directional, with
 * duplicates or self-loops); partition/ cleans them.  Node data is optional:
 * structure-only inputs (SNAP, Matrix Market, rmat) have none.
 */
#ifndef HALO_GRAPH_H
#define HALO_GRAPH_H

#include <stdint.h>

#include "halo-status.h"

/* Values of halo_graph.split[i]. */
enum { HALO_SPLIT_NONE = 0, HALO_SPLIT_TRAIN = 1, HALO_SPLIT_VALID = 2, HALO_SPLIT_TEST = 3 };

typedef struct halo_graph {
  int64_t n;              /* nodes */
  int64_t m;              /* stored directed edges, indptr[n] */
  int64_t *indptr;        /* size n+1 */
  int64_t *indices;       /* size m: destination of each edge, in [0, n) */
  float *edge_weight;     /* size m: the weight of each edge (finite, >= 0), or NULL: an
                             unweighted graph (every weight 1).  Loaders set it from a
                             weighted input; partition/'s clean-up keeps it aligned with
                             indices (docs/partition.md, "Edge weights") */
  int32_t features;       /* feature width F; 0 when the input has no features */
  float *x;               /* size n*F, row-major; NULL when features == 0 or the features are
                             CSR (x_indptr): a graph holds one layout, never both */
  int64_t *x_indptr;      /* size n+1 when the features are CSR, else NULL: row v's non-zeros
                             are x_indices/x_values[x_indptr[v] .. x_indptr[v+1]) */
  int32_t *x_indices;     /* size x_indptr[n]: columns in [0, F), strictly ascending per row */
  float *x_values;        /* size x_indptr[n]: finite values (zeros may be stored) */
  int32_t classes;        /* number of classes (multi-label: of tasks); 0 when unlabelled */
  int32_t *labels;        /* size n, in [0, classes) or -1 for unlabelled; NULL when classes == 0
                             or multilabel */
  int32_t multilabel;     /* 1: every node has `classes` binary tasks (node-label.csv rows of
                             several 0/1 columns, as in ogbn-proteins), held in targets */
  int8_t *targets;        /* size n*classes, row-major when multilabel: 1, 0, or -1 for a
                             missing entry; NULL otherwise */
  uint8_t *split;         /* size n, HALO_SPLIT_*; NULL when the input has no split */
  char source[512];       /* what was loaded: a path or a synthetic spec */
  uint64_t source_digest; /* digest of the input's bytes (or of the spec) */
  int64_t *original_id;   /* size n, ascending: node v's id in the input (a SNAP list renumbered
                             to 0..n-1); NULL when the input's ids are the node ids */
} halo_graph;

/* Allocates an empty graph with n nodes and room for m edges (indptr zeroed,
 * indices uninitialised). Local. */
halo_status halo_graph_create(int64_t n, int64_t m, halo_graph **out);

/* The features, dense (x) or CSR (x_indptr, x_indices, x_values): these
 * helpers are the one place that switches a graph between the two, so that
 * the invariant "one layout, never both" holds.  halo_csr_is_smaller
 * (core/halo-csr.h) is the rule that picks one. */

/* Gives g the CSR features of width `features`, taking over the three arrays
 * (malloc'd; freed here on failure too) after checking them: indptr[0] = 0,
 * monotone, indices in [0, features) strictly ascending per row, values
 * finite.  Frees whatever features g had.  A loader with a CSR triple (an
 * npz's attr_indptr/attr_indices/attr_data) calls only this. Local. */
halo_status halo_graph_set_features_csr(halo_graph *g, int32_t features, int64_t *indptr,
                                        int32_t *indices, float *values);

/* Frees the features in either layout; features becomes 0. Local. */
void halo_graph_features_free(halo_graph *g);

/* Non-zero entries of the features: x_indptr[n] for CSR (stored zeros
 * included), the count of x[k] != 0 for dense. Local. */
int64_t halo_graph_features_nnz(const halo_graph *g);

/* Converts the features to dense x (no-op when already dense or absent);
 * HALO_ERR_NOMEM leaves g as it was. Local. */
halo_status halo_graph_features_to_dense(halo_graph *g);

/* Converts the features to CSR, dropping zeros (no-op when already CSR or
 * absent); HALO_ERR_NOMEM leaves g as it was. Local. */
halo_status halo_graph_features_to_csr(halo_graph *g);

/* Frees everything; accepts NULL and sets *g = NULL. Local. */
void halo_graph_destroy(halo_graph **g);

#endif /* HALO_GRAPH_H */
