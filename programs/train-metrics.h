/* halo-train --metric f1|auc (private to programs/): the figures users
 * compare with papers besides accuracy, on the valid and test nodes of
 * every rank, from the logits of the evaluation pass.
 *
 *   f1   macro-F1: the mean over classes of 2·TP / (2·TP + FP + FN), over
 *        the classes that occur among the split's labels or predictions
 *        (scikit-learn's f1_score(average="macro")).  Per-class counts are
 *        integers summed over the ranks, so the figure does not depend on P.
 *   auc  ROC-AUC of a binary task (2 classes): the probability that a
 *        positive node scores above a negative one, ties counting half
 *        (scikit-learn's roc_auc_score), with score z_1 - z_0 (the
 *        log-odds of class 1).  Rank 0 gathers the split's scores and
 *        labels (5 bytes a node), sorts them and broadcasts the figure.
 *        A split without both classes has no AUC: NaN (null in JSON).
 *
 * In a multi-label run (ogbn-proteins' kind) each task is a binary problem:
 *   f1   the mean over tasks of the positive class's F1 (logit > 0
 *        predicts 1; scikit-learn's f1_score(average="macro") on the
 *        indicator matrix), over tasks with a positive label or prediction;
 *   auc  the mean over tasks of each task's ROC-AUC, over the tasks with
 *        both classes among the split's labelled entries (OGB's evaluator
 *        for ogbn-proteins); task t is scored on rank t % P.
 *   Missing entries (-1) count in neither.
 *
 * The per-node labels and splits come from train_predict (train-predict.h),
 * which holds them for --predict too.
 */
#ifndef HALO_TRAIN_METRICS_H
#define HALO_TRAIN_METRICS_H

#include <mpi.h>

#include "halo-net.h"
#include "halo-status.h"
#include "train-predict.h"

typedef enum { TRAIN_METRIC_ACC, TRAIN_METRIC_F1, TRAIN_METRIC_AUC } train_metric;

/* "acc", "f1", "auc". Local. */
const char *train_metric_name(train_metric m);

/* The figure `m` (f1 or auc) of the valid (out[0]) and test (out[1]) nodes
 * of every rank, from `model`'s last forward pass: the same on every rank.
 * Collective. */
halo_status train_metric_eval(train_metric m, const train_predict *rows, const halo_net *model,
                              MPI_Comm comm, double out[2]);

/* The figures on host arrays of one "rank": for the unit test, which
 * checks them against a direct computation. Local. */
double train_macro_f1(const int64_t *counts, int classes);
double train_roc_auc(const float *score, const int8_t *positive, int64_t n);

#endif /* HALO_TRAIN_METRICS_H */
