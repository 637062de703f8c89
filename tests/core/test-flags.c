/* The flag engine (core/halo-flags.h) on a toy table: every kind of row,
 * both spellings of a value, the whole-name policy, each style's messages,
 * and the --help layout. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "halo-flags.h"

typedef struct toy {
  const char *dir;
  int32_t n;
  int64_t big;
  uint64_t seed;
  float rate;
  double wait;
  int color;
  char word[8];
  const char *out, *label;
  int quiet, plain, called, help;
  char mode[8];
} toy;

static const char *const colors[] = {"red", "green", "blue", NULL};
static const char *const words[] = {"cpu", "cuda", NULL};
static const char *const modes[] = {"auto", NULL};

static halo_status take_mode(const halo_flag *row, const char *value, void *target) {
  toy *t = target;
  (void)row;
  t->called++;
  snprintf(t->mode, sizeof t->mode, "%s", value ? value : "(none)");
  return HALO_OK;
}

static halo_status take_dir(const char *arg, void *target) {
  toy *t = target;
  t->dir = arg;
  return HALO_OK;
}

enum {
  R_N,
  R_BIG,
  R_SEED,
  R_RATE,
  R_WAIT,
  R_COLOR,
  R_WORD,
  R_OUT,
  R_LABEL,
  R_QUIET,
  R_PLAIN,
  R_MODE
};

static const halo_flag rows[] = {
    HALO_FLAG_INT_ROW("--n", toy, n, 1, 16, "N", "a count (2)"),
    HALO_FLAG_INT_ROW("--big", toy, big, 0, INT32_MAX, "N", "a long count"),
    HALO_FLAG_INT_ROW("--seed", toy, seed, 0, INT64_MAX, "N", "a seed"),
    HALO_FLAG_REAL_ROW("--rate", toy, rate, 0.0, 1.0, HALO_FLAG_HI_OPEN, "X", "a rate\nin [0, 1)"),
    HALO_FLAG_REAL_ROW("--wait", toy, wait, 0.1, 1e6, HALO_FLAG_CLOSED, "SECONDS", "a wait"),
    HALO_FLAG_CHOICE_ROW("--color", toy, color, colors, "a color"),
    HALO_FLAG_WORD_ROW("--word", toy, word, words, "a word"),
    HALO_FLAG_STRING_ROW("--out", toy, out, "a file name", "FILE", "where"),
    HALO_FLAG_STRING_ROW("--label", toy, label, NULL, "TEXT", "any text, even none"),
    HALO_FLAG_SWITCH_ROW("--quiet", toy, quiet, 1, "say less"),
    HALO_FLAG_SWITCH_ROW("--no-plain", toy, plain, 0, NULL),
    HALO_FLAG_CALL_ROW("--mode", take_mode, modes, "", "a mode"),
    HALO_FLAG_TEXT_ROW("a note\n"),
    HALO_FLAG_STOP_ROW("--help", "-h", toy, help, "this text"),
};

static halo_flags table(halo_flags_style style) {
  return (halo_flags){.rows = rows,
                      .nrows = (int)(sizeof rows / sizeof rows[0]),
                      .style = style,
                      .usage_head = "usage: toy DIR\n",
                      .positional = style == HALO_FLAGS_STYLE_TRAIN ? take_dir : NULL};
}

/* Parses `line` (words split at spaces) into *t; the error line, if any,
 * goes into err. */
static halo_status parse(halo_flags_style style, const char *line, toy *t, unsigned char *given,
                         char *err, size_t size) {
  static char buf[512];
  char *argv[32];
  int argc = 0;
  snprintf(buf, sizeof buf, "toy %s", line);
  for (char *w = strtok(buf, " "); w && argc < 31; w = strtok(NULL, " ")) argv[argc++] = w;
  argv[argc] = NULL;
  *t = (toy){.n = 2, .plain = 1};
  err[0] = '\0';
  halo_log_hold(err, size);
  const halo_flags f = table(style);
  halo_status st = halo_flags_parse(&f, argc, argv, t, given);
  halo_log_hold(NULL, 0);
  return st;
}

Test(flags, every_kind_and_both_spellings) {
  toy t;
  char err[256];
  unsigned char given[sizeof rows / sizeof rows[0]];
  cr_expect_eq(parse(HALO_FLAGS_STYLE_TRAIN, "d --big=4000000000", &t, given, err, sizeof err),
               HALO_ERR_ARG, "--big's range is [0, INT32_MAX]");
  cr_assert_eq(parse(HALO_FLAGS_STYLE_TRAIN,
                     "d --n 3 --big=40 --seed 9223372036854775807 --rate 0.25 "
                     "--wait=2.5 --color blue --word=cuda --out o.txt "
                     "--quiet --no-plain --mode",
                     &t, given, err, sizeof err),
               HALO_OK, "%s", err);
  cr_expect_str_eq(t.dir, "d");
  cr_expect_eq(t.n, 3);
  cr_expect_eq(t.big, 40);
  cr_expect_eq(t.seed, (uint64_t)INT64_MAX);
  cr_expect_float_eq(t.rate, 0.25f, 1e-9);
  cr_expect_float_eq(t.wait, 2.5, 1e-9);
  cr_expect_eq(t.color, 2);
  cr_expect_str_eq(t.word, "cuda");
  cr_expect_str_eq(t.out, "o.txt");
  cr_expect_eq(t.quiet, 1);
  cr_expect_eq(t.plain, 0, "a --no-X switch stores 0");
  cr_expect_eq(t.called, 1);
  cr_expect_str_eq(t.mode, "(none)", "an optional value not given");
  cr_expect(given[R_N] && given[R_BIG] && given[R_PLAIN] && given[R_MODE]);
  cr_assert_eq(parse(HALO_FLAGS_STYLE_TRAIN, "d --n 3", &t, given, err, sizeof err), HALO_OK);
  cr_expect(given[R_N] && !given[R_BIG] && !given[R_MODE], "only the rows given");
  /* The optional value: the next argument only when it is one of the words. */
  cr_assert_eq(parse(HALO_FLAGS_STYLE_TRAIN, "--mode auto d", &t, NULL, err, sizeof err), HALO_OK);
  cr_expect_str_eq(t.mode, "auto");
  cr_expect_str_eq(t.dir, "d");
  cr_assert_eq(parse(HALO_FLAGS_STYLE_TRAIN, "--mode=later", &t, NULL, err, sizeof err), HALO_OK);
  cr_expect_str_eq(t.mode, "later", "with =, the call judges the value");
  /* A stop row ends the parse; its alias is taken as it is. */
  cr_assert_eq(parse(HALO_FLAGS_STYLE_TRAIN, "-h --bogus", &t, NULL, err, sizeof err), HALO_OK);
  cr_expect_eq(t.help, 1);
}

Test(flags, train_style_messages) {
  static const char *cases[][2] = {
      {"--n 0", "error: --n 0: expected an integer in [1, 16]"},
      {"--n 3x", "error: --n 3x: expected an integer in [1, 16]"},
      {"--rate 1", "error: --rate 1: expected a number in [0, 1)"},
      {"--rate 0.9999999999", "error: --rate 0.9999999999: expected a number in [0, 1)"},
      {"--wait nan", "error: --wait nan: expected a number in [0.1, 1e+06]"},
      {"--color pink", "error: --color pink: unknown value (expected red, green or blue)"},
      {"--word tpu", "error: --word tpu: unknown value (expected cpu or cuda)"},
      {"--out=", "error: --out needs a file name"},
      {"--n", "error: --n needs a value"},
      {"--quiet=1", "error: --quiet takes no value"},
      {"--help=1", "error: --help takes no value"},
      {"--frob", "error: --frob: unknown flag (see --help)"},
      {"-- d", "error: --: unknown flag (see --help)"},
      {"--co blue", "error: --co: abbreviated flag names are not accepted; did you mean --color?"},
      {"--s 1", "error: --s: abbreviated flag names are not accepted; did you mean --seed?"},
      {"--w",
       "error: --w: ambiguous; abbreviated flag names are not accepted; did you mean "
       "--wait or --word?"},
      {"-x", "error: -x: unknown flag (flags start with --; see --help)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    toy t;
    char err[256];
    cr_expect_eq(parse(HALO_FLAGS_STYLE_TRAIN, cases[i][0], &t, NULL, err, sizeof err),
                 HALO_ERR_ARG, "'%s' was accepted", cases[i][0]);
    cr_expect(strstr(err, cases[i][1]) != NULL, "'%s': %s", cases[i][0], err);
  }
}

/* halo-partition's lines, from its getopt_long parser. */
Test(flags, getopt_style_messages) {
  static const char *cases[][2] = {
      {"--n x", "error: --n: 'x' is not an integer"},
      {"--n 17", "error: --n: 17 is out of range [1, 16]"},
      {"--n 99999999999999999999", "error: --n: 99999999999999999999 is out of range [1, 16]"},
      {"--frob=2", "error: unknown option '--frob=2' (see --help)"},
      {"--quiet=1", "error: unknown option '--quiet=1' (see --help)"},
      {"-x", "error: unknown option '-x' (see --help)"},
      {"extra", "error: unexpected argument 'extra' (see --help)"},
      {"--co=blue", "error: --co: abbreviated flag names are not accepted; did you mean --color?"},
      {"--color pink", "error: --color: unknown value 'pink' (red|green|blue)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    toy t;
    char err[256];
    cr_expect_eq(parse(HALO_FLAGS_STYLE_GETOPT, cases[i][0], &t, NULL, err, sizeof err),
                 HALO_ERR_ARG, "'%s' was accepted", cases[i][0]);
    cr_expect(strstr(err, cases[i][1]) != NULL, "'%s': %s", cases[i][0], err);
  }
  toy t;
  char err[256];
  cr_assert_eq(parse(HALO_FLAGS_STYLE_GETOPT, "--label=", &t, NULL, err, sizeof err), HALO_OK);
  cr_expect_str_eq(t.label, "", "a string without a noun may be empty");
  /* As getopt_long: "--" ends the flags, and an argument that is not a
   * flag is refused after every flag has been read. */
  cr_expect_eq(parse(HALO_FLAGS_STYLE_GETOPT, "--n 3 --", &t, NULL, err, sizeof err), HALO_OK, "%s",
               err);
  cr_expect_eq(parse(HALO_FLAGS_STYLE_GETOPT, "--n 3 -- --n", &t, NULL, err, sizeof err),
               HALO_ERR_ARG);
  cr_expect(strstr(err, "error: unexpected argument '--n' (see --help)") != NULL, "%s", err);
  cr_expect_eq(parse(HALO_FLAGS_STYLE_GETOPT, "extra more --n x", &t, NULL, err, sizeof err),
               HALO_ERR_ARG);
  cr_expect(strstr(err, "error: --n: 'x' is not an integer") != NULL, "%s", err);
  cr_expect_eq(parse(HALO_FLAGS_STYLE_GETOPT, "extra more --n 3", &t, NULL, err, sizeof err),
               HALO_ERR_ARG);
  cr_expect(strstr(err, "error: unexpected argument 'extra' (see --help)") != NULL, "%s", err);
  cr_expect_eq(parse(HALO_FLAGS_STYLE_GETOPT, "extra -h", &t, NULL, err, sizeof err), HALO_OK,
               "--help comes first");
  cr_expect_eq(t.help, 1);
  int64_t v = 0;
  cr_expect_eq(halo_flags_parse_int(HALO_FLAGS_STYLE_GETOPT, "--parts", "4", 1, 8, &v), HALO_OK);
  cr_expect_eq(v, 4);
}

Test(flags, usage_layout) {
  const halo_flags f = table(HALO_FLAGS_STYLE_TRAIN);
  char text[2048];
  const size_t len = halo_flags_usage(&f, text, sizeof text);
  cr_assert_eq(len, strlen(text));
  static const char want[] =
      "usage: toy DIR\n"
      "  --n N                a count (2)\n"
      "  --big N              a long count\n"
      "  --seed N             a seed\n"
      "  --rate X             a rate\n"
      "                       in [0, 1)\n"
      "  --wait SECONDS       a wait\n"
      "  --color red|green|blue  a color\n"
      "  --word cpu|cuda      a word\n"
      "  --out FILE           where\n"
      "  --label TEXT         any text, even none\n"
      "  --quiet              say less\n"
      "  --mode               a mode\n"
      "a note\n"
      "  --help, -h           this text\n";
  cr_expect_str_eq(text, want);
  /* A table may set its own help column. */
  halo_flags wide = f;
  wide.help_column = 27;
  char text27[2048];
  halo_flags_usage(&wide, text27, sizeof text27);
  cr_expect(strstr(text27, "\n  --n N                    a count (2)\n") != NULL, "%s", text27);
  cr_expect(strstr(text27,
                   "\n  --rate X                 a rate\n"
                   "                           in [0, 1)\n") != NULL,
            "%s", text27);
  /* Too small a buffer: cut, terminated, and the length it needs. */
  char small[16];
  cr_expect_eq(halo_flags_usage(&f, small, sizeof small), len);
  cr_expect_eq(strlen(small), sizeof small - 1);
}
