/* The distributed partitioner's writers (dist-impl.h): a part's shard, the
 * manifest from every rank's columns, and --write-metis's file written by
 * every rank at its offset. */
#include "dist-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The part's rows, from the records every rank sent, ascending in id (rank
 * order is id order), and their node data. */
typedef struct part_rows {
  halo_part_rows rows;
  int64_t *id, *indptr, *nbr, *nbr_degree, *original_id;
  int32_t *nbr_part, *labels;
  int8_t *targets;
  float *x;
  int64_t *x_indptr; /* CSR features (carried CSR, written CSR): size rows + 1 */
  int32_t *x_indices;
  float *x_values;
  uint8_t *split;
} part_rows;

static void part_rows_free(part_rows *p) {
  free(p->original_id);
  free(p->id);
  free(p->indptr);
  free(p->nbr);
  free(p->nbr_degree);
  free(p->nbr_part);
  free(p->labels);
  free(p->targets);
  free(p->x);
  free(p->x_indptr);
  free(p->x_indices);
  free(p->x_values);
  free(p->split);
  *p = (part_rows){0};
}

/* The items of the record at rec, up to the next one's (or padding). */
static int64_t record_end(const dist *d, const int64_t *rec) {
  const int64_t tail = d->x_sparse ? record_csr_items(rec[record_x_at(d)]) : 0;
  return record_head(d) + 3 * rec[2] + tail;
}

/* Row r's nz carried non-zeros (columns, then values, at tail) into out's
 * CSR rows, or into its dense row r of F. */
static void unpack_csr_row(const int64_t *tail, int64_t nz, int64_t F, int64_t r,
                           part_rows *out) {
  const char *cols = (const char *)tail, *vals = (const char *)(tail + (nz + 1) / 2);
  if (out->x_indptr) {
    const int64_t at = out->x_indptr[r];
    memcpy(out->x_indices + at, cols, (size_t)nz * sizeof *out->x_indices);
    memcpy(out->x_values + at, vals, (size_t)nz * sizeof *out->x_values);
    out->x_indptr[r + 1] = at + nz;
    return;
  }
  for (int64_t k = 0; k < nz; k++) {
    int32_t col;
    memcpy(&col, cols + k * (int64_t)sizeof col, sizeof col);
    memcpy(out->x + r * F + col, vals + k * (int64_t)sizeof(float), sizeof(float));
  }
}

/* Unpacks `items` record items of part p and draws the rows' node data. Local. */
static halo_status unpack_rows(const dist *d, int32_t p, const int64_t *rec, int64_t items,
                               part_rows *out) {
  halo_status st = HALO_OK;
  int64_t rows = 0, nnz = 0, x_nnz = 0;
  const int64_t head = record_head(d), x_at = record_x_at(d), tasks_at = x_at - target_items(d);
  for (int64_t i = next_record(rec, 0, items); i < items;
       i = next_record(rec, i + record_end(d, rec + i), items)) {
    rows++;
    nnz += rec[i + 2];
    if (d->x_sparse) x_nnz += rec[i + x_at];
  }
  const int64_t F = d->has_synth ? d->synth.features : d->file_features;
  /* CSR rows stay CSR when the shard stores CSR: never a dense part. */
  const int csr = d->x_sparse && d->features_csr;
  const double x_bytes = csr ? 8.0 * (double)rows + 8.0 * (double)x_nnz : 4.0 * (double)F * rows;
  HALO_TRY(halo__dist_admit(
      d->slice.source, "writing a part",
      (double)rows * (8.0 * 3 + 5.0 + (double)d->file_classes) + x_bytes + 20.0 * (double)nnz));
  HALO_ALLOC(out->id, rows, "part rows");
  HALO_ALLOC(out->indptr, rows + 1, "part rows");
  HALO_ALLOC(out->nbr, nnz, "part rows");
  HALO_ALLOC(out->nbr_part, nnz, "part rows");
  HALO_ALLOC(out->nbr_degree, nnz, "part rows");
  if (d->original) HALO_ALLOC(out->original_id, rows, "original ids");
  if (csr) {
    HALO_ALLOC(out->x_indptr, rows + 1, "node features (CSR)");
    HALO_ALLOC(out->x_indices, x_nnz, "node features (CSR)");
    HALO_ALLOC(out->x_values, x_nnz, "node features (CSR)");
  } else if (d->file_features > 0) {
    HALO_ALLOC(out->x, rows * F, "node features");
  }
  if (d->has_file_labels) HALO_ALLOC(out->labels, rows, "node labels");
  if (d->split) HALO_ALLOC(out->split, rows, "node split");
  if (d->file_multilabel) HALO_ALLOC(out->targets, rows * d->file_classes, "node labels");
  for (int64_t i = next_record(rec, 0, items), r = 0, k = 0; i < items; r++) {
    const int64_t degree = rec[i + 2];
    out->id[r] = rec[i];
    if (out->original_id) out->original_id[r] = rec[i + 1];
    if (out->labels) out->labels[r] = (int32_t)rec[i + 3];
    if (out->split) out->split[r] = (uint8_t)rec[i + 3 + d->has_file_labels];
    if (out->targets)
      memcpy(out->targets + r * d->file_classes, rec + i + tasks_at, (size_t)d->file_classes);
    if (d->x_sparse) {
      unpack_csr_row(rec + i + head + 3 * degree, rec[i + x_at], F, r, out);
    } else if (out->x) {
      memcpy(out->x + r * F, rec + i + x_at, (size_t)F * sizeof *out->x);
    }
    out->indptr[r + 1] = out->indptr[r] + degree;
    for (int64_t j = 0; j < degree; j++, k++) {
      const int64_t *nb = rec + i + head + 3 * j;
      out->nbr[k] = nb[0];
      out->nbr_part[k] = (int32_t)nb[1];
      out->nbr_degree[k] = nb[2];
    }
    i = next_record(rec, i + record_end(d, rec + i), items);
  }
  if (d->has_synth) {
    /* --split DIR replaces the drawn split, as a sequential run's. */
    uint8_t *drawn = NULL;
    /* CSR parts draw their rows' non-zeros only, as the sequential
     * generator does (a bag of words: sbm's feat-density). */
    const int drawn_csr = F > 0 && d->features_csr;
    if (drawn_csr)
      HALO_TRY(halo_node_synth_rows_csr(&d->synth, out->id, rows, &out->x_indptr,
                                        &out->x_indices, &out->x_values));
    else if (F > 0)
      HALO_ALLOC(out->x, rows * F, "node features");
    HALO_ALLOC(out->labels, rows, "node labels");
    HALO_ALLOC(drawn, rows, "node split");
    st = halo_node_synth_rows(&d->synth, out->id, rows, out->x, out->labels, drawn);
    if (out->split)
      free(drawn);
    else
      out->split = drawn;
    HALO_TRY(st);
  }
  if (d->rq->synth_split) {
    if (!out->split) HALO_ALLOC(out->split, rows, "node split");
    /* As halo_graph_synthesize_split: every node of an unlabelled graph,
     * else the labelled ones. */
    for (int64_t r = 0; r < rows; r++) {
      int labelled = out->labels ? out->labels[r] >= 0 : 1;
      if (out->targets) { /* a multi-label row is labelled when a task is */
        labelled = 0;
        for (int32_t t = 0; t < d->file_classes; t++)
          labelled |= out->targets[r * d->file_classes + t] >= 0;
      }
      out->split[r] =
          labelled ? halo_split_draw(d->rq->synth_split, (uint64_t)d->rq->opt.seed, out->id[r])
                   : HALO_SPLIT_NONE;
    }
  }
  out->rows = (halo_part_rows){.part = p,
                               .parts = d->rq->opt.parts,
                               .nodes = d->g.nodes,
                               .edges = d->g.edges,
                               .n_owned = rows,
                               .id = out->id,
                               .indptr = out->indptr,
                               .nbr = out->nbr,
                               .nbr_part = out->nbr_part,
                               .nbr_degree = out->nbr_degree,
                               .features = (int32_t)F,
                               .classes = d->has_synth ? d->synth.classes : d->file_classes,
                               .x = out->x,
                               .x_indptr = out->x_indptr,
                               .x_indices = out->x_indices,
                               .x_values = out->x_values,
                               .labels = out->labels,
                               .targets = out->targets,
                               .split = out->split,
                               .original_id = out->original_id};
done:
  return st;
}

/* Builds and writes part p from its records, which it frees (*rec = NULL)
 * once they are unpacked: they are as large as the rows, and the shard is
 * built next to those. Local. */
halo_status halo__dist_write_part(const dist *d, int32_t p, int64_t **rec, int64_t items,
                                  uint64_t run_id, written *w) {
  halo_status st = HALO_OK;
  part_rows rows = {0};
  halo_shard *shard = NULL;
  char path[4096];
  HALO_TRY(unpack_rows(d, p, *rec, items, &rows));
  free(*rec);
  *rec = NULL;
  HALO_TRY(halo_partition_shard_of_rows(&rows.rows, d->rq->opt.order, run_id, &shard));
  part_rows_free(&rows);
  if (d->features_csr) HALO_TRY(halo_shard_features_to_csr(shard));
  HALO_TRY(halo_shard_path(path, sizeof path, d->rq->tmpdir, p, d->rq->opt.parts));
  HALO_TRY(halo_shard_write(path, shard));
  w->digest[p] = halo_shard_digest(shard);
  if (w->original_digest) w->original_digest[p] = halo_shard_digest_original_id(shard);
  w->owned[p] = shard->n_owned;
  w->train += shard->n_train;
  w->halo[p] = shard->n_halo;
  halo_partition_stats_add_shard(w->stats, shard);
done:
  halo_shard_destroy(&shard);
  part_rows_free(&rows);
  return st;
}

/* ---- manifest and figures --------------------------------------------- */

void halo__dist_written_free(written *w) {
  free(w->digest);
  free(w->original_digest);
  free(w->owned);
  free(w->halo);
  halo_partition_stats_destroy(&w->stats);
  *w = (written){0};
}

halo_status halo__dist_written_alloc(const dist *d, written *w) {
  halo_status st = HALO_OK;
  const int32_t P = d->rq->opt.parts;
  HALO_ALLOC(w->digest, P, "part digests");
  if (d->original) HALO_ALLOC(w->original_digest, P, "original id digests");
  HALO_ALLOC(w->owned, P, "part sizes");
  HALO_ALLOC(w->halo, P, "part sizes");
  HALO_TRY(halo_partition_stats_alloc(d->g.nodes, d->g.edges, P, &w->stats));
done:
  return st;
}

/* Sums `count` items of every rank's `buf` into rank 0's, in place. */
static int reduce_sum(const dist *d, void *buf, int64_t count, MPI_Datatype type, MPI_Op op) {
  if (count > INT_MAX) return MPI_ERR_COUNT;
  return MPI_Reduce(d->rank == 0 ? MPI_IN_PLACE : buf, buf, (int)count, type, op, 0, d->comm);
}

/* Every rank's columns and figures summed on rank 0, which writes the
 * manifest.  Collective (agreed). */
halo_status halo__dist_write_manifest(dist *d, written *w, const int32_t *all_parts,
                                      const halo_graph *summary, uint64_t run_id) {
  halo_status st = HALO_OK;
  const int32_t P = d->rq->opt.parts;
  halo_partition_stats *s = w->stats;
  char path[4096];
  /* Each part's column is set by its one writer: OR is its value. */
  HALO_MPI(reduce_sum(d, w->digest, P, MPI_UINT64_T, MPI_BOR));
  if (w->original_digest) HALO_MPI(reduce_sum(d, w->original_digest, P, MPI_UINT64_T, MPI_BOR));
  HALO_MPI(reduce_sum(d, w->owned, P, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, w->halo, P, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, s->owned, P, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, s->halo, P, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, s->nnz, P, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, s->send, P, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, s->peers, P, MPI_INT32_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, &s->edge_cut, 1, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, &w->train, 1, MPI_INT64_T, MPI_SUM));
  if (s->between) HALO_MPI(reduce_sum(d, s->between, (int64_t)P * P, MPI_INT64_T, MPI_SUM));
  phase_begin(d);
  if (d->rank == 0) {
    s->work_row_cost = d->rq->opt.work_row_cost;
    halo_partition_stats_finish(s);
    halo_manifest m = {.format_version = halo_shard_format_for(d->features_csr),
                       .nodes = summary->n,
                       .edges = summary->m,
                       .features = summary->features,
                       .classes = summary->classes,
                       .multilabel = summary->multilabel,
                       .parts = P,
                       .seed = d->rq->opt.seed,
                       .ufactor = d->rq->opt.ufactor,
                       .source_digest = summary->source_digest,
                       .run_id = run_id,
                       .part = (int32_t *)all_parts, /* the manifest writer only reads it */
                       .part_digest = w->digest,
                       .part_owned = w->owned,
                       .part_halo = w->halo,
                       .part_original_id_digest = w->original_digest};
    snprintf(m.method, sizeof m.method, "%s", halo_method_name(d->rq->opt.method));
    snprintf(m.objective, sizeof m.objective, "%s", halo_objective_name(d->rq->opt.objective));
    snprintf(m.source, sizeof m.source, "%s", summary->source);
    if (snprintf(path, sizeof path, "%s/manifest.h5", d->rq->tmpdir) >= (int)sizeof path) {
      halo_log_error("output path %s/manifest.h5 is too long", d->rq->tmpdir);
      st = HALO_ERR_ARG;
    }
    if (st == HALO_OK) st = halo_manifest_write(path, &m);
  }
  HALO_TRY(phase_end(d, st));
done:
  return st;
}

/* Digits of v in base 10. */
static int digits(uint64_t v) {
  int n = 1;
  while (v >= 10) v /= 10, n++;
  return n;
}

/* v in base 10 at p; returns the end. */
static char *put_decimal(char *p, uint64_t v) {
  const int n = digits(v);
  for (int i = n - 1; i >= 0; i--, v /= 10) p[i] = (char)('0' + v % 10);
  return p + n;
}

/* Writes len bytes of buf at *offset of fd, advancing *offset; 0 or an
 * errno. */
static int write_at(int fd, const char *buf, size_t len, int64_t *offset) {
  while (len > 0) {
    const ssize_t n = pwrite(fd, buf, len, (off_t)*offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    buf += n;
    len -= (size_t)n;
    *offset += n;
  }
  return 0;
}

/* The clean graph in METIS' format (halo_partition_write_metis_to's bytes)
 * into rq->metis_tmp, which rank 0 created and commits: every rank counts
 * the bytes of its block's lines, learns its offset from the ranks below
 * it (rank 0's lines follow the header), opens the file (on a file system
 * every rank sees, as the output folder's) and writes its lines there with
 * pwrite in 1 MB pieces, then fsyncs and closes it; so no rank holds more
 * than its block, and every rank's data is on disk before rank 0 renames
 * the file.  Each step is agreed on, so a rank that cannot open the file
 * stops every rank instead of leaving them waiting.  Collective
 * (agreed). */
halo_status halo__dist_write_metis(dist *d) {
  halo_status st = HALO_OK;
  const halo_dgraph *g = &d->g;
  const char *name = d->rq->metis_name;
  enum { BUF = 1 << 20, SLACK = 64 }; /* SLACK: room for one number and a separator */
  char *buf = NULL, *p = NULL, header[64];
  int fd = -1, err = 0;
  int64_t bytes = 0, offset = 0, start = 0;
  phase_begin(d);
  const int hlen = snprintf(header, sizeof header, "%lld %lld\n", (long long)g->nodes,
                            (long long)(g->edges / 2));
  if (d->rank == 0) bytes = hlen;
  for (int64_t r = 0; r < g->rows; r++) {
    const int64_t b = g->indptr[r], e = g->indptr[r + 1];
    bytes += 1 + (e > b ? e - b - 1 : 0); /* the separators and the newline */
    for (int64_t k = b; k < e; k++) bytes += digits((uint64_t)g->nbr[k] + 1);
  }
  buf = malloc(BUF + SLACK);
  if (!buf) {
    halo_log_error("out of memory allocating the METIS file buffer");
    st = HALO_ERR_NOMEM;
  }
  if (st == HALO_OK) {
    fd = open(d->rq->metis_tmp, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      halo_log_error("%s: cannot open its temporary %s on rank %d: %s", name, d->rq->metis_tmp,
                     d->rank, strerror(errno));
      st = HALO_ERR_IO;
    }
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Exscan(&bytes, &start, 1, MPI_INT64_T, MPI_SUM, d->comm));
  if (d->rank == 0) start = 0;
  offset = start;

  phase_begin(d);
  p = buf;
  if (d->rank == 0) {
    memcpy(p, header, (size_t)hlen);
    p += hlen;
  }
  for (int64_t r = 0; r < g->rows && !err; r++) {
    for (int64_t k = g->indptr[r]; k < g->indptr[r + 1] && !err; k++) {
      if (k > g->indptr[r]) *p++ = ' ';
      p = put_decimal(p, (uint64_t)g->nbr[k] + 1);
      if (p - buf >= BUF) err = write_at(fd, buf, (size_t)(p - buf), &offset), p = buf;
    }
    *p++ = '\n';
    if (p - buf >= BUF && !err) err = write_at(fd, buf, (size_t)(p - buf), &offset), p = buf;
  }
  if (!err && p > buf) err = write_at(fd, buf, (size_t)(p - buf), &offset);
  if (!err && fsync(fd) != 0) err = errno;
  if (close(fd) != 0 && !err) err = errno;
  fd = -1;
  if (err) {
    halo_log_error("%s: writing rank %d's lines at byte %lld failed: %s", name, d->rank,
                   (long long)offset, strerror(err));
    st = HALO_ERR_IO;
  } else if (offset - start != bytes) {
    halo_log_error("%s: rank %d wrote %lld bytes, %lld counted", name, d->rank,
                   (long long)(offset - start), (long long)bytes);
    st = HALO_ERR_IO;
  }
  HALO_TRY(phase_end(d, st));
done:
  if (fd >= 0) close(fd);
  free(buf);
  return st;
}
