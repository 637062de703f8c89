/* The layout of a text input (load-impl.h, "Text layouts"): its separator
 * and its header row, found once from its first lines so that every
 * reader, whole or by slices, skips the same line and splits values
 * alike; and the rule on class counts that every label reader applies. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-load.h"
#include "load-impl.h"

int32_t load_text_fields(const char *p, char sep) {
  int64_t count = 0;
  if (sep == ',') {
    for (count = 1; *p; p++) count += *p == ',';
  } else {
    for (p = load_skip_blank(p); *p; p = load_skip_blank(p)) {
      while (*p && *p != ' ' && *p != '\t') p++;
      count++;
    }
  }
  return count > INT32_MAX ? INT32_MAX : (int32_t)count;
}

/* Whether every value of the line is a number (as load_scan_f32 reads
 * one); *fields gets their count.  An empty value (",a") is not one. */
static int all_numbers(const char *p, char sep, int32_t *fields) {
  int numbers = 1;
  *fields = 0;
  for (;;) {
    p = load_skip_blank(p);
    if (*p == '\0' && (sep != ',' || *fields == 0)) break;
    float f;
    const char *at = p;
    if (load_scan_f32(&p, &f) != LOAD_SCAN_OK) {
      numbers = 0;
      p = at;
      /* The token's end: a comma in a comma file, a blank in a blank one
       * (where a comma is part of the token, so the scan always moves on). */
      while (*p && (sep == ',' ? *p != ',' : (*p != ' ' && *p != '\t'))) p++;
    }
    ++*fields;
    p = load_skip_blank(p);
    if (sep == ',' && *p == ',') {
      p++;
      continue;
    }
    if (*p == '\0') break;
    if (sep == ',') { /* "1 2" in a comma file: one value that is no number */
      numbers = 0;
      while (*p && *p != ',') p++;
      if (*p == ',') p++;
    }
  }
  return numbers && *fields > 0;
}

static int skipped(const char *line, int comments) {
  const char *p = load_skip_blank(line);
  return comments && (*p == '\0' || *p == '#');
}

halo_status load_text_layout(const char *path, halo_header mode, int comments, load_text *out) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  char *line, *first = NULL;
  size_t len;
  int got;
  int64_t first_line = 0;
  *out = (load_text){.sep = ' ', .first_row = 1};
  HALO_TRY(load_reader_open_maybe_empty(&r, path, NULL));
  while ((got = load_reader_next(&r, &line, &len)) > 0 && skipped(line, comments)) {
  }
  if (got < 0) HALO_TRY(got);
  if (got == 0) goto done; /* no data: the reader says what is missing */
  out->sep = strchr(line, ',') ? ',' : ' ';
  first_line = r.line;
  out->first_row = first_line;
  if (mode == HALO_HEADER_YES) {
    out->header_line = first_line;
    out->first_row = first_line + 1;
    goto done;
  }
  int32_t fields = 0;
  if (all_numbers(line, out->sep, &fields)) goto done;
  if (!(first = strdup(line))) HALO_FAIL(HALO_ERR_NOMEM, "%s: out of memory", path);
  while ((got = load_reader_next(&r, &line, &len)) > 0 && skipped(line, comments)) {
  }
  if (got < 0) HALO_TRY(got);
  if (got == 0 || !all_numbers(line, out->sep, &fields)) goto done; /* line 1 is bad data */
  if (mode == HALO_HEADER_NO)
    HALO_FAIL(HALO_ERR_PARSE,
              "%s:%" PRId64
              ": has a header row ('%.60s%s'), but --header no says there is none: "
              "drop --header no, or remove the line",
              path, first_line, first, strlen(first) > 60 ? "..." : "");
  out->header_line = first_line;
  out->first_row = r.line;
done:
  free(first);
  load_reader_close(&r);
  return st;
}

halo_status load_text_next(load_reader *r, const load_text *t, char **line, size_t *len) {
  int got;
  while ((got = load_reader_next(r, line, len)) > 0 && t->header_line > 0 &&
         r->line_base + r->line == t->header_line) {
  }
  return got;
}

/* ---- the class count ---------------------------------------------------- */

halo_status halo_load_label_distinct(const int32_t *labels, int64_t rows, int32_t max_label,
                                     int64_t *distinct) {
  halo_status st = HALO_OK;
  uint64_t *seen = NULL;
  *distinct = 0;
  if (max_label < 0) goto done;
  if ((int64_t)max_label + 1 > 2 * rows) { /* the rule's verdict needs no exact count */
    *distinct = rows;
    goto done;
  }
  const int64_t words = ((int64_t)max_label >> 6) + 1;
  HALO_ALLOC(seen, words, "labels in use");
  for (int64_t v = 0; v < rows; v++)
    if (labels[v] >= 0) seen[labels[v] >> 6] |= 1ull << (labels[v] & 63);
  for (int64_t w = 0; w < words; w++) *distinct += __builtin_popcountll(seen[w]);
done:
  free(seen);
  return st;
}

void halo_load_label_where(char *where, size_t size, const char *path, int binary, int64_t at) {
  if (binary)
    snprintf(where, size, "%s: row %" PRId64, path, at);
  else
    snprintf(where, size, "%s:%" PRId64, path, at);
}

halo_status halo_load_check_classes(const char *where, int32_t max_label, int64_t distinct,
                                    int32_t classes, int32_t *out) {
  halo_status st = HALO_OK;
  const int64_t made = (int64_t)max_label + 1;
  if (classes > 0 && max_label >= classes)
    HALO_FAIL(HALO_ERR_RANGE,
              "%s: label %" PRId32 " is out of range for --classes %" PRId32 " (labels 0..%" PRId32
              ", -1 or nan for unlabelled)",
              where, max_label, classes, classes - 1);
  if (classes == 0 && max_label >= HALO_CLASSES_SPARSE_LABEL &&
      made > HALO_CLASSES_SPARSE_FACTOR * distinct)
    HALO_FAIL(HALO_ERR_RANGE,
              "%s: label %" PRId32 " makes %" PRId64 " classes, but at most %" PRId64
              " distinct labels appear, so most classes would have no node; if there are "
              "%" PRId64 " classes, say so with --classes %" PRId64 ", else fix the label",
              where, max_label, made, distinct, made, made);
  *out = classes > 0 ? classes : (int32_t)made;
done:
  return st;
}
