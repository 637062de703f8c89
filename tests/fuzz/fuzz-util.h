/* Shared by the fuzz harnesses: scratch files, stderr capture, and the
 * oracles every harness applies to what a loader or reader returns.
 *
 * A harness is a function `int fuzz_NAME(const uint8_t *data, size_t size)`.
 * FUZZ_ENTRY(fuzz_NAME) makes it libFuzzer's LLVMFuzzerTestOneInput in the
 * fuzz build (HALO_FUZZ_ENTRY defined); in the ordinary build the same
 * functions are linked into test-fuzz-replay, which runs every committed
 * corpus file through them.
 *
 * The oracles are the project's promises about bad input:
 *   - a failure is a negative status and exactly ONE stderr line, which names
 *     the input (a path, or the generator of a spec);
 *   - a success prints nothing and returns an object whose invariants hold.
 * A broken promise aborts with a message on the sanitizer report stream, so
 * libFuzzer records the input as a crash.
 */
#ifndef HALO_FUZZ_UTIL_H
#define HALO_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "halo-graph.h"
#include "halo-status.h"

/* Largest input a harness takes apart; libFuzzer's -max_len stays below. */
enum { FUZZ_MAX_INPUT = 1 << 20 };

/* One-time set-up: single-threaded OpenMP, the log prefix, a report stream
 * that survives the stderr capture.  Every harness calls it first; it is
 * cheap after the first call. */
void fuzz_init(void);

/* A per-process scratch folder (under /dev/shm when it exists). */
const char *fuzz_dir(void);

/* Writes `size` bytes to fuzz_dir()/name, creating sub-folders, and returns
 * the full path (a static buffer per call slot, valid until the slot is
 * reused: 8 slots). */
const char *fuzz_write(const char *name, const void *data, size_t size);

/* Removes fuzz_dir()/name if it exists (a file or an empty folder). */
void fuzz_remove(const char *name);

/* Sends stderr to a scratch file until fuzz_capture_end, which returns what
 * was written (NUL-terminated, a static buffer). */
void fuzz_capture_begin(void);
const char *fuzz_capture_end(void);

/* Aborts with a message on the report stream and the offending input's
 * captured stderr. Never returns. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* The outcome oracle: st >= 0 requires empty `text`; st < 0 requires exactly
 * one line containing ": error: " and `name` (when not NULL).  An
 * out-of-memory failure need not name the input (see docs/reliability.md). */
void fuzz_expect_outcome(halo_status st, const char *text, const char *name);

/* The graph oracle: CSR offsets monotone from 0 to m, ids in [0, n),
 * features finite, labels in [-1, classes), split values known. */
void fuzz_check_graph(const halo_graph *g);

#ifdef HALO_FUZZ_ENTRY
#define FUZZ_ENTRY(fn)                                          \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fn(data, size); }
#else
#define FUZZ_ENTRY(fn)
#endif

/* The harnesses (tests/fuzz/fuzz-*.c). */
int fuzz_snap(const uint8_t *data, size_t size);
int fuzz_mtx(const uint8_t *data, size_t size);
int fuzz_ogb(const uint8_t *data, size_t size);
int fuzz_spec(const uint8_t *data, size_t size);
int fuzz_npy(const uint8_t *data, size_t size);
int fuzz_shard(const uint8_t *data, size_t size);
int fuzz_shard_bytes(const uint8_t *data, size_t size);

#endif /* HALO_FUZZ_UTIL_H */
