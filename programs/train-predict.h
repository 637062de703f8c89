/* halo-train --predict FILE.h5 (private to programs/): every node's logits,
 * predicted class and split, in one HDF5 file that h5py and h5dump read.
 *
 * The file holds, for N nodes in rows grouped by part (part 0's owned rows
 * first, each part in its shard's row order; /global_id names the node of
 * each row, so `np.argsort(f["global_id"])` puts them in node order):
 *   /global_id  int64 [N]
 *   /logits     float32 [N, classes]: the last layer's output, before softmax
 *   /pred       int32 [N]: the argmax of the row (the lowest column on ties);
 *               multi-label: int8 [N, tasks], 1 where the task's logit > 0
 *   /label      int32 [N]: the node's label, -1 when it has none;
 *               multi-label: int8 [N, tasks], 1, 0 or -1 (missing)
 *   /split      int8 [N]: 0 train, 1 valid, 2 test, -1 none
 *   /original_id int64 [N]: the node's id in the input file, only when the
 *               loader renumbered it (a SNAP edge list's ids)
 * and the root attributes epoch (the parameters' epoch), classes, nodes,
 * multilabel (1, only in a multi-label run), model and params_sha256 (of those parameters).  Each dataset is chunked
 * and Fletcher-32 checksummed, as the shards are.
 *
 * Every rank computes its own rows; rank 0 gathers them part by part (never
 * more than one block of a peer's rows, 2^22 logits with their ids, labels
 * and splits, at a time besides its own) and writes
 * FILE.h5.tmp, flushes it and renames it, so the file appears only whole.
 * docs/train.md ("Predictions") describes it for users.
 */
#ifndef HALO_TRAIN_PREDICT_H
#define HALO_TRAIN_PREDICT_H

#include <mpi.h>
#include <stdint.h>

#include "halo-net.h"
#include "halo-shard.h"
#include "halo-status.h"

/* What the file needs of a part beyond the model, copied from the shard
 * before halo-train frees it. */
typedef struct train_predict {
  int64_t n_owned;
  int64_t *global_id;   /* owned rows' global ids */
  int32_t *label;       /* -1: none */
  int32_t tasks;        /* multi-label: tasks a node; 0 when single-label */
  int8_t *targets;      /* multi-label: n_owned × tasks, 1, 0 or -1 (missing) */
  int8_t *split;        /* 0 train, 1 valid, 2 test, -1 none */
  int64_t *original_id; /* the input's ids (SNAP's); NULL when it kept 0..n-1 */
} train_predict;

/* Copies the shard's owned ids, labels and splits. Local. */
halo_status train_predict_init(train_predict *p, const halo_shard *s);

/* Frees the copies; accepts a zeroed struct. Local. */
void train_predict_free(train_predict *p);

/* Writes PATH as above from `model`'s last forward pass, which the caller
 * ran with the parameters of epoch `epoch` (halo_net_evaluate); `model_name` and `params_sha256`
 * become attributes.  Every rank returns the same status. Collective. */
halo_status train_predict_write(const train_predict *p, halo_net *model, MPI_Comm comm,
                                const char *path, int64_t epoch, const char *model_name,
                                const char *params_sha256);

#endif /* HALO_TRAIN_PREDICT_H */
