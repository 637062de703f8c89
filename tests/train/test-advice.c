/* halo-train's start-up advice on ranks, cores and threads
 * (halo_mpi_advise, comm/halo-mpi.h), case by case against the rule the
 * header states, and over a grid of inputs against a second, independent
 * reading of that rule.  The end-to-end warning lines are in
 * test-train-cli (cli/binding_that_does_not_fit_is_named,
 * cli/oversubscribed_node_is_named). */
#include <criterion/criterion.h>

#include "halo-mpi.h"

/* The cases of issue 20: mpirun's default binding of -np 1 to one core of
 * two, with one thread, must not be told to take more threads (2 threads
 * per rank measured 2.7x slower than 1 on Cora); a hostfile with more
 * slots than cores must be named. */
Test(advice, cases) {
  int hint = -1;
  /* One rank bound to one of 2 cores, 1 thread: nothing to say. */
  cr_expect_eq(halo_mpi_advise(1, 2, 1, 1, &hint), HALO_MPI_ADVICE_NONE);
  cr_expect_eq(hint, 1);
  /* The same rank unbound with 2 threads: they fit. */
  cr_expect_eq(halo_mpi_advise(1, 2, 2, 2, &hint), HALO_MPI_ADVICE_NONE);
  cr_expect_eq(hint, 2);
  /* Two threads on one core. */
  cr_expect_eq(halo_mpi_advise(1, 2, 1, 2, &hint), HALO_MPI_ADVICE_FEWER_THREADS);
  cr_expect_eq(hint, 1);
  /* Two unbound ranks of 2 threads on 2 cores: 4 threads for 2 cores. */
  cr_expect_eq(halo_mpi_advise(2, 2, 2, 2, &hint), HALO_MPI_ADVICE_FEWER_THREADS);
  cr_expect_eq(hint, 1);
  /* Ranks equal to cores, one thread each: fine. */
  cr_expect_eq(halo_mpi_advise(2, 2, 2, 1, &hint), HALO_MPI_ADVICE_NONE);
  cr_expect_eq(halo_mpi_advise(64, 64, 1, 1, &hint), HALO_MPI_ADVICE_NONE);
  /* mpirun --oversubscribe -np 3 on 2 cores; a 16-slot hostfile on 8 cores. */
  cr_expect_eq(halo_mpi_advise(3, 2, 2, 1, &hint), HALO_MPI_ADVICE_OVERSUBSCRIBED);
  cr_expect_eq(hint, 1);
  cr_expect_eq(halo_mpi_advise(16, 8, 1, 1, NULL), HALO_MPI_ADVICE_OVERSUBSCRIBED);
  /* Oversubscription comes first, whatever the threads. */
  cr_expect_eq(halo_mpi_advise(3, 2, 1, 4, NULL), HALO_MPI_ADVICE_OVERSUBSCRIBED);
  /* A cpuset of 4 of 16 cores, 4 ranks, 4 threads each: fits. */
  cr_expect_eq(halo_mpi_advise(4, 16, 4, 4, &hint), HALO_MPI_ADVICE_NONE);
  cr_expect_eq(hint, 4);
  /* Nonsense counts read as 1 rather than dividing by zero. */
  cr_expect_eq(halo_mpi_advise(0, 0, 0, 1, &hint), HALO_MPI_ADVICE_NONE);
  cr_expect_eq(hint, 1);
}

/* Every input of a grid, against the rule spelled out another way: count
 * the cores each rank can have (its mask, and its share of the node) and
 * compare. */
Test(advice, grid_against_the_rule) {
  for (int ranks = 1; ranks <= 12; ranks++)
    for (long cores = 1; cores <= 12; cores++)
      for (int allowed = 1; allowed <= cores; allowed++)
        for (int threads = 1; threads <= 12; threads++) {
          int hint = 0;
          const halo_mpi_advice got = halo_mpi_advise(ranks, cores, allowed, threads, &hint);
          const int share = (int)(cores / ranks) > 0 ? (int)(cores / ranks) : 1;
          const int room = share < allowed ? share : allowed;
          halo_mpi_advice want = HALO_MPI_ADVICE_NONE;
          if (ranks > cores)
            want = HALO_MPI_ADVICE_OVERSUBSCRIBED;
          else if (threads > room && (threads > allowed || threads * ranks > cores))
            want = HALO_MPI_ADVICE_FEWER_THREADS;
          cr_assert_eq(got, want, "ranks %d, cores %ld, allowed %d, threads %d: advice %d, not %d",
                       ranks, cores, allowed, threads, (int)got, (int)want);
          cr_assert_eq(hint, room, "ranks %d, cores %ld, allowed %d: hint %d, not %d", ranks, cores,
                       allowed, hint, room);
          /* Never more threads than the rank has, when it has them all. */
          if (threads >= allowed && got != HALO_MPI_ADVICE_NONE)
            cr_assert_leq(hint, threads, "advice to go from %d to %d threads", threads, hint);
          /* Following the advice leaves nothing more to say, oversubscription aside. */
          if (got == HALO_MPI_ADVICE_FEWER_THREADS)
            cr_assert_eq(halo_mpi_advise(ranks, cores, allowed, hint, NULL), HALO_MPI_ADVICE_NONE,
                         "ranks %d, cores %ld, allowed %d: --threads %d still gets advice", ranks,
                         cores, allowed, hint);
        }
}
