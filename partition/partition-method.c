/* Names of methods, objectives and orders, and the method -> partitioner table. */
#include <string.h>

#include "halo-partition.h"

static const struct {
  const char *name;
  halo_partitioner fn;
} methods[] = {
    [HALO_METHOD_METIS] = {"metis", halo_partition_metis},
    [HALO_METHOD_RANDOM] = {"random", halo_partition_random},
    [HALO_METHOD_BLOCK] = {"block", halo_partition_block},
    [HALO_METHOD_SCOTCH] = {"scotch", halo_partition_scotch},
    [HALO_METHOD_PTSCOTCH] = {"ptscotch", NULL}, /* collective: halo-dpartition.h */
};

static const char *const objectives[] = {
    [HALO_OBJECTIVE_CUT] = "cut", [HALO_OBJECTIVE_VOL] = "vol"};

static const char *const orders[] = {[HALO_ORDER_COMMUNITY] = "community", [HALO_ORDER_ID] = "id"};

halo_status halo_method_parse(const char *name, halo_method *out) {
  for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
    if (name && strcmp(name, methods[i].name) == 0) {
      *out = (halo_method)i;
      return HALO_OK;
    }
  return HALO_ERR_ARG;
}

halo_status halo_objective_parse(const char *name, halo_objective *out) {
  for (size_t i = 0; i < sizeof objectives / sizeof objectives[0]; i++)
    if (name && strcmp(name, objectives[i]) == 0) {
      *out = (halo_objective)i;
      return HALO_OK;
    }
  return HALO_ERR_ARG;
}

halo_status halo_order_parse(const char *name, halo_order *out) {
  for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++)
    if (name && strcmp(name, orders[i]) == 0) {
      *out = (halo_order)i;
      return HALO_OK;
    }
  return HALO_ERR_ARG;
}

const char *halo_method_name(halo_method method) {
  return (unsigned)method < sizeof methods / sizeof methods[0] ? methods[method].name : "?";
}

const char *halo_objective_name(halo_objective objective) {
  return (unsigned)objective < sizeof objectives / sizeof objectives[0] ? objectives[objective]
                                                                        : "?";
}

const char *halo_order_name(halo_order order) {
  return (unsigned)order < sizeof orders / sizeof orders[0] ? orders[order] : "?";
}

halo_partitioner halo_partition_lookup(halo_method method) {
  return (unsigned)method < sizeof methods / sizeof methods[0] ? methods[method].fn : NULL;
}
