#include "halo-mpi-check.h"

halo_status halo_mpi_error(int rc, const char *call) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  text[len] = '\0';
  halo_log_error("%s failed: %s", call, len ? text : "unknown MPI error");
  return HALO_ERR_MPI;
}
