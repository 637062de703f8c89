/* What a file is, from its first bytes (load-impl.h, "File kinds"): the
 * text readers refuse a binary file by name, with what to do about it,
 * rather than as a line of garbage. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "load-impl.h"

/* PyTorch's legacy (non-zip) torch.save: protocol 2, then the pickled long
 * 0x1950a86a20f9469cfc6c, torch's magic number. */
static const unsigned char TORCH_LEGACY[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                             0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
/* DGL's dgl.save_graphs: kDGLSerializeMagic, a little-endian uint64. */
static const unsigned char DGL_MAGIC[] = {0x3f, 0xa1, 0xb4, 0x46, 0xf0, 0x4f, 0x2e, 0xdd};

static int starts(const unsigned char *b, size_t n, const void *magic, size_t len) {
  return n >= len && memcmp(b, magic, len) == 0;
}

/* A zip's first member, by its local header (name length at byte 26, the
 * name at byte 30): torch.save writes "ARCHIVE/data.pkl" or
 * "ARCHIVE/byteorder" first (PyTorch >= 2.1) and numpy.savez "NAME.npy". */
static load_file_kind zip_kind(const unsigned char *b, size_t n) {
  if (n < 30) return LOAD_FILE_ZIP;
  const size_t len = (size_t)b[26] | (size_t)b[27] << 8;
  if (30 + len > n) return LOAD_FILE_ZIP;
  const char *name = (const char *)b + 30;
  const char *slash = memchr(name, '/', len);
  if (slash) {
    const size_t rest = len - (size_t)(slash + 1 - name);
    const char *tail = slash + 1;
    if ((rest == 8 && memcmp(tail, "data.pkl", 8) == 0) ||
        (rest == 9 && memcmp(tail, "byteorder", 9) == 0) ||
        (rest == 7 && memcmp(tail, "version", 7) == 0))
      return LOAD_FILE_TORCH;
  }
  if (len >= 4 && memcmp(name + len - 4, ".npy", 4) == 0) return LOAD_FILE_NPZ;
  return LOAD_FILE_ZIP;
}

load_file_kind load_sniff_bytes(const unsigned char *b, size_t n) {
  if (starts(b, n, "\x1f\x8b", 2)) return LOAD_FILE_GZIP;
  if (starts(b, n, "\x93NUMPY", 6)) return LOAD_FILE_NPY;
  if (starts(b, n, "PK\x03\x04", 4)) return zip_kind(b, n);
  if (starts(b, n, TORCH_LEGACY, sizeof TORCH_LEGACY)) return LOAD_FILE_TORCH;
  if (n >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5) return LOAD_FILE_PICKLE;
  if (starts(b, n, "\x89HDF\r\n\x1a\n", 8)) return LOAD_FILE_HDF5;
  if (starts(b, n, "PAR1", 4)) return LOAD_FILE_PARQUET;
  if (starts(b, n, DGL_MAGIC, sizeof DGL_MAGIC)) return LOAD_FILE_DGL;
  return LOAD_FILE_TEXT;
}

load_file_kind load_sniff(const char *path) {
  unsigned char b[LOAD_SNIFF_BYTES];
  ssize_t got = 0;
  int fd = open(path, O_RDONLY);
  if (fd < 0) return LOAD_FILE_TEXT; /* the reader names the failure to open it */
  while (got < (ssize_t)sizeof b) {
    ssize_t k = read(fd, b + got, sizeof b - (size_t)got);
    if (k <= 0) break;
    got += k;
  }
  close(fd);
  return load_sniff_bytes(b, (size_t)got);
}

const char *load_file_kind_name(load_file_kind kind) {
  switch (kind) {
    case LOAD_FILE_TEXT:
      return "text";
    case LOAD_FILE_GZIP:
      return "gzip";
    case LOAD_FILE_NPY:
      return "a NumPy .npy file";
    case LOAD_FILE_NPZ:
      return "a NumPy .npz archive";
    case LOAD_FILE_TORCH:
      return "a PyTorch file (torch.save)";
    case LOAD_FILE_PICKLE:
      return "a Python pickle";
    case LOAD_FILE_HDF5:
      return "an HDF5 file";
    case LOAD_FILE_PARQUET:
      return "a Parquet file";
    case LOAD_FILE_DGL:
      return "a DGL graph file (dgl.save_graphs)";
    case LOAD_FILE_ZIP:
      return "a zip archive";
  }
  return "an unknown kind of file";
}

/* What to do with a file of `kind` where text is expected. */
static const char *kind_hint(load_file_kind kind) {
  switch (kind) {
    case LOAD_FILE_NPY:
      return "a .npy array is read as --input (an edge array), --features or --labels; here "
             "text is expected (a --split folder's train.csv, valid.csv and test.csv hold one "
             "node id a line: numpy.savetxt('train.csv', ids, fmt='%d'))";
    case LOAD_FILE_NPZ:
      return "an .npz archive is read as --input (halo-partition --input G.npz); here text is "
             "expected (a --split folder's files hold one node id a line), and --features and "
             "--labels take .npy arrays or text";
    case LOAD_FILE_TORCH:
    case LOAD_FILE_DGL:
      return "convert it with scripts/halo-import";
    case LOAD_FILE_PICKLE:
      return "halo reads no pickles: save the arrays with numpy.savez and convert them with "
             "scripts/halo-import";
    case LOAD_FILE_HDF5:
      return "halo reads graphs from text, not HDF5 (a halo shard folder is halo-train's input, "
             "not halo-partition's)";
    case LOAD_FILE_PARQUET:
      return "write it as CSV (pandas.read_parquet(f).to_csv('x.csv', index=False))";
    case LOAD_FILE_ZIP:
      return "unzip it and give the text file inside";
    default:
      return "";
  }
}

halo_status load_sniff_text(const char *path, const unsigned char *b, size_t n) {
  halo_status st = HALO_OK;
  const load_file_kind kind = load_sniff_bytes(b, n);
  if (kind == LOAD_FILE_TEXT || kind == LOAD_FILE_GZIP) goto done;
  HALO_FAIL(HALO_ERR_FORMAT, "%s: looks like %s, not a text file; %s", path,
            load_file_kind_name(kind), kind_hint(kind));
done:
  return st;
}
