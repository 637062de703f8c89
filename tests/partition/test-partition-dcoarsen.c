/* halo's distributed coarsening and refinement (partition-dcoarsen.h),
 * under mpirun at K = 1, 2 and 3: dcoarsen-check rebuilds the whole graph
 * on every rank and checks each level's clusters, weights and edges, the
 * projection, and the refinement's cut, balance and determinism, against
 * it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "partition-util.h"

#define MPIRUN "mpirun --allow-run-as-root --oversubscribe --bind-to none"

/* 3000 nodes in 6 classes, degree 8, 4 parts; clusters of at most
 * max_weight.  A cap of 6 fills clusters while ranks add to them in the
 * same round: without the homes' room a cluster of level 2 weighs 8. */
static void check(int ranks, int max_weight) {
  char name[64], *out = NULL;
  snprintf(name, sizeof name, "dcoarsen.k%d.w%d", ranks, max_weight);
  const uint64_t seed = pt_seed(name, 17 + (uint64_t)ranks);
  const int rc = pt_run(&out, MPIRUN " -np %d %s %llu 3000 6 8 %d 4", ranks, DCOARSEN_CHECK,
                        (unsigned long long)seed, max_weight);
  fprintf(stderr, "%s", out);
  cr_assert_eq(rc, 0, "dcoarsen-check at K = %d, clusters up to %d, failed:\n%s", ranks, max_weight,
               out);
  free(out);
}

Test(dcoarsen, one_rank, .timeout = 300) { check(1, 40); }
Test(dcoarsen, two_ranks, .timeout = 300) { check(2, 40); }
Test(dcoarsen, three_ranks, .timeout = 300) { check(3, 40); }
Test(dcoarsen, two_ranks_small_clusters, .timeout = 300) { check(2, 6); }
Test(dcoarsen, three_ranks_small_clusters, .timeout = 300) { check(3, 6); }
