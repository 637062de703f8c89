/* halo's distributed coarsening and refinement (partition-dcoarsen.h),
 * under mpirun at K = 1, 2 and 3: dcoarsen-check rebuilds the whole graph
 * on every rank and checks each level's clusters, weights and edges, and
 * the refinement's cut, balance and determinism, against it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "partition-util.h"

#define MPIRUN "mpirun --allow-run-as-root --oversubscribe --bind-to none"

static void check(int ranks) {
  char name[64], *out = NULL;
  snprintf(name, sizeof name, "dcoarsen.k%d", ranks);
  const uint64_t seed = pt_seed(name, 17 + (uint64_t)ranks);
  /* 3000 nodes in 6 classes, degree 8; clusters of at most 40; 4 parts. */
  const int rc = pt_run(&out, MPIRUN " -np %d %s %llu 3000 6 8 40 4", ranks, DCOARSEN_CHECK,
                        (unsigned long long)seed);
  fprintf(stderr, "%s", out);
  cr_assert_eq(rc, 0, "dcoarsen-check at K = %d failed:\n%s", ranks, out);
  free(out);
}

Test(dcoarsen, one_rank, .timeout = 300) { check(1); }
Test(dcoarsen, two_ranks, .timeout = 300) { check(2); }
Test(dcoarsen, three_ranks, .timeout = 300) { check(3); }
