/* The HDF5 calls shared by the shard and manifest readers and writers and the checkpoints. */
#include "halo-h5.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halo-atomic.h"

/* Chunks hold at most this many bytes: large enough that per-chunk overhead
 * (index entry, 4-byte checksum) is noise, small enough for HDF5's default
 * 1 MiB chunk cache and for partial reads. */
enum { CHUNK_BYTES = 1 << 20 };

/* Longest fixed-length string attribute the reader accepts. */
enum { MAX_STRING_ATTR = 1 << 16 };

void halo_h5_quiet(void) {
  /* HDF5 1.10 cannot close a file whose H5Fclose failed (a full disk, say):
   * the ID stays behind, and the library's exit handler then crashes on it
   * (HDFFV-11052, fixed in 1.14).  So the handler is never registered: it
   * has nothing else to do, since every file halo opens it also closes.
   * This must come before the first HDF5 call, which registers it; later
   * calls fail harmlessly. */
  (void)H5dont_atexit();
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

/* What the HDF5 error stack says about the last failure. */
typedef struct h5_cause {
  char innermost[256];
  int fletcher;       /* a raw-data checksum failed */
  int checksum;       /* a metadata checksum failed */
  int truncated;      /* the file is shorter than its superblock says */
  int not_hdf5;       /* no HDF5 signature */
  char os_error[128]; /* the system's words for a failed read or write */
} h5_cause;

/* Copies `from` into `to`, control characters (HDF5 puts a newline inside
 * its write-failure message) as spaces. */
static void copy_line(char *to, size_t size, const char *from, size_t len) {
  size_t n = 0;
  for (; n + 1 < size && n < len && from[n]; n++)
    to[n] = (unsigned char)from[n] < 0x20 ? ' ' : from[n];
  to[n] = '\0';
}

static herr_t cause_walk(unsigned n, const H5E_error2_t *err, void *data) {
  h5_cause *c = data;
  const char *desc = err->desc ? err->desc : "";
  if (n == 0) copy_line(c->innermost, sizeof c->innermost, desc, strlen(desc));
  /* The file driver's failures end "..., error message = 'No space left on
   * device', ...". */
  const char *said = strstr(desc, "error message = '");
  if (said && !c->os_error[0]) {
    said += strlen("error message = '");
    const char *end = strchr(said, '\'');
    copy_line(c->os_error, sizeof c->os_error, said, end ? (size_t)(end - said) : strlen(said));
  }
  if (strstr(desc, "Fletcher32")) c->fletcher = 1;
  if (strstr(desc, "incorrect metadata checksum")) c->checksum = 1;
  if (strstr(desc, "truncated file")) c->truncated = 1;
  if (err->min_num == H5E_NOTHDF5 || strstr(desc, "signature not found")) c->not_hdf5 = 1;
  return 0;
}

halo_status halo_h5_fail(const char *path, const char *obj, const char *what) {
  h5_cause c;
  memset(&c, 0, sizeof c);
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, cause_walk, &c);
  H5Eclear2(H5E_DEFAULT);
  char where[1200];
  if (obj)
    snprintf(where, sizeof where, "%s: %s", path, obj);
  else
    snprintf(where, sizeof where, "%s", path);
  if (c.fletcher) {
    halo_log_error("%s: checksum mismatch (Fletcher-32)", where);
    return HALO_ERR_CORRUPT;
  }
  if (c.checksum) {
    halo_log_error("%s: metadata checksum mismatch (HDF5: %s)", where, c.innermost);
    return HALO_ERR_CORRUPT;
  }
  if (c.truncated) {
    halo_log_error("%s: truncated file (HDF5: %s)", path, c.innermost);
    return HALO_ERR_CORRUPT;
  }
  if (c.not_hdf5) {
    halo_log_error("%s: not an HDF5 file", path);
    return HALO_ERR_FORMAT;
  }
  if (c.os_error[0]) {
    halo_log_error("%s: %s: %s", where, what, c.os_error);
    return HALO_ERR_IO;
  }
  halo_log_error("%s: %s (HDF5: %s)", where, what, c.innermost[0] ? c.innermost : "no details");
  return HALO_ERR_HDF5;
}

static hid_t kind_file_type(halo_h5_kind kind) {
  switch (kind) {
    case HALO_H5_I32:
      return H5T_STD_I32LE;
    case HALO_H5_I64:
      return H5T_STD_I64LE;
    case HALO_H5_U64:
      return H5T_STD_U64LE;
    case HALO_H5_F32:
      return H5T_IEEE_F32LE;
    case HALO_H5_F64:
      return H5T_IEEE_F64LE;
    case HALO_H5_I8:
      return H5T_STD_I8LE;
  }
  return H5I_INVALID_HID;
}

static hid_t kind_mem_type(halo_h5_kind kind) {
  switch (kind) {
    case HALO_H5_I32:
      return H5T_NATIVE_INT32;
    case HALO_H5_I64:
      return H5T_NATIVE_INT64;
    case HALO_H5_U64:
      return H5T_NATIVE_UINT64;
    case HALO_H5_F32:
      return H5T_NATIVE_FLOAT;
    case HALO_H5_F64:
      return H5T_NATIVE_DOUBLE;
    case HALO_H5_I8:
      return H5T_NATIVE_INT8;
  }
  return H5I_INVALID_HID;
}

static size_t kind_size(halo_h5_kind kind) {
  return kind == HALO_H5_I8 ? 1 : kind == HALO_H5_I32 || kind == HALO_H5_F32 ? 4 : 8;
}

static const char *kind_name(halo_h5_kind kind) {
  switch (kind) {
    case HALO_H5_I32:
      return "int32";
    case HALO_H5_I64:
      return "int64";
    case HALO_H5_U64:
      return "uint64";
    case HALO_H5_F32:
      return "float32";
    case HALO_H5_F64:
      return "float64";
    case HALO_H5_I8:
      return "int8";
  }
  return "?";
}

/* "int16", "uint64", "float64", "string", ... for messages. */
static void type_describe(hid_t type, char *buf, size_t size) {
  H5T_class_t cls = H5Tget_class(type);
  size_t bits = H5Tget_size(type) * 8;
  switch (cls) {
    case H5T_INTEGER:
      snprintf(buf, size, "%sint%zu", H5Tget_sign(type) == H5T_SGN_NONE ? "u" : "", bits);
      return;
    case H5T_FLOAT:
      snprintf(buf, size, "float%zu", bits);
      return;
    case H5T_STRING:
      snprintf(buf, size, "string");
      return;
    case H5T_COMPOUND:
      snprintf(buf, size, "compound");
      return;
    default:
      snprintf(buf, size, "HDF5 type class %d", (int)cls);
      return;
  }
}

/* 1 when `type` is exactly `kind` apart from byte order. */
static int type_is(hid_t type, halo_h5_kind kind) {
  H5T_class_t cls = H5Tget_class(type);
  if (H5Tget_size(type) != kind_size(kind)) return 0;
  if (kind == HALO_H5_F32 || kind == HALO_H5_F64) return cls == H5T_FLOAT;
  if (cls != H5T_INTEGER) return 0;
  H5T_sign_t sign = H5Tget_sign(type);
  return kind == HALO_H5_U64 ? sign == H5T_SGN_NONE : sign == H5T_SGN_2;
}

/* halo_h5_create, or with `replace` halo_h5_replace. */
static halo_status create(const char *path, int replace, char *tmp, size_t tmp_size, hid_t *file) {
  halo_status st = HALO_OK;
  hid_t fapl = H5I_INVALID_HID, fcpl = H5I_INVALID_HID;
  *file = H5I_INVALID_HID;
  struct stat sb;
  if (!replace && stat(path, &sb) == 0)
    HALO_FAIL(HALO_ERR_EXISTS, "%s: already exists; not overwriting it", path);
  /* One writer owns a shard's name: NAME.tmp, and a stale one of an
   * interrupted run is truncated (halo-atomic.h). */
  if (halo_atomic_tmp_name(path, tmp, tmp_size) != 0)
    HALO_FAIL(HALO_ERR_ARG, "%s: path is too long", path);
  /* Format 1.8+ objects carry metadata checksums; 1.10 is what Debian 12 and
   * every h5dump since 2016 reads. */
  HALO_H5(fapl = H5Pcreate(H5P_FILE_ACCESS), path, NULL, "cannot create a property list");
  HALO_H5(H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V110), path, NULL,
          "cannot set the format version bounds");
  /* No timestamps on the root group either: the same content, the same bytes. */
  HALO_H5(fcpl = H5Pcreate(H5P_FILE_CREATE), path, NULL, "cannot create a property list");
  HALO_H5(H5Pset_obj_track_times(fcpl, 0), path, NULL, "cannot turn off time tracking");
  HALO_H5(*file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, fapl), tmp, NULL, "cannot create file");
done:
  if (fcpl >= 0) H5Pclose(fcpl);
  if (fapl >= 0) H5Pclose(fapl);
  return st;
}

halo_status halo_h5_create(const char *path, char *tmp, size_t tmp_size, hid_t *file) {
  return create(path, 0, tmp, tmp_size, file);
}

halo_status halo_h5_replace(const char *path, char *tmp, size_t tmp_size, hid_t *file) {
  return create(path, 1, tmp, tmp_size, file);
}

halo_status halo_h5_commit(halo_status st, hid_t file, const char *tmp, const char *path) {
  if (file >= 0 && H5Fclose(file) < 0 && st == HALO_OK)
    st = halo_h5_fail(tmp, NULL, "cannot close file");
  /* The data must be on disk before the name says the file is complete,
   * and the rename in its folder before the caller counts on it. */
  int err = 0;
  if (st == HALO_OK && (err = halo_atomic_sync(tmp)) != 0) {
    halo_log_error("%s: cannot flush to disk: %s", tmp, strerror(err));
    st = HALO_ERR_IO;
  }
  if (st == HALO_OK && (err = halo_atomic_rename(tmp, path)) != 0) {
    halo_log_error("%s: cannot rename %s into place: %s", path, tmp, strerror(err));
    st = HALO_ERR_IO;
  }
  if (st != HALO_OK) (void)halo_atomic_remove(tmp, 0);
  return st;
}

halo_status halo_h5_open(const char *path, hid_t *file) {
  halo_status st = HALO_OK;
  *file = H5I_INVALID_HID;
  struct stat sb;
  if (stat(path, &sb) != 0) HALO_FAIL(HALO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (!S_ISREG(sb.st_mode)) HALO_FAIL(HALO_ERR_IO, "%s: not a regular file", path);
  if (sb.st_size == 0) HALO_FAIL(HALO_ERR_FORMAT, "%s: empty file", path);
  HALO_H5(*file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), path, NULL, "cannot open as HDF5");
done:
  return st;
}

halo_status halo_h5_attr_write(hid_t loc, const char *path, const char *name, halo_h5_kind kind,
                               const void *value) {
  halo_status st = HALO_OK;
  hid_t space = H5I_INVALID_HID, attr = H5I_INVALID_HID;
  HALO_H5(space = H5Screate(H5S_SCALAR), path, name, "cannot create a dataspace");
  HALO_H5(attr = H5Acreate2(loc, name, kind_file_type(kind), space, H5P_DEFAULT, H5P_DEFAULT), path,
          name, "cannot create attribute");
  HALO_H5(H5Awrite(attr, kind_mem_type(kind), value), path, name, "cannot write attribute");
done:
  if (attr >= 0) H5Aclose(attr);
  if (space >= 0) H5Sclose(space);
  return st;
}

halo_status halo_h5_attr_write_str(hid_t loc, const char *path, const char *name,
                                   const char *value) {
  halo_status st = HALO_OK;
  hid_t type = H5I_INVALID_HID, space = H5I_INVALID_HID, attr = H5I_INVALID_HID;
  /* Fixed length, NUL-terminated ASCII: h5dump prints it as "metis". */
  HALO_H5(type = H5Tcopy(H5T_C_S1), path, name, "cannot create a string type");
  HALO_H5(H5Tset_size(type, strlen(value) + 1), path, name, "cannot size a string type");
  HALO_H5(H5Tset_strpad(type, H5T_STR_NULLTERM), path, name, "cannot set string padding");
  HALO_H5(space = H5Screate(H5S_SCALAR), path, name, "cannot create a dataspace");
  HALO_H5(attr = H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT), path, name,
          "cannot create attribute");
  HALO_H5(H5Awrite(attr, type, value), path, name, "cannot write attribute");
done:
  if (attr >= 0) H5Aclose(attr);
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  return st;
}

/* Opens a scalar attribute and returns its file type in *type. */
static halo_status attr_open(hid_t loc, const char *path, const char *name, hid_t *attr,
                             hid_t *type) {
  halo_status st = HALO_OK;
  hid_t space = H5I_INVALID_HID;
  htri_t exists;
  *attr = *type = H5I_INVALID_HID;
  HALO_H5(exists = H5Aexists(loc, name), path, name, "cannot look up attribute");
  if (!exists) HALO_FAIL(HALO_ERR_FORMAT, "%s: attribute %s is missing", path, name);
  HALO_H5(*attr = H5Aopen(loc, name, H5P_DEFAULT), path, name, "cannot open attribute");
  HALO_H5(space = H5Aget_space(*attr), path, name, "cannot read the attribute's dataspace");
  hssize_t points = H5Sget_simple_extent_npoints(space);
  if (points != 1)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: attribute %s holds %lld values, expected a scalar", path, name,
              (long long)points);
  HALO_H5(*type = H5Aget_type(*attr), path, name, "cannot read the attribute's type");
done:
  if (space >= 0) H5Sclose(space);
  return st;
}

halo_status halo_h5_attr_read(hid_t loc, const char *path, const char *name, halo_h5_kind kind,
                              void *value) {
  halo_status st = HALO_OK;
  hid_t attr = H5I_INVALID_HID, type = H5I_INVALID_HID;
  HALO_TRY(attr_open(loc, path, name, &attr, &type));
  if (!type_is(type, kind)) {
    char got[64];
    type_describe(type, got, sizeof got);
    HALO_FAIL(HALO_ERR_FORMAT, "%s: attribute %s has type %s, expected %s", path, name, got,
              kind_name(kind));
  }
  HALO_H5(H5Aread(attr, kind_mem_type(kind), value), path, name, "cannot read attribute");
done:
  if (type >= 0) H5Tclose(type);
  if (attr >= 0) H5Aclose(attr);
  return st;
}

halo_status halo_h5_attr_read_str(hid_t loc, const char *path, const char *name, char *buf,
                                  size_t size) {
  halo_status st = HALO_OK;
  hid_t attr = H5I_INVALID_HID, type = H5I_INVALID_HID, mem = H5I_INVALID_HID;
  char *text = NULL;
  int variable = 0;
  HALO_TRY(attr_open(loc, path, name, &attr, &type));
  if (H5Tget_class(type) != H5T_STRING) {
    char got[64];
    type_describe(type, got, sizeof got);
    HALO_FAIL(HALO_ERR_FORMAT, "%s: attribute %s has type %s, expected a string", path, name, got);
  }
  HALO_H5(variable = H5Tis_variable_str(type), path, name, "cannot inspect the string type");
  if (variable) {
    HALO_H5(mem = H5Tcopy(H5T_C_S1), path, name, "cannot create a string type");
    HALO_H5(H5Tset_size(mem, H5T_VARIABLE), path, name, "cannot size a string type");
    HALO_H5(H5Aread(attr, mem, &text), path, name, "cannot read attribute");
    if (!text) HALO_FAIL(HALO_ERR_FORMAT, "%s: attribute %s is a null string", path, name);
  } else {
    size_t len = H5Tget_size(type);
    if (len == 0 || len > MAX_STRING_ATTR)
      HALO_FAIL(HALO_ERR_FORMAT, "%s: attribute %s has an implausible length %zu", path, name, len);
    HALO_ALLOC(text, len + 1, "a string attribute");
    HALO_H5(H5Aread(attr, type, text), path, name, "cannot read attribute");
    if (H5Tget_strpad(type) == H5T_STR_SPACEPAD)
      while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\0')) text[--len] = '\0';
  }
  size_t n = strlen(text);
  if (n >= size)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: attribute %s is %zu characters long; at most %zu fit", path,
              name, n, size - 1);
  memcpy(buf, text, n + 1);
done:
  if (variable > 0) {
    if (text) H5free_memory(text);
  } else {
    free(text);
  }
  if (mem >= 0) H5Tclose(mem);
  if (type >= 0) H5Tclose(type);
  if (attr >= 0) H5Aclose(attr);
  return st;
}

int halo_h5_exists(hid_t file, const char *path, const char *name) {
  /* H5Lexists fails, rather than answering 0, when an intermediate group is
   * missing, so each prefix is checked in turn. */
  char prefix[256];
  size_t len = strlen(name);
  if (len >= sizeof prefix) {
    halo_log_error("%s: %s: object name too long", path, name);
    return HALO_ERR_ARG;
  }
  for (size_t i = 1; i <= len; i++) {
    if (i < len && name[i] != '/') continue;
    memcpy(prefix, name, i);
    prefix[i] = '\0';
    htri_t exists = H5Lexists(file, prefix, H5P_DEFAULT);
    if (exists < 0) return halo_h5_fail(path, prefix, "cannot look up");
    if (!exists) return 0;
  }
  return 1;
}

halo_status halo_h5_group(hid_t file, const char *path, const char *name) {
  halo_status st = HALO_OK;
  char prefix[256];
  size_t len = strlen(name);
  hid_t gcpl = H5I_INVALID_HID;
  if (len >= sizeof prefix) HALO_FAIL(HALO_ERR_ARG, "%s: %s: object name too long", path, name);
  HALO_H5(gcpl = H5Pcreate(H5P_GROUP_CREATE), path, name, "cannot create a property list");
  HALO_H5(H5Pset_obj_track_times(gcpl, 0), path, name, "cannot turn off time tracking");
  for (size_t i = 1; i < len; i++) {
    if (name[i] != '/') continue;
    memcpy(prefix, name, i);
    prefix[i] = '\0';
    htri_t exists;
    HALO_H5(exists = H5Lexists(file, prefix, H5P_DEFAULT), path, prefix, "cannot look up group");
    if (exists) continue;
    hid_t group;
    HALO_H5(group = H5Gcreate2(file, prefix, H5P_DEFAULT, gcpl, H5P_DEFAULT), path, prefix,
            "cannot create group");
    H5Gclose(group);
  }
done:
  if (gcpl >= 0) H5Pclose(gcpl);
  return st;
}

halo_status halo_h5_write(hid_t file, const char *path, const char *name, halo_h5_kind kind,
                          int rank, const hsize_t *dims, const void *data) {
  halo_status st = HALO_OK;
  hid_t dcpl = H5I_INVALID_HID, space = H5I_INVALID_HID, dset = H5I_INVALID_HID;
  hsize_t maxdims[2], chunk[2];
  size_t per_chunk = CHUNK_BYTES / kind_size(kind);
  if (rank < 1 || rank > 2 || (rank == 2 && dims[1] == 0))
    HALO_FAIL(HALO_ERR_ARG, "%s: %s: cannot store a dataset of rank %d with an empty row", path,
              name, rank);
  hsize_t total = dims[0] * (rank == 2 ? dims[1] : 1);
  for (int d = 0; d < rank; d++) maxdims[d] = dims[d];
  if (dims[0] == 0) maxdims[0] = H5S_UNLIMITED;
  /* Whole rows per chunk where they fit; a row longer than a chunk is split. */
  hsize_t row = 1;
  if (rank == 2) {
    chunk[1] = dims[1] < per_chunk ? dims[1] : per_chunk;
    row = chunk[1];
  }
  hsize_t rows = per_chunk / row;
  chunk[0] = dims[0] == 0 ? 1 : (dims[0] < rows ? dims[0] : rows);
  if (chunk[0] == 0) chunk[0] = 1;

  HALO_TRY(halo_h5_group(file, path, name));
  HALO_H5(dcpl = H5Pcreate(H5P_DATASET_CREATE), path, name, "cannot create a property list");
  HALO_H5(H5Pset_chunk(dcpl, rank, chunk), path, name, "cannot set the chunk shape");
  HALO_H5(H5Pset_fletcher32(dcpl), path, name, "cannot enable the Fletcher-32 filter");
  /* No timestamps: the same shard always gives the same bytes. */
  HALO_H5(H5Pset_obj_track_times(dcpl, 0), path, name, "cannot turn off time tracking");
  HALO_H5(space = H5Screate_simple(rank, dims, maxdims), path, name, "cannot create a dataspace");
  HALO_H5(
      dset = H5Dcreate2(file, name, kind_file_type(kind), space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
      path, name, "cannot create dataset");
  if (total > 0) {
    if (!data)
      HALO_FAIL(HALO_ERR_ARG, "%s: %s: %llu values but no data", path, name,
                (unsigned long long)total);
    HALO_H5(H5Dwrite(dset, kind_mem_type(kind), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), path, name,
            "cannot write dataset");
  }
done:
  if (dset >= 0) H5Dclose(dset);
  if (space >= 0) H5Sclose(space);
  if (dcpl >= 0) H5Pclose(dcpl);
  return st;
}

halo_status halo_h5_read(hid_t file, const char *path, const char *name, halo_h5_kind kind,
                         int rank, hsize_t *dims, int exact, void **out) {
  halo_status st = HALO_OK;
  hid_t dset = H5I_INVALID_HID, type = H5I_INVALID_HID, space = H5I_INVALID_HID;
  void *buf = NULL;
  if (out) *out = NULL;
  int exists = halo_h5_exists(file, path, name);
  if (exists < 0) HALO_TRY((halo_status)exists);
  if (!exists) HALO_FAIL(HALO_ERR_FORMAT, "%s: %s: dataset is missing", path, name);
  HALO_H5(dset = H5Dopen2(file, name, H5P_DEFAULT), path, name, "cannot open as a dataset");
  HALO_H5(type = H5Dget_type(dset), path, name, "cannot read the element type");
  if (!type_is(type, kind)) {
    char got[64];
    type_describe(type, got, sizeof got);
    HALO_FAIL(HALO_ERR_FORMAT, "%s: %s: element type is %s, expected %s", path, name, got,
              kind_name(kind));
  }
  HALO_H5(space = H5Dget_space(dset), path, name, "cannot read the dataspace");
  int got_rank = H5Sget_simple_extent_ndims(space);
  if (got_rank != rank)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: %s: has rank %d, expected %d", path, name, got_rank, rank);
  hsize_t got[2] = {0, 0};
  HALO_H5(H5Sget_simple_extent_dims(space, got, NULL), path, name, "cannot read the shape");
  for (int d = 0; d < rank; d++) {
    int ok = (exact || d > 0) ? got[d] == dims[d] : got[d] <= dims[d];
    if (ok) continue;
    if (rank == 1)
      HALO_FAIL(HALO_ERR_FORMAT, "%s: %s: length is %llu, expected %s%llu", path, name,
                (unsigned long long)got[0], exact ? "" : "at most ", (unsigned long long)dims[0]);
    HALO_FAIL(HALO_ERR_FORMAT, "%s: %s: shape is %llu x %llu, expected %llu x %llu", path, name,
              (unsigned long long)got[0], (unsigned long long)got[1], (unsigned long long)dims[0],
              (unsigned long long)dims[1]);
  }
  dims[0] = got[0];
  hsize_t cols = rank == 2 ? got[1] : 1;
  if (cols > 0 && got[0] > (HSIZE_UNDEF - 1) / kind_size(kind) / cols)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: %s: implausible shape", path, name);
  hsize_t count = got[0] * cols;
  /* Sizes are plausible only if the bytes are really in the file: a forged
   * shape must not make us allocate, and unallocated chunks would silently
   * read back as zeros. */
  hsize_t bytes = count * kind_size(kind);
  if (count > 0) {
    hsize_t file_size = 0;
    HALO_H5(H5Fget_filesize(file, &file_size), path, NULL, "cannot read the file size");
    if (bytes > file_size)
      HALO_FAIL(HALO_ERR_CORRUPT, "%s: %s: %llu bytes of data cannot fit in the %llu-byte file",
                path, name, (unsigned long long)bytes, (unsigned long long)file_size);
    hsize_t stored = H5Dget_storage_size(dset);
    if (stored < bytes)
      HALO_FAIL(HALO_ERR_CORRUPT,
                "%s: %s: only %llu of its %llu bytes are stored (incomplete dataset)", path, name,
                (unsigned long long)stored, (unsigned long long)bytes);
  }
  if (!out) goto done;
  buf = calloc(count ? count : 1, kind_size(kind));
  if (!buf)
    HALO_FAIL(HALO_ERR_NOMEM, "%s: %s: out of memory allocating %llu bytes", path, name,
              (unsigned long long)bytes);
  if (count > 0)
    HALO_H5(H5Dread(dset, kind_mem_type(kind), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), path, name,
            "cannot read dataset");
  *out = buf;
  buf = NULL;
done:
  free(buf);
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  if (dset >= 0) H5Dclose(dset);
  return st;
}

int halo_h5_attr_exists(hid_t loc, const char *path, const char *name) {
  htri_t yes = H5Aexists(loc, name);
  if (yes < 0) return (int)halo_h5_fail(path, name, "cannot look for the attribute");
  return yes > 0;
}
