/* The line reader and the number scanners every text loader is built on. */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "load-impl.h"

enum {
  READER_BLOCK = 1 << 20,    /* decompressed bytes asked for per fill */
  READER_IN = 256 * 1024,    /* file bytes read per read() */
  READER_MAX_LINE = 1 << 30, /* a longer line is surely not a text graph */
};

static int reader_fill(load_reader *r);
static halo_status fill_plain(load_reader *r, char *dst, size_t room, size_t *got);

/* read() until `want` bytes or the end of the file; -1 (errno set) on error. */
static ssize_t read_full(int fd, void *dst, size_t want) {
  size_t got = 0;
  while (got < want) {
    ssize_t k = read(fd, (char *)dst + got, want - got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    if (k == 0) break;
    got += (size_t)k;
  }
  return (ssize_t)got;
}

/* Tops up the input buffer behind the bytes zlib has not consumed yet. */
static halo_status read_input(load_reader *r) {
  halo_status st = HALO_OK;
  if (r->in_eof) goto done;
  if (r->z.avail_in > 0 && r->z.next_in != r->in) memmove(r->in, r->z.next_in, r->z.avail_in);
  r->z.next_in = r->in;
  ssize_t got = read_full(r->fd, r->in + r->z.avail_in, r->in_cap - r->z.avail_in);
  if (got < 0) HALO_FAIL(HALO_ERR_IO, "%s: read failed: %s", r->path, strerror(errno));
  if ((size_t)got < r->in_cap - r->z.avail_in) r->in_eof = 1;
  r->z.avail_in += (uInt)got;
  r->in_bytes += (uint64_t)got;
done:
  return st;
}

static halo_status reader_open(load_reader *r, const char *path, halo_digest_chunked *digest,
                               int allow_empty) {
  halo_status st = HALO_OK;
  *r = (load_reader){.path = path, .digest = digest, .slice_end = -1};
  struct stat sb;
  int fd = open(path, O_RDONLY);
  if (fd < 0) HALO_FAIL(HALO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  r->fd = fd;
  r->opened = 1;
  if (fstat(fd, &sb) != 0) HALO_FAIL(HALO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (S_ISDIR(sb.st_mode)) HALO_FAIL(HALO_ERR_IO, "%s: is a folder, expected a file", path);
  r->in_cap = READER_IN;
  HALO_ALLOC(r->in, r->in_cap, "read buffer");
  r->cap = READER_BLOCK;
  HALO_ALLOC(r->buf, r->cap + 1, "read buffer");

  /* Gzip or not is decided by the first two bytes, as gzip itself does. */
  HALO_TRY(read_input(r));
  HALO_TRY(load_sniff_text(path, r->in, r->z.avail_in));
  r->gzip = r->z.avail_in >= 2 && r->in[0] == 0x1f && r->in[1] == 0x8b;
  if (r->gzip) {
    if (inflateInit2(&r->z, 15 + 16) != Z_OK) /* 15 + 16: gzip wrapper only */
      HALO_FAIL(HALO_ERR_NOMEM, "%s: cannot start zlib: %s", path,
                r->z.msg ? r->z.msg : "out of memory");
    r->z_live = 1;
  }

  /* Read the first block now, so that an empty file is reported here. */
  while (r->pos == r->end && !r->eof) HALO_TRY(reader_fill(r));
  if (r->pos == r->end && !allow_empty) HALO_FAIL(HALO_ERR_PARSE, "%s: file is empty", path);
done:
  if (st < 0) load_reader_close(r);
  return st;
}

halo_status load_reader_open_slice(load_reader *r, const char *path, int64_t slice,
                                   int64_t slices) {
  halo_status st = HALO_OK;
  *r = (load_reader){.path = path, .slice_end = -1};
  struct stat sb;
  unsigned char magic[LOAD_SNIFF_BYTES];
  if (slices < 1 || slice < 0 || slice >= slices)
    HALO_FAIL(HALO_ERR_ARG, "%s: slice %lld of %lld", path, (long long)slice, (long long)slices);
  int fd = open(path, O_RDONLY);
  if (fd < 0) HALO_FAIL(HALO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  r->fd = fd;
  r->opened = 1;
  if (fstat(fd, &sb) != 0) HALO_FAIL(HALO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (!S_ISREG(sb.st_mode))
    HALO_FAIL(HALO_ERR_IO, "%s: is not a regular file, so it cannot be cut into slices", path);
  const ssize_t head = read_full(fd, magic, sizeof magic);
  if (head >= 2 && magic[0] == 0x1f && magic[1] == 0x8b)
    HALO_FAIL(HALO_ERR_UNSUPPORTED, "%s: a gzip stream cannot be cut into byte ranges", path);
  if (head > 0) HALO_TRY(load_sniff_text(path, magic, (size_t)head));
  /* size · slice / slices without overflow: size < 2^63 and slices < 2^31 in practice. */
  const int64_t size = (int64_t)sb.st_size;
  const __int128 wide = (__int128)size;
  r->slice_begin = (int64_t)(wide * slice / slices);
  const int64_t end = (int64_t)(wide * (slice + 1) / slices);
  r->line_start = r->slice_begin;
  r->in_cap = READER_IN;
  HALO_ALLOC(r->in, r->in_cap, "read buffer");
  r->cap = READER_BLOCK;
  HALO_ALLOC(r->buf, r->cap + 1, "read buffer");
  /* The byte before the slice says whether a line starts at its first byte. */
  off_t from = r->slice_begin > 0 ? (off_t)r->slice_begin - 1 : 0;
  if (lseek(fd, from, SEEK_SET) != from)
    HALO_FAIL(HALO_ERR_IO, "%s: cannot seek to byte %lld: %s", path, (long long)from,
              strerror(errno));
  r->in_bytes = (uint64_t)from;
  if (r->slice_begin > 0) {
    char before;
    HALO_TRY(fill_plain(r, &before, 1, &(size_t){0}));
    r->bytes = 1;
    if (before != '\n') {
      char *skipped;
      size_t len;
      int got = load_reader_next(r, &skipped, &len); /* the tail of a lower slice's line */
      if (got < 0) HALO_TRY(got);
      r->line = 0;
    }
  }
  r->slice_end = end; /* the skip above is not bounded by it */
done:
  if (st < 0) load_reader_close(r);
  return st;
}

halo_status load_reader_open(load_reader *r, const char *path, halo_digest_chunked *digest) {
  return reader_open(r, path, digest, 0);
}

halo_status load_reader_open_maybe_empty(load_reader *r, const char *path,
                                         halo_digest_chunked *digest) {
  return reader_open(r, path, digest, 1);
}

/* Plain bytes: what the first read left in `in`, then the file itself. */
static halo_status fill_plain(load_reader *r, char *dst, size_t room, size_t *got) {
  halo_status st = HALO_OK;
  *got = 0;
  if (r->z.avail_in > 0) {
    size_t k = r->z.avail_in < room ? r->z.avail_in : room;
    memcpy(dst, r->z.next_in, k);
    r->z.next_in += k;
    r->z.avail_in -= (uInt)k;
    *got = k;
    goto done;
  }
  if (r->in_eof) goto done;
  ssize_t k = read_full(r->fd, dst, room);
  if (k < 0) HALO_FAIL(HALO_ERR_IO, "%s: read failed: %s", r->path, strerror(errno));
  if (k == 0) r->in_eof = 1;
  r->in_bytes += (uint64_t)k;
  *got = (size_t)k;
done:
  return st;
}

/* After the last gzip member: 1 when every byte left in the file is zero
 * (block padding, which gzip(1) also accepts), consuming them; 0 when
 * another byte comes first, left in place for the message. */
static halo_status only_zeros_left(load_reader *r, int *zeros) {
  halo_status st = HALO_OK;
  *zeros = 0;
  for (;;) {
    while (r->z.avail_in > 0 && r->z.next_in[0] == 0) {
      r->z.next_in++;
      r->z.avail_in--;
    }
    if (r->z.avail_in > 0) goto done;
    if (r->in_eof) break;
    HALO_TRY(read_input(r));
  }
  *zeros = 1;
done:
  return st;
}

/* Gzip: inflates into dst until it is full or the input ends.  After a
 * member's trailer the next bytes must be another member's magic bytes
 * (concatenated members are valid gzip), zero padding to the end of the
 * file, or the end of the file. */
static halo_status fill_gzip(load_reader *r, char *dst, size_t room, size_t *got) {
  halo_status st = HALO_OK;
  int starved = 0; /* inflate made no progress on the bytes it had */
  r->z.next_out = (Bytef *)dst;
  r->z.avail_out = (uInt)room;
  while (r->z.avail_out > 0) {
    if ((r->z.avail_in < 2 || starved) && !r->in_eof) HALO_TRY(read_input(r));
    starved = 0;
    if (r->member_done) {
      if (r->z.avail_in == 0) break; /* the end of the file, right after a whole member */
      if (r->z.next_in[0] == 0) {
        int zeros = 0;
        HALO_TRY(only_zeros_left(r, &zeros));
        if (zeros) break;
      }
      if (r->z.avail_in < 2 || r->z.next_in[0] != 0x1f || r->z.next_in[1] != 0x8b)
        HALO_FAIL(HALO_ERR_CORRUPT,
                  "%s: data after the end of the gzip stream (from byte %llu on, not another "
                  "gzip member)",
                  r->path, (unsigned long long)(r->in_bytes - r->z.avail_in));
      if (inflateReset(&r->z) != Z_OK)
        HALO_FAIL(HALO_ERR_CORRUPT, "%s: zlib cannot start the next gzip member", r->path);
      r->member_done = 0;
    }
    const uInt in_before = r->z.avail_in, out_before = r->z.avail_out;
    int zret = inflate(&r->z, Z_NO_FLUSH);
    if (zret == Z_STREAM_END) {
      r->member_done = 1;
      continue;
    }
    const int moved = r->z.avail_in != in_before || r->z.avail_out != out_before;
    if (zret == Z_OK && moved) continue;
    if ((zret == Z_OK || zret == Z_BUF_ERROR) && !r->in_eof && r->z.avail_in < r->in_cap) {
      starved = 1;
      continue;
    }
    const char *why = zret == Z_OK || zret == Z_BUF_ERROR ? "unexpected end of file"
                      : r->z.msg                          ? r->z.msg
                                                          : "invalid data";
    HALO_FAIL(HALO_ERR_CORRUPT, "%s: truncated or corrupt gzip data after %llu bytes (zlib: %s)",
              r->path, (unsigned long long)(r->bytes + (room - r->z.avail_out)), why);
  }
  *got = room - r->z.avail_out;
done:
  return st;
}

/* Reads more of the stream after the bytes still pending, growing the buffer
 * when one line fills it.  Returns 0 or a negative status. */
static int reader_fill(load_reader *r) {
  halo_status st = HALO_OK;
  size_t pending = r->end - r->pos;
  if (r->pos > 0) {
    memmove(r->buf, r->buf + r->pos, pending);
    r->pos = 0;
    r->end = pending;
  }
  if (r->end == r->cap) {
    if (r->cap >= READER_MAX_LINE)
      HALO_FAIL(HALO_ERR_PARSE, "%s:%lld: line longer than %d bytes", r->path,
                (long long)(r->line_base + r->line) + 1, READER_MAX_LINE);
    char *grown = realloc(r->buf, 2 * r->cap + 1);
    if (!grown)
      HALO_FAIL(HALO_ERR_NOMEM, "%s: out of memory for a %zu-byte line", r->path, 2 * r->cap);
    r->buf = grown;
    r->cap *= 2;
  }
  size_t got = 0;
  if (r->gzip)
    HALO_TRY(fill_gzip(r, r->buf + r->end, r->cap - r->end, &got));
  else
    HALO_TRY(fill_plain(r, r->buf + r->end, r->cap - r->end, &got));
  if (got == 0) r->eof = 1;
  if (r->digest) halo_digest_chunked_update(r->digest, r->buf + r->end, got);
  r->bytes += (uint64_t)got;
  if (r->slice_begin == 0 && r->line == 0 && r->end == 0 && got >= 3 &&
      memcmp(r->buf, "\xEF\xBB\xBF", 3) == 0)
    r->pos = 3;
  r->end += got;
done:
  return st;
}

int load_reader_next(load_reader *r, char **line, size_t *len) {
  if (r->slice_end >= 0 && r->line_start >= r->slice_end) return 0; /* the next slice's line */
  for (;;) {
    char *start = r->buf + r->pos;
    char *nl = r->pos < r->end ? memchr(start, '\n', r->end - r->pos) : NULL;
    if (!nl && r->eof) {
      if (r->pos == r->end) return 0;
      nl = r->buf + r->end; /* the last line has no '\n'; buf has room for the NUL */
    }
    if (nl) {
      size_t n = (size_t)(nl - start);
      r->pos = (size_t)(nl - r->buf) + (nl < r->buf + r->end);
      r->line_start =
          r->slice_begin - (r->slice_begin > 0) + (int64_t)r->bytes - (int64_t)(r->end - r->pos);
      if (n > 0 && start[n - 1] == '\r') n--;
      start[n] = '\0';
      *nl = '\0';
      r->line++;
      /* A NUL would silently end the line early: the file is not text. */
      const char *nul = memchr(start, '\0', n);
      if (nul) {
        load_reader_error(r, "NUL byte at column %zu: not a text file", (size_t)(nul - start) + 1);
        return HALO_ERR_PARSE;
      }
      *line = start;
      *len = n;
      return 1;
    }
    int st = reader_fill(r);
    if (st < 0) return st;
  }
}

halo_status load_reader_close(load_reader *r) {
  if (r->z_live) inflateEnd(&r->z);
  r->z_live = 0;
  if (r->opened) close(r->fd);
  r->opened = 0;
  free(r->in);
  r->in = NULL;
  free(r->buf);
  r->buf = NULL;
  return HALO_OK;
}

void load_reader_error(const load_reader *r, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  halo_log_error("%s:%lld: %s", r->path, (long long)(r->line_base + r->line), msg);
}

void load_reader_bad_token(const load_reader *r, const char *tok, const char *what) {
  int n = 0;
  while (n < 40 && !load_is_sep(tok[n])) n++;
  if (n == 0)
    load_reader_error(r, "missing value where %s was expected", what);
  else
    load_reader_error(r, "'%.*s%s' is not %s", n, tok, load_is_sep(tok[n]) ? "" : "...", what);
}

void load_reader_bad_word(const load_reader *r, const char *tok, const char *what) {
  int n = 0;
  while (n < 40 && tok[n] && tok[n] != ' ' && tok[n] != '\t') n++;
  const char *more = tok[n] && tok[n] != ' ' && tok[n] != '\t' ? "..." : "";
  if (n == 0)
    load_reader_error(r, "missing value where %s was expected", what);
  else if (memchr(tok, ',', (size_t)n))
    load_reader_error(r, "'%.*s%s' is not %s: expected spaces or tabs between values, found ','", n,
                      tok, more, what);
  else
    load_reader_error(r, "'%.*s%s' is not %s", n, tok, more, what);
}

/* ---- Number scanners ---------------------------------------------------- */

static inline int is_digit(char c) { return (unsigned)(c - '0') < 10u; }

int load_scan_i64(const char **p, int64_t *out) {
  const char *s = *p;
  int neg = 0;
  if (*s == '-' || *s == '+') neg = *s++ == '-';
  if (!is_digit(*s)) return LOAD_SCAN_BAD;
  uint64_t v = 0;
  int overflow = 0;
  for (; is_digit(*s); s++) {
    uint64_t d = (uint64_t)(*s - '0');
    if (v > (UINT64_MAX - d) / 10) overflow = 1;
    v = v * 10 + d;
  }
  if (!load_is_sep(*s)) return LOAD_SCAN_BAD;
  *p = s;
  uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  if (overflow || v > limit) return LOAD_SCAN_RANGE;
  *out = neg ? -(int64_t)(v - 1) - 1 : (int64_t)v;
  return LOAD_SCAN_OK;
}

/* Powers of ten that are exact in a double. */
static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The fast path: a decimal of at most 19 significant digits becomes an exact
 * integer times an exact power of ten, so one IEEE operation rounds it
 * correctly to double.  Rounding that double to float again gives strtof's
 * answer unless the double sits exactly on a float midpoint (then the true
 * value might have been on either side), and those rare cases, like every
 * other unusual token, go to strtof. */
int load_scan_f32(const char **p, float *out) {
  const char *s = *p;
  int neg = 0;
  if (*s == '-' || *s == '+') neg = *s++ == '-';
  uint64_t mant = 0;
  int digits = 0, exp10 = 0, any = 0, lost = 0;
  for (; is_digit(*s); s++) {
    any = 1;
    if (mant == 0 && *s == '0') continue;
    if (digits < 19) {
      mant = mant * 10 + (uint64_t)(*s - '0');
      digits++;
    } else {
      exp10++;
      lost = 1;
    }
  }
  if (*s == '.') {
    for (s++; is_digit(*s); s++) {
      any = 1;
      if (mant == 0 && *s == '0') {
        exp10--;
      } else if (digits < 19) {
        mant = mant * 10 + (uint64_t)(*s - '0');
        digits++;
        exp10--;
      } else {
        lost = 1;
      }
    }
  }
  if (!any || lost) goto slow;
  if (*s == 'e' || *s == 'E') {
    const char *e = s + 1;
    int eneg = 0, ev = 0;
    if (*e == '-' || *e == '+') eneg = *e++ == '-';
    if (!is_digit(*e)) goto slow;
    for (; is_digit(*e); e++)
      if (ev < 10000) ev = ev * 10 + (*e - '0');
    exp10 += eneg ? -ev : ev;
    s = e;
  }
  if (!load_is_sep(*s)) goto slow;
  if (mant == 0) {
    *out = neg ? -0.0f : 0.0f;
    *p = s;
    return LOAD_SCAN_OK;
  }
  if (mant > (1ull << 53) || exp10 < -22 || exp10 > 22) goto slow;
  double d = exp10 < 0 ? (double)mant / POW10[-exp10] : (double)mant * POW10[exp10];
  if (!(d >= FLT_MIN && d <= FLT_MAX)) goto slow;
  uint64_t bits;
  memcpy(&bits, &d, sizeof bits);
  if ((bits & 0x1FFFFFFFull) == 0x10000000ull) goto slow;
  *out = (float)(neg ? -d : d);
  *p = s;
  return LOAD_SCAN_OK;

slow:;
  char *end;
  float f = strtof(*p, &end);
  if (end == *p || !load_is_sep(*end)) return LOAD_SCAN_BAD;
  *out = f;
  *p = end;
  return LOAD_SCAN_OK;
}

void load_set_source(halo_graph *g, const char *source) {
  snprintf(g->source, sizeof g->source, "%s", source);
}
