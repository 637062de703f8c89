/* A device-like backend for tests on machines without a GPU: see
 * backend-checked.c. */
#ifndef BACKEND_CHECKED_H
#define BACKEND_CHECKED_H

#include <stdint.h>

#include "halo-backend.h"

/* mpi_device 1: the halo exchange hands "device" buffers to MPI in place (as
 * with CUDA-aware MPI); 0: it stages them through host_alloc buffers. */
halo_status checked_backend_create(int mpi_device, halo_backend **out);

/* How often the trainer crossed the host/device boundary and waited for
 * the backend. */
void checked_backend_counts(const halo_backend *be, int64_t *uploads, int64_t *downloads,
                            int64_t *host_allocs, int64_t *synchronizes);

#endif /* BACKEND_CHECKED_H */
