/* halo-train --metric f1|auc (train-impl.h). */
#include "train-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "halo-mpi.h"

const char *halo_train_metric_name(halo_train_metric m) {
  return m == HALO_TRAIN_METRIC_F1 ? "f1" : m == HALO_TRAIN_METRIC_AUC ? "auc" : "acc";
}

/* counts[c·3 + 0, 1, 2] = TP, FP, FN of class c. */
double train_macro_f1(const int64_t *counts, int classes) {
  double sum = 0.0;
  int present = 0;
  for (int c = 0; c < classes; c++) {
    const int64_t tp = counts[3 * c], fp = counts[3 * c + 1], fn = counts[3 * c + 2];
    if (tp + fp + fn == 0) continue; /* neither a label nor a prediction */
    sum += 2.0 * (double)tp / (double)(2 * tp + fp + fn);
    present++;
  }
  return present ? sum / present : NAN;
}

typedef struct scored {
  float score;
  int8_t positive;
} scored;

static int by_score(const void *a, const void *b) {
  const float x = ((const scored *)a)->score, y = ((const scored *)b)->score;
  return (x > y) - (x < y);
}

/* Mann-Whitney: the positives' ranks (ties get their mean rank). */
double train_roc_auc(const float *score, const int8_t *positive, int64_t n) {
  scored *s = malloc((size_t)(n > 0 ? n : 1) * sizeof *s);
  int64_t pos = 0;
  double rank_sum = 0.0;
  if (!s) return NAN;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(score[i])) {
      free(s);
      return NAN;
    }
    s[i] = (scored){score[i], positive[i]};
    pos += positive[i] != 0;
  }
  qsort(s, (size_t)n, sizeof *s, by_score);
  for (int64_t i = 0; i < n;) {
    int64_t j = i, tied_pos = 0;
    while (j < n && s[j].score == s[i].score) tied_pos += s[j++].positive != 0;
    rank_sum += (double)tied_pos * 0.5 * (double)(i + 1 + j); /* mean of ranks i+1..j */
    i = j;
  }
  free(s);
  const int64_t neg = n - pos;
  if (pos == 0 || neg == 0) return NAN;
  return (rank_sum - 0.5 * (double)pos * (double)(pos + 1)) / ((double)pos * (double)neg);
}

/* Macro-F1 of the valid and test nodes: per-class counts summed over ranks. */
static halo_status f1_of(const train_predict *rows, const float *z, int classes, MPI_Comm comm,
                         double out[2]) {
  halo_status st = HALO_OK;
  int64_t *counts = NULL, *all = NULL;
  HALO_ALLOC(counts, 2 * 3 * classes, "the F1 counts");
  HALO_ALLOC(all, 2 * 3 * classes, "the F1 counts");
  for (int64_t i = 0; i < rows->n_owned; i++) {
    const int k = rows->split[i] - 1; /* valid 0, test 1 */
    const int32_t label = rows->label[i];
    if (k < 0 || k > 1 || label < 0 || label >= classes) continue;
    const float *zr = z + i * classes;
    int pred = 0;
    for (int j = 1; j < classes; j++)
      if (zr[j] > zr[pred]) pred = j;
    int64_t *c = counts + k * 3 * classes;
    if (pred == label) {
      c[3 * label]++;
    } else {
      c[3 * pred + 1]++;
      c[3 * label + 2]++;
    }
  }
  HALO_MPI(MPI_Allreduce(counts, all, 2 * 3 * classes, MPI_INT64_T, MPI_SUM, comm));
  for (int k = 0; k < 2; k++) out[k] = train_macro_f1(all + k * 3 * classes, classes);
done:
  free(counts);
  free(all);
  return st;
}

/* Macro-F1 over the tasks of a multi-label run: each task a binary problem
 * whose positive class is scored (logit > 0 predicts 1), missing entries
 * left out; counts summed over ranks. */
static halo_status f1_tasks_of(const train_predict *rows, const float *z, int tasks, MPI_Comm comm,
                               double out[2]) {
  halo_status st = HALO_OK;
  int64_t *counts = NULL, *all = NULL;
  HALO_ALLOC(counts, 2 * 3 * tasks, "the F1 counts");
  HALO_ALLOC(all, 2 * 3 * tasks, "the F1 counts");
  for (int64_t i = 0; i < rows->n_owned; i++) {
    const int k = rows->split[i] - 1; /* valid 0, test 1 */
    if (k < 0 || k > 1) continue;
    int64_t *c = counts + k * 3 * tasks;
    for (int t = 0; t < tasks; t++) {
      const int8_t y = rows->targets[i * tasks + t];
      if (y < 0) continue;
      const int pred = z[i * tasks + t] > 0.0f;
      c[3 * t] += pred && y;      /* TP */
      c[3 * t + 1] += pred && !y; /* FP */
      c[3 * t + 2] += !pred && y; /* FN */
    }
  }
  HALO_MPI(MPI_Allreduce(counts, all, 2 * 3 * tasks, MPI_INT64_T, MPI_SUM, comm));
  for (int k = 0; k < 2; k++) out[k] = train_macro_f1(all + k * 3 * tasks, tasks);
done:
  free(counts);
  free(all);
  return st;
}

/* Mean ROC-AUC over the tasks of a multi-label run, as OGB's evaluator
 * computes it for ogbn-proteins: the AUC of every task that has both a
 * positive and a negative labelled node in the split, averaged.  Task t is
 * scored on rank t % size, which receives that task's (score, label) pairs
 * from every rank (MPI_Alltoallv), so no rank holds the whole split.  Each
 * task's AUC lands in its own slot of a vector summed over the ranks (one
 * non-zero term a slot: exact), and the mean is taken in task order, so
 * the figure does not depend on P. */
static halo_status auc_tasks_of(const train_predict *rows, const float *z, int tasks, MPI_Comm comm,
                                double out[2]) {
  halo_status st = HALO_OK;
  int rank = 0, size = 1;
  int64_t *count = NULL, *counts = NULL;
  int *scount = NULL, *sdispl = NULL, *rcount = NULL, *rdispl = NULL;
  int64_t *cursor = NULL;
  float *score = NULL, *rscore = NULL;
  int8_t *positive = NULL, *rpositive = NULL;
  double *auc = NULL, *auc_all = NULL;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  HALO_ALLOC(count, tasks, "the AUC counts");
  HALO_ALLOC(counts, (int64_t)tasks * size, "the AUC counts");
  HALO_ALLOC(scount, size, "the AUC counts");
  HALO_ALLOC(sdispl, size, "the AUC counts");
  HALO_ALLOC(rcount, size, "the AUC counts");
  HALO_ALLOC(rdispl, size, "the AUC counts");
  HALO_ALLOC(cursor, size, "the AUC counts");
  HALO_ALLOC(auc, 2 * tasks, "the AUC of each task");
  HALO_ALLOC(auc_all, 2 * tasks, "the AUC of each task");
  for (int k = 0; k < 2; k++) {
    /* This rank's labelled entries of each task, then everyone's. */
    int64_t mine = 0;
    for (int t = 0; t < tasks; t++) count[t] = 0;
    for (int64_t i = 0; i < rows->n_owned; i++)
      for (int t = 0; rows->split[i] == k + 1 && t < tasks; t++)
        count[t] += rows->targets[i * tasks + t] >= 0;
    for (int t = 0; t < tasks; t++) mine += count[t];
    HALO_MPI(MPI_Allgather(count, tasks, MPI_INT64_T, counts, tasks, MPI_INT64_T, comm));
    int64_t send_total = 0, recv_total = 0;
    for (int q = 0; q < size; q++) {
      int64_t to_q = 0, from_q = 0;
      for (int t = q; t < tasks; t += size) to_q += count[t];
      for (int t = rank; t < tasks; t += size) from_q += counts[(int64_t)q * tasks + t];
      if (send_total + to_q > INT32_MAX || recv_total + from_q > INT32_MAX) st = HALO_ERR_LIMIT;
      scount[q] = (int)to_q;
      rcount[q] = (int)from_q;
      sdispl[q] = (int)send_total;
      rdispl[q] = (int)recv_total;
      send_total += to_q;
      recv_total += from_q;
    }
    if (st != HALO_OK)
      halo_log_error("--metric auc: more labelled tasks in one split than one MPI_Alltoallv takes");
    if (st == HALO_OK) {
      free(score);
      free(positive);
      free(rscore);
      free(rpositive);
      score = malloc((size_t)(mine + 1) * sizeof *score);
      positive = malloc((size_t)(mine + 1));
      rscore = malloc((size_t)(recv_total + 1) * sizeof *rscore);
      rpositive = malloc((size_t)(recv_total + 1));
      if (!score || !positive || !rscore || !rpositive) {
        halo_log_error("--metric auc: out of memory for %lld scores", (long long)recv_total);
        st = HALO_ERR_NOMEM;
      }
    }
    HALO_TRY(halo_mpi_agree(comm, st));
    /* Packed by owner rank, task by task, rows in order. */
    int64_t at = 0;
    for (int q = 0; q < size; q++)
      for (int t = q; t < tasks; t += size)
        for (int64_t i = 0; i < rows->n_owned; i++) {
          const int8_t y = rows->targets[i * tasks + t];
          if (rows->split[i] != k + 1 || y < 0) continue;
          score[at] = z[i * tasks + t];
          positive[at++] = y;
        }
    HALO_MPI(
        MPI_Alltoallv(score, scount, sdispl, MPI_FLOAT, rscore, rcount, rdispl, MPI_FLOAT, comm));
    HALO_MPI(MPI_Alltoallv(positive, scount, sdispl, MPI_INT8_T, rpositive, rcount, rdispl,
                           MPI_INT8_T, comm));
    /* Each owned task's pairs, gathered from every source's segment. */
    double *slot = auc + k * tasks;
    for (int t = 0; t < tasks; t++) slot[t] = 0.0;
    for (int q = 0; q < size; q++) cursor[q] = rdispl[q]; /* each source's next task */
    for (int t = rank; t < tasks; t += size) {
      int64_t n = 0;
      for (int q = 0; q < size; q++) n += counts[(int64_t)q * tasks + t];
      float *task_score = malloc((size_t)(n + 1) * sizeof *task_score);
      int8_t *task_pos = malloc((size_t)(n + 1));
      if (!task_score || !task_pos) {
        free(task_score);
        free(task_pos);
        st = HALO_ERR_NOMEM;
        break;
      }
      int64_t m = 0;
      for (int q = 0; q < size; q++) {
        const int64_t c = counts[(int64_t)q * tasks + t];
        memcpy(task_score + m, rscore + cursor[q], (size_t)c * sizeof *task_score);
        memcpy(task_pos + m, rpositive + cursor[q], (size_t)c);
        cursor[q] += c;
        m += c;
      }
      const double a = train_roc_auc(task_score, task_pos, n);
      slot[t] = a; /* NaN: the task lacks a class in this split */
      free(task_score);
      free(task_pos);
    }
    if (st != HALO_OK) halo_log_error("--metric auc: out of memory for one task's scores");
    HALO_TRY(halo_mpi_agree(comm, st));
  }
  /* A slot's one non-zero term is its owner's, NaN included (a task
   * without both classes), so the sum carries it exactly. */
  for (int t = 0; t < 2 * tasks; t++)
    if (t % tasks % size != rank) auc[t] = 0.0;
  HALO_MPI(MPI_Allreduce(auc, auc_all, 2 * tasks, MPI_DOUBLE, MPI_SUM, comm));
  for (int k = 0; k < 2; k++) {
    double sum = 0.0;
    int scored = 0;
    for (int t = 0; t < tasks; t++)
      if (!isnan(auc_all[k * tasks + t])) {
        sum += auc_all[k * tasks + t];
        scored++;
      }
    out[k] = scored ? sum / scored : NAN;
  }
done:
  free(count);
  free(counts);
  free(scount);
  free(sdispl);
  free(rcount);
  free(rdispl);
  free(cursor);
  free(score);
  free(positive);
  free(rscore);
  free(rpositive);
  free(auc);
  free(auc_all);
  return st;
}

/* ROC-AUC of the valid and test nodes: rank 0 gathers their scores. */
static halo_status auc_of(const train_predict *rows, const float *z, MPI_Comm comm, double out[2]) {
  halo_status st = HALO_OK;
  int rank = 0, size = 1;
  float *score = NULL, *all_score = NULL;
  int8_t *positive = NULL, *all_positive = NULL;
  int *counts = NULL, *offsets = NULL;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  HALO_ALLOC(score, rows->n_owned + 1, "the AUC scores");
  HALO_ALLOC(positive, rows->n_owned + 1, "the AUC labels");
  HALO_ALLOC(counts, size, "the AUC counts");
  HALO_ALLOC(offsets, size, "the AUC counts");
  for (int k = 0; k < 2; k++) {
    int n = 0;
    for (int64_t i = 0; i < rows->n_owned; i++)
      if (rows->split[i] == k + 1 && (rows->label[i] == 0 || rows->label[i] == 1)) {
        score[n] = z[2 * i + 1] - z[2 * i];
        positive[n++] = (int8_t)rows->label[i];
      }
    HALO_MPI(MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, comm));
    int64_t total = 0;
    if (rank == 0)
      for (int q = 0; q < size; q++) {
        offsets[q] = (int)total;
        total += counts[q];
      }
    if (rank == 0 && total > INT32_MAX) {
      halo_log_error("--metric auc: %lld nodes in one split, more than one MPI_Gatherv takes",
                     (long long)total);
      st = HALO_ERR_LIMIT;
    }
    HALO_TRY(halo_mpi_agree(comm, st));
    if (rank == 0) {
      free(all_score);
      free(all_positive);
      all_score = malloc((size_t)(total + 1) * sizeof *all_score);
      all_positive = malloc((size_t)(total + 1));
      if (!all_score || !all_positive) {
        halo_log_error("--metric auc: out of memory for %lld scores", (long long)total);
        st = HALO_ERR_NOMEM;
      }
    }
    HALO_TRY(halo_mpi_agree(comm, st));
    HALO_MPI(MPI_Gatherv(score, n, MPI_FLOAT, all_score, counts, offsets, MPI_FLOAT, 0, comm));
    HALO_MPI(
        MPI_Gatherv(positive, n, MPI_INT8_T, all_positive, counts, offsets, MPI_INT8_T, 0, comm));
    if (rank == 0) out[k] = train_roc_auc(all_score, all_positive, total);
  }
  HALO_MPI(MPI_Bcast(out, 2, MPI_DOUBLE, 0, comm));
done:
  free(score);
  free(positive);
  free(all_score);
  free(all_positive);
  free(counts);
  free(offsets);
  return st;
}

halo_status train_metric_eval(halo_train_metric m, const train_predict *rows, const halo_net *model,
                              MPI_Comm comm, double out[2]) {
  halo_status st = HALO_OK;
  halo_net_info info;
  float *z = NULL;
  halo_net_info_get(model, &info);
  const int classes = info.model.dims[info.model.layers];
  out[0] = out[1] = NAN;
  z = malloc((size_t)(rows->n_owned > 0 ? rows->n_owned : 1) * (size_t)classes * sizeof *z);
  st = z ? halo_net_logits_get(model, z) : HALO_ERR_NOMEM;
  if (!z) halo_log_error("out of memory for the logits of %lld rows", (long long)rows->n_owned);
  HALO_TRY(halo_mpi_agree(comm, st));
  if (rows->tasks > 0)
    st = m == HALO_TRAIN_METRIC_F1 ? f1_tasks_of(rows, z, classes, comm, out)
                                   : auc_tasks_of(rows, z, classes, comm, out);
  else
    st =
        m == HALO_TRAIN_METRIC_F1 ? f1_of(rows, z, classes, comm, out) : auc_of(rows, z, comm, out);
done:
  free(z);
  return st;
}
