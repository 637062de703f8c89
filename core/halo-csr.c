#include "halo-csr.h"

#include <stdlib.h>

void halo_csr_free(halo_csr *a) {
  if (!a) return;
  free(a->indptr);
  free(a->indices);
  free(a->values);
  *a = (halo_csr){0};
}
