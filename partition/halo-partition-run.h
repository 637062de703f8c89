/* halo-partition's run as library calls: the checks of its outputs and
 * node data, load, clean-up, partition, shards, the prediction of --dims,
 * and the JSON and the table it reports (docs/partition.md is the
 * reference).  programs/partition-main.c parses the flags into a
 * halo_partition_run_request and calls halo_partition_run, or, under
 * mpirun with --method ptscotch, halo_partition_run_distributed.
 *
 * Messages name the program's flags (--out, --json, ...): the request is
 * the command line's, field by field. */
#ifndef HALO_PARTITION_RUN_H
#define HALO_PARTITION_RUN_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "halo-graph.h"
#include "halo-load.h"
#include "halo-model.h"
#include "halo-partition.h"

/* What one run is asked to do: halo-partition's flags.  Strings are
 * borrowed for the call. */
typedef struct halo_partition_run_request {
  const char *input, *out, *json, *features, *labels, *write_metis, *split, *split_name;
  const char *edge_weights;   /* --edge-weights W.npy: an npy edge array's weights; NULL: none */
  double synth_split[3]; /* --synthetic-split's fractions, when synth_split_given */
  int synth_split_given;
  halo_format format;
  halo_header header;         /* --header: text inputs' header row */
  int64_t nodes;              /* --nodes: an edge list's ids are the nodes 0..nodes-1; 0: none */
  int32_t classes;            /* --classes: the class count of --labels; 0: none */
  halo_partition_options opt; /* the run may switch metis to scotch (metis_switched) */
  int force;
  int32_t synth_features, synth_classes;
  int32_t dims[HALO_MAX_LAYERS + 1]; /* --dims, ndims of them; 0: no prediction */
  int ndims;
  halo_model_config model; /* what --dims predicts for */
  int metis_switched;      /* set by the run: metis was asked for, the graph is past its limit */
  const char *parts_file;  /* ptscotch: HALO_TEST_PARTS_FILE, a test hook (cli-env.c) */
  int halo_precision, halo_precision_bwd; /* --dims: the exchange's precisions (halo-quant.h) */
  float halo_sample;       /* --dims --halo-sample: halo-train's boundary sampling (1: off) */
  uint64_t sample_seed;    /* --train-seed: halo-train's --seed, which keys the draw */
  int32_t sample_epochs;   /* --epochs: the epochs 1..N whose sampled bytes are predicted */
  int halo_stale;          /* --dims: for --halo-stale (the same bytes; the JSON says the mode) */
  int halo_aggregate; /* --dims: halo_aggregate_mode (model/halo-model-options.h) */
  int64_t clean_round;     /* ptscotch: HALO_TEST_CLEAN_ROUND, a test hook; 0: unset */
} halo_partition_run_request;

/* Wall and cpu (all threads, user + system) seconds per phase. */
enum {
  HALO_RUN_LOAD,
  HALO_RUN_CLEAN,
  HALO_RUN_PARTITION,
  HALO_RUN_WRITE,
  HALO_RUN_TOTAL,
  HALO_RUN_PHASES
};

/* What a run took: time per phase, and memory over its ranks (one rank
 * but for --method ptscotch). */
typedef struct halo_partition_timing {
  double wall[HALO_RUN_PHASES], cpu[HALO_RUN_PHASES];
  double wall_start, cpu_start, wall_mark, cpu_mark;
  int ranks;
  int64_t peak_rss_max, peak_rss_sum; /* bytes: the largest rank's peak, and the sum */
  int64_t block_edges_max; /* the most clean edges in one rank's block of rows (the graph's: one
                              rank) */
} halo_partition_timing;

/* Everything --dims derives. */
typedef struct halo_partition_prediction {
  int64_t epoch, epoch_static, setup, cagnet1d, broadcast1d;
  /* The set-up exchange with input dropout: GCN's, GraphSAGE's and
   * GIN-0's evaluation ÂX (halo_layer_desc.eval_cached), when halo-train's
   * input is dense; 0 for GAT. */
  int64_t setup_dropout;
  /* --halo-sample: epoch e's bytes (input dropout on) at [e - 1], for
   * rq->sample_epochs epochs; NULL otherwise (owned by the run) */
  int64_t *sampled;
  int64_t rows;        /* rows one exchange moves: comm_volume, or --halo-aggregate auto's covers */
  int64_t epoch_plain; /* per epoch with input dropout, every halo row as fp32 */
  halo_model_desc dropout, no_dropout; /* the model with and without input dropout */
} halo_partition_prediction;

/* The whole sequential run: outputs opened first, the input loaded and
 * checked, cleaned, partitioned (metis switches to scotch past its limit,
 * setting rq->metis_switched), the shards and manifest written into
 * DIR.tmp.<pid> and put into place with the JSON; the table on stdout
 * (stderr with --json -).  --write-metis writes the clean graph instead.
 * Fails with one line; leaves no output behind. Local. */
halo_status halo_partition_run(halo_partition_run_request *rq);

/* The same under mpirun with --method ptscotch: rank 0 opens the outputs
 * and publishes them, every rank takes part in halo_partition_dist_run
 * (halo-dpartition.h).  A failure on any rank stops every rank;
 * HALO_ERR_MPI and HALO_ERR_TIMEOUT leave comm untrusted (the caller
 * aborts).  Collective. */
halo_status halo_partition_run_distributed(halo_partition_run_request *rq, MPI_Comm comm);

/* --dims' prediction for the partition of s (rq->model, rq->dims). Local. */
halo_status halo_partition_predict(const halo_partition_run_request *rq,
                                   const halo_partition_stats *s, halo_partition_prediction *out);

/* The statistics as one JSON object, its members one per line
 * (docs/partition.md lists them); pr may be NULL (no --dims). Local. */
halo_status halo_partition_report_json(FILE *f, const halo_partition_run_request *rq,
                                       const halo_graph *g, const halo_clean_report *clean,
                                       const halo_partition_stats *s,
                                       const halo_partition_prediction *pr, uint64_t run_id,
                                       const halo_partition_timing *t);

/* The summary table, to `out`: stdout, or stderr when stdout carries the
 * JSON (--json -). Local. */
void halo_partition_report_table(FILE *out, const halo_partition_run_request *rq,
                                 const halo_graph *g, const halo_clean_report *clean,
                                 const halo_partition_stats *s, const halo_partition_prediction *pr,
                                 uint64_t run_id, const halo_partition_timing *t);

#endif /* HALO_PARTITION_RUN_H */
