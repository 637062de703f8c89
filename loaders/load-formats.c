/* The input formats, one row each (halo-load.h, "The format table"), and
 * what reads through them: --format's names, --format auto's guess and
 * halo_load.  The distributed partitioner reads the same rows
 * (partition/dist-read.c), so a format is one row here plus its reader. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "halo-load.h"
#include "load-impl.h"

static int ends_with(const char *s, const char *suffix) {
  size_t ls = strlen(s), lx = strlen(suffix);
  return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

/* A spec is a known generator's "NAME:" that names no file. */
static int guess_spec(const char *input) {
  struct stat sb;
  return load_spec_is_spec(input) && stat(input, &sb) != 0;
}

static int guess_ogb(const char *input) {
  struct stat sb;
  return stat(input, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int guess_mtx(const char *input) {
  return ends_with(input, ".mtx") || ends_with(input, ".mtx.gz");
}

/* A .npy file by its magic bytes (or its name, so that a missing one is
 * named as an array). */
static int guess_npy(const char *input) {
  return load_npy_is_npy(input) || ends_with(input, ".npy");
}

/* An .npz by its name: a zip archive of .npy members. */
static int guess_npz(const char *input) { return ends_with(input, ".npz"); }

/* In --format's order (its message lists the names so); auto tries the
 * guesses in guess_order, and an edge list is what none of them claims. */
static const halo_format_row ROWS[] = {
    {.format = HALO_FORMAT_OGB,
     .name = "ogb",
     .guess_order = 2,
     .guess = guess_ogb,
     .load = load_ogb,
     .slicing = HALO_SLICING_FOLDER},
    {.format = HALO_FORMAT_EDGELIST,
     .name = "edgelist",
     .alias = "snap",
     .guess_order = 0,
     .load = load_edgelist,
     .takes_nodes = 1,
     .slicing = HALO_SLICING_LINES,
     .slice = halo_load_edgelist_slice,
     .stream = halo_load_edgelist_stream},
    {.format = HALO_FORMAT_MTX,
     .name = "mtx",
     .guess_order = 3,
     .guess = guess_mtx,
     .load = load_mtx,
     .slicing = HALO_SLICING_MTX},
    {.format = HALO_FORMAT_SPEC,
     .name = "spec",
     .guess_order = 1,
     .guess = guess_spec,
     .load = load_spec,
     .slicing = HALO_SLICING_SPEC},
    {.format = HALO_FORMAT_NPY,
     .name = "npy",
     .guess_order = 4,
     .guess = guess_npy,
     .load = load_npy_edgelist,
     .takes_nodes = 1,
     .slicing = HALO_SLICING_NPY,
     .slice = halo_load_npy_edge_slice},
    {.format = HALO_FORMAT_NPZ,
     .name = "npz",
     .guess_order = 5,
     .guess = guess_npz,
     .load = load_npz,
     .slicing = HALO_SLICING_NPZ,
     .slice = halo_load_npz_edge_slice},
};
enum { NROWS = sizeof ROWS / sizeof ROWS[0] };

const halo_format_row *halo_format_row_of(halo_format format) {
  for (int k = 0; k < NROWS; k++)
    if (ROWS[k].format == format) return &ROWS[k];
  return NULL;
}

halo_status halo_format_parse(const char *name, halo_format *out) {
  halo_status st = HALO_OK;
  char expected[256];
  int at = snprintf(expected, sizeof expected, "auto");
  if (name && strcmp(name, "auto") == 0) {
    *out = HALO_FORMAT_AUTO;
    goto done;
  }
  for (int k = 0; k < NROWS; k++) {
    if (name &&
        (strcmp(name, ROWS[k].name) == 0 || (ROWS[k].alias && strcmp(name, ROWS[k].alias) == 0))) {
      *out = ROWS[k].format;
      goto done;
    }
    at += snprintf(expected + at, sizeof expected - (size_t)at, ", %s", ROWS[k].name);
    if (ROWS[k].alias)
      at += snprintf(expected + at, sizeof expected - (size_t)at, ", %s", ROWS[k].alias);
  }
  HALO_FAIL(HALO_ERR_ARG, "unknown format '%s' (expected %s)", name ? name : "(null)", expected);
done:
  return st;
}

halo_format halo_load_detect_format(const char *input) {
  const halo_format_row *pick = NULL, *fallback = NULL;
  for (int k = 0; k < NROWS; k++) {
    const halo_format_row *r = &ROWS[k];
    if (r->guess_order == 0) fallback = r;
    if (r->guess && (!pick || r->guess_order < pick->guess_order) && r->guess(input)) pick = r;
  }
  return pick ? pick->format : fallback->format;
}

halo_status halo_load_check_nodes(const halo_format_row *row, const char *input, int64_t nodes) {
  halo_status st = HALO_OK;
  if (nodes > 0 && !row->takes_nodes)
    HALO_FAIL(HALO_ERR_ARG,
              "--nodes %lld: %s is not an edge list (an OGB folder, a Matrix Market file, an "
              ".npz archive and a spec give their node count)",
              (long long)nodes, input);
done:
  return st;
}

halo_status halo_load(const char *input, halo_format fmt, halo_graph **out) {
  return halo_load_opts(input, fmt, NULL, out);
}

halo_status halo_load_opts(const char *input, halo_format fmt, const halo_load_options *opt,
                           halo_graph **out) {
  halo_status st = HALO_OK;
  const halo_load_options none = {0};
  if (!opt) opt = &none;
  if (!out) HALO_FAIL(HALO_ERR_ARG, "halo_load: no output pointer");
  *out = NULL;
  if (!input || !*input) HALO_FAIL(HALO_ERR_ARG, "no input path or spec given");
  if (fmt == HALO_FORMAT_AUTO) fmt = halo_load_detect_format(input);
  if (opt->split_name && fmt != HALO_FORMAT_OGB && fmt != HALO_FORMAT_NPZ)
    HALO_FAIL(HALO_ERR_ARG,
              "--split-name %s: %s is not an OGB folder (--split DIR gives any input a split)",
              opt->split_name, input);
  const halo_format_row *row = halo_format_row_of(fmt);
  if (!row) HALO_FAIL(HALO_ERR_ARG, "halo_load: invalid format %d", (int)fmt);
  HALO_TRY(halo_load_check_nodes(row, input, opt->nodes));
  if (opt->edge_weights && row->format != HALO_FORMAT_NPY)
    HALO_FAIL(HALO_ERR_ARG,
              "--edge-weights %s: %s is not a .npy edge array (a Matrix Market file's values, an "
              "edge list's third column and an OGB folder's edge-feat carry their own weights)",
              opt->edge_weights, input);
  HALO_TRY(row->load(input, opt, out));
done:
  return st;
}
