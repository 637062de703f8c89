/* Minimum vertex cover of a bipartite graph (König's theorem): a maximum
 * matching by Hopcroft–Karp, then the vertices reached from the unmatched
 * left vertices by alternating paths, Z; the cover is (L \ Z) ∪ (R ∩ Z),
 * and its size equals the matching's.
 *
 * halo uses it for --halo-aggregate auto: each pair of parts' cut is a
 * bipartite graph, and a cover says which rows cross (docs/train.md,
 * "Pre- and post-aggregation").  The result is a function of the input's
 * order alone (vertex numbers, adjacency order), so two ranks that build
 * the same graph from the same ordering (ascending global id) get the same
 * cover.
 */
#ifndef HALO_COVER_H
#define HALO_COVER_H

#include <stdint.h>

#include "halo-status.h"

/* A bipartite graph by its left side: left vertex i's neighbours are
 * adj[ptr[i] .. ptr[i+1]), right vertices in [0, nr). Borrowed. */
typedef struct halo_bipartite {
  int64_t nl, nr;
  const int64_t *ptr; /* size nl + 1 */
  const int64_t *adj; /* size ptr[nl] */
} halo_bipartite;

/* in_left (size nl) and in_right (size nr) set to 1 for the vertices of a
 * minimum vertex cover, 0 for the others; *size = their count (= the
 * maximum matching's size, ≤ min(nl, nr)).  HALO_ERR_ARG for an adjacency
 * entry out of range; HALO_ERR_NOMEM. Local. */
halo_status halo_cover_bipartite(const halo_bipartite *g, uint8_t *in_left, uint8_t *in_right,
                                 int64_t *size);

#endif /* HALO_COVER_H */
