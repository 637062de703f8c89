/* Helpers for the loader tests: scratch folders, files written at run time
 * (plain or gzip), stderr capture, and CSR checks. */
#ifndef HALO_LOADER_TEST_H
#define HALO_LOADER_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "halo-load.h"

#define LOADER_DATA HALO_SOURCE_DIR "/tests/data/loaders"

/* A fresh folder under /tmp, removed (with what the helpers wrote) at exit. */
const char *scratch_dir(void);

/* Writes `text` to scratch_dir()/name (sub-folders are created) and returns
 * the full path.  A name ending in ".gz" is gzip-compressed. */
const char *scratch_write(const char *name, const char *text);

/* Writes raw bytes, for corrupted or truncated files. */
const char *scratch_write_bytes(const char *name, const void *data, size_t len);

/* Reads a whole file into a malloc'ed buffer. */
void *read_all(const char *path, size_t *len);

/* Starts sending stderr to a buffer; capture_end restores it and returns
 * everything written in between (a static buffer). */
void capture_begin(void);
const char *capture_end(void);

/* Loads `input`, expecting failure with status `want` and one stderr line
 * that contains every word in the NULL-terminated list. */
void expect_load_error(const char *input, halo_format fmt, halo_status want,
                       const char *const *words);

#define EXPECT_LOAD_ERROR(input, fmt, want, ...) \
  expect_load_error((input), (fmt), (want), (const char *const[]){__VA_ARGS__, NULL})

/* Checks that g's CSR equals the expected arrays (n+1 offsets, m indices). */
void expect_csr(const halo_graph *g, int64_t n, const int64_t *indptr, int64_t m,
                const int64_t *indices);

/* Checks the CSR invariants: offsets monotone, ids in range, rows sorted. */
void expect_csr_valid(const halo_graph *g);

/* g's features, whatever their layout, as a new dense n x F matrix (the
 * caller frees it), for comparing graphs whose storage differs.  CSR rows
 * must ascend, and hold no zero unless stored_zeros. */
float *features_dense(const halo_graph *g, int stored_zeros);

#endif /* HALO_LOADER_TEST_H */
