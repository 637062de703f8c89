/* NumPy inputs: the input is an .npy edge array, or (starting "PK", a zip
 * archive's magic) an .npz in either layout. */
#include <stdlib.h>
#include <string.h>

#include "fuzz-util.h"
#include "halo-load.h"

int fuzz_npy(const uint8_t *data, size_t size) {
  fuzz_init();
  if (size > FUZZ_MAX_INPUT) return 0;
  const int is_zip = size >= 2 && memcmp(data, "PK", 2) == 0;
  const char *path = fuzz_write(is_zip ? "graph.npz" : "edges.npy", data, size);
  halo_graph *g = NULL;
  fuzz_capture_begin();
  /* An npy edge array has as many nodes as its largest id + 1: a 16M-node
   * graph of 130 edges is valid but takes the instrumented loader past the
   * fuzzer's 10 s per input, so this harness caps the nodes. */
  const halo_load_options opt = {.max_nodes = 1 << 20};
  halo_status st = halo_load_opts(path, is_zip ? HALO_FORMAT_NPZ : HALO_FORMAT_NPY, &opt, &g);
  const char *text = fuzz_capture_end();
  fuzz_expect_outcome(st, text, path);
  if (st == HALO_OK) {
    fuzz_check_graph(g);
  } else if (g) {
    fuzz_fail("failure left a graph behind");
  }
  halo_graph_destroy(&g);
  return 0;
}

FUZZ_ENTRY(fuzz_npy)
