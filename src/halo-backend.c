#include "halo-backend.h"

#include <stdlib.h>
#include <string.h>

#include "halo-backend-impl.h"

const char *halo_backend_list(void) { return "cpu"; }

halo_status halo_backend_create(const char *device, halo_backend **out) {
  halo_status st = HALO_OK;
  halo_backend *be = NULL;
  *out = NULL;
  if (strcmp(device, "cpu") != 0) {
    if (strcmp(device, "cuda") == 0)
      HALO_FAIL(HALO_ERR_UNSUPPORTED,
                "--device cuda: this build of halo has no CUDA backend (devices: %s)",
                halo_backend_list());
    HALO_FAIL(HALO_ERR_UNSUPPORTED, "--device %s: unknown device (devices: %s)", device,
              halo_backend_list());
  }
  HALO_ALLOC(be, 1, "the backend");
  be->ops = &halo__backend_cpu_ops;
  *out = be;
  be = NULL;
done:
  free(be);
  return st;
}

const char *halo_backend_name(const halo_backend *be) { return be->ops->name; }

void halo_backend_destroy(halo_backend **be) {
  if (!be || !*be) return;
  free(*be);
  *be = NULL;
}
