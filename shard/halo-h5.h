/* The HDF5 calls of the shard module, shared by the part and manifest
 * readers and writers and by every other file halo writes in HDF5 (the
 * checkpoints, src/halo-checkpoint.c): one quiet error style, checksummed
 * datasets, and files that appear only when complete.
 *
 * Every helper reports its own failure as ONE halo_log_error line that names
 * the file and the object ("out/part-00001-of-00004.h5: /graph/indices:
 * checksum mismatch (Fletcher-32)") and returns a status; callers only pass
 * the status on.  Element types are fixed-width little-endian in the file and
 * native in memory.
 */
#ifndef HALO_H5_H
#define HALO_H5_H

#include <hdf5.h>
#include <stdint.h>

#include "halo-shard.h"

/* The element types a shard stores. */
typedef enum {
  HALO_H5_I32,
  HALO_H5_I64,
  HALO_H5_U64,
  HALO_H5_F32,
  HALO_H5_I8,
  HALO_H5_F64
} halo_h5_kind;

/* HDF5 prints its whole error stack by default; every public shard call
 * turns that off first, so that each failure is one halo_log_error line.  It
 * stays off for the process: after a metadata checksum failure HDF5 1.10
 * cannot release its cache at exit, and with printing on it would end the
 * program with a spurious "infinite loop closing library" dump. */
void halo_h5_quiet(void);

/* Logs "PATH: OBJ: WHAT (HDF5: <innermost message>)" from the current HDF5
 * error stack.  Returns HALO_ERR_CORRUPT when HDF5 found a checksum mismatch
 * (the message then says "checksum mismatch (Fletcher-32)" for raw data or
 * "metadata checksum mismatch"), HALO_ERR_FORMAT when the file is not HDF5
 * or is truncated, and HALO_ERR_HDF5 otherwise.  OBJ may be NULL. */
halo_status halo_h5_fail(const char *path, const char *obj, const char *what);

/* Checks an HDF5 return value (hid_t or herr_t): on a negative one, logs via
 * halo_h5_fail, stores the status in `st` and jumps to `done`. */
#define HALO_H5(expr, path, obj, what)          \
  do {                                          \
    if ((expr) < 0) {                           \
      st = halo_h5_fail((path), (obj), (what)); \
      goto done;                                \
    }                                           \
  } while (0)

/* Creates PATH.tmp for writing (replacing a stale one); *tmp receives the
 * temporary name.  Fails with HALO_ERR_EXISTS when PATH itself exists.
 * Local. */
halo_status halo_h5_create(const char *path, char *tmp, size_t tmp_size, hid_t *file);

/* halo_h5_create for a file that replaces PATH when it exists (a
 * checkpoint saved again): halo_h5_commit's rename moves the complete
 * PATH.tmp over it atomically, so a crash leaves the old PATH. Local. */
halo_status halo_h5_replace(const char *path, char *tmp, size_t tmp_size, hid_t *file);

/* Closes `file`, flushes PATH.tmp to disk, renames it to PATH and flushes
 * PATH's folder (core/halo-atomic.h's rule).  On any failure (and whenever
 * `st` is already a failure) the temporary is removed and PATH is left
 * untouched.  Returns the resulting status. Local. */
halo_status halo_h5_commit(halo_status st, hid_t file, const char *tmp, const char *path);

/* Opens an existing file read-only, with a clear message when it is missing,
 * not HDF5, or truncated. */
halo_status halo_h5_open(const char *path, hid_t *file);

/* Scalar attributes on `loc` (the root group). */
halo_status halo_h5_attr_write(hid_t loc, const char *path, const char *name, halo_h5_kind kind,
                               const void *value);
halo_status halo_h5_attr_write_str(hid_t loc, const char *path, const char *name,
                                   const char *value);
/* Reads a scalar attribute whose stored type must be exactly `kind`. */
halo_status halo_h5_attr_read(hid_t loc, const char *path, const char *name, halo_h5_kind kind,
                              void *value);
/* Reads a fixed- or variable-length string attribute into buf (size bytes,
 * NUL-terminated); fails when it does not fit. */
halo_status halo_h5_attr_read_str(hid_t loc, const char *path, const char *name, char *buf,
                                  size_t size);

/* Creates the groups a dataset name needs ("/graph" for "/graph/indptr"). */
halo_status halo_h5_group(hid_t file, const char *path, const char *name);

/* Writes a chunked, Fletcher-32 checksummed dataset of rank 1 or 2.  A
 * zero-size dataset gets an unlimited first dimension, since HDF5 cannot
 * chunk a fixed dimension of size 0.  `data` may be NULL when it is empty. */
halo_status halo_h5_write(hid_t file, const char *path, const char *name, halo_h5_kind kind,
                          int rank, const hsize_t *dims, const void *data);

/* Reads dataset `name`, which must exist, have element type `kind` and rank
 * `rank`.  With `exact`, its shape must equal dims; otherwise dims[0] is an
 * upper bound and receives the actual length (later dims stay exact).  Only
 * once the shape is known good, and the bytes are known to be stored in the
 * file, is *out allocated (at least one element, zeroed) and filled.  With
 * `out` NULL it stops there: the dataset is checked but not read (so its
 * Fletcher-32 checksum is not either). */
halo_status halo_h5_read(hid_t file, const char *path, const char *name, halo_h5_kind kind,
                         int rank, hsize_t *dims, int exact, void **out);

/* 1 when the link `name` ("/graph/indices") exists, 0 when not, negative
 * on an HDF5 error (already logged). */
int halo_h5_exists(hid_t file, const char *path, const char *name);

/* 1 when attribute `name` of the root group exists, 0 when not, negative on
 * an HDF5 error (already logged). */
int halo_h5_attr_exists(hid_t loc, const char *path, const char *name);

#endif /* HALO_H5_H */
