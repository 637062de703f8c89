/* A streaming JSON writer on a FILE *, for the programs' machine-readable
 * output: halo-train --metrics (JSON lines) and halo-partition --json.
 *
 * The caller opens and closes objects and arrays and writes the members in
 * order; the writer puts in the commas, the quotes and the escapes, so the
 * output is JSON as long as the calls nest.  A number is written with the
 * printf format the caller gives ("%.6f", "%.9g"), so that a file keeps the
 * digits it has always had; a number that is not finite is written as
 * null, since JSON has neither NaN nor infinity.  When the outermost value
 * is complete a newline follows it, so documents written one after another
 * on one writer are JSON lines.
 *
 * Layout.  The members of the containers up to depth `wrap` (1: the
 * outermost) go one per line, indented by two spaces per level; deeper
 * containers stay on one line, with ", " between items.  With wrap 0 each
 * document is one line.  A key and its value are separated by ": ".
 *
 *   wrap 0:  {"epoch": 1, "loss": 1.94603149, "dims": [1433, 16, 7]}
 *
 *   wrap 1:  {
 *              "nodes": 2708,
 *              "cleanup": {"input_edges": 10556, "self_loops": 0}
 *            }
 *
 * Misuse (a value where a key is due, a key in an array, an end that does
 * not match its begin, more than HALO_JSON_MAX_DEPTH levels) writes nothing
 * more and is reported by halo_json_status.  Write errors of the stream are
 * the caller's to see, at fflush or fclose.
 *
 * Every function is Local.
 */
#ifndef HALO_JSON_H
#define HALO_JSON_H

#include <stdint.h>
#include <stdio.h>

#include "halo-status.h"

enum { HALO_JSON_MAX_DEPTH = 16 };

/* The writer's state, on the caller's stack; its fields are private to
 * halo-json.c. */
typedef struct halo_json {
  FILE *f;                            /* borrowed: never closed here */
  int wrap;                           /* containers up to this depth put one member per line */
  int depth;                          /* containers open */
  int key_due;                        /* 1: a key was written and its value is due */
  int misuse;                         /* 1: a call did not fit; nothing more is written */
  char kind[HALO_JSON_MAX_DEPTH];     /* '{' or '[' per open container */
  int64_t count[HALO_JSON_MAX_DEPTH]; /* items written in each */
} halo_json;

/* Starts a writer on `f` with the layout `wrap` (see above); writes
 * nothing. */
void halo_json_init(halo_json *j, FILE *f, int wrap);

/* Containers.  In an object, each value (a container too) follows a key. */
void halo_json_object_begin(halo_json *j);
void halo_json_object_end(halo_json *j);
void halo_json_array_begin(halo_json *j);
void halo_json_array_end(halo_json *j);

/* The key of the next member of the innermost object, escaped as a
 * string. */
void halo_json_key(halo_json *j, const char *key);

/* Values.  halo_json_double writes `v` with the printf `format` for one
 * double ("%.6f"), or null when v is NaN or infinite.  halo_json_string
 * escapes '"', '\\' and the control characters below 0x20 (as \u00XX) and
 * passes every other byte through (UTF-8 stays UTF-8); NULL is written as
 * null. */
void halo_json_int(halo_json *j, int64_t v);
void halo_json_double(halo_json *j, double v, const char *format);
void halo_json_string(halo_json *j, const char *s);
void halo_json_bool(halo_json *j, int v);
void halo_json_null(halo_json *j);

/* A key and its value in one call. */
void halo_json_key_int(halo_json *j, const char *key, int64_t v);
void halo_json_key_double(halo_json *j, const char *key, double v, const char *format);
void halo_json_key_string(halo_json *j, const char *key, const char *s);
void halo_json_key_bool(halo_json *j, const char *key, int v);
void halo_json_key_null(halo_json *j, const char *key);

/* HALO_OK when every call so far fitted and no container is left open;
 * HALO_ERR_ARG otherwise (a bug of the caller: nothing is logged).  Call it
 * after the last document. */
halo_status halo_json_status(const halo_json *j);

#endif /* HALO_JSON_H */
