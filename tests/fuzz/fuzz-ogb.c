/* OGB raw folders: the input is a little archive of the folder's files,
 *
 *   == edge.csv
 *   0,1
 *   == num-node-list.csv
 *   2
 *
 * each "== NAME" line starting a file that runs to the next one.  Only the
 * names an OGB folder may hold are written (a ".gz" name takes gzip bytes as
 * they come), so one input exercises the edge, count, feature, label and
 * split parsers and how they agree on the node count. */
#include <stdio.h>
#include <string.h>

#include "fuzz-util.h"
#include "halo-load.h"

static const char *const NAMES[] = {
    "num-node-list.csv",  "num-edge-list.csv", "edge.csv",          "node-feat.csv",
    "node-label.csv",     "split/train.csv",   "split/valid.csv",   "split/test.csv",
    "edge.csv.gz",        "node-feat.csv.gz",  "node-label.csv.gz", "num-node-list.csv.gz",
    "split/train.csv.gz",
};
enum { NAME_COUNT = sizeof NAMES / sizeof NAMES[0] };

/* Index of the known name at p (up to the end of its line), or -1. */
static int known_name(const char *p, size_t len) {
  for (int k = 0; k < NAME_COUNT; k++)
    if (strlen(NAMES[k]) == len && memcmp(NAMES[k], p, len) == 0) return k;
  return -1;
}

int fuzz_ogb(const uint8_t *data, size_t size) {
  fuzz_init();
  if (size > FUZZ_MAX_INPUT) return 0;
  char name[64];
  for (int k = 0; k < NAME_COUNT; k++) {
    snprintf(name, sizeof name, "ogb/%s", NAMES[k]);
    fuzz_remove(name);
  }
  fuzz_remove("ogb/split");
  const char *text = (const char *)data, *end = text + size;
  const char *p = text;
  /* Find each "== NAME\n" header at the start of a line. */
  while (p < end) {
    if (end - p < 3 || memcmp(p, "== ", 3) != 0 || (p > text && p[-1] != '\n')) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      p = nl ? nl + 1 : end;
      continue;
    }
    const char *title = p + 3;
    const char *nl = memchr(title, '\n', (size_t)(end - title));
    if (!nl) break;
    int k = known_name(title, (size_t)(nl - title));
    const char *body = nl + 1, *next = body;
    while (next < end && !(end - next >= 3 && memcmp(next, "== ", 3) == 0 && next[-1] == '\n')) {
      const char *eol = memchr(next, '\n', (size_t)(end - next));
      next = eol ? eol + 1 : end;
    }
    if (k >= 0) {
      snprintf(name, sizeof name, "ogb/%s", NAMES[k]);
      fuzz_write(name, body, (size_t)(next - body));
    }
    p = next;
  }
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/ogb", fuzz_dir());
  fuzz_write("ogb/.keep", "", 0); /* the folder exists even when no file was given */

  halo_graph *g = NULL;
  fuzz_capture_begin();
  halo_status st = halo_load(dir, HALO_FORMAT_OGB, &g);
  const char *said = fuzz_capture_end();
  fuzz_expect_outcome(st, said, dir);
  if (st == HALO_OK)
    fuzz_check_graph(g);
  else if (g)
    fuzz_fail("failure left a graph behind");
  halo_graph_destroy(&g);
  return 0;
}

FUZZ_ENTRY(fuzz_ogb)
