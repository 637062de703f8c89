/* Compute backends of the runtime, chosen by name ("cpu", "cuda").
 *
 * The runtime reaches every dense and sparse operation through a backend, so
 * that the same trainer drives the CPU kernels and, in builds that have it,
 * the CUDA ones.  The table itself is private (halo-backend-impl.h); this
 * header only names, creates and destroys backends, and never mentions a
 * CUDA type.
 */
#ifndef HALO_BACKEND_H
#define HALO_BACKEND_H

#include "halo-status.h"

typedef struct halo_backend halo_backend;

/* Creates the backend called `device` ("cpu"; "cuda" when this build has it).
 * An unknown or unavailable device fails with HALO_ERR_UNSUPPORTED and one
 * line that says which devices this build offers. Local. */
halo_status halo_backend_create(const char *device, halo_backend **out);

/* The backend's name ("cpu"). Local. */
const char *halo_backend_name(const halo_backend *be);

/* Devices this build offers, as "cpu" or "cpu, cuda". Local. */
const char *halo_backend_list(void);

/* Releases the backend; accepts NULL and sets *be = NULL. Local. */
void halo_backend_destroy(halo_backend **be);

#endif /* HALO_BACKEND_H */
