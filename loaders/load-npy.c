/* NumPy .npy arrays (format versions 1.0, 2.0 and 3.0), alone or as a
 * member of an .npz archive (load-npz.c), read without a whole copy:
 *
 *   "\x93NUMPY" major minor  header length (2 bytes LE in 1.0, 4 in 2.0/3.0)
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (N, F), }  padded with
 *   spaces and '\n' so that the data starts at a multiple of 64 (16 in old
 *   files), then the elements, C order (row-major) or Fortran order
 *   (column-major).
 *
 * dtypes: bool, int8..int64, uint8..uint64, float16/32/64, little endian,
 * big endian or one byte ('<', '>', '|', '=').  Object, string, complex,
 * datetime and structured dtypes are refused, as is an array of more than
 * two dimensions and a file whose size is not the header's shape.  Every
 * message names the file (or ARCHIVE:MEMBER) and the byte it is about.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "load-impl.h"

/* ---- Byte sources ------------------------------------------------------ */

enum { SRC_IN_BYTES = 1 << 18 };

halo_status load_src_pread(const load_src *s, int64_t off, size_t len, void *buf) {
  halo_status st = HALO_OK;
  size_t got = 0;
  if (s->deflated)
    HALO_FAIL(HALO_ERR_UNSUPPORTED, "%s: a deflated member cannot be read by slices", s->name);
  if (off < 0 || off + (int64_t)len > s->size)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": the data ends at byte %" PRId64
                               ", before the %zu bytes asked for",
              s->name, off, s->size, len);
  while (got < len) {
    const ssize_t k = pread(s->fd, (char *)buf + got, len - got, (off_t)(s->base + off + (int64_t)got));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0)
      HALO_FAIL(HALO_ERR_IO, "%s: byte %" PRId64 ": read failed: %s", s->name,
                off + (int64_t)got, strerror(errno));
    if (k == 0)
      HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": the file ends there (truncated?)", s->name,
                off + (int64_t)got);
    got += (size_t)k;
  }
done:
  return st;
}

/* The next `len` inflated bytes of a deflated member. */
static halo_status src_inflate(load_src *s, unsigned char *buf, size_t len) {
  halo_status st = HALO_OK;
  if (!s->in) {
    HALO_ALLOC(s->in, SRC_IN_BYTES, "inflate buffer");
    if (inflateInit2(&s->z, -MAX_WBITS) != Z_OK)
      HALO_FAIL(HALO_ERR_NOMEM, "%s: cannot start inflating", s->name);
    s->z_open = 1;
  }
  s->z.next_out = buf;
  s->z.avail_out = (uInt)len;
  while (s->z.avail_out > 0) {
    if (s->z.avail_in == 0 && s->cpos < s->csize) {
      int64_t want = s->csize - s->cpos;
      if (want > SRC_IN_BYTES) want = SRC_IN_BYTES;
      const load_src plain = {.name = s->name, .fd = s->fd, .base = s->base, .size = s->csize};
      HALO_TRY(load_src_pread(&plain, s->cpos, (size_t)want, s->in));
      s->cpos += want;
      s->z.next_in = s->in;
      s->z.avail_in = (uInt)want;
    }
    const uInt before = s->z.avail_in;
    const int rc = inflate(&s->z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END && s->z.avail_out > 0)
      HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": the deflated data ends there, before the %" PRId64
                                 " bytes of the member",
                s->name, s->pos + (int64_t)(len - s->z.avail_out), s->size);
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK && !(rc == Z_BUF_ERROR && before > 0))
      HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": corrupt deflate data (%s), at byte %" PRId64
                                 " of the compressed member",
                s->name, s->pos + (int64_t)(len - s->z.avail_out),
                s->z.msg ? s->z.msg : "zlib error", s->cpos - (int64_t)s->z.avail_in);
    if (rc == Z_BUF_ERROR && s->cpos >= s->csize && s->z.avail_in == 0)
      HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": the compressed member ends there (truncated?)",
                s->name, s->pos + (int64_t)(len - s->z.avail_out));
  }
done:
  return st;
}

halo_status load_src_read(load_src *s, void *buf, size_t len) {
  halo_status st = HALO_OK;
  if (s->pos + (int64_t)len > s->size)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": the data ends at byte %" PRId64
                               " (truncated: %zu more bytes were expected)",
              s->name, s->pos, s->size, (size_t)(s->pos + (int64_t)len - s->size));
  if (s->deflated)
    HALO_TRY(src_inflate(s, buf, len));
  else
    HALO_TRY(load_src_pread(s, s->pos, len, buf));
  if (s->check_crc) s->crc = (uint32_t)crc32(s->crc, buf, (uInt)len);
  if (s->digest) halo_digest_chunked_update(s->digest, buf, len);
  s->pos += (int64_t)len;
  if (s->pos == s->size && s->check_crc && s->crc != s->want_crc)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": CRC-32 %08" PRIx32
                               " of the member's bytes differs from the archive's %08" PRIx32
                               " (corrupt member)",
              s->name, s->pos, s->crc, s->want_crc);
done:
  return st;
}

void load_src_close(load_src *s) {
  if (s->z_open) inflateEnd(&s->z);
  s->z_open = 0;
  free(s->in);
  s->in = NULL;
}

/* ---- Header ------------------------------------------------------------ */

static const char MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

int load_npy_is_npy(const char *path) {
  unsigned char head[6] = {0};
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  const size_t got = fread(head, 1, sizeof head, f);
  fclose(f);
  return got == sizeof head && memcmp(head, MAGIC, sizeof MAGIC) == 0;
}

int halo_load_is_npy(const char *path) { return load_npy_is_npy(path); }

/* The value after 'key': in the header dict, or NULL. */
static const char *dict_value(const char *h, const char *key) {
  char quoted[2][32];
  snprintf(quoted[0], sizeof quoted[0], "'%s'", key);
  snprintf(quoted[1], sizeof quoted[1], "\"%s\"", key);
  for (int q = 0; q < 2; q++) {
    const char *p = strstr(h, quoted[q]);
    if (!p) continue;
    p += strlen(quoted[q]);
    while (*p == ' ') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
  }
  return NULL;
}

void load_byte_error(const char *name, int64_t at, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  halo_log_error("%s: byte %" PRId64 ": %s", name, at, msg);
}

/* Fails with "NAME: byte OFF: ..." for a header at offset `at`. */
#define NPY_FAIL(code, at, ...) LOAD_FAIL_BYTE(a->name, (at), (code), __VA_ARGS__)

static halo_status parse_descr(load_npy *a, const char *v, int64_t at) {
  halo_status st = HALO_OK;
  if (*v == '[')
    NPY_FAIL(HALO_ERR_UNSUPPORTED, at,
             "structured dtype %.40s: only plain numeric arrays (bool, int, uint, float) are read",
             v);
  const char q = *v;
  if (q != '\'' && q != '"') NPY_FAIL(HALO_ERR_FORMAT, at, "'descr' is not a string");
  const char *end = strchr(v + 1, q);
  if (!end || end - v - 1 >= (ptrdiff_t)sizeof a->descr)
    NPY_FAIL(HALO_ERR_FORMAT, at, "'descr' is not a short string");
  memcpy(a->descr, v + 1, (size_t)(end - v - 1));
  a->descr[end - v - 1] = '\0';
  const char *d = a->descr;
  char order = '=';
  if (*d == '<' || *d == '>' || *d == '|' || *d == '=') order = *d++;
  char kind = *d++;
  if (kind == '?') {
    kind = 'b';
    a->item = 1;
  } else {
    char *rest = NULL;
    const long size = strtol(d, &rest, 10);
    a->item = (rest != d && *rest == '\0' && size > 0 && size <= 8) ? (int)size : 0;
  }
  const int ok = (kind == 'b' && a->item == 1) ||
                 ((kind == 'i' || kind == 'u') &&
                  (a->item == 1 || a->item == 2 || a->item == 4 || a->item == 8)) ||
                 (kind == 'f' && (a->item == 2 || a->item == 4 || a->item == 8));
  if (!ok) {
    const char *what = kind == 'O'                ? "object (pickled Python objects)"
                       : kind == 'U' || kind == 'S' ? "string"
                       : kind == 'c'                ? "complex"
                       : kind == 'M' || kind == 'm' ? "datetime"
                       : kind == 'V'                ? "void (structured)"
                                                    : "unknown";
    NPY_FAIL(HALO_ERR_UNSUPPORTED, at,
             "dtype '%s' is %s: only bool, int8-64, uint8-64 and float16/32/64 are read",
             a->descr, what);
  }
  a->kind = kind;
  const uint16_t probe = 1;
  const int little = *(const uint8_t *)&probe == 1;
  a->swap = a->item > 1 && ((order == '>' && little) || (order == '<' && !little));
done:
  return st;
}

static halo_status parse_header(load_npy *a, const char *h, int64_t at) {
  halo_status st = HALO_OK;
  const char *v = dict_value(h, "descr");
  if (!v) NPY_FAIL(HALO_ERR_FORMAT, at, "header has no 'descr'");
  HALO_TRY(parse_descr(a, v, at));
  v = dict_value(h, "fortran_order");
  if (!v) NPY_FAIL(HALO_ERR_FORMAT, at, "header has no 'fortran_order'");
  if (strncmp(v, "True", 4) == 0)
    a->fortran = 1;
  else if (strncmp(v, "False", 5) == 0)
    a->fortran = 0;
  else
    NPY_FAIL(HALO_ERR_FORMAT, at, "'fortran_order' is neither True nor False");
  v = dict_value(h, "shape");
  if (!v || *v != '(') NPY_FAIL(HALO_ERR_FORMAT, at, "header has no 'shape' tuple");
  v++;
  a->ndim = 0;
  for (;;) {
    while (*v == ' ') v++;
    if (*v == ')') break;
    char *rest = NULL;
    errno = 0;
    const long long dim = strtoll(v, &rest, 10);
    if (rest == v || dim < 0 || errno == ERANGE)
      NPY_FAIL(HALO_ERR_FORMAT, at, "'shape' holds '%.20s', not a size", v);
    if (a->ndim == 2)
      NPY_FAIL(HALO_ERR_UNSUPPORTED, at,
               "shape has more than 2 dimensions: only vectors and matrices are read");
    a->shape[a->ndim++] = dim;
    v = rest;
    while (*v == ' ' || *v == 'L') v++;
    if (*v == ',') v++;
  }
  a->rows = a->ndim >= 1 ? a->shape[0] : 1;
  a->cols = a->ndim == 2 ? a->shape[1] : 1;
done:
  return st;
}

static halo_status read_header(load_npy *a) {
  halo_status st = HALO_OK;
  char *h = NULL;
  unsigned char pre[12];
  HALO_TRY(load_src_read(&a->src, pre, 8));
  if (memcmp(pre, MAGIC, sizeof MAGIC) != 0)
    NPY_FAIL(HALO_ERR_FORMAT, 0, "not a NumPy .npy array (no \\x93NUMPY magic)");
  const int major = pre[6];
  if (major < 1 || major > 3)
    NPY_FAIL(HALO_ERR_UNSUPPORTED, 6, "format version %d.%d: versions 1.0, 2.0 and 3.0 are read",
             major, pre[7]);
  uint32_t hlen = 0;
  if (major == 1) {
    HALO_TRY(load_src_read(&a->src, pre + 8, 2));
    hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
  } else {
    HALO_TRY(load_src_read(&a->src, pre + 8, 4));
    hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 |
           (uint32_t)pre[11] << 24;
  }
  const int64_t at = a->src.pos;
  if (hlen > (1u << 24)) NPY_FAIL(HALO_ERR_FORMAT, at - 4, "header length %u is too long", hlen);
  HALO_ALLOC(h, (size_t)hlen + 1, "npy header");
  HALO_TRY(load_src_read(&a->src, h, hlen));
  h[hlen] = '\0';
  if (strlen(h) != hlen || hlen == 0 || h[0] != '{')
    NPY_FAIL(HALO_ERR_FORMAT, at, "header is not a Python dict");
  /* Whitespace as Python reads it between a dict's tokens, so the parser
   * skips blanks only; any other control byte cannot be in a valid header
   * and must not reach an error line (one line, printable). */
  for (char *c = h; *c; c++)
    if (*c == '\n' || *c == '\r' || *c == '\t' || *c == '\f' || *c == '\v')
      *c = ' ';
    else if ((unsigned char)*c < 0x20 || *c == 0x7f)
      *c = '?';
  HALO_TRY(parse_header(a, h, at));
  a->data_at = a->src.pos;
  /* The shape against the bytes there are: a truncated file is refused
   * here, not after its rows were read. */
  const double want = (double)a->rows * (double)a->cols * (double)a->item;
  const int64_t have = a->src.size - a->data_at;
  if (want > 9e18 || (int64_t)want != have) {
    char shape[64];
    if (a->ndim == 2)
      snprintf(shape, sizeof shape, "(%" PRId64 ", %" PRId64 ")", a->shape[0], a->shape[1]);
    else if (a->ndim == 1)
      snprintf(shape, sizeof shape, "(%" PRId64 ",)", a->shape[0]);
    else
      snprintf(shape, sizeof shape, "()");
    NPY_FAIL(HALO_ERR_FORMAT, a->data_at,
             "shape %s of '%s' (%.0f bytes) disagrees with the %" PRId64
             " data bytes there are (truncated, or not a whole array)",
             shape, a->descr, want, have);
  }
done:
  free(h);
  return st;
}

halo_status load_npy_open_src(load_npy *a, const load_src *src, const char *name) {
  halo_status st = HALO_OK;
  *a = (load_npy){.fd = -1};
  a->src = *src;
  snprintf(a->name, sizeof a->name, "%s", name);
  a->src.name = a->name;
  HALO_TRY(read_header(a));
done:
  return st;
}

halo_status load_npy_open(load_npy *a, const char *path, halo_digest_chunked *digest) {
  halo_status st = HALO_OK;
  struct stat sb;
  *a = (load_npy){.fd = -1};
  snprintf(a->name, sizeof a->name, "%s", path);
  a->fd = open(path, O_RDONLY);
  if (a->fd < 0) HALO_FAIL(HALO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(a->fd, &sb) != 0) HALO_FAIL(HALO_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
  a->src = (load_src){.name = a->name, .fd = a->fd, .size = (int64_t)sb.st_size, .digest = digest};
  HALO_TRY(read_header(a));
done:
  return st;
}

void load_npy_close(load_npy *a) {
  load_src_close(&a->src);
  if (a->fd >= 0) close(a->fd);
  a->fd = -1;
}

/* ---- Elements ---------------------------------------------------------- */

static float half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h >> 15) << 31;
  const int e = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  float f;
  if (e == 0) {
    f = ldexpf((float)mant, -24); /* zero and subnormals */
  } else if (e == 31) {
    f = mant ? NAN : INFINITY;
  } else {
    f = ldexpf((float)(mant | 0x400), e - 25);
  }
  return sign ? -f : f;
}

/* One element at p (a->item bytes, file byte order) as a double and as an
 * int64 (exact for integers; uint64 above INT64_MAX saturates). */
static void element(const load_npy *a, const unsigned char *p, double *d, int64_t *i) {
  unsigned char b[8];
  for (int k = 0; k < a->item; k++) b[k] = a->swap ? p[a->item - 1 - k] : p[k];
  switch (a->kind) {
    case 'b':
      *i = b[0] != 0;
      *d = (double)*i;
      return;
    case 'i': {
      int64_t v;
      if (a->item == 1) { int8_t x; memcpy(&x, b, 1); v = x; }
      else if (a->item == 2) { int16_t x; memcpy(&x, b, 2); v = x; }
      else if (a->item == 4) { int32_t x; memcpy(&x, b, 4); v = x; }
      else { memcpy(&v, b, 8); }
      *i = v;
      *d = (double)v;
      return;
    }
    case 'u': {
      uint64_t v;
      if (a->item == 1) { v = b[0]; }
      else if (a->item == 2) { uint16_t x; memcpy(&x, b, 2); v = x; }
      else if (a->item == 4) { uint32_t x; memcpy(&x, b, 4); v = x; }
      else { memcpy(&v, b, 8); }
      *i = v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
      *d = (double)v;
      return;
    }
    default: {
      double v;
      if (a->item == 2) {
        uint16_t x;
        memcpy(&x, b, 2);
        v = half_to_float(x);
      } else if (a->item == 4) {
        float x;
        memcpy(&x, b, 4);
        v = x;
      } else {
        memcpy(&v, b, 8);
      }
      *d = v;
      *i = isfinite(v) && fabs(v) < 9e18 ? (int64_t)v : INT64_MIN;
      return;
    }
  }
}

/* The common cases in tight loops: the machine's byte order, float32 or
 * float64 to float, and int32, int64 or float64 as they are. */
#define CONVERT_LOOP(FROM, TO)                  \
  do {                                          \
    for (int64_t k = 0; k < count; k++) {       \
      FROM v_;                                  \
      memcpy(&v_, (const char *)raw + k * (int64_t)sizeof v_, sizeof v_); \
      ((TO *)out)[k] = (TO)v_;                  \
    }                                           \
    return;                                     \
  } while (0)

void load_npy_convert(const load_npy *a, const void *raw, int64_t count, load_npy_type t,
                      void *out) {
  if (!a->swap) {
    if (a->kind == 'f' && a->item == 4 && t == LOAD_NPY_F32) {
      memcpy(out, raw, (size_t)count * 4);
      return;
    }
    if (a->kind == 'f' && a->item == 8 && t == LOAD_NPY_F32) CONVERT_LOOP(double, float);
    if (a->kind == 'f' && a->item == 4 && t == LOAD_NPY_F64) CONVERT_LOOP(float, double);
    if (a->kind == 'f' && a->item == 8 && t == LOAD_NPY_F64) CONVERT_LOOP(double, double);
    if (a->kind == 'i' && a->item == 8 && t == LOAD_NPY_I64) {
      memcpy(out, raw, (size_t)count * 8);
      return;
    }
    if (a->kind == 'i' && a->item == 4 && t == LOAD_NPY_I64) CONVERT_LOOP(int32_t, int64_t);
    if (a->kind == 'i' && a->item == 8 && t == LOAD_NPY_F64) CONVERT_LOOP(int64_t, double);
  }
  const unsigned char *p = raw;
  for (int64_t k = 0; k < count; k++, p += a->item) {
    double d;
    int64_t i;
    element(a, p, &d, &i);
    if (t == LOAD_NPY_F32)
      ((float *)out)[k] = (float)d;
    else if (t == LOAD_NPY_F64)
      ((double *)out)[k] = d;
    else
      ((int64_t *)out)[k] = i;
  }
}

static size_t type_size(load_npy_type t) { return t == LOAD_NPY_F32 ? 4 : 8; }

/* Elements per block of a stream. */
enum { STREAM_ELEMENTS = 1 << 16 };

halo_status load_npy_stream(load_npy *a, load_npy_type t, load_npy_emit emit, void *ctx) {
  halo_status st = HALO_OK;
  unsigned char *raw = NULL;
  void *vals = NULL;
  const int64_t total = a->rows * a->cols;
  HALO_ALLOC(raw, (size_t)STREAM_ELEMENTS * 8, "npy block");
  HALO_ALLOC(vals, (size_t)STREAM_ELEMENTS * 8, "npy block");
  if (a->src.pos != a->data_at)
    HALO_FAIL(HALO_ERR_UNSUPPORTED, "%s: the array was read before", a->name);
  for (int64_t first = 0; first < total;) {
    const int64_t count = total - first < STREAM_ELEMENTS ? total - first : STREAM_ELEMENTS;
    HALO_TRY(load_src_read(&a->src, raw, (size_t)count * (size_t)a->item));
    load_npy_convert(a, raw, count, t, vals);
    HALO_TRY(emit(ctx, first, count, vals));
    first += count;
  }
done:
  free(vals);
  free(raw);
  return st;
}

typedef struct whole {
  const load_npy *a;
  load_npy_type t;
  char *out;
} whole;

static halo_status put_whole(void *ctx, int64_t first, int64_t count, const void *vals) {
  const whole *w = ctx;
  const size_t size = type_size(w->t);
  if (!w->a->fortran) {
    memcpy(w->out + (size_t)first * size, vals, (size_t)count * size);
    return HALO_OK;
  }
  const int64_t rows = w->a->rows, cols = w->a->cols;
  for (int64_t k = 0; k < count; k++) {
    const int64_t e = first + k, r = e % rows, c = e / rows;
    memcpy(w->out + (size_t)(r * cols + c) * size, (const char *)vals + (size_t)k * size, size);
  }
  return HALO_OK;
}

halo_status load_npy_read_all(load_npy *a, load_npy_type t, void *out) {
  whole w = {.a = a, .t = t, .out = out};
  return load_npy_stream(a, t, put_whole, &w);
}

halo_status load_npy_read_rows(load_npy *a, int64_t r0, int64_t r1, load_npy_type t, void *out) {
  halo_status st = HALO_OK;
  unsigned char *raw = NULL;
  const int64_t rows = r1 - r0, cols = a->cols;
  const size_t size = type_size(t);
  if (rows <= 0 || cols == 0) goto done;
  HALO_ALLOC(raw, (size_t)STREAM_ELEMENTS * 8, "npy block");
  if (!a->fortran) {
    /* Rows [r0, r1) are one run of bytes. */
    const int64_t total = rows * cols;
    for (int64_t first = 0; first < total; first += STREAM_ELEMENTS) {
      const int64_t count = total - first < STREAM_ELEMENTS ? total - first : STREAM_ELEMENTS;
      HALO_TRY(load_src_pread(&a->src, a->data_at + (r0 * cols + first) * a->item,
                              (size_t)count * (size_t)a->item, raw));
      load_npy_convert(a, raw, count, t, (char *)out + (size_t)first * size);
    }
    goto done;
  }
  /* Fortran order: the slice is a run of each column. */
  void *vals = NULL;
  HALO_ALLOC(vals, (size_t)STREAM_ELEMENTS * 8, "npy block");
  for (int64_t c = 0; c < cols && st == HALO_OK; c++) {
    for (int64_t first = 0; first < rows && st == HALO_OK; first += STREAM_ELEMENTS) {
      const int64_t count = rows - first < STREAM_ELEMENTS ? rows - first : STREAM_ELEMENTS;
      st = load_src_pread(&a->src, a->data_at + (c * a->rows + r0 + first) * a->item,
                          (size_t)count * (size_t)a->item, raw);
      if (st != HALO_OK) break;
      load_npy_convert(a, raw, count, t, vals);
      for (int64_t k = 0; k < count; k++)
        memcpy((char *)out + (size_t)((first + k) * cols + c) * size, (char *)vals + (size_t)k * size,
               size);
    }
  }
  free(vals);
done:
  free(raw);
  return st;
}
