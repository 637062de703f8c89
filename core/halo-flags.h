/* One flag engine for halo's programs: a table of rows (name, kind, range,
 * help line, the field it sets), from which the parsing, the --help text,
 * the whole-name policy and every message come, as core/halo-status.h's
 * table makes the statuses and their strings.
 *
 * A row sets one field of the caller's target struct, found by offsetof:
 *
 *   static const halo_flag rows[] = {
 *       HALO_FLAG_INT_ROW("--epochs", args, epochs, 0, INT32_MAX, "N", "training epochs (200)"),
 *       HALO_FLAG_SWITCH_ROW("--quiet", args, quiet, 1, "print the summary only"),
 *   };
 *
 * The policy (both programs): flags are long and whole.  `--flag value` and
 * `--flag=value` are the same; a flag without a value refuses `=value`; an
 * abbreviation is refused with the flags it could mean ("--epo: abbreviated
 * flag names are not accepted; did you mean --epochs?"), every one of them
 * in table order when it is ambiguous, so that a script keeps its meaning
 * when a flag is added.  Values are checked whole: "12x" is not an integer.
 * The engine logs one line that names the flag and returns HALO_ERR_ARG.
 *
 * Help: each row prints "  NAME[, ALIAS][ META]", padded to the table's
 * help column (23 unless it says; or followed by two spaces when longer),
 * then its help text, whose further lines are indented to that column.  A TEXT row prints its text
 * as it is (a note, or a second way to give a flag).  A row without help is parsed but not listed.
 */
#ifndef HALO_FLAGS_H
#define HALO_FLAGS_H

#include <stddef.h>
#include <stdint.h>

#include "halo-status.h"

typedef enum {
  HALO_FLAG_SWITCH, /* no value: stores ilo into an int field (1, or 0 for a --no-X) */
  HALO_FLAG_STOP,   /* no value: stores 1 into an int field and ends the parse (--help) */
  HALO_FLAG_INT,    /* an integer in [ilo, ihi], into an int32 or int64 field (by size); a
                       uint64 field takes [0, INT64_MAX] */
  HALO_FLAG_REAL,   /* a finite number in [rlo, rhi] (ends left out by `open`), checked after
                       its rounding to float too; into a float or double field (by size) */
  HALO_FLAG_CHOICE, /* one of `words`: its index, into an int field (an enum's value) */
  HALO_FLAG_WORD,   /* one of `words`: copied into a char[size] field */
  HALO_FLAG_STRING, /* text, borrowed from argv into a const char * field; with a noun,
                       empty fails with "FLAG needs NOUN" */
  HALO_FLAG_CALL,   /* `call` takes the value; with `words`, the value is optional and
                       the next argument is taken only when it is one of them */
  HALO_FLAG_TEXT    /* no flag: `help` is a verbatim part of the --help text */
} halo_flag_kind;

/* Which ends of a REAL range are left out. */
enum { HALO_FLAG_CLOSED = 0, HALO_FLAG_LO_OPEN = 1, HALO_FLAG_HI_OPEN = 2 };

typedef struct halo_flag halo_flag;

/* A CALL row's parser: `value` is NULL for a bare flag whose value is
 * optional.  It logs its own one line on failure. */
typedef halo_status (*halo_flag_call)(const halo_flag *row, const char *value, void *target);

struct halo_flag {
  const char *name;  /* "--epochs"; NULL for TEXT */
  const char *alias; /* a short spelling taken as it is ("-h"), or NULL */
  halo_flag_kind kind;
  size_t offset, size;      /* the field in the target struct */
  int64_t ilo, ihi;         /* INT: the range; SWITCH: ilo is the value stored */
  double rlo, rhi;          /* REAL: the range */
  int open;                 /* REAL: HALO_FLAG_LO_OPEN | HALO_FLAG_HI_OPEN */
  const char *const *words; /* CHOICE, WORD: the names (NULL-terminated); CALL: the
                               optional values, or NULL when a value is required */
  const char *noun;         /* STRING: what the value names ("a file name"; NULL: it may
                               be empty); CHOICE, WORD: what a word is, for the GETOPT
                               style's line ("model") */
  halo_flag_call call;      /* CALL */
  const char *meta;         /* help: what follows the name ("N"; "" nothing; CHOICE, WORD
                               and CALL: NULL lists the words, "cpu|cuda") */
  const char *help;         /* help: the text (lines after the first without indent) */
};

/* The messages of a program: how a value or flag it does not take reads.
 * TRAIN: "--hidden 0: expected an integer in [1, 1048576]", "--hiden:
 * unknown flag (see --help)".  GETOPT keeps the lines that halo-partition
 * printed over getopt_long: "--parts: 'x' is not an integer", "--parts: 0
 * is out of range [1, 2147483647]", "unknown option '--x' (see --help)",
 * "unexpected argument 'x' (see --help)"; and, as getopt_long, "--" ends
 * the flags and an argument that is not a flag (the table takes none) is
 * refused after every flag has been read. */
typedef enum { HALO_FLAGS_STYLE_TRAIN = 0, HALO_FLAGS_STYLE_GETOPT = 1 } halo_flags_style;

/* A program's command line: its rows in --help order, and what frames them. */
typedef struct halo_flags {
  const halo_flag *rows;
  int nrows;
  halo_flags_style style;
  const char *usage_head; /* --help's lines before the rows ("usage: ...\n") */
  const char *usage_tail; /* and after them, or NULL */
  int help_column;        /* where the rows' help text starts; 0: column 23 */
  /* An argument that is not a flag (halo-train's DIR); NULL refuses every
   * one.  It logs its own line on failure. */
  halo_status (*positional)(const char *arg, void *target);
} halo_flags;

/* Parses argv[1..argc-1] into `target`, which holds the defaults already.
 * given[k] (nrows entries, or NULL) is set to 1 for each row given, so that
 * a caller may tell a default from a value ("--input-dropout follows
 * --dropout unless given").  A STOP row ends the parse with HALO_OK.  Fails
 * with HALO_ERR_ARG and one logged line that names the flag. Local. */
halo_status halo_flags_parse(const halo_flags *t, int argc, char **argv, void *target,
                             unsigned char *given);

/* Writes the --help text into out (size bytes, always terminated) and
 * returns its length, which may exceed size - 1 when it did not fit. Local. */
size_t halo_flags_usage(const halo_flags *t, char *out, size_t size);

/* A whole-string decimal integer in [lo, hi], with the style's message
 * naming `flag` on failure (HALO_ERR_ARG). Local. */
halo_status halo_flags_parse_int(halo_flags_style style, const char *flag, const char *text,
                                 int64_t lo, int64_t hi, int64_t *out);

/* The row named `name`, or NULL. Local. */
const halo_flag *halo_flags_find(const halo_flags *t, const char *name);

/* The rows.  T is the target struct's type; F its field, a member path
 * ("gcn.layers" works: offsetof takes one). */
#define HALO_FLAG__FIELD(T, F) .offset = offsetof(T, F), .size = sizeof(((T *)0)->F)
#define HALO_FLAG_SWITCH_ROW(NAME, T, F, VALUE, HELP)                                 \
  {                                                                                   \
    .name = (NAME), .kind = HALO_FLAG_SWITCH, HALO_FLAG__FIELD(T, F), .ilo = (VALUE), \
    .help = (HELP)                                                                    \
  }
#define HALO_FLAG_STOP_ROW(NAME, ALIAS, T, F, HELP)                                             \
  {                                                                                             \
    .name = (NAME), .alias = (ALIAS), .kind = HALO_FLAG_STOP, HALO_FLAG__FIELD(T, F), .ilo = 1, \
    .help = (HELP)                                                                              \
  }
#define HALO_FLAG_INT_ROW(NAME, T, F, LO, HI, META, HELP)                                    \
  {                                                                                          \
    .name = (NAME), .kind = HALO_FLAG_INT, HALO_FLAG__FIELD(T, F), .ilo = (LO), .ihi = (HI), \
    .meta = (META), .help = (HELP)                                                           \
  }
#define HALO_FLAG_REAL_ROW(NAME, T, F, LO, HI, OPEN, META, HELP)                              \
  {                                                                                           \
    .name = (NAME), .kind = HALO_FLAG_REAL, HALO_FLAG__FIELD(T, F), .rlo = (LO), .rhi = (HI), \
    .open = (OPEN), .meta = (META), .help = (HELP)                                            \
  }
#define HALO_FLAG_CHOICE_ROW(NAME, T, F, WORDS, HELP)                                   \
  {                                                                                     \
    .name = (NAME), .kind = HALO_FLAG_CHOICE, HALO_FLAG__FIELD(T, F), .words = (WORDS), \
    .help = (HELP)                                                                      \
  }
#define HALO_FLAG_WORD_ROW(NAME, T, F, WORDS, HELP)                                   \
  {                                                                                   \
    .name = (NAME), .kind = HALO_FLAG_WORD, HALO_FLAG__FIELD(T, F), .words = (WORDS), \
    .help = (HELP)                                                                    \
  }
#define HALO_FLAG_STRING_ROW(NAME, T, F, NOUN, META, HELP)                            \
  {                                                                                   \
    .name = (NAME), .kind = HALO_FLAG_STRING, HALO_FLAG__FIELD(T, F), .noun = (NOUN), \
    .meta = (META), .help = (HELP)                                                    \
  }
#define HALO_FLAG_CALL_ROW(NAME, CALL, WORDS, META, HELP)                                     \
  {                                                                                           \
    .name = (NAME), .kind = HALO_FLAG_CALL, .call = (CALL), .words = (WORDS), .meta = (META), \
    .help = (HELP)                                                                            \
  }
#define HALO_FLAG_TEXT_ROW(TEXT) \
  { .kind = HALO_FLAG_TEXT, .help = (TEXT) }

#endif /* HALO_FLAGS_H */
