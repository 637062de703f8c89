/* The distributed partitioner's run (halo-dpartition.h).
 *
 * Rank r of K owns the block of rows [begins[r], begins[r + 1]) of the node
 * ids, cut to about equal load (halo__dist_row_blocks: a node's edges and a share for
 * the node itself), once the input's edges are read.  The run goes:
 *
 *   load      each rank draws slice r of K of the input (halo_load_spec_slice)
 *   clean     every pair (u, v) goes to u's owner as "u has v" and to v's
 *             owner as "v has u, reversed"; each owner sorts its rows,
 *             drops self-loops and duplicates and counts what it changed,
 *             exactly as halo_partition_clean counts it
 *   partition PT-Scotch on the blocks (halo_partition_ptscotch); part[] is
 *             gathered on rank 0 for the manifest and the run id
 *   write     each rank asks the owners of its rows' neighbours for their
 *             part and degree; then, in rounds of K parts, part p's rows go
 *             to rank p mod K, which draws their node data (a function of
 *             the node id), builds the shard (halo_partition_shard_of_rows)
 *             and writes it; rank 0 writes the manifest
 *
 * Each phase holds its error lines (halo_log_hold) and ends in
 * halo_mpi_agree_first, so that a failure on any rank stops every rank with
 * one line; a step that may fail on one rank alone never stands between
 * two collectives.  MPI's counts are ints: an exchange whose counts
 * exceed them is refused by name (more ranks make them smaller).
 *
 * The phases' files: dist-read.c and dist-nodes.c (load), dist-renumber.c
 * (the blocks of rows, ids), dist-clean.c, dist-route.c (parts, ghosts,
 * routing) and dist-write.c (shards, manifest, --write-metis).
 */
#include "dist-impl.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Refuses, before allocating, what the machine cannot hold. Local. */
halo_status halo__dist_admit(const char *source, const char *what, double bytes) {
  halo_status st = HALO_OK;
  const int64_t avail = halo_memory_available();
  char b0[32], b1[32];
  if (avail >= 0 && bytes > (double)avail)
    HALO_FAIL(HALO_ERR_NOMEM,
              "%s: %s needs about %s on this rank, but %s is available (use more "
              "ranks)",
              source, what, halo_memory_str((int64_t)bytes, b0, sizeof b0),
              halo_memory_str(avail, b1, sizeof b1));
done:
  return st;
}

void halo__dist_xfer_free(xfer *x) { halo_route_counts_free(x); }

/* Swaps the item counts every rank sends every other (send_counts[K]) and
 * turns them into x, checking that they fit MPI's ints.  Collective
 * (agreed). */
halo_status halo__dist_xfer_plan(dist *d, const int64_t *send_counts, const char *what, xfer *x) {
  /* One rank receives a whole part when the parts are routed: more ranks
   * do not make that smaller, more parts do. */
  const char *remedy = strcmp(what, "routing the parts") == 0
                           ? "use more parts (one rank receives each part whole)"
                           : "use more ranks";
  halo_status st = HALO_OK;
  int64_t *recv_counts = malloc((size_t)d->size * sizeof *recv_counts);
  phase_begin(d);
  *x = (xfer){0};
  st = recv_counts && halo_route_counts_alloc(d->size, x) ? HALO_OK : HALO_ERR_NOMEM;
  if (st != HALO_OK) halo_log_error("out of memory allocating exchange counts");
  HALO_TRY(phase_end(d, st));
  HALO_TRY(halo_route_swap_counts(d->comm, send_counts, recv_counts));
  phase_begin(d);
  st = halo_route_counts_set(x, d->size, send_counts, recv_counts);
  if (st == HALO_ERR_LIMIT)
    halo_log_error(
        "%s: %s moves more than %d MPI items (int64 values, or 512-byte units of "
        "rows) into or out of one rank, MPI's limit; %s",
        d->slice.source, what, INT_MAX, remedy);
  HALO_TRY(phase_end(d, st));
done:
  free(recv_counts);
  return st;
}

/* ---- the run ---------------------------------------------------------- */

static void dist_free(dist *d) {
  halo_edge_slice_free(&d->slice);
  free(d->g.indptr);
  free(d->g.nbr);
  free(d->part);
  free(d->ghost);
  free(d->ghost_part);
  free(d->ghost_degree);
  free(d->original);
  free(d->x);
  halo_csr_free(&d->xc);
  free(d->labels);
  free(d->targets);
  free(d->split);
  free(d->ogb);
  free(d->begins);
  if (d->pair_type != MPI_DATATYPE_NULL) MPI_Type_free(&d->pair_type);
}

halo_status halo_partition_dist_run(MPI_Comm comm, const halo_partition_dist_request *rq,
                                    halo_partition_dist_result *out) {
  halo_status st = HALO_OK;
  dist d = {.comm = comm, .rq = rq, .pair_type = MPI_DATATYPE_NULL};
  written w = {0};
  int32_t *all_parts = NULL;
  char what[128];
  double mark = now_s();
  *out = (halo_partition_dist_result){0};
  MPI_Comm_rank(comm, &d.rank);
  MPI_Comm_size(comm, &d.size);
  out->ranks = d.size;
  HALO_MPI(MPI_Type_contiguous(2, MPI_INT64_T, &d.pair_type));
  HALO_MPI(MPI_Type_commit(&d.pair_type));

  snprintf(what, sizeof what, "loading %d slice%s of the input", d.size, d.size == 1 ? "" : "s");
  say(&d, what);
  HALO_TRY(halo__dist_load_input(&d));
  out->wall[HALO_DIST_LOAD] = now_s() - mark;
  mark = now_s();

  say(&d, "cleaning (symmetrize, remove duplicates and self-loops), distributed");
  HALO_TRY(halo__dist_clean(&d, &out->clean));
  const int64_t block_edges = d.g.indptr[d.g.rows];
  HALO_MPI(MPI_Reduce(&block_edges, &out->block_edges_max, 1, MPI_INT64_T, MPI_MAX, 0, comm));
  halo_graph *g = &out->summary;
  g->n = d.g.nodes;
  g->m = d.g.edges;
  g->features = d.has_synth ? d.synth.features : d.file_features;
  g->classes = d.has_synth ? d.synth.classes : d.file_classes;
  g->multilabel = d.file_multilabel;
  snprintf(g->source, sizeof g->source, "%s", d.slice.source);
  g->source_digest = rq->synth_split ? halo_split_digest(d.slice.source_digest, rq->synth_split,
                                                         (uint64_t)rq->opt.seed)
                                     : d.slice.source_digest;
  out->wall[HALO_DIST_CLEAN] = now_s() - mark;
  mark = now_s();

  if (rq->metis_tmp) {
    say(&d, "writing the METIS graph");
    HALO_TRY(halo__dist_write_metis(&d));
    out->wall[HALO_DIST_WRITE] = now_s() - mark;
    goto figures;
  }

  snprintf(what, sizeof what, "partitioning into %d parts (ptscotch on %d rank%s)", rq->opt.parts,
           d.size, d.size == 1 ? "" : "s");
  say(&d, what);
  HALO_TRY(halo__dist_assign_parts(&d));
  HALO_TRY(halo__dist_gather_parts(&d, &all_parts));
  /* The run's feature layout, from the non-zeros of every rank's rows. */
  halo_partition_options opt = rq->opt;
  if (g->features > 0 && rq->opt.features_layout != HALO_FEATURES_AUTO) {
    d.features_csr = rq->opt.features_layout == HALO_FEATURES_SPARSE;
  } else if (g->features > 0) {
    int64_t nnz = 0, total = 0;
    if (d.x_sparse) {
      nnz = d.xc.indptr[d.xc.rows];
    } else if (d.x) {
      const int64_t count = (d.begins[d.rank + 1] - d.begins[d.rank]) * (int64_t)d.file_features;
      for (int64_t k = 0; k < count; k++) nnz += d.x[k] != 0.0f;
    } else { /* synthetic: counted as drawn */
      st = halo_node_synth_nnz(&d.synth, d.begins[d.rank], d.begins[d.rank + 1] - d.begins[d.rank],
                               &nnz);
    }
    HALO_TRY(halo_mpi_agree(comm, st));
    HALO_MPI(MPI_Allreduce(&nnz, &total, 1, MPI_INT64_T, MPI_SUM, comm));
    d.features_csr = halo_features_csr_wanted(rq->opt.features_layout, g->n, g->features, total);
  }
  opt.features_layout = d.features_csr ? HALO_FEATURES_SPARSE : HALO_FEATURES_DENSE;
  if (d.rank == 0) out->run_id = halo_partition_run_id(g, &opt, all_parts);
  HALO_MPI(MPI_Bcast(&out->run_id, 1, MPI_UINT64_T, 0, comm));
  out->wall[HALO_DIST_PARTITION] = now_s() - mark;
  mark = now_s();

  say(&d, "writing shards");
  HALO_TRY(halo__dist_ghost_info(&d));
  phase_begin(&d);
  st = halo__dist_written_alloc(&d, &w);
  HALO_TRY(phase_end(&d, st));
  HALO_TRY(halo__dist_route_and_write(&d, out->run_id, &w));
  HALO_TRY(halo__dist_write_manifest(&d, &w, all_parts, g, out->run_id));
  out->wall[HALO_DIST_WRITE] = now_s() - mark;

figures:;
  const int64_t peak = halo_memory_peak();
  HALO_MPI(MPI_Reduce(&peak, &out->peak_rss_max, 1, MPI_INT64_T, MPI_MAX, 0, comm));
  HALO_MPI(MPI_Reduce(&peak, &out->peak_rss_sum, 1, MPI_INT64_T, MPI_SUM, 0, comm));
  out->has_split = d.has_synth || rq->synth_split != NULL || d.split != NULL;
  out->train = w.train; /* rank 0's is the sum */
  if (d.rank == 0) {
    out->stats = w.stats;
    w.stats = NULL;
  }
done:
  halo__dist_written_free(&w);
  free(all_parts);
  dist_free(&d);
  return st;
}

void halo_partition_dist_result_free(halo_partition_dist_result *r) {
  if (!r) return;
  halo_partition_stats_destroy(&r->stats);
}
