/* halo-train --predict (train-impl.h). */
#include "train-impl.h"

#include <stdlib.h>
#include <string.h>

#include "halo-h5.h"
#include "halo-mpi.h"

/* Rows per message and per write: blocks of at most 2^22 logits (16 MB),
 * so that no MPI count overflows and rank 0 holds one block of a peer. */
static int64_t block_rows(int32_t classes) {
  const int64_t rows = ((int64_t)1 << 22) / (classes > 0 ? classes : 1);
  return rows > 0 ? rows : 1;
}

halo_status train_predict_init(train_predict *p, const halo_shard *s) {
  halo_status st = HALO_OK;
  *p = (train_predict){.n_owned = s->n_owned, .tasks = s->multilabel ? s->classes : 0};
  HALO_ALLOC(p->global_id, s->n_owned, "the predictions' node ids");
  HALO_ALLOC(p->label, s->n_owned, "the predictions' labels");
  if (s->multilabel) {
    HALO_ALLOC(p->targets, (size_t)s->n_owned * (size_t)s->classes, "the predictions' labels");
    memcpy(p->targets, s->targets, (size_t)s->n_owned * (size_t)s->classes);
  }
  HALO_ALLOC(p->split, s->n_owned, "the predictions' splits");
  memcpy(p->global_id, s->global_id, (size_t)s->n_owned * sizeof *p->global_id);
  if (s->original_id) {
    HALO_ALLOC(p->original_id, s->n_owned, "the predictions' original ids");
    memcpy(p->original_id, s->original_id, (size_t)s->n_owned * sizeof *p->original_id);
  }
  for (int64_t i = 0; i < s->n_owned; i++) {
    p->label[i] = s->labels ? s->labels[i] : -1;
    p->split[i] = -1;
  }
  const int32_t *lists[3] = {s->train, s->valid, s->test};
  const int64_t counts[3] = {s->n_train, s->n_valid, s->n_test};
  for (int k = 0; k < 3; k++)
    for (int64_t i = 0; i < counts[k]; i++) p->split[lists[k][i]] = (int8_t)k;
done:
  return st;
}

void train_predict_free(train_predict *p) {
  free(p->global_id);
  free(p->label);
  free(p->targets);
  free(p->split);
  free(p->original_id);
  *p = (train_predict){0};
}

/* The argmax of each row, as the accuracy counts it: from column 0, moving
 * only to a strictly larger value.  Multi-label (pred8): each task's
 * logit above 0. */
static void predict_rows(const float *z, int64_t rows, int32_t classes, int32_t *pred,
                         int8_t *pred8) {
  for (int64_t k = 0; pred8 && k < rows * classes; k++) pred8[k] = z[k] > 0.0f;
  for (int64_t i = 0; !pred8 && i < rows; i++) {
    const float *zr = z + i * classes;
    int32_t best = 0;
    for (int32_t j = 1; j < classes; j++)
      if (zr[j] > zr[best]) best = j;
    pred[i] = best;
  }
}

/* One part's rows, as rank 0 writes them.  A multi-label run's /pred and
 * /label are int8 rows of `classes` tasks, its pred and label point to
 * int8 arrays; otherwise one int32 a row.  An embeddings file (emb) holds
 * the ids and one row of `classes` floats a node (the width), and no
 * predictions, labels or splits. */
typedef struct rows_block {
  int64_t n;
  int32_t classes;
  int multi, emb;
  int64_t *gid;
  float *logits;
  void *pred, *label;
  int8_t *split;
  int64_t *orig; /* the input's ids; NULL when the run has none */
} rows_block;

/* The file's datasets: node ids, logits (or embeddings), predictions,
 * labels, splits, and the input's own ids when the run has them. */
enum { D_GID, D_LOGITS, D_PRED, D_LABEL, D_SPLIT, D_ORIG, D_COUNT };
static const char *const dataset_name[D_COUNT] = {"/global_id", "/logits", "/pred",
                                                  "/label",     "/split",  "/original_id"};

static const char *name_of(const rows_block *b, int d) {
  return b->emb && d == D_LOGITS ? "/embeddings" : dataset_name[d];
}

/* Whether block b's file carries dataset d. */
static int present(const rows_block *b, int d) {
  if (d == D_ORIG) return b->orig != NULL;
  return !b->emb || d == D_GID || d == D_LOGITS;
}

/* The metadata of the file: root attributes. */
typedef struct file_meta {
  int64_t epoch;
  const char *model, *params_sha256;
  int32_t layer; /* embeddings: the layer whose input they are (1-based) */
  int replace;   /* --force: an existing file is replaced */
} file_meta;

/* Whether dataset d holds one row of b->classes values a node. */
static int is_matrix(const rows_block *b, int d) {
  return d == D_LOGITS || (b->multi && (d == D_PRED || d == D_LABEL));
}

static int is_int8(const rows_block *b, int d) {
  return d == D_SPLIT || (b->multi && (d == D_PRED || d == D_LABEL));
}

static hid_t mem_type(const rows_block *b, int d) {
  return d == D_GID || d == D_ORIG ? H5T_NATIVE_INT64
         : d == D_LOGITS           ? H5T_NATIVE_FLOAT
         : is_int8(b, d)           ? H5T_NATIVE_INT8
                                   : H5T_NATIVE_INT32;
}

static hid_t file_type(const rows_block *b, int d) {
  return d == D_GID || d == D_ORIG ? H5T_STD_I64LE
         : d == D_LOGITS           ? H5T_IEEE_F32LE
         : is_int8(b, d)           ? H5T_STD_I8LE
                                   : H5T_STD_I32LE;
}

/* /pred's and /label's values a row, and their MPI type. */
static int64_t label_width(const rows_block *b) { return b->multi ? b->classes : 1; }
static MPI_Datatype label_type(const rows_block *b) { return b->multi ? MPI_INT8_T : MPI_INT32_T; }

/* Creates the datasets for `nodes` rows, chunked by blocks of rows and
 * Fletcher-32 checksummed. */
static halo_status create_datasets(hid_t file, const char *path, int64_t nodes, const rows_block *b,
                                   hid_t *dset) {
  halo_status st = HALO_OK;
  hid_t dcpl = H5I_INVALID_HID, space = H5I_INVALID_HID;
  const int32_t classes = b->classes;
  const int64_t rows = block_rows(classes) / 4 > 0 ? block_rows(classes) / 4 : 1;
  for (int d = 0; d < D_COUNT; d++) {
    if (!present(b, d)) continue;
    const int rank = is_matrix(b, d) ? 2 : 1;
    const hsize_t dims[2] = {(hsize_t)nodes, (hsize_t)classes};
    const hsize_t maxdims[2] = {nodes > 0 ? (hsize_t)nodes : H5S_UNLIMITED, (hsize_t)classes};
    const hsize_t chunk[2] = {(hsize_t)(nodes > 0 && nodes < rows ? nodes : rows),
                              (hsize_t)classes};
    const char *name = name_of(b, d);
    HALO_H5(dcpl = H5Pcreate(H5P_DATASET_CREATE), path, name, "cannot create a property list");
    HALO_H5(H5Pset_chunk(dcpl, rank, chunk), path, name, "cannot set the chunk shape");
    HALO_H5(H5Pset_fletcher32(dcpl), path, name, "cannot enable Fletcher-32");
    HALO_H5(space = H5Screate_simple(rank, dims, maxdims), path, name, "cannot create a dataspace");
    HALO_H5(
        dset[d] = H5Dcreate2(file, name, file_type(b, d), space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
        path, name, "cannot create dataset");
    H5Sclose(space);
    H5Pclose(dcpl);
    space = dcpl = H5I_INVALID_HID;
  }
done:
  if (space >= 0) H5Sclose(space);
  if (dcpl >= 0) H5Pclose(dcpl);
  return st;
}

/* Writes b's rows at row `at` of every dataset. */
static halo_status write_rows(hid_t *dset, const char *path, int64_t at, const rows_block *b) {
  halo_status st = HALO_OK;
  hid_t file_space = H5I_INVALID_HID, mem_space = H5I_INVALID_HID;
  const void *data[D_COUNT] = {b->gid, b->logits, b->pred, b->label, b->split, b->orig};
  if (b->n == 0) return HALO_OK;
  for (int d = 0; d < D_COUNT; d++) {
    if (!present(b, d)) continue;
    const int rank = is_matrix(b, d) ? 2 : 1;
    const hsize_t start[2] = {(hsize_t)at, 0}, count[2] = {(hsize_t)b->n, (hsize_t)b->classes};
    const char *name = name_of(b, d);
    HALO_H5(file_space = H5Dget_space(dset[d]), path, name, "cannot get its dataspace");
    HALO_H5(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, NULL, count, NULL), path, name,
            "cannot select rows");
    HALO_H5(mem_space = H5Screate_simple(rank, count, NULL), path, name,
            "cannot create a dataspace");
    HALO_H5(H5Dwrite(dset[d], mem_type(b, d), mem_space, file_space, H5P_DEFAULT, data[d]), path,
            name, "cannot write rows");
    H5Sclose(mem_space);
    H5Sclose(file_space);
    mem_space = file_space = H5I_INVALID_HID;
  }
done:
  if (mem_space >= 0) H5Sclose(mem_space);
  if (file_space >= 0) H5Sclose(file_space);
  return st;
}

/* Rank 0's buffer for one block of a peer's rows. */
static halo_status block_alloc(rows_block *b, int32_t classes, int multi, int emb, int with_orig) {
  halo_status st = HALO_OK;
  const int64_t rows = block_rows(classes);
  b->classes = classes;
  b->multi = multi;
  b->emb = emb;
  const size_t label_bytes = (size_t)(rows * label_width(b)) * (multi ? 1 : sizeof(int32_t));
  if (with_orig) HALO_ALLOC(b->orig, rows, "a block of predictions");
  HALO_ALLOC(b->gid, rows, "a block of predictions");
  HALO_ALLOC(b->logits, rows * classes, "a block of predictions");
  if (emb) goto done;
  b->pred = calloc(label_bytes, 1);
  b->label = calloc(label_bytes, 1);
  if (!b->pred || !b->label) HALO_FAIL(HALO_ERR_NOMEM, "out of memory for a block of predictions");
  HALO_ALLOC(b->split, rows, "a block of predictions");
done:
  return st;
}

static void block_free(rows_block *b) {
  free(b->gid);
  free(b->logits);
  free(b->pred);
  free(b->label);
  free(b->split);
  free(b->orig);
  *b = (rows_block){0};
}

/* Rank 0: the file, with its own rows and then each peer's, block by block
 * into `b`.  Every peer's blocks are received even after a write failed,
 * so that no peer waits forever in its send. */
static halo_status write_file(const rows_block *own, const rows_block *block, MPI_Comm comm,
                              int size, const char *path, int64_t nodes, const file_meta *meta) {
  halo_status st = HALO_OK, io = HALO_OK;
  char tmp[4200] = "";
  hid_t file = H5I_INVALID_HID, dset[D_COUNT];
  const int32_t classes = block->classes;
  const int64_t rows = block_rows(classes), width = label_width(block);
  rows_block b = *block;
  int64_t at = 0;
  for (int d = 0; d < D_COUNT; d++) dset[d] = H5I_INVALID_HID;

  halo_h5_quiet();
  io = meta->replace ? halo_h5_replace(path, tmp, sizeof tmp, &file)
               : halo_h5_create(path, tmp, sizeof tmp, &file);
  if (io == HALO_OK) io = create_datasets(file, path, nodes, block, dset);
  const int32_t c32 = classes, multi = block->multi;
  if (io == HALO_OK) io = halo_h5_attr_write(file, path, "epoch", HALO_H5_I64, &meta->epoch);
  if (io == HALO_OK)
    io = halo_h5_attr_write(file, path, block->emb ? "width" : "classes", HALO_H5_I32, &c32);
  if (io == HALO_OK && block->emb)
    io = halo_h5_attr_write(file, path, "layer", HALO_H5_I32, &meta->layer);
  if (io == HALO_OK) io = halo_h5_attr_write(file, path, "nodes", HALO_H5_I64, &nodes);
  if (io == HALO_OK && multi)
    io = halo_h5_attr_write(file, path, "multilabel", HALO_H5_I32, &multi);
  if (io == HALO_OK) io = halo_h5_attr_write_str(file, path, "model", meta->model);
  if (io == HALO_OK) io = halo_h5_attr_write_str(file, path, "params_sha256", meta->params_sha256);
  if (io == HALO_OK) io = write_rows(dset, path, 0, own);
  at = own->n;
  for (int q = 1; q < size; q++) {
    int64_t n = 0;
    HALO_MPI(MPI_Recv(&n, 1, MPI_INT64_T, q, 0, comm, MPI_STATUS_IGNORE));
    for (int64_t r0 = 0; r0 < n; r0 += rows) {
      b.n = n - r0 < rows ? n - r0 : rows;
      HALO_MPI(MPI_Recv(b.gid, (int)b.n, MPI_INT64_T, q, 1, comm, MPI_STATUS_IGNORE));
      HALO_MPI(MPI_Recv(b.logits, (int)(b.n * classes), MPI_FLOAT, q, 2, comm, MPI_STATUS_IGNORE));
      if (!b.emb) {
        HALO_MPI(
            MPI_Recv(b.pred, (int)(b.n * width), label_type(&b), q, 3, comm, MPI_STATUS_IGNORE));
        HALO_MPI(
            MPI_Recv(b.label, (int)(b.n * width), label_type(&b), q, 4, comm, MPI_STATUS_IGNORE));
        HALO_MPI(MPI_Recv(b.split, (int)b.n, MPI_INT8_T, q, 5, comm, MPI_STATUS_IGNORE));
      }
      if (b.orig) HALO_MPI(MPI_Recv(b.orig, (int)b.n, MPI_INT64_T, q, 6, comm, MPI_STATUS_IGNORE));
      if (io == HALO_OK) io = write_rows(dset, path, at, &b);
      at += b.n;
    }
  }
  if (io == HALO_OK && at != nodes) {
    halo_log_error("%s: %lld rows gathered for %lld nodes", path, (long long)at, (long long)nodes);
    io = HALO_ERR_MISMATCH;
  }
done:
  for (int d = 0; d < D_COUNT; d++)
    if (dset[d] >= 0) H5Dclose(dset[d]);
  if (st == HALO_OK) st = io;
  if (tmp[0]) st = halo_h5_commit(st, file, tmp, path);
  return st;
}

/* A peer: its rows to rank 0, in the blocks rank 0 expects. */
static halo_status send_rows(const rows_block *own, MPI_Comm comm) {
  halo_status st = HALO_OK;
  const int32_t classes = own->classes;
  const int64_t rows = block_rows(classes), width = label_width(own);
  const size_t label_size = own->multi ? 1 : sizeof(int32_t);
  HALO_MPI(MPI_Send(&own->n, 1, MPI_INT64_T, 0, 0, comm));
  for (int64_t r0 = 0; r0 < own->n; r0 += rows) {
    const int n = (int)(own->n - r0 < rows ? own->n - r0 : rows);
    HALO_MPI(MPI_Send(own->gid + r0, n, MPI_INT64_T, 0, 1, comm));
    HALO_MPI(MPI_Send(own->logits + r0 * classes, (int)(n * classes), MPI_FLOAT, 0, 2, comm));
    if (own->emb) goto ids;
    HALO_MPI(MPI_Send((const char *)own->pred + (size_t)(r0 * width) * label_size, (int)(n * width),
                      label_type(own), 0, 3, comm));
    HALO_MPI(MPI_Send((const char *)own->label + (size_t)(r0 * width) * label_size,
                      (int)(n * width), label_type(own), 0, 4, comm));
    HALO_MPI(MPI_Send(own->split + r0, n, MPI_INT8_T, 0, 5, comm));
  ids:
    if (own->orig) HALO_MPI(MPI_Send(own->orig + r0, n, MPI_INT64_T, 0, 6, comm));
  }
done:
  return st;
}

/* The file of `own`'s rows (logits, or embeddings with own->emb, already
 * filled; predictions are made here), gathered by rank 0. Collective. */
static halo_status gather_write(rows_block *own, const train_predict *p, MPI_Comm comm,
                                const char *path, const file_meta *meta, halo_status st) {
  int rank = 0, size = 1;
  int64_t nodes = 0;
  rows_block block = {0};
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  /* Everything allocated before the agreement, so that no rank fails once
   * the rows are on their way. */
  /* The shards of a run all have original ids or none (the manifest says);
   * a part without rows may have no array, so the ranks agree. */
  int has = own->orig != NULL, any = 0;
  HALO_MPI(MPI_Allreduce(&has, &any, 1, MPI_INT, MPI_MAX, comm));
  if (rank == 0 && st == HALO_OK) st = block_alloc(&block, own->classes, own->multi, own->emb, any);
  if (st == HALO_OK && !own->emb)
    predict_rows(own->logits, p->n_owned, own->classes, own->multi ? NULL : own->pred,
                 own->multi ? own->pred : NULL);
  HALO_TRY(halo_mpi_agree(comm, st));
  HALO_MPI(MPI_Allreduce(&p->n_owned, &nodes, 1, MPI_INT64_T, MPI_SUM, comm));
  st = rank == 0 ? write_file(own, &block, comm, size, path, nodes, meta) : send_rows(own, comm);
  st = halo_mpi_agree(comm, st);
done:
  block_free(&block);
  return st;
}

halo_status train_predict_write(const train_predict *p, halo_net *model, MPI_Comm comm,
                                const char *path, int64_t epoch, const char *model_name,
                                const char *params_sha256, int replace) {
  halo_status st = HALO_OK;
  halo_net_info info;
  rows_block own = {.n = p->n_owned,
                    .multi = p->tasks > 0,
                    .gid = p->global_id,
                    .label = p->tasks > 0 ? (void *)p->targets : (void *)p->label,
                    .split = p->split,
                    .orig = p->original_id};
  const file_meta meta = {
      .epoch = epoch, .model = model_name, .params_sha256 = params_sha256, .replace = replace};
  halo_net_info_get(model, &info);
  const int32_t classes = info.model.dims[info.model.layers];
  own.classes = classes;
  const size_t owned = (size_t)(p->n_owned > 0 ? p->n_owned : 1);
  own.logits = malloc(owned * (size_t)classes * sizeof(float));
  own.pred = malloc(own.multi ? owned * (size_t)classes : owned * sizeof(int32_t));
  if (!own.logits || !own.pred) {
    halo_log_error("out of memory for the predictions of %lld rows", (long long)p->n_owned);
    st = HALO_ERR_NOMEM;
  }
  if (st == HALO_OK) st = halo_net_logits_get(model, own.logits);
  st = gather_write(&own, p, comm, path, &meta, st);
  free(own.logits);
  free(own.pred);
  return st;
}

halo_status train_embeddings_write(const train_predict *p, halo_net *model, MPI_Comm comm,
                                   const char *path, int layer, int64_t epoch,
                                   const char *model_name, const char *params_sha256, int replace) {
  halo_status st = HALO_OK;
  halo_net_info info;
  rows_block own = {.n = p->n_owned, .emb = 1, .gid = p->global_id, .orig = p->original_id};
  const file_meta meta = {
      .epoch = epoch, .model = model_name, .params_sha256 = params_sha256, .layer = layer,
      .replace = replace};
  halo_net_info_get(model, &info);
  own.classes = info.model.dims[layer - 1];
  const size_t owned = (size_t)(p->n_owned > 0 ? p->n_owned : 1);
  own.logits = malloc(owned * (size_t)own.classes * sizeof(float));
  if (!own.logits) {
    halo_log_error("out of memory for the embeddings of %lld rows", (long long)p->n_owned);
    st = HALO_ERR_NOMEM;
  }
  if (st == HALO_OK) st = halo_net_layer_input_get(model, layer - 1, own.logits);
  st = gather_write(&own, p, comm, path, &meta, st);
  free(own.logits);
  return st;
}
