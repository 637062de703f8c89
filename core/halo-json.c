#include "halo-json.h"

#include <inttypes.h>
#include <math.h>

void halo_json_init(halo_json *j, FILE *f, int wrap) {
  *j = (halo_json){.f = f, .wrap = wrap < 0 ? 0 : wrap};
}

/* Writes what goes before an item of the innermost container (a key in an
 * object, a value in an array): its comma and, in a wrapped container, the
 * line break and the indent.  The caller counts the item. */
static void separate(halo_json *j) {
  const int64_t count = j->count[j->depth - 1];
  if (count > 0) fputc(',', j->f);
  if (j->depth <= j->wrap) {
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
  } else if (count > 0) {
    fputc(' ', j->f);
  }
}

/* Before any value (a container too): 0 when the value may go here, after
 * its key in an object, as the next item of an array, or as a document of
 * its own. */
static int value_begin(halo_json *j) {
  if (j->misuse) return -1;
  if (j->depth == 0) return 0;
  if (j->kind[j->depth - 1] == '{') {
    if (!j->key_due) {
      j->misuse = 1;
      return -1;
    }
    j->key_due = 0;
    return 0;
  }
  separate(j);
  j->count[j->depth - 1]++;
  return 0;
}

/* After a complete value: a finished document ends its line. */
static void value_end(halo_json *j) {
  if (j->depth == 0) fputc('\n', j->f);
}

static void write_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    const unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

static void container_begin(halo_json *j, char kind) {
  if (value_begin(j) < 0) return;
  if (j->depth == HALO_JSON_MAX_DEPTH) {
    j->misuse = 1;
    return;
  }
  fputc(kind, j->f);
  j->kind[j->depth] = kind;
  j->count[j->depth] = 0;
  j->depth++;
}

static void container_end(halo_json *j, char kind) {
  if (j->misuse) return;
  if (j->depth == 0 || j->kind[j->depth - 1] != kind || j->key_due) {
    j->misuse = 1;
    return;
  }
  if (j->depth <= j->wrap && j->count[j->depth - 1] > 0) {
    fputc('\n', j->f);
    for (int i = 1; i < j->depth; i++) fputs("  ", j->f);
  }
  fputc(kind == '{' ? '}' : ']', j->f);
  j->depth--;
  value_end(j);
}

void halo_json_object_begin(halo_json *j) { container_begin(j, '{'); }

void halo_json_object_end(halo_json *j) { container_end(j, '{'); }

void halo_json_array_begin(halo_json *j) { container_begin(j, '['); }

void halo_json_array_end(halo_json *j) { container_end(j, '['); }

void halo_json_key(halo_json *j, const char *key) {
  if (j->misuse) return;
  if (j->depth == 0 || j->kind[j->depth - 1] != '{' || j->key_due || !key) {
    j->misuse = 1;
    return;
  }
  separate(j);
  j->count[j->depth - 1]++;
  write_string(j->f, key);
  fputs(": ", j->f);
  j->key_due = 1;
}

void halo_json_int(halo_json *j, int64_t v) {
  if (value_begin(j) < 0) return;
  fprintf(j->f, "%" PRId64, v);
  value_end(j);
}

void halo_json_double(halo_json *j, double v, const char *format) {
  if (value_begin(j) < 0) return;
  if (isfinite(v))
    fprintf(j->f, format, v);
  else
    fputs("null", j->f);
  value_end(j);
}

void halo_json_string(halo_json *j, const char *s) {
  if (value_begin(j) < 0) return;
  if (s)
    write_string(j->f, s);
  else
    fputs("null", j->f);
  value_end(j);
}

void halo_json_bool(halo_json *j, int v) {
  if (value_begin(j) < 0) return;
  fputs(v ? "true" : "false", j->f);
  value_end(j);
}

void halo_json_null(halo_json *j) {
  if (value_begin(j) < 0) return;
  fputs("null", j->f);
  value_end(j);
}

void halo_json_key_int(halo_json *j, const char *key, int64_t v) {
  halo_json_key(j, key);
  halo_json_int(j, v);
}

void halo_json_key_double(halo_json *j, const char *key, double v, const char *format) {
  halo_json_key(j, key);
  halo_json_double(j, v, format);
}

void halo_json_key_string(halo_json *j, const char *key, const char *s) {
  halo_json_key(j, key);
  halo_json_string(j, s);
}

void halo_json_key_bool(halo_json *j, const char *key, int v) {
  halo_json_key(j, key);
  halo_json_bool(j, v);
}

void halo_json_key_null(halo_json *j, const char *key) {
  halo_json_key(j, key);
  halo_json_null(j);
}

halo_status halo_json_status(const halo_json *j) {
  return j->misuse || j->depth != 0 ? HALO_ERR_ARG : HALO_OK;
}
