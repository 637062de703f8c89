/* Names of methods, objectives and orders, and the method -> partitioner table. */
#include <string.h>

#include "halo-csr.h"
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

static const char *const balances[] = {
    [HALO_BALANCE_NODES] = "nodes", [HALO_BALANCE_EDGES] = "edges", [HALO_BALANCE_WORK] = "work"};

halo_status halo_balance_parse(const char *name, halo_balance *out) {
  for (size_t i = 0; i < sizeof balances / sizeof balances[0]; i++)
    if (name && strcmp(name, balances[i]) == 0) {
      *out = (halo_balance)i;
      return HALO_OK;
    }
  return HALO_ERR_ARG;
}

const char *halo_balance_name(halo_balance balance) {
  return (unsigned)balance < sizeof balances / sizeof balances[0] ? balances[balance] : "?";
}

halo_status halo_objective_parse(const char *name, halo_objective *out) {
  for (size_t i = 0; i < sizeof objectives / sizeof objectives[0]; i++)
    if (name && strcmp(name, objectives[i]) == 0) {
      *out = (halo_objective)i;
      return HALO_OK;
    }
  return HALO_ERR_ARG;
}

static const char *const layouts[] = {[HALO_FEATURES_AUTO] = "auto",
                                      [HALO_FEATURES_SPARSE] = "sparse",
                                      [HALO_FEATURES_DENSE] = "dense"};

halo_status halo_features_layout_parse(const char *name, halo_features_layout *out) {
  for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
    if (name && strcmp(name, layouts[i]) == 0) {
      *out = (halo_features_layout)i;
      return HALO_OK;
    }
  return HALO_ERR_ARG;
}

int halo_features_csr_wanted(halo_features_layout layout, int64_t n, int32_t features,
                             int64_t nnz) {
  if (features < 1) return 0;
  if (layout == HALO_FEATURES_AUTO) return halo_csr_is_smaller(n, features, nnz);
  return layout == HALO_FEATURES_SPARSE;
}

halo_status halo_partition_features_layout(halo_graph *g, halo_features_layout layout) {
  if (g->features < 1) return HALO_OK;
  if (halo_features_csr_wanted(layout, g->n, g->features, halo_graph_features_nnz(g)))
    return halo_graph_features_to_csr(g);
  return halo_graph_features_to_dense(g);
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
