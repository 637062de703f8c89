/* Scratch files, stderr capture and the oracles shared by the harnesses. */
#include "fuzz-util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Sanitizer hooks, present only in a sanitized build. */
void __sanitizer_set_report_fd(void *fd) __attribute__((weak));

static char scratch[256];
static int report_fd = -1; /* the real stderr, kept while fd 2 is captured */
static int capture_fd = -1;
static char captured[16384];

/* Sanitized builds: allocations over 128 MiB fail (return NULL) instead of
 * aborting, so that a forged size exercises the loaders' out-of-memory path
 * rather than the fuzzer's.  Leaks are errors. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1:max_allocation_size_mb=128:detect_leaks=1";
}

/* Undefined behaviour stops the run, in the fuzzer and in the replay test. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void) { return "halt_on_error=1:print_stacktrace=1"; }

/* HDF5 1.10 keeps a metadata cache entry when an object header fails its
 * checksum; that is the library's memory, not halo's (tests/shard/lsan.supp). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libhdf5_serial.so\nleak:libhdf5.so\n";
}

static void remove_scratch(void) {
  if (!scratch[0]) return;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
  if (system(cmd) != 0) fprintf(stderr, "fuzz: could not remove %s\n", scratch);
}

void fuzz_init(void) {
  if (scratch[0]) return;
  /* One thread: the loaders' OpenMP loops then run in the fuzzer's thread,
   * and executions are not spent starting a team. */
  setenv("OMP_NUM_THREADS", "1", 1);
  halo_log_set_prefix("fuzz");
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                     : getenv("TMPDIR")            ? getenv("TMPDIR")
                                                   : "/tmp";
  snprintf(scratch, sizeof scratch, "%s/halo-fuzz.%ld", base, (long)getpid());
  if (mkdir(scratch, 0700) != 0 && errno != EEXIST) {
    fprintf(stderr, "fuzz: cannot create %s: %s\n", scratch, strerror(errno));
    abort();
  }
  atexit(remove_scratch);
  report_fd = dup(2);
  if (__sanitizer_set_report_fd) __sanitizer_set_report_fd((void *)(intptr_t)report_fd);
  char path[300];
  snprintf(path, sizeof path, "%s/stderr", scratch);
  capture_fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (capture_fd < 0) abort();
}

const char *fuzz_dir(void) { return scratch; }

/* Creates the folders on the way to fuzz_dir()/name. */
static void make_parents(const char *path) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + strlen(scratch) + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(buf, 0700);
    *p = '/';
  }
}

const char *fuzz_write(const char *name, const void *data, size_t size) {
  static char slots[8][1024];
  static int next;
  char *path = slots[next++ % 8];
  snprintf(path, sizeof slots[0], "%s/%s", scratch, name);
  make_parents(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) fuzz_fail("cannot write %s: %s", path, strerror(errno));
  const uint8_t *p = data;
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n <= 0) fuzz_fail("cannot write %s: %s", path, strerror(errno));
    p += n;
    size -= (size_t)n;
  }
  close(fd);
  return path;
}

void fuzz_remove(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", scratch, name);
  if (unlink(path) != 0 && errno == EISDIR) rmdir(path);
}

void fuzz_capture_begin(void) {
  fflush(stderr);
  if (ftruncate(capture_fd, 0) != 0 || lseek(capture_fd, 0, SEEK_SET) != 0) abort();
  dup2(capture_fd, 2);
}

const char *fuzz_capture_end(void) {
  fflush(stderr);
  dup2(report_fd, 2);
  ssize_t n = pread(capture_fd, captured, sizeof captured - 1, 0);
  captured[n > 0 ? n : 0] = '\0';
  return captured;
}

void fuzz_fail(const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int fd = report_fd >= 0 ? report_fd : 2;
  dprintf(fd, "\nfuzz: oracle failed: %s\n", msg);
  abort();
}

void fuzz_expect_outcome(halo_status st, const char *text, const char *name) {
  if (st >= 0) {
    if (text[0]) fuzz_fail("success (status %d) but stderr says: %s", (int)st, text);
    return;
  }
  const char *nl = strchr(text, '\n');
  if (!nl) fuzz_fail("failure '%s' printed no line", halo_status_str(st));
  if (nl[1] != '\0')
    fuzz_fail("failure '%s' printed more than one line:\n%s", halo_status_str(st), text);
  if (!strstr(text, ": error: ")) fuzz_fail("failure line is not an error line: %s", text);
  if (st != HALO_ERR_NOMEM && name && !strstr(text, name))
    fuzz_fail("failure line does not name '%s': %s", name, text);
}

void fuzz_check_graph(const halo_graph *g) {
  if (!g) fuzz_fail("success without a graph");
  if (g->n < 0 || g->m < 0 || !g->indptr)
    fuzz_fail("graph has n = %lld, m = %lld", (long long)g->n, (long long)g->m);
  if (g->indptr[0] != 0 || g->indptr[g->n] != g->m)
    fuzz_fail("indptr runs from %lld to %lld, m = %lld", (long long)g->indptr[0],
              (long long)g->indptr[g->n], (long long)g->m);
  for (int64_t v = 0; v < g->n; v++) {
    if (g->indptr[v + 1] < g->indptr[v]) fuzz_fail("indptr[%lld] decreases", (long long)v + 1);
    for (int64_t k = g->indptr[v]; k < g->indptr[v + 1]; k++) {
      if (g->indices[k] < 0 || g->indices[k] >= g->n)
        fuzz_fail("indices[%lld] = %lld is out of [0, %lld)", (long long)k,
                  (long long)g->indices[k], (long long)g->n);
      if (k > g->indptr[v] && g->indices[k] < g->indices[k - 1])
        fuzz_fail("row %lld is not sorted at %lld", (long long)v, (long long)k);
    }
  }
  /* Edge weights: finite and >= 0, every one the loaders admit. */
  for (int64_t k = 0; g->edge_weight && k < g->m; k++)
    if (!isfinite(g->edge_weight[k]) || g->edge_weight[k] < 0.0f)
      fuzz_fail("edge weight %lld = %g is not finite and >= 0", (long long)k,
                (double)g->edge_weight[k]);
  if (g->features < 0 || (g->features > 0) != (g->x != NULL || g->x_indptr != NULL) ||
      (g->x && g->x_indptr))
    fuzz_fail("features = %d disagrees with x and x_indptr", g->features);
  for (int64_t k = 0; g->x && k < g->n * g->features; k++)
    if (!isfinite(g->x[k])) fuzz_fail("feature %lld is not finite", (long long)k);
  for (int64_t v = 0; g->x_indptr && v < g->n; v++) {
    if (g->x_indptr[v + 1] < g->x_indptr[v]) fuzz_fail("x_indptr[%lld] descends", (long long)v);
    for (int64_t k = g->x_indptr[v]; k < g->x_indptr[v + 1]; k++)
      if (g->x_indices[k] < 0 || g->x_indices[k] >= g->features || !isfinite(g->x_values[k]))
        fuzz_fail("CSR feature %lld is out of range or not finite", (long long)k);
  }
  if (g->classes < 0 || (g->classes > 0) != (g->labels != NULL))
    fuzz_fail("classes = %d disagrees with labels", g->classes);
  for (int64_t v = 0; g->labels && v < g->n; v++)
    if (g->labels[v] < -1 || g->labels[v] >= g->classes)
      fuzz_fail("label %d of node %lld is out of [-1, %d)", g->labels[v], (long long)v, g->classes);
  for (int64_t v = 0; g->split && v < g->n; v++)
    if (g->split[v] > HALO_SPLIT_TEST)
      fuzz_fail("split %d of node %lld is unknown", g->split[v], (long long)v);
}
