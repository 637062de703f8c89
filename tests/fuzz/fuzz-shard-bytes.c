/* The shard reader on mutated bytes: the input is a part file (seeds: the
 * real parts in tests/fuzz/shard-base/), read alone and against the real
 * manifest, and also offered to the manifest reader.  Bit flips land in
 * checksummed data, in HDF5's own metadata, or in unused bytes; each must
 * be refused in one line naming the file, or read back as a valid shard. */
#include <hdf5.h>
#include <stdio.h>

#include "fuzz-util.h"
#include "halo-shard.h"

#ifndef HALO_FUZZ_SHARD_BASE
#error "HALO_FUZZ_SHARD_BASE must name the folder of the base partition"
#endif

int fuzz_shard_bytes(const uint8_t *data, size_t size) {
  fuzz_init();
  if (size > FUZZ_MAX_INPUT) return 0;
  static halo_manifest *base;
  if (!base) {
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest.h5", HALO_FUZZ_SHARD_BASE);
    if (halo_manifest_read(path, &base) != HALO_OK) fuzz_fail("cannot read %s", path);
  }
  const char *path = fuzz_write("bytes/part.h5", data, size);
  for (int with_manifest = 0; with_manifest < 2; with_manifest++) {
    halo_shard *s = NULL;
    fuzz_capture_begin();
    halo_status st = halo_shard_read(path, with_manifest ? base : NULL, &s);
    const char *text = fuzz_capture_end();
    fuzz_expect_outcome(st, text, path);
    if (st != HALO_OK && s) fuzz_fail("failure left a shard behind");
    halo_shard_destroy(&s);
  }
  halo_manifest *m = NULL;
  fuzz_capture_begin();
  halo_status st = halo_manifest_read(path, &m);
  const char *text = fuzz_capture_end();
  fuzz_expect_outcome(st, text, path);
  halo_manifest_destroy(&m);
  return 0;
}

FUZZ_ENTRY(fuzz_shard_bytes)
