/* The check macro for MPI calls, and the one line it logs.
 *
 * A header of its own, below both halo-mpi.h (status agreement, which waits
 * through the watchdog) and halo-watchdog.h (whose waits check their MPI
 * calls with it), so that neither of those includes the other both ways.
 */
#ifndef HALO_MPI_CHECK_H
#define HALO_MPI_CHECK_H

#include <mpi.h>

#include "halo-status.h"

/* Checks an MPI return code; on failure logs the call and MPI's message,
 * stores HALO_ERR_MPI in `st` and jumps to `done`. Communicators used with it
 * must have MPI_ERRORS_RETURN set. */
#define HALO_MPI(call)                      \
  do {                                      \
    int halo__rc = (call);                  \
    if (halo__rc != MPI_SUCCESS) {          \
      st = halo_mpi_error(halo__rc, #call); \
      goto done;                            \
    }                                       \
  } while (0)

/* Logs "CALL failed: MPI's message" and returns HALO_ERR_MPI. Local. */
halo_status halo_mpi_error(int rc, const char *call);

#endif /* HALO_MPI_CHECK_H */
