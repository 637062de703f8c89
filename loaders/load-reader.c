/* The line reader and the number scanners every text loader is built on. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "load-impl.h"

enum {
  READER_BLOCK = 1 << 20,    /* bytes asked of zlib per read */
  READER_MAX_LINE = 1 << 30, /* a longer line is surely not a text graph */
};

static int reader_fill(load_reader *r);

halo_status load_reader_open(load_reader *r, const char *path, halo_digest *digest) {
  halo_status st = HALO_OK;
  *r = (load_reader){.path = path, .digest = digest};
  struct stat sb;
  if (stat(path, &sb) != 0) HALO_FAIL(HALO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (S_ISDIR(sb.st_mode)) HALO_FAIL(HALO_ERR_IO, "%s: is a folder, expected a file", path);
  r->gz = gzopen(path, "rb");
  if (!r->gz)
    HALO_FAIL(HALO_ERR_IO, "%s: cannot open: %s", path, errno ? strerror(errno) : "zlib failed");
  gzbuffer(r->gz, 256 * 1024);
  r->cap = READER_BLOCK;
  HALO_ALLOC(r->buf, r->cap + 1, "read buffer");

  /* Read the first block now, so that an empty file is reported here. */
  while (r->pos == r->end && !r->eof) HALO_TRY(reader_fill(r));
  if (r->pos == r->end) HALO_FAIL(HALO_ERR_PARSE, "%s: file is empty", path);
done:
  if (st < 0) load_reader_close(r);
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
                (long long)r->line + 1, READER_MAX_LINE);
    char *grown = realloc(r->buf, 2 * r->cap + 1);
    if (!grown)
      HALO_FAIL(HALO_ERR_NOMEM, "%s: out of memory for a %zu-byte line", r->path, 2 * r->cap);
    r->buf = grown;
    r->cap *= 2;
  }
  int got = gzread(r->gz, r->buf + r->end, (unsigned)(r->cap - r->end));
  int zerr = Z_OK;
  const char *zmsg = gzerror(r->gz, &zerr);
  if (got < 0 || (zerr != Z_OK && zerr != Z_STREAM_END)) {
    /* zlib's message starts with the path again; keep only its reason. */
    size_t len = strlen(r->path);
    if (zmsg && strncmp(zmsg, r->path, len) == 0 && strncmp(zmsg + len, ": ", 2) == 0)
      zmsg += len + 2;
    HALO_FAIL(HALO_ERR_CORRUPT, "%s: truncated or corrupt gzip data after %llu bytes (zlib: %s)",
              r->path, (unsigned long long)r->bytes, zmsg ? zmsg : "unknown error");
  }
  if (got == 0) r->eof = 1;
  if (r->digest) halo_digest_update(r->digest, r->buf + r->end, (size_t)got);
  r->bytes += (uint64_t)got;
  if (r->line == 0 && r->end == 0 && got >= 3 && memcmp(r->buf, "\xEF\xBB\xBF", 3) == 0) r->pos = 3;
  r->end += (size_t)got;
done:
  return st;
}

int load_reader_next(load_reader *r, char **line, size_t *len) {
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
  halo_status st = HALO_OK;
  if (r->gz) {
    int zret = gzclose_r(r->gz);
    r->gz = NULL;
    if (zret != Z_OK && r->eof)
      HALO_FAIL(HALO_ERR_CORRUPT, "%s: truncated or corrupt gzip data (zlib error %d)", r->path,
                zret);
  }
done:
  free(r->buf);
  r->buf = NULL;
  return st;
}

void load_reader_error(const load_reader *r, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  halo_log_error("%s:%lld: %s", r->path, (long long)r->line, msg);
}

void load_reader_bad_token(const load_reader *r, const char *tok, const char *what) {
  int n = 0;
  while (n < 40 && !load_is_sep(tok[n])) n++;
  if (n == 0)
    load_reader_error(r, "missing value where %s was expected", what);
  else
    load_reader_error(r, "'%.*s%s' is not %s", n, tok, load_is_sep(tok[n]) ? "" : "...", what);
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
