#include "halo-backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-backend-impl.h"
#include "halo-memory.h"

const char *halo_backend_list(void) {
#ifdef HALO_HAVE_CUDA
  return "cpu, cuda";
#else
  return "cpu";
#endif
}

const char *halo_backend_problem(const char *device) {
  static char why[160];
  if (strcmp(device, "cpu") == 0) return NULL;
  if (strcmp(device, "cuda") != 0) {
    snprintf(why, sizeof why, "unknown device (devices: %s)", halo_backend_list());
    return why;
  }
#ifdef HALO_HAVE_CUDA
  return halo__backend_cuda_problem();
#else
  snprintf(why, sizeof why,
           "this build of halo has no CUDA backend (it was configured without the CUDA toolkit; "
           "devices: %s)",
           halo_backend_list());
  return why;
#endif
}

halo_status halo_backend_create(const halo_backend_options *o, halo_backend **out) {
  halo_status st = HALO_OK;
  halo_backend *be = NULL;
  *out = NULL;
  const int cpu = strcmp(o->device, "cpu") == 0, cuda = strcmp(o->device, "cuda") == 0;
  if (!cpu && !cuda)
    HALO_FAIL(HALO_ERR_UNSUPPORTED, "device %s: unknown device (devices: %s)", o->device,
              halo_backend_list());
#ifndef HALO_HAVE_CUDA
  if (cuda)
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "device cuda: this build of halo has no CUDA backend (it was configured without "
              "the CUDA toolkit; devices: %s)",
              halo_backend_list());
#endif
  HALO_ALLOC(be, 1, "the backend");
  be->ops = &halo__backend_cpu_ops;
#ifdef HALO_HAVE_CUDA
  if (cuda) HALO_TRY(halo__backend_cuda_init(o, be));
#endif
  *out = be;
  be = NULL;
done:
  halo_backend_destroy(&be);
  return st;
}

const char *halo_backend_name(const halo_backend *be) { return be->ops->name; }

const char *halo_backend_describe(const halo_backend *be) {
  return be->description[0] ? be->description : be->ops->name;
}

halo_status halo__backend_host_alloc(halo_backend *be, size_t bytes, const char *what, void **p) {
  *p = NULL;
  if (be->ops->host_alloc) return be->ops->host_alloc(be, bytes, p);
  *p = calloc(bytes ? bytes : 1, 1);
  if (!*p) {
    halo_log_error("out of memory allocating %zu bytes of %s", bytes, what);
    return HALO_ERR_NOMEM;
  }
  return HALO_OK;
}

void halo__backend_host_free(halo_backend *be, void **p) {
  if (!*p) return;
  if (be->ops->host_free)
    be->ops->host_free(be, p);
  else
    free(*p);
  *p = NULL;
}

int64_t halo_backend_mem_available(halo_backend *be, int *pool) {
  int ignored = 0;
  if (!pool) pool = &ignored;
  *pool = 0;
  if (be->ops->mem_available) return be->ops->mem_available(be, pool);
  return halo_memory_available();
}

void halo_backend_destroy(halo_backend **be) {
  if (!be || !*be) return;
  if ((*be)->ops && (*be)->ops->destroy) (*be)->ops->destroy(*be);
  free(*be);
  *be = NULL;
}
