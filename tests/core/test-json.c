/* The JSON writer (core/halo-json.h): exact output, byte for byte, for the
 * layouts both programs use, the escapes, nesting and commas, and misuse. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-json.h"

/* A writer into memory: begin, write through w.j, then finish() returns
 * the text (freed at the next begin or by the test's end). */
typedef struct mem {
  FILE *f;
  char *text;
  size_t size;
  halo_json j;
} mem;

static void begin(mem *m, int wrap) {
  free(m->text);
  *m = (mem){0};
  m->f = open_memstream(&m->text, &m->size);
  cr_assert_not_null(m->f);
  halo_json_init(&m->j, m->f, wrap);
}

static const char *finish(mem *m) {
  cr_assert_eq(fclose(m->f), 0);
  m->f = NULL;
  return m->text;
}

#define EXPECT_TEXT(m, want)                                         \
  do {                                                               \
    const char *got_ = finish(m);                                    \
    cr_expect_str_eq(got_, want, "got:\n%s\nwant:\n%s", got_, want); \
  } while (0)

Test(json, one_line_object_with_every_kind_of_value) {
  mem m = {0};
  begin(&m, 0);
  halo_json_object_begin(&m.j);
  halo_json_key_int(&m.j, "epoch", 12);
  halo_json_key_double(&m.j, "loss", 1.9460314876, "%.9g");
  halo_json_key_double(&m.j, "val_acc", 0.194, "%.6f");
  halo_json_key_double(&m.j, "halo_bytes", 88688.0, "%.0f");
  halo_json_key_string(&m.j, "device", "cpu");
  halo_json_key_bool(&m.j, "summary", 1);
  halo_json_key_bool(&m.j, "resumed", 0);
  halo_json_key_null(&m.j, "ratio");
  halo_json_key_int(&m.j, "least", INT64_MIN);
  halo_json_key_int(&m.j, "most", INT64_MAX);
  halo_json_object_end(&m.j);
  cr_expect_eq(halo_json_status(&m.j), HALO_OK);
  EXPECT_TEXT(&m,
              "{\"epoch\": 12, \"loss\": 1.94603149, \"val_acc\": 0.194000, "
              "\"halo_bytes\": 88688, \"device\": \"cpu\", \"summary\": true, "
              "\"resumed\": false, \"ratio\": null, \"least\": -9223372036854775808, "
              "\"most\": 9223372036854775807}\n");
  free(m.text);
}

/* halo-partition --json's layout: one member per line at the top, nested
 * containers on one line. */
Test(json, wrap_1_puts_top_members_on_lines_and_nested_ones_inline) {
  mem m = {0};
  begin(&m, 1);
  halo_json_object_begin(&m.j);
  halo_json_key_string(&m.j, "input", "datasets/cora");
  halo_json_key(&m.j, "cleanup");
  halo_json_object_begin(&m.j);
  halo_json_key_int(&m.j, "input_edges", 10556);
  halo_json_key_int(&m.j, "self_loops", 0);
  halo_json_object_end(&m.j);
  halo_json_key(&m.j, "owned");
  halo_json_array_begin(&m.j);
  for (int i = 0; i < 4; i++) halo_json_int(&m.j, 600 + i);
  halo_json_array_end(&m.j);
  halo_json_key_double(&m.j, "balance", 1.0295421, "%.6f");
  halo_json_object_end(&m.j);
  cr_expect_eq(halo_json_status(&m.j), HALO_OK);
  EXPECT_TEXT(&m,
              "{\n"
              "  \"input\": \"datasets/cora\",\n"
              "  \"cleanup\": {\"input_edges\": 10556, \"self_loops\": 0},\n"
              "  \"owned\": [600, 601, 602, 603],\n"
              "  \"balance\": 1.029542\n"
              "}\n");
  free(m.text);
}

Test(json, wrap_2_indents_each_level) {
  mem m = {0};
  begin(&m, 2);
  halo_json_object_begin(&m.j);
  halo_json_key(&m.j, "a");
  halo_json_array_begin(&m.j);
  halo_json_int(&m.j, 1);
  halo_json_array_begin(&m.j);
  halo_json_int(&m.j, 2);
  halo_json_int(&m.j, 3);
  halo_json_array_end(&m.j);
  halo_json_array_end(&m.j);
  halo_json_key(&m.j, "b");
  halo_json_object_begin(&m.j);
  halo_json_object_end(&m.j);
  halo_json_object_end(&m.j);
  EXPECT_TEXT(&m,
              "{\n"
              "  \"a\": [\n"
              "    1,\n"
              "    [2, 3]\n"
              "  ],\n"
              "  \"b\": {}\n"
              "}\n");
  free(m.text);
}

Test(json, nesting_and_commas) {
  mem m = {0};
  begin(&m, 0);
  halo_json_array_begin(&m.j);
  halo_json_array_begin(&m.j);
  halo_json_array_end(&m.j);
  halo_json_object_begin(&m.j);
  halo_json_object_end(&m.j);
  halo_json_object_begin(&m.j);
  halo_json_key(&m.j, "x");
  halo_json_array_begin(&m.j);
  halo_json_object_begin(&m.j);
  halo_json_key_int(&m.j, "y", -1);
  halo_json_object_end(&m.j);
  halo_json_null(&m.j);
  halo_json_string(&m.j, NULL);
  halo_json_array_end(&m.j);
  halo_json_key_int(&m.j, "z", 0);
  halo_json_object_end(&m.j);
  halo_json_bool(&m.j, 0);
  halo_json_array_end(&m.j);
  cr_expect_eq(halo_json_status(&m.j), HALO_OK);
  EXPECT_TEXT(&m, "[[], {}, {\"x\": [{\"y\": -1}, null, null], \"z\": 0}, false]\n");
  free(m.text);
}

Test(json, strings_escape_quotes_backslashes_and_control_characters) {
  mem m = {0};
  begin(&m, 0);
  halo_json_object_begin(&m.j);
  halo_json_key_string(&m.j, "say \"hi\"", "C:\\dir\\\"x\"");
  halo_json_key_string(&m.j, "ctl", "a\nb\tc\rd\x01\x1f");
  halo_json_key_string(&m.j, "kept", "\x7f caf\xc3\xa9 / <>");
  halo_json_key_string(&m.j, "", "");
  halo_json_object_end(&m.j);
  EXPECT_TEXT(&m,
              "{\"say \\\"hi\\\"\": \"C:\\\\dir\\\\\\\"x\\\"\", "
              "\"ctl\": \"a\\u000ab\\u0009c\\u000dd\\u0001\\u001f\", "
              "\"kept\": \"\x7f caf\xc3\xa9 / <>\", \"\": \"\"}\n");
  free(m.text);
}

Test(json, numbers_that_are_not_finite_are_null) {
  mem m = {0};
  begin(&m, 0);
  halo_json_array_begin(&m.j);
  halo_json_double(&m.j, NAN, "%.6f");
  halo_json_double(&m.j, INFINITY, "%.9g");
  halo_json_double(&m.j, -INFINITY, "%.0f");
  halo_json_double(&m.j, -0.5, "%.3f");
  halo_json_double(&m.j, 1e-300, "%.9g");
  halo_json_array_end(&m.j);
  EXPECT_TEXT(&m, "[null, null, null, -0.500, 1e-300]\n");
  free(m.text);
}

/* halo-train's --metrics: one document per line on one writer. */
Test(json, documents_are_lines) {
  mem m = {0};
  begin(&m, 0);
  for (int e = 1; e <= 2; e++) {
    halo_json_object_begin(&m.j);
    halo_json_key_int(&m.j, "epoch", e);
    halo_json_object_end(&m.j);
  }
  halo_json_int(&m.j, 7);
  halo_json_string(&m.j, "end");
  cr_expect_eq(halo_json_status(&m.j), HALO_OK);
  EXPECT_TEXT(&m, "{\"epoch\": 1}\n{\"epoch\": 2}\n7\n\"end\"\n");
  free(m.text);
}

/* Each misuse sets the status and stops the output where it happened. */
Test(json, misuse_is_reported_and_stops_the_output) {
  mem m = {0};

  begin(&m, 0); /* a value where a key is due */
  halo_json_object_begin(&m.j);
  halo_json_int(&m.j, 1);
  halo_json_key_int(&m.j, "a", 2);
  halo_json_object_end(&m.j);
  cr_expect_eq(halo_json_status(&m.j), HALO_ERR_ARG);
  EXPECT_TEXT(&m, "{");

  begin(&m, 0); /* a key in an array */
  halo_json_array_begin(&m.j);
  halo_json_key(&m.j, "a");
  halo_json_array_end(&m.j);
  cr_expect_eq(halo_json_status(&m.j), HALO_ERR_ARG);
  EXPECT_TEXT(&m, "[");

  begin(&m, 0); /* a key outside any object */
  halo_json_key_int(&m.j, "a", 1);
  cr_expect_eq(halo_json_status(&m.j), HALO_ERR_ARG);
  EXPECT_TEXT(&m, "");

  begin(&m, 0); /* two keys in a row */
  halo_json_object_begin(&m.j);
  halo_json_key(&m.j, "a");
  halo_json_key(&m.j, "b");
  cr_expect_eq(halo_json_status(&m.j), HALO_ERR_ARG);
  EXPECT_TEXT(&m, "{\"a\": ");

  begin(&m, 0); /* an object closed while its key waits for a value */
  halo_json_object_begin(&m.j);
  halo_json_key(&m.j, "a");
  halo_json_object_end(&m.j);
  cr_expect_eq(halo_json_status(&m.j), HALO_ERR_ARG);
  EXPECT_TEXT(&m, "{\"a\": ");

  begin(&m, 0); /* an end that does not match */
  halo_json_array_begin(&m.j);
  halo_json_object_end(&m.j);
  halo_json_array_end(&m.j);
  cr_expect_eq(halo_json_status(&m.j), HALO_ERR_ARG);
  EXPECT_TEXT(&m, "[");

  begin(&m, 0); /* an end with nothing open */
  halo_json_object_end(&m.j);
  cr_expect_eq(halo_json_status(&m.j), HALO_ERR_ARG);
  EXPECT_TEXT(&m, "");

  begin(&m, 0); /* left open */
  halo_json_object_begin(&m.j);
  halo_json_key_int(&m.j, "a", 1);
  cr_expect_eq(halo_json_status(&m.j), HALO_ERR_ARG);
  EXPECT_TEXT(&m, "{\"a\": 1");

  begin(&m, 0); /* deeper than HALO_JSON_MAX_DEPTH */
  for (int i = 0; i <= HALO_JSON_MAX_DEPTH; i++) halo_json_array_begin(&m.j);
  cr_expect_eq(halo_json_status(&m.j), HALO_ERR_ARG);
  char want[HALO_JSON_MAX_DEPTH + 1];
  memset(want, '[', HALO_JSON_MAX_DEPTH);
  want[HALO_JSON_MAX_DEPTH] = '\0';
  EXPECT_TEXT(&m, want);
  free(m.text);
}

Test(json, exactly_max_depth_is_allowed) {
  mem m = {0};
  begin(&m, 0);
  for (int i = 0; i < HALO_JSON_MAX_DEPTH; i++) halo_json_array_begin(&m.j);
  for (int i = 0; i < HALO_JSON_MAX_DEPTH; i++) halo_json_array_end(&m.j);
  cr_expect_eq(halo_json_status(&m.j), HALO_OK);
  char want[2 * HALO_JSON_MAX_DEPTH + 2];
  memset(want, '[', HALO_JSON_MAX_DEPTH);
  memset(want + HALO_JSON_MAX_DEPTH, ']', HALO_JSON_MAX_DEPTH);
  want[2 * HALO_JSON_MAX_DEPTH] = '\n';
  want[2 * HALO_JSON_MAX_DEPTH + 1] = '\0';
  EXPECT_TEXT(&m, want);
  free(m.text);
}
