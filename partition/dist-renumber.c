/* The distributed partitioner's blocks of rows and ids (dist-impl.h): the
 * blocks cut to about equal load, an edge list's ids renumbered to
 * 0..n-1 over all ranks, and rows scattered to their blocks. */
#include "dist-impl.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- blocks of rows --------------------------------------------------- */

/* The histogram behind the blocks has ROW_BUCKETS_A_RANK buckets of
 * consecutive ids a rank, ROW_BUCKETS_MAX at most (8 MB summed on every
 * rank), and a node weighs ROW_NODE_LOAD edge ends besides its own (its ids,
 * part, degree and node data: about a quarter of what 21 edges cost on the
 * benchmark's SBM). */
enum { ROW_BUCKETS_A_RANK = 1024, ROW_BUCKETS_MAX = 1 << 20, ROW_NODE_LOAD = 4 };

/* The blocks of rows, d->begins[0..K]: consecutive node ids cut to about
 * equal load, a node's load being its edge ends in the input (before the
 * clean-up) + ROW_NODE_LOAD.  Blocks of n/K ids put a graph whose degrees
 * fall with the id on one rank (R-MAT at K = 8: rank 0 held 42% of the
 * edges, and peaked at 0.92x the memory of K = 1).  Each rank counts the
 * load of its slice's pairs in buckets of ids, the buckets are summed over
 * the ranks, and every rank cuts them alike: node v goes to rank
 * floor(K x (the load of the buckets before v's) / (the total)), so no rank
 * is over its share by more than a bucket.  Collective (agreed). */
halo_status halo__dist_row_blocks(dist *d) {
  halo_status st = HALO_OK;
  const int K = d->size;
  const int64_t n = d->slice.nodes;
  int64_t buckets = (int64_t)ROW_BUCKETS_A_RANK * K;
  if (buckets > ROW_BUCKETS_MAX) buckets = ROW_BUCKETS_MAX;
  if (buckets > n) buckets = n;
  int64_t *load = NULL;
  phase_begin(d);
  d->begins = calloc((size_t)K + 1, sizeof *d->begins);
  load = calloc((size_t)(buckets > 0 ? buckets : 1), sizeof *load);
  if (!d->begins || !load) {
    halo_log_error("out of memory allocating the blocks of rows");
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  if (buckets == 0) goto done; /* no nodes: check_input refuses the input */
#define BUCKET_OF(v) ((int64_t)((__int128)(v)*buckets / n))
#define BUCKET_FIRST(b) ((int64_t)(((__int128)(b)*n + buckets - 1) / buckets))
  for (int64_t i = 0; i < d->slice.count; i++) {
    const int64_t u = d->slice.pair[2 * i], v = d->slice.pair[2 * i + 1];
    if (u == v || u < 0 || v < 0 || u >= n || v >= n) continue; /* clean_check names them */
    load[BUCKET_OF(u)]++;
    load[BUCKET_OF(v)]++;
  }
  HALO_MPI(MPI_Allreduce(MPI_IN_PLACE, load, (int)buckets, MPI_INT64_T, MPI_SUM, d->comm));
  int64_t total = 0;
  for (int64_t b = 0; b < buckets; b++) {
    load[b] += ROW_NODE_LOAD * (BUCKET_FIRST(b + 1) - BUCKET_FIRST(b));
    total += load[b];
  }
  halo_partition_cut_by_load(load, buckets, 0, total, K, d->begins);
  for (int q = 0; q <= K; q++)
    d->begins[q] = d->begins[q] == INT64_MAX ? n : BUCKET_FIRST(d->begins[q]);
#undef BUCKET_OF
#undef BUCKET_FIRST
done:
  free(load);
  return st;
}

/* ---- renumbering an edge list's ids ----------------------------------- */

/* Sorted distinct ids of the slice's pairs. Local. */
static halo_status slice_ids(const dist *d, int64_t **out, int64_t *count, int64_t *max_id) {
  halo_status st = HALO_OK;
  int64_t *ids = NULL, n = 0;
  const int64_t items = 2 * d->slice.count;
  *max_id = -1;
  HALO_ALLOC(ids, items, "node ids");
  memcpy(ids, d->slice.pair, (size_t)items * sizeof *ids);
  qsort(ids, (size_t)items, sizeof *ids, halo_compare_i64);
  for (int64_t i = 0; i < items; i++)
    if (n == 0 || ids[i] != ids[n - 1]) ids[n++] = ids[i];
  if (n > 0) *max_id = ids[n - 1];
  *out = ids;
  *count = n;
done:
  return st;
}

/* The file's ids become 0..n-1 in ascending order, as halo_load numbers
 * them: rank k collects the distinct ids of the k-th of K equal ranges of
 * values, numbers them from the count of the lower ranges, and answers each
 * rank's ids; when the ids were not 0..n-1 already, each rank then gets the
 * file ids of its block of rows (d->original).  Collective (agreed). */
halo_status halo__dist_renumber(dist *d) {
  halo_status st = HALO_OK;
  const int K = d->size;
  int64_t *mine = NULL, *got = NULL, *range = NULL, *answer = NULL, *number = NULL;
  int64_t *counts = NULL, *back_counts = NULL, mine_count = 0, local_max = -1, max_id = -1;
  int64_t range_count = 0, base = 0, n = 0, total_pairs = 0;
  xfer x = {0}, back = {0};

  phase_begin(d);
  counts = calloc((size_t)K, sizeof *counts);
  back_counts = calloc((size_t)K, sizeof *back_counts);
  st = counts && back_counts ? slice_ids(d, &mine, &mine_count, &local_max) : HALO_ERR_NOMEM;
  if (!counts || !back_counts) halo_log_error("out of memory allocating exchange counts");
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Allreduce(&local_max, &max_id, 1, MPI_INT64_T, MPI_MAX, d->comm));
  HALO_MPI(MPI_Allreduce(&d->slice.count, &total_pairs, 1, MPI_INT64_T, MPI_SUM, d->comm));
  phase_begin(d);
  if (total_pairs == 0) {
    halo_log_error(
        "%s: holds no edges, and hence no nodes (an edge list names its nodes only "
        "through its edges; for a graph without edges give a Matrix Market file 'N N "
        "0')",
        d->slice.source);
    st = HALO_ERR_PARSE;
  }
  HALO_TRY(phase_end(d, st));

  /* Every distinct id to the owner of its range of values, ranges of `span`
   * values each: unsigned, so that an id of INT64_MAX does not overflow
   * (max_id + 1 would), and monotonic, so that ranks' ranges are in id
   * order and the numbering below is the ids' rank among all. */
  const uint64_t span = (uint64_t)max_id / (uint64_t)K + 1;
  for (int64_t i = 0; i < mine_count; i++) counts[(uint64_t)mine[i] / span]++;
  HALO_TRY(halo__dist_xfer_plan(d, counts, "renumbering the ids", &x));
  phase_begin(d);
  got = malloc((size_t)(x.received > 0 ? x.received : 1) * sizeof *got);
  range = malloc((size_t)(x.received > 0 ? x.received : 1) * sizeof *range);
  answer = malloc((size_t)(x.received > 0 ? x.received : 1) * sizeof *answer);
  number = malloc((size_t)(mine_count > 0 ? mine_count : 1) * sizeof *number);
  if (!got || !range || !answer || !number) {
    halo_log_error("%s: out of memory renumbering the ids", d->slice.source);
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Alltoallv(mine, x.scount, x.sdispl, MPI_INT64_T, got, x.rcount, x.rdispl, MPI_INT64_T, d->comm));
  memcpy(range, got, (size_t)x.received * sizeof *range);
  qsort(range, (size_t)x.received, sizeof *range, halo_compare_i64);
  for (int64_t i = 0; i < x.received; i++)
    if (range_count == 0 || range[i] != range[range_count - 1]) range[range_count++] = range[i];
  HALO_MPI(MPI_Exscan(&range_count, &base, 1, MPI_INT64_T, MPI_SUM, d->comm));
  if (d->rank == 0) base = 0;
  HALO_MPI(MPI_Allreduce(&range_count, &n, 1, MPI_INT64_T, MPI_SUM, d->comm));
  for (int64_t i = 0; i < x.received; i++)
    answer[i] = base + halo_lower_bound(range, range_count, got[i]);
  HALO_MPI(
      MPI_Alltoallv(answer, x.rcount, x.rdispl, MPI_INT64_T, number, x.scount, x.sdispl, MPI_INT64_T, d->comm));
  int64_t *pair = d->slice.pair;
  for (int64_t i = 0; i < 2 * d->slice.count; i++)
    pair[i] = number[halo_lower_bound(mine, mine_count, pair[i])];
  d->slice.nodes = n;
  d->slice.renumber = 0;

  phase_begin(d);
  if (n > ((int64_t)1 << 32)) {
    halo_log_error("%s: %" PRId64 " distinct ids exceed the loaders' limit of 2^32 nodes",
                   d->slice.source, n);
    st = HALO_ERR_LIMIT;
  }
  HALO_TRY(phase_end(d, st));
  HALO_TRY(halo__dist_row_blocks(d));
  if (max_id == n - 1) goto done; /* the ids were 0..n-1: kept, no original ids */

  /* The file ids of each rank's block of rows: rank k holds new ids
   * [base, base + range_count), ranks' blocks are [begin_r, begin_r+1). */
  for (int r = 0; r < K; r++) {
    const int64_t lo = d->begins[r], hi = d->begins[r + 1];
    const int64_t a = lo > base ? lo : base, b = hi < base + range_count ? hi : base + range_count;
    back_counts[r] = b > a ? b - a : 0;
  }
  HALO_TRY(halo__dist_xfer_plan(d, back_counts, "renumbering the ids", &back));
  phase_begin(d);
  d->original = malloc((size_t)(back.received > 0 ? back.received : 1) * sizeof *d->original);
  if (!d->original) {
    halo_log_error("%s: out of memory allocating the original ids", d->slice.source);
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  /* The overlaps are consecutive runs of `range`, in rank order, the first
   * at its start: xfer_plan's running displacements are where they begin. */
  HALO_MPI(MPI_Alltoallv(range, back.scount, back.sdispl, MPI_INT64_T, d->original, back.rcount, back.rdispl,
                         MPI_INT64_T, d->comm));
done:
  halo__dist_xfer_free(&back);
  halo__dist_xfer_free(&x);
  free(number);
  free(answer);
  free(range);
  free(got);
  free(mine);
  free(back_counts);
  free(counts);
  return st;
}

/* ---- node data from files -------------------------------------------- */

/* Rows [first, first + rows) of `width` items of `type` to the ranks whose
 * blocks of node ids hold them, into *out (this rank's block, in order).
 * Collective (agreed). */
halo_status halo__dist_to_blocks(dist *d, int64_t first, int64_t rows, const void *data, int width,
                                 MPI_Datatype type, size_t item, void **out) {
  halo_status st = HALO_OK;
  const int K = d->size;
  int64_t *counts = calloc((size_t)K, sizeof *counts);
  MPI_Datatype row = MPI_DATATYPE_NULL;
  xfer x = {0};
  *out = NULL;
  phase_begin(d);
  if (!counts) {
    halo_log_error("out of memory allocating exchange counts");
    st = HALO_ERR_NOMEM;
  }
  for (int r = 0; st == HALO_OK && r < K; r++) {
    const int64_t lo = d->begins[r], hi = d->begins[r + 1];
    const int64_t a = lo > first ? lo : first, b = hi < first + rows ? hi : first + rows;
    counts[r] = b > a ? b - a : 0;
  }
  HALO_TRY(phase_end(d, st));
  HALO_TRY(halo__dist_xfer_plan(d, counts, "routing the node data", &x));
  phase_begin(d);
  *out = malloc((size_t)(x.received > 0 ? x.received : 1) * (size_t)width * item);
  if (!*out) {
    halo_log_error("out of memory allocating the block's node data");
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Type_contiguous(width, type, &row));
  HALO_MPI(MPI_Type_commit(&row));
  /* The overlaps are consecutive runs of the rows, in rank order. */
  HALO_MPI(MPI_Alltoallv(data, x.scount, x.sdispl, row, *out, x.rcount, x.rdispl, row, d->comm));
done:
  if (st != HALO_OK) {
    free(*out);
    *out = NULL;
  }
  if (row != MPI_DATATYPE_NULL) MPI_Type_free(&row);
  halo__dist_xfer_free(&x);
  free(counts);
  return st;
}

/* The CSR rows of a (rows [first, first + a->rows), indptr from 0) to the
 * ranks whose blocks of node ids hold them, into *out (this rank's block,
 * in order, indptr from 0; arrays malloc'd, halo_csr_free): each row's
 * non-zero count first, then the columns and the values of the runs, so
 * that no row is ever held dense.  Collective (agreed). */
halo_status halo__dist_csr_to_blocks(dist *d, int64_t first, const halo_csr *a, halo_csr *out) {
  halo_status st = HALO_OK;
  const int K = d->size;
  int64_t *counts = calloc((size_t)K, sizeof *counts);
  int64_t *entries = calloc((size_t)K, sizeof *entries);
  int64_t *row_nnz = NULL, *got_nnz = NULL;
  xfer x = {0}, y = {0};
  *out = (halo_csr){.cols = a->cols};
  phase_begin(d);
  if (!counts || !entries) {
    halo_log_error("out of memory allocating exchange counts");
    st = HALO_ERR_NOMEM;
  }
  for (int r = 0; st == HALO_OK && r < K; r++) {
    const int64_t lo = d->begins[r], hi = d->begins[r + 1];
    const int64_t lo_row = lo > first ? lo : first;
    const int64_t hi_row = hi < first + a->rows ? hi : first + a->rows;
    counts[r] = hi_row > lo_row ? hi_row - lo_row : 0;
    entries[r] =
        hi_row > lo_row ? a->indptr[hi_row - first] - a->indptr[lo_row - first] : 0;
  }
  HALO_TRY(phase_end(d, st));
  HALO_TRY(halo__dist_xfer_plan(d, counts, "routing the node data", &x));
  HALO_TRY(halo__dist_xfer_plan(d, entries, "routing the node data", &y));
  phase_begin(d);
  st = halo__dist_admit(d->slice.source, "receiving its feature rows",
                        8.0 * (double)(a->rows + 2 * x.received) + 8.0 * (double)y.received);
  if (st == HALO_OK) {
    row_nnz = malloc((size_t)(a->rows > 0 ? a->rows : 1) * sizeof *row_nnz);
    got_nnz = malloc((size_t)(x.received > 0 ? x.received : 1) * sizeof *got_nnz);
    out->indptr = malloc((size_t)(x.received + 1) * sizeof *out->indptr);
    out->indices = malloc((size_t)(y.received > 0 ? y.received : 1) * sizeof *out->indices);
    out->values = malloc((size_t)(y.received > 0 ? y.received : 1) * sizeof *out->values);
    if (!row_nnz || !got_nnz || !out->indptr || !out->indices || !out->values) {
      halo_log_error("out of memory allocating the block's feature rows");
      st = HALO_ERR_NOMEM;
    }
  }
  HALO_TRY(phase_end(d, st));
  for (int64_t r = 0; r < a->rows; r++) row_nnz[r] = a->indptr[r + 1] - a->indptr[r];
  /* The overlaps are consecutive runs of the rows, and of their entries,
   * in rank order. */
  HALO_MPI(MPI_Alltoallv(row_nnz, x.scount, x.sdispl, MPI_INT64_T, got_nnz, x.rcount, x.rdispl,
                         MPI_INT64_T, d->comm));
  HALO_MPI(MPI_Alltoallv(a->indices, y.scount, y.sdispl, MPI_INT32_T, out->indices, y.rcount,
                         y.rdispl, MPI_INT32_T, d->comm));
  HALO_MPI(MPI_Alltoallv(a->values, y.scount, y.sdispl, MPI_FLOAT, out->values, y.rcount,
                         y.rdispl, MPI_FLOAT, d->comm));
  out->rows = x.received;
  out->nnz = y.received;
  out->indptr[0] = 0;
  for (int64_t r = 0; r < x.received; r++) out->indptr[r + 1] = out->indptr[r] + got_nnz[r];
done:
  if (st != HALO_OK) halo_csr_free(out);
  halo__dist_xfer_free(&y);
  halo__dist_xfer_free(&x);
  free(got_nnz);
  free(row_nnz);
  free(entries);
  free(counts);
  return st;
}
