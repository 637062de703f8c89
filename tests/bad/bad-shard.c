/* bad-shard: a test-only tool for the bad-input corpus (tests/bad/cases.txt).
 *
 *   bad-shard check DIR         reads DIR/manifest.h5 and every part against
 *                               it, as a trainer would; prints one summary
 *                               line, or the reader's one error line and
 *                               exits 1
 *   bad-shard spoil DIR CASE    damages a real partition in place, through
 *                               HDF5 itself (so checksums stay right and only
 *                               halo's own checks can object)
 *
 * CASEs: format-version, manifest-format-version, missing-dataset,
 * wrong-type, wrong-shape, index-out-of-range, negative-count,
 * label-out-of-range, truncated, missing-part.  Each spoils part 0 unless
 * its name says otherwise.
 */
#include <hdf5.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halo-shard.h"

static int check(const char *dir) {
  halo_status st = HALO_OK;
  halo_manifest *m = NULL;
  halo_shard *s = NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/manifest.h5", dir);
  HALO_TRY(halo_manifest_read(path, &m));
  int64_t nnz = 0;
  for (int32_t p = 0; p < m->parts; p++) {
    HALO_TRY(halo_shard_path(path, sizeof path, dir, p, m->parts));
    HALO_TRY(halo_shard_read(path, m, &s));
    nnz += s->nnz;
    halo_shard_destroy(&s);
  }
  printf("%s: %d parts, %" PRId64 " nodes, %" PRId64 " local edges: valid\n", dir, (int)m->parts,
         m->nodes, nnz);
done:
  halo_shard_destroy(&s);
  halo_manifest_destroy(&m);
  return st == HALO_OK ? 0 : 1;
}

/* The spoilers below stop at the first HDF5 failure: a tool for tests. */
static void need(int ok, const char *what) {
  if (ok) return;
  fprintf(stderr, "bad-shard: %s failed\n", what);
  exit(2);
}

static void set_attr_i64(hid_t file, const char *name, int64_t value) {
  hid_t attr = H5Aopen(file, name, H5P_DEFAULT);
  need(attr >= 0, name);
  need(H5Awrite(attr, H5T_NATIVE_INT64, &value) >= 0, name);
  H5Aclose(attr);
}

static int64_t get_attr_i64(hid_t file, const char *name) {
  int64_t value = 0;
  hid_t attr = H5Aopen(file, name, H5P_DEFAULT);
  need(attr >= 0 && H5Aread(attr, H5T_NATIVE_INT64, &value) >= 0, name);
  H5Aclose(attr);
  return value;
}

static void set_element_i64(hid_t file, const char *name, hsize_t index, int64_t value) {
  hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
  need(dset >= 0, name);
  hid_t space = H5Dget_space(dset);
  hsize_t one = 1;
  need(H5Sselect_elements(space, H5S_SELECT_SET, 1, &index) >= 0, name);
  hid_t mem = H5Screate_simple(1, &one, NULL);
  need(H5Dwrite(dset, H5T_NATIVE_INT64, mem, space, H5P_DEFAULT, &value) >= 0, name);
  H5Sclose(mem);
  H5Sclose(space);
  H5Dclose(dset);
}

/* Replaces a rank-1 dataset by one of `type` and `delta` more elements. */
static void replace(hid_t file, const char *name, hid_t type, int delta) {
  hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
  need(dset >= 0, name);
  hid_t space = H5Dget_space(dset);
  hsize_t len = (hsize_t)H5Sget_simple_extent_npoints(space);
  double *values = calloc(len + 1, sizeof *values);
  need(values && H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0,
       name);
  H5Sclose(space);
  H5Dclose(dset);
  need(H5Ldelete(file, name, H5P_DEFAULT) >= 0, name);
  hsize_t dims = len + (hsize_t)delta;
  space = H5Screate_simple(1, &dims, NULL);
  dset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  need(dset >= 0 && H5Dwrite(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0,
       name);
  H5Dclose(dset);
  H5Sclose(space);
  free(values);
}

static int spoil(const char *dir, const char *what) {
  char part[4096], manifest[4096];
  snprintf(manifest, sizeof manifest, "%s/manifest.h5", dir);
  snprintf(part, sizeof part, "%s/part-00000-of-00002.h5", dir);
  if (strcmp(what, "truncated") == 0) {
    struct stat sb;
    need(stat(part, &sb) == 0 && truncate(part, sb.st_size / 2) == 0, "truncate");
    return 0;
  }
  if (strcmp(what, "missing-part") == 0) {
    snprintf(part, sizeof part, "%s/part-00001-of-00002.h5", dir);
    need(unlink(part) == 0, "unlink");
    return 0;
  }
  int on_manifest = strncmp(what, "manifest-", 9) == 0;
  hid_t file = H5Fopen(on_manifest ? manifest : part, H5F_ACC_RDWR, H5P_DEFAULT);
  need(file >= 0, "open");
  if (strcmp(what, "format-version") == 0 || strcmp(what, "manifest-format-version") == 0) {
    set_attr_i64(file, "format_version", HALO_SHARD_FORMAT_VERSION + 1);
  } else if (strcmp(what, "missing-dataset") == 0) {
    need(H5Ldelete(file, "/graph/indices", H5P_DEFAULT) >= 0, "delete");
  } else if (strcmp(what, "wrong-type") == 0) {
    replace(file, "/graph/indices", H5T_IEEE_F64LE, 0);
  } else if (strcmp(what, "wrong-shape") == 0) {
    replace(file, "/nodes/degree", H5T_STD_I64LE, -1);
  } else if (strcmp(what, "index-out-of-range") == 0) {
    int64_t local = get_attr_i64(file, "n_owned") + get_attr_i64(file, "n_halo");
    set_element_i64(file, "/graph/indices", 0, local + 5);
  } else if (strcmp(what, "negative-count") == 0) {
    set_attr_i64(file, "n_halo", -1);
  } else if (strcmp(what, "label-out-of-range") == 0) {
    set_element_i64(file, "/labels", 0, get_attr_i64(file, "classes") + 3);
  } else {
    fprintf(stderr, "bad-shard: unknown case '%s'\n", what);
    return 2;
  }
  need(H5Fclose(file) >= 0, "close");
  return 0;
}

int main(int argc, char **argv) {
  halo_log_set_prefix("bad-shard");
  if (argc == 3 && strcmp(argv[1], "check") == 0) return check(argv[2]);
  if (argc == 4 && strcmp(argv[1], "spoil") == 0) return spoil(argv[2], argv[3]);
  fprintf(stderr, "usage: bad-shard check DIR | bad-shard spoil DIR CASE\n");
  return 2;
}
