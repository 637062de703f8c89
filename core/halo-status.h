/* Status codes, logging and the check macros used by every halo module.
 *
 * Every function that can fail returns a halo_status: 0 for success and a
 * negative value for failure.  The function that finds a fault logs it once,
 * with its context (file, line, flag, rank); callers only pass the status on.
 */
#ifndef HALO_STATUS_H
#define HALO_STATUS_H

#include <stdarg.h>
#include <stddef.h>

/* One table generates both the enum and halo_status_str(). */
#define HALO_STATUS_TABLE(X)                                            \
  X(HALO_OK, 0, "success")                                              \
  X(HALO_ERR_ARG, -1, "invalid argument")                               \
  X(HALO_ERR_IO, -2, "input/output error")                              \
  X(HALO_ERR_PARSE, -3, "malformed input")                              \
  X(HALO_ERR_RANGE, -4, "value out of range")                           \
  X(HALO_ERR_NOMEM, -5, "out of memory")                                \
  X(HALO_ERR_FORMAT, -6, "unsupported or invalid file format")          \
  X(HALO_ERR_CORRUPT, -7, "corrupt data (checksum or digest mismatch)") \
  X(HALO_ERR_MISMATCH, -8, "inconsistent inputs")                       \
  X(HALO_ERR_LIMIT, -9, "size exceeds a library limit")                 \
  X(HALO_ERR_METIS, -10, "METIS failed")                                \
  X(HALO_ERR_HDF5, -11, "HDF5 error")                                   \
  X(HALO_ERR_MPI, -12, "MPI error")                                     \
  X(HALO_ERR_CUDA, -13, "CUDA error")                                   \
  X(HALO_ERR_UNSUPPORTED, -14, "not supported")                         \
  X(HALO_ERR_EXISTS, -15, "already exists")                             \
  X(HALO_ERR_TIMEOUT, -16, "timed out")                                 \
  X(HALO_ERR_PEER, -17, "another rank failed")                          \
  X(HALO_ERR_SCOTCH, -18, "Scotch failed")

typedef enum {
#define HALO__STATUS_ENUM(name, value, text) name = value,
  HALO_STATUS_TABLE(HALO__STATUS_ENUM)
#undef HALO__STATUS_ENUM
} halo_status;

/* Text for a status code; never NULL. Local. */
const char *halo_status_str(halo_status st);

/* Sets the prefix of every log line: a program name ("halo-partition") or,
 * under MPI, "[rank 2]". The string is copied. Local. */
void halo_log_set_prefix(const char *prefix);

/* Writes one line "PREFIX: error: MESSAGE\n" to stderr. Local. */
void halo_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void halo_log_verror(const char *fmt, va_list ap);

/* Writes one line "PREFIX: warning: MESSAGE\n" to stderr. Local. */
void halo_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Starts the message of every error line with `context` until it is set
 * again (copied; NULL or "" for none).  Library messages name files and
 * values, never flags: a program sets the flag a value came from around the
 * calls that take it, so that the user sees the flag too.  With context
 * "--checkpoint ", the library's "c: cannot open: ..." reads "--checkpoint
 * c: cannot open: ...".  Warnings are left as they are.  The two programs'
 * run libraries (partition/partition-run.c and dist-read.c, train/) are the
 * programs' runs moved out of programs/, and still name their flags; they
 * are the exception, not the model.  Local. */
void halo_log_set_context(const char *context);

/* Silences halo_log_error/warn (tests of expected failures may use it). */
void halo_log_set_quiet(int quiet);

/* Holds error lines instead of printing them: the first goes into `line`
 * (`size` bytes, prefix included), later ones are dropped.  NULL ends the
 * hold.  For phases where every rank may fail alike, so that one of them
 * reports (halo_mpi_agree_first). Local. */
void halo_log_hold(char *line, size_t size);

/* Evaluates a halo_status expression; on failure stores it in `st` and jumps
 * to `done`. The callee has already logged the context. */
#define HALO_TRY(expr)     \
  do {                     \
    st = (expr);           \
    if (st < 0) goto done; \
  } while (0)

/* Logs one line, stores `code` in `st` and jumps to `done`. */
#define HALO_FAIL(code, ...)     \
  do {                           \
    halo_log_error(__VA_ARGS__); \
    st = (code);                 \
    goto done;                   \
  } while (0)

/* Allocates `count` elements of *ptr's type (zeroed) or fails with
 * HALO_ERR_NOMEM, naming what was being allocated. */
#define HALO_ALLOC(ptr, count, what)                                               \
  do {                                                                             \
    size_t halo__n = (size_t)(count);                                              \
    (ptr) = calloc(halo__n ? halo__n : 1, sizeof(*(ptr)));                         \
    if (!(ptr))                                                                    \
      HALO_FAIL(HALO_ERR_NOMEM, "out of memory allocating %s (%zu bytes)", (what), \
                halo__n * sizeof(*(ptr)));                                         \
  } while (0)

/* Allocates `count` elements (at least one) of *ptr's type, zeroed, into
 * ptr; the expression is nonzero on success.  It neither logs nor jumps:
 * for code that gathers several allocations into one status and agrees on
 * it with its peers before the next collective, where HALO_ALLOC's jump to
 * `done` would leave them waiting. */
#define HALO_CALLOC(ptr, count) \
  (((ptr) = calloc((size_t)((count) > 0 ? (count) : 1), sizeof *(ptr))) != NULL)

#endif /* HALO_STATUS_H */
