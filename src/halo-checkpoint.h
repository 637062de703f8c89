/* Training checkpoints: one HDF5 file per save, holding global state only
 * (weights, Adam moments and step, epoch, seed, model settings and the
 * identity of the graph), so that a run resumes at any P and on any
 * partition of the same graph.
 *
 * DIR/ckpt-EEEEEEEE.h5 holds the state after epoch E.  A save writes
 * DIR/ckpt-EEEEEEEE.h5.tmp, flushes it to disk and renames it into place, so
 * a crash during a save never damages an earlier checkpoint; then it removes
 * all but the newest `keep`.  Every dataset carries a Fletcher-32 checksum.
 *
 * The graph is identified by the partition's source digest and its node,
 * edge, feature and class counts, never by the partition run id: the same
 * graph partitioned again (another P, another method) is the same graph.
 *
 * These calls are local; the trainer has rank 0 call them and broadcasts.
 */
#ifndef HALO_CHECKPOINT_H
#define HALO_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "halo-net.h"
#include "halo-schedule.h"
#include "halo-shard.h"
#include "halo-status.h"

/* 2: every tensor named, /model/layerL/NAME (and the optimiser's state
 * under /optimizer: Adam's moments adam_m and adam_v, or SGD's
 * sgd_momentum); 1: flat /params, /adam_m, /adam_v (still read).
 * docs/train.md ("Checkpoints") gives the layout. */
#define HALO_CHECKPOINT_FORMAT_VERSION 2

typedef struct halo_checkpoint {
  int64_t epoch;        /* training epochs completed */
  int64_t adam_t;       /* optimiser steps taken (Adam's t) */
  float lr;             /* the learning rate of the last epoch trained (reported) */
  halo_plateau plateau; /* --lr-schedule plateau's state (absent in a file: its start) */
  char model[8];        /* "gcn" */
  halo_net_options gcn; /* model and optimiser settings, seed included */
  /* The graph. */
  uint64_t source_digest;
  int64_t nodes, edges;
  int32_t features, classes;
  /* The partition it was written from (reported, never compared). */
  int32_t parts;
  uint64_t run_id;
  /* 1: trained with the parts' edge weights (a weighted graph without
   * --no-edge-weights), written as the attribute edge_weighted only then,
   * so that an unweighted checkpoint is what it was; scripts/halo-to-torch
   * reads it.  Reported, never compared (the graph's digest covers the
   * weights). */
  int32_t edge_weighted;
  /* Parameters as halo_net_params_get lays them out, and the optimiser's
   * state as halo_net_adam_get's (SGD: its momentum buffer in adam_m, and
   * adam_v zero, not written). */
  int64_t nparams;
  float *params, *adam_m, *adam_v;
  /* --norm batch: BatchNorm's running statistics, as
   * halo_net_bn_running_get lays them out (nrunning floats: the model
   * description's `running`), or nrunning 0 and NULL.  Stored as
   * /bn_running/layerL/{mean,var} (and {mean_1,var_1} for GIN's MLP); a
   * checkpoint of a model without BatchNorm has none. */
  int64_t nrunning;
  float *bn_running;
} halo_checkpoint;

/* Allocates the arrays for `nparams` parameters and `nrunning` running
 * statistics (zeroed; none for 0). Local. */
halo_status halo_checkpoint_alloc(halo_checkpoint *c, int64_t nparams, int64_t nrunning);

/* Frees the arrays; the struct may then be reused. Local. */
void halo_checkpoint_clear(halo_checkpoint *c);

/* Writes the checkpoint file PATH (replacing one of that name) through
 * PATH.tmp, a flush and a rename. Local. */
halo_status halo_checkpoint_write(const char *path, const halo_checkpoint *c);

/* Writes DIR/ckpt-EEEEEEEE.h5 for c->epoch (creating DIR when missing, and
 * replacing a checkpoint of the same epoch), then removes the older
 * checkpoints beyond the newest `keep`.  The written path goes to `path`
 * when it is not NULL. Local. */
halo_status halo_checkpoint_save(const char *dir, const halo_checkpoint *c, int keep, char *path,
                                 size_t path_size);

/* The epoch of DIR's newest checkpoint file (valid or not) into *epoch, or
 * -1 when DIR is missing or holds none.  A run that does not resume wants
 * -1: keeping the newest few would otherwise delete its saves in favour of
 * an old run's later epochs.  Fails with HALO_ERR_IO and one line when DIR
 * exists but cannot be listed. Local. */
halo_status halo_checkpoint_newest(const char *dir, int64_t *epoch);

/* Reads one checkpoint file into *c (arrays allocated here; clear them with
 * halo_checkpoint_clear).  A missing, truncated or damaged file, or one
 * whose checksums do not match, fails with one line naming it. Local. */
halo_status halo_checkpoint_read(const char *path, halo_checkpoint *c);

/* Reads the newest checkpoint of DIR that reads cleanly.  Damaged ones are
 * skipped, each with one warning line.  Fails with HALO_ERR_IO and one line
 * when DIR holds no valid checkpoint.  Its path goes to `path`. Local. */
halo_status halo_checkpoint_latest(const char *dir, halo_checkpoint *c, char *path,
                                   size_t path_size);

/* Renames every checkpoint of DIR newer than `epoch` (the one a resume
 * chose, so all of them are damaged) to NAME.damaged (NAME.damaged.K when
 * that exists), with one warning each: they stay for inspection, but no
 * longer count among the checkpoints kept nor push the new run's saves
 * out.  A rename that fails is a warning too. Local. */
halo_status halo_checkpoint_set_aside_newer(const char *dir, int64_t epoch);

/* Checks that checkpoint `c` (read from `path`) belongs to the graph of
 * manifest `m` and to the model `model`/`o`: same graph identity, same
 * architecture (layers, hidden width, feature normalisation).  Fails with
 * HALO_ERR_MISMATCH and one line that says what differs.  Optimiser
 * settings and the seed may differ; each difference gets a warning and the
 * new value applies. Local. */
halo_status halo_checkpoint_match(const halo_checkpoint *c, const char *path,
                                  const halo_manifest *m, const char *model,
                                  const halo_net_options *o);

#endif /* HALO_CHECKPOINT_H */
