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

#include <stdint.h>

#include "halo-status.h"

typedef struct halo_backend halo_backend;

/* cuda: what runs the sparse products declared at set-up. */
typedef enum {
  HALO_BACKEND_SPMM_CUSPARSE = 0, /* cuSPARSE SpMM, and halo's row kernel where it cannot */
  HALO_BACKEND_SPMM_ROWS,         /* halo's row kernel for every product */
} halo_backend_spmm;

/* cuda: how the halo exchange hands rows to MPI. */
typedef enum {
  HALO_BACKEND_MPI_ASK = 0, /* as MPI reports (halo_mpi_cuda_aware) */
  HALO_BACKEND_MPI_STAGED,  /* through pinned host buffers */
  HALO_BACKEND_MPI_DEVICE,  /* device buffers, to a CUDA-aware MPI */
} halo_backend_mpi;

/* Zeroed fields take the defaults. */
typedef struct halo_backend_options {
  const char *device;     /* "cpu" or "cuda" */
  int local_rank;         /* this rank's index on its node: picks the GPU */
  int tf32;               /* cuda: let GEMM round its inputs to TF32 */
  halo_backend_spmm spmm; /* cuda */
  halo_backend_mpi mpi;   /* cuda */
} halo_backend_options;

/* Creates the backend o->device ("cpu"; "cuda" when this build has it).
 * "cuda" takes GPU (local_rank mod the node's GPU count), so ranks spread
 * over a node's GPUs and share them when there are more ranks than GPUs.
 * An unknown device, a build without CUDA or a machine without a GPU fails
 * with HALO_ERR_UNSUPPORTED and one line that says why; for "cuda", an
 * spmm or mpi value outside its enum with HALO_ERR_ARG. Local. */
halo_status halo_backend_create(const halo_backend_options *o, halo_backend **out);

/* Why `device` cannot run here, as far as can be told before creating it:
 * NULL when it can, else a sentence ("unknown device (devices: cpu)",
 * "this build of halo has no CUDA backend (...)", "no usable CUDA device
 * (...)") for the caller to put after the name of its own setting.  The
 * text lives until the next call. Local. */
const char *halo_backend_problem(const char *device);

/* The backend's name ("cpu", "cuda"). Local. */
const char *halo_backend_name(const halo_backend *be);

/* Devices this build offers, as "cpu" or "cpu, cuda". Local. */
const char *halo_backend_list(void);

/* What the backend runs on, for the run header: "cpu", or "cuda: NVIDIA
 * H200 (device 0), halo rows staged through pinned host memory". Local. */
const char *halo_backend_describe(const halo_backend *be);

/* Bytes free in the memory the backend allocates from (the node's RAM, or
 * the GPU's memory), -1 when unknown; *pool (may be NULL) identifies that
 * memory among the ranks of a node: ranks with the same pool share it. Local. */
int64_t halo_backend_mem_available(halo_backend *be, int *pool);

/* Releases the backend; accepts NULL and sets *be = NULL. Local. */
void halo_backend_destroy(halo_backend **be);

#endif /* HALO_BACKEND_H */
