/* halo_load: one entry point over every format. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "halo-load.h"
#include "load-impl.h"

static const struct {
  const char *name;
  halo_format format;
} FORMAT_NAMES[] = {
    {"auto", HALO_FORMAT_AUTO},     {"ogb", HALO_FORMAT_OGB}, {"edgelist", HALO_FORMAT_EDGELIST},
    {"snap", HALO_FORMAT_EDGELIST}, {"mtx", HALO_FORMAT_MTX}, {"spec", HALO_FORMAT_SPEC},
};

halo_status halo_format_parse(const char *name, halo_format *out) {
  halo_status st = HALO_OK;
  for (size_t k = 0; k < sizeof FORMAT_NAMES / sizeof FORMAT_NAMES[0]; k++)
    if (name && strcmp(name, FORMAT_NAMES[k].name) == 0) {
      *out = FORMAT_NAMES[k].format;
      goto done;
    }
  HALO_FAIL(HALO_ERR_ARG, "unknown format '%s' (expected auto, ogb, edgelist, snap, mtx, spec)",
            name ? name : "(null)");
done:
  return st;
}

static int ends_with(const char *s, const char *suffix) {
  size_t ls = strlen(s), lx = strlen(suffix);
  return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

halo_format halo_load_detect_format(const char *input) {
  struct stat sb;
  if (load_spec_is_spec(input) && stat(input, &sb) != 0) return HALO_FORMAT_SPEC;
  if (stat(input, &sb) == 0 && S_ISDIR(sb.st_mode)) return HALO_FORMAT_OGB;
  if (ends_with(input, ".mtx") || ends_with(input, ".mtx.gz")) return HALO_FORMAT_MTX;
  return HALO_FORMAT_EDGELIST;
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
  if (opt->split_name && fmt != HALO_FORMAT_OGB)
    HALO_FAIL(HALO_ERR_ARG,
              "--split-name %s: %s is not an OGB folder (--split DIR gives any input a split)",
              opt->split_name, input);
  switch (fmt) {
    case HALO_FORMAT_OGB:
      HALO_TRY(load_ogb(input, opt, out));
      break;
    case HALO_FORMAT_EDGELIST:
      HALO_TRY(load_edgelist(input, out));
      break;
    case HALO_FORMAT_MTX:
      HALO_TRY(load_mtx(input, out));
      break;
    case HALO_FORMAT_SPEC:
      HALO_TRY(load_spec(input, out));
      break;
    default:
      HALO_FAIL(HALO_ERR_ARG, "halo_load: invalid format %d", (int)fmt);
  }
done:
  return st;
}

void load_set_source(halo_graph *g, const char *source) {
  snprintf(g->source, sizeof g->source, "%s", source);
}
