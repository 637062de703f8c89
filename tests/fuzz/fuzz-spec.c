/* Synthetic specs: the input is the spec string.
 *
 * The spec parser checks each key against a range (nodes <= 1e12,
 * avg-degree <= 1e6, feat <= 2^20, rmat scale <= 40, edge-factor <= 2^20),
 * but nothing bounds their product: "sbm:nodes=1000000000,avg-degree=1000"
 * is accepted and asks for terabytes.  A real run would fail with "out of
 * memory" or run for days; a fuzzer must not, so inputs whose graph would be
 * large are skipped here before they reach the generator.  The bound is
 * conservative: values are read with strtod, which accepts everything the
 * parser's strtoll accepts, and the largest of repeated keys counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-util.h"
#include "halo-load.h"

enum { SPEC_MAX = 512 };

/* The largest value given for `key` in "k=v,k=v", or `fallback`; NaN when a
 * value is not a number at all (the parser refuses it, so any size is fine). */
static double spec_value(const char *keys, const char *key, double fallback) {
  double best = fallback;
  size_t key_len = strlen(key);
  for (const char *p = keys; p && *p;) {
    const char *comma = strchr(p, ',');
    const char *eq = memchr(p, '=', comma ? (size_t)(comma - p) : strlen(p));
    if (eq && (size_t)(eq - p) == key_len && memcmp(p, key, key_len) == 0) {
      double v = strtod(eq + 1, NULL);
      if (isnan(v) || v > best) best = v;
    }
    p = comma ? comma + 1 : NULL;
  }
  return best;
}

/* True when the graph the spec asks for has more than ~1e5 entries in total. */
static int too_large(const char *spec) {
  const double limit = 1e5;
  const char *colon = strchr(spec, ':');
  if (!colon) return 0;
  const char *keys = colon + 1;
  if (strncmp(spec, "sbm:", 4) == 0) {
    double nodes = spec_value(keys, "nodes", 0), degree = spec_value(keys, "avg-degree", 10);
    double feat = spec_value(keys, "feat", 32), classes = spec_value(keys, "classes", 8);
    return !(nodes <= 4096 && nodes * (degree + 1) <= limit && nodes * (feat + 1) <= limit &&
             classes * (feat + 1) <= limit);
  }
  if (strncmp(spec, "rmat:", 5) == 0) {
    double scale = spec_value(keys, "scale", 0), factor = spec_value(keys, "edge-factor", 16);
    return !(scale <= 12 && ldexp(factor + 1, (int)(scale > 0 ? scale : 0)) <= limit);
  }
  return 0;
}

int fuzz_spec(const uint8_t *data, size_t size) {
  fuzz_init();
  char spec[SPEC_MAX + 1];
  if (size > SPEC_MAX) return 0;
  memcpy(spec, data, size);
  spec[size] = '\0';
  /* A spec comes from one command-line word; the messages quote it, so a
   * newline inside would split the one error line in two. */
  if (strchr(spec, '\n') || too_large(spec)) return 0;
  halo_graph *g = NULL;
  fuzz_capture_begin();
  halo_status st = halo_load(spec, HALO_FORMAT_SPEC, &g);
  const char *text = fuzz_capture_end();
  fuzz_expect_outcome(st, text, NULL);
  if (st == HALO_OK) {
    fuzz_check_graph(g);
    if (strcmp(g->source, spec) != 0 && strlen(spec) < sizeof g->source)
      fuzz_fail("source is '%s', not the spec", g->source);
  } else if (g) {
    fuzz_fail("failure left a graph behind");
  }
  halo_graph_destroy(&g);
  return 0;
}

FUZZ_ENTRY(fuzz_spec)
