#include "halo-flags.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The default column of the help text: "  --checkpoint-every N" (22
 * characters) is the longest flag that fits before it. */
enum { HELP_COLUMN = 23, FLAG_MAX = 64 };

halo_status halo_flags_parse_int(halo_flags_style style, const char *flag, const char *text,
                                 int64_t lo, int64_t hi, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  const int whole = end != text && *end == '\0';
  if (whole && errno == 0 && v >= lo && v <= hi) {
    *out = v;
    return HALO_OK;
  }
  if (style == HALO_FLAGS_STYLE_GETOPT && !whole)
    halo_log_error("%s: '%s' is not an integer", flag, text);
  else if (style == HALO_FLAGS_STYLE_GETOPT)
    halo_log_error("%s: %s is out of range [%lld, %lld]", flag, text, (long long)lo, (long long)hi);
  else
    halo_log_error("%s %s: expected an integer in [%lld, %lld]", flag, text, (long long)lo,
                   (long long)hi);
  return HALO_ERR_ARG;
}

/* A finite number in the row's range, as a float: the range is checked
 * after the rounding to float too, so that --dropout 0.9999999999 (1.0f) is
 * refused here, not by the model on every rank. */
static halo_status parse_real(const halo_flag *r, const char *text, float *out) {
  char *end = NULL;
  errno = 0;
  const double v = strtod(text, &end);
  const float f = (float)v;
  const double lo = r->rlo, hi = r->rhi;
  if (errno || end == text || *end != '\0' || !isfinite(v) || v < lo || v > hi || f < lo ||
      f > hi || ((r->open & HALO_FLAG_LO_OPEN) && f <= lo) ||
      ((r->open & HALO_FLAG_HI_OPEN) && f >= hi)) {
    halo_log_error("%s %s: expected a number in %c%g, %g%c", r->name, text,
                   r->open & HALO_FLAG_LO_OPEN ? '(' : '[', lo, hi,
                   r->open & HALO_FLAG_HI_OPEN ? ')' : ']');
    return HALO_ERR_ARG;
  }
  *out = f;
  return HALO_OK;
}

/* The index of `text` among the row's words, or -1 after one line that
 * lists them: "--device tpu: unknown value (expected cpu or cuda)", or in
 * the GETOPT style "--model: 'x' is not a model (gcn|sage|gin|gat)". */
static int word_index(halo_flags_style style, const halo_flag *r, const char *text) {
  for (int i = 0; r->words[i]; i++)
    if (strcmp(text, r->words[i]) == 0) return i;
  const int getopt = style == HALO_FLAGS_STYLE_GETOPT;
  char choices[256] = "";
  for (int i = 0, n = 0; r->words[i] && n < (int)sizeof choices; i++)
    n += snprintf(choices + n, sizeof choices - (size_t)n, "%s%s",
                  i == 0            ? ""
                  : getopt          ? "|"
                  : r->words[i + 1] ? ", "
                                    : " or ",
                  r->words[i]);
  if (getopt && r->noun)
    halo_log_error("%s: '%s' is not a %s (%s)", r->name, text, r->noun, choices);
  else if (getopt)
    halo_log_error("%s: unknown value '%s' (%s)", r->name, text, choices);
  else
    halo_log_error("%s %s: unknown value (expected %s)", r->name, text, choices);
  return -1;
}

static void store_int(void *field, size_t size, int64_t v) {
  if (size == sizeof(int64_t)) {
    memcpy(field, &v, sizeof v);
  } else {
    const int32_t w = (int32_t)v;
    memcpy(field, &w, sizeof w);
  }
}

/* Sets the row's field from `value` (NULL for a row that takes none). */
static halo_status set(const halo_flags *t, const halo_flag *r, const char *value, void *target) {
  halo_status st = HALO_OK;
  void *field = (char *)target + r->offset;
  int64_t v = 0;
  float f = 0.0f;
  int k = 0;
  switch (r->kind) {
    case HALO_FLAG_SWITCH:
    case HALO_FLAG_STOP:
      store_int(field, r->size, r->ilo);
      break;
    case HALO_FLAG_INT:
      HALO_TRY(halo_flags_parse_int(t->style, r->name, value, r->ilo, r->ihi, &v));
      store_int(field, r->size, v);
      break;
    case HALO_FLAG_REAL:
      HALO_TRY(parse_real(r, value, &f));
      if (r->size == sizeof(double)) {
        const double d = f;
        memcpy(field, &d, sizeof d);
      } else {
        memcpy(field, &f, sizeof f);
      }
      break;
    case HALO_FLAG_CHOICE:
    case HALO_FLAG_WORD:
      if ((k = word_index(t->style, r, value)) < 0) HALO_TRY(HALO_ERR_ARG);
      if (r->kind == HALO_FLAG_CHOICE)
        store_int(field, r->size, k);
      else
        snprintf(field, r->size, "%s", value);
      break;
    case HALO_FLAG_STRING:
      if (!*value && r->noun) HALO_FAIL(HALO_ERR_ARG, "%s needs %s", r->name, r->noun);
      memcpy(field, &value, sizeof value);
      break;
    case HALO_FLAG_CALL:
      HALO_TRY(r->call(r, value, target));
      break;
    case HALO_FLAG_TEXT:
      break;
  }
done:
  return st;
}

/* Whether the row takes no value. */
static int bare(const halo_flag *r) {
  return r->kind == HALO_FLAG_SWITCH || r->kind == HALO_FLAG_STOP;
}

/* Whether `text` is one of a NULL-terminated list (NULL: none). */
static int among(const char *const *words, const char *text) {
  for (int i = 0; words && words[i]; i++)
    if (strcmp(text, words[i]) == 0) return 1;
  return 0;
}

const halo_flag *halo_flags_find(const halo_flags *t, const char *name) {
  for (int k = 0; k < t->nrows; k++)
    if (t->rows[k].name && strcmp(t->rows[k].name, name) == 0) return &t->rows[k];
  return NULL;
}

/* An unknown flag: one line, which names the flags it abbreviates when it
 * is a prefix of some (only whole names are taken). */
static halo_status unknown_flag(const halo_flags *t, const char *flag, const char *typed) {
  char could[256] = "";
  size_t used = 0;
  int n = 0;
  const size_t len = strlen(flag);
  for (int k = 0; k < t->nrows && len > 2; k++) { /* a bare "--" abbreviates nothing */
    const char *name = t->rows[k].name;
    if (!name || strncmp(name, flag, len) != 0) continue;
    if (used < sizeof could)
      used += (size_t)snprintf(could + used, sizeof could - used, "%s%s", n ? " or " : "", name);
    n++;
  }
  if (n > 0)
    halo_log_error("%s: %s flag names are not accepted; did you mean %s?", flag,
                   n > 1 ? "ambiguous; abbreviated" : "abbreviated", could);
  else if (t->style == HALO_FLAGS_STYLE_GETOPT)
    halo_log_error("unknown option '%s' (see --help)", typed);
  else
    halo_log_error("%s: unknown flag (see --help)", flag);
  return HALO_ERR_ARG;
}

halo_status halo_flags_parse(const halo_flags *t, int argc, char **argv, void *target,
                             unsigned char *given) {
  halo_status st = HALO_OK;
  const int getopt = t->style == HALO_FLAGS_STYLE_GETOPT;
  /* The GETOPT style keeps two habits of getopt_long: "--" ends the flags,
   * and an argument that is not a flag is refused only once every flag has
   * been read (so a bad flag value, or --help, comes first). */
  int ended = 0;
  const char *extra = NULL;
  if (given) memset(given, 0, (size_t)t->nrows);
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const halo_flag *r = NULL;
    if (getopt && !ended && strcmp(arg, "--") == 0) {
      ended = 1;
      continue;
    }
    if (ended || strncmp(arg, "-", 1) != 0 || strcmp(arg, "-") == 0) {
      if (t->positional) {
        HALO_TRY(t->positional(arg, target));
      } else if (getopt) {
        if (!extra) extra = arg;
      } else {
        HALO_FAIL(HALO_ERR_ARG, "unexpected argument '%s' (see --help)", arg);
      }
      continue;
    }
    for (int k = 0; k < t->nrows && !r; k++)
      if (t->rows[k].alias && strcmp(arg, t->rows[k].alias) == 0) r = &t->rows[k];
    if (r) {
      if (given) given[r - t->rows] = 1;
      HALO_TRY(set(t, r, NULL, target));
      if (r->kind == HALO_FLAG_STOP) goto done;
      continue;
    }
    if (arg[1] != '-') {
      if (getopt) HALO_FAIL(HALO_ERR_ARG, "unknown option '%s' (see --help)", arg);
      HALO_FAIL(HALO_ERR_ARG, "%s: unknown flag (flags start with --; see --help)", arg);
    }
    /* --flag=value or --flag value. */
    char flag[FLAG_MAX];
    const char *eq = strchr(arg, '=');
    const size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    if (len >= sizeof flag && getopt)
      HALO_FAIL(HALO_ERR_ARG, "unknown option '%s' (see --help)", arg);
    if (len >= sizeof flag) HALO_FAIL(HALO_ERR_ARG, "%s: unknown flag", arg);
    memcpy(flag, arg, len);
    flag[len] = '\0';
    if (!(r = halo_flags_find(t, flag))) HALO_TRY(unknown_flag(t, flag, arg));
    if (given) given[r - t->rows] = 1;
    const char *value = NULL;
    if (bare(r)) {
      if (eq && getopt) HALO_FAIL(HALO_ERR_ARG, "unknown option '%s' (see --help)", arg);
      if (eq) HALO_FAIL(HALO_ERR_ARG, "%s takes no value", flag);
    } else if (eq) {
      value = eq + 1;
    } else if (r->kind == HALO_FLAG_CALL && r->words) {
      /* An optional value: only one of its words is taken from the next argument. */
      if (i + 1 < argc && among(r->words, argv[i + 1])) value = argv[++i];
    } else {
      if (i + 1 >= argc) HALO_FAIL(HALO_ERR_ARG, "%s needs a value", flag);
      value = argv[++i];
    }
    HALO_TRY(set(t, r, value, target));
    if (r->kind == HALO_FLAG_STOP) goto done;
  }
  if (extra) HALO_FAIL(HALO_ERR_ARG, "unexpected argument '%s' (see --help)", extra);
done:
  return st;
}

/* Appends printf output to out[*len..size), counting what did not fit. */
static void put(char *out, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *out, size_t size, size_t *len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(*len < size ? out + *len : NULL, *len < size ? size - *len : 0, fmt, ap);
  va_end(ap);
  if (n > 0) *len += (size_t)n;
}

size_t halo_flags_usage(const halo_flags *t, char *out, size_t size) {
  const size_t column = t->help_column > 0 ? (size_t)t->help_column : HELP_COLUMN;
  size_t len = 0;
  if (size) out[0] = '\0';
  put(out, size, &len, "%s", t->usage_head ? t->usage_head : "");
  for (int k = 0; k < t->nrows; k++) {
    const halo_flag *r = &t->rows[k];
    if (!r->help) continue;
    if (r->kind == HALO_FLAG_TEXT) {
      put(out, size, &len, "%s", r->help);
      continue;
    }
    const size_t start = len;
    put(out, size, &len, "  %s", r->name);
    if (r->alias) put(out, size, &len, ", %s", r->alias);
    if (r->meta) {
      if (*r->meta) put(out, size, &len, " %s", r->meta);
    } else if (r->words) {
      for (int i = 0; r->words[i]; i++) put(out, size, &len, "%c%s", i ? '|' : ' ', r->words[i]);
    }
    const size_t width = len - start;
    put(out, size, &len, "%*s", width < column ? (int)(column - width) : 2, "");
    /* The help's own line breaks continue at the help column. */
    for (const char *p = r->help; *p;) {
      const size_t line = strcspn(p, "\n");
      put(out, size, &len, "%.*s\n", (int)line, p);
      p += line;
      if (*p == '\n' && *++p) put(out, size, &len, "%*s", (int)column, "");
    }
  }
  put(out, size, &len, "%s", t->usage_tail ? t->usage_tail : "");
  return len;
}
