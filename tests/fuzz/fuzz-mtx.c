/* Matrix Market coordinate files: the input is the file. */
#include <stdlib.h>

#include "fuzz-util.h"
#include "halo-load.h"

int fuzz_mtx(const uint8_t *data, size_t size) {
  fuzz_init();
  if (size > FUZZ_MAX_INPUT) return 0;
  const char *path = fuzz_write("graph.mtx", data, size);
  halo_graph *g = NULL;
  fuzz_capture_begin();
  halo_status st = halo_load(path, HALO_FORMAT_MTX, &g);
  const char *text = fuzz_capture_end();
  fuzz_expect_outcome(st, text, path);
  if (st == HALO_OK)
    fuzz_check_graph(g);
  else if (g)
    fuzz_fail("failure left a graph behind");
  halo_graph_destroy(&g);
  return 0;
}

FUZZ_ENTRY(fuzz_mtx)
