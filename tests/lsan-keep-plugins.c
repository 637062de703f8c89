/* lsan-keep-plugins.c: linked into every executable of the sanitized build
 * (HALO_SANITIZE) only.  It defines dlclose as a no-op, so the plugins that
 * Open MPI and PMIx dlopen (mca_*.so, pmix_mca_*.so) stay mapped until the
 * process exits.  The executable's definition is found before libasan's and
 * libc's, for every library's call.  HALO_LSAN_DLCLOSE=1 in the environment
 * passes the calls on to the real dlclose (bench/asan-rank-cost.sh compares).
 *
 * Why: MPI_Finalize dlcloses its plugins, and the buffers that the plugins'
 * globals pointed to become leaks, thousands per rank, all allocated under
 * libopen-rte.so, which tests/lsan.supp suppresses.  To match them,
 * LeakSanitizer looks up each frame of each leaked stack, innermost first;
 * GCC 12's symbolizer re-reads the module list (/proc/self/maps) twice for
 * every frame in no loaded module, that is, in every unloaded plugin, before
 * it gets to libopen-rte.so: seconds per rank (docs/benchmarks.md, "CI
 * time").  With the plugins mapped, their globals are scanned as roots, so
 * those buffers are not leaks at all and the few left are matched at once.
 * A leak in halo is reported as before: halo never calls dlclose itself. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

int dlclose(void *handle) {
  const char *really = getenv("HALO_LSAN_DLCLOSE");
  if (really == NULL || strcmp(really, "1") != 0) return 0;
  int (*next)(void *) = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
  return next != NULL ? next(handle) : -1;
}
