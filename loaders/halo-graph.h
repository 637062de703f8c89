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
  int32_t features;       /* feature width F; 0 when the input has no features */
  float *x;               /* size n*F, row-major; NULL when features == 0 */
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

/* Frees everything; accepts NULL and sets *g = NULL. Local. */
void halo_graph_destroy(halo_graph **g);

#endif /* HALO_GRAPH_H */
