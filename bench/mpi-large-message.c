/* Whether this machine's MPI moves a message of more than 2 GB the way
 * halo-partition --method ptscotch routes a part to its writer: one
 * MPI_Alltoallv whose counts are 512-byte units (a contiguous type of 64
 * int64).  Every rank sends GiB (argument, default 2.5) to the next rank;
 * every item received is checked against the pattern its sender wrote, and
 * rank 0 prints the wrong items (0 expected) and the rate.  Run by
 * bench/mpi-large-message.sh. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t pat(int from, uint64_t i) {
  uint64_t x = ((uint64_t)from << 56) ^ (i * 0x9E3779B97F4A7C15ull);
  return x ^ (x >> 29);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const double gib = argc > 1 ? atof(argv[1]) : 2.5;
  const int64_t units = (int64_t)(gib * (1 << 30) / 512);
  const int64_t items = units * 64;
  MPI_Datatype unit;
  MPI_Type_contiguous(64, MPI_INT64_T, &unit);
  MPI_Type_commit(&unit);
  /* Every rank sends `units` to the next rank, nothing to the others. */
  const int to = (rank + 1) % size, from = (rank + size - 1) % size;
  int *sc = calloc(size, sizeof *sc), *sd = calloc(size, sizeof *sd);
  int *rc = calloc(size, sizeof *rc), *rd = calloc(size, sizeof *rd);
  sc[to] = (int)units;
  rc[from] = (int)units;
  uint64_t *send = malloc(items * 8), *recv = malloc(items * 8);
  if (!send || !recv) {
    fprintf(stderr, "rank %d: no memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int64_t i = 0; i < items; i++) send[i] = pat(rank, (uint64_t)i);
  for (int64_t i = 0; i < items; i++) recv[i] = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t = MPI_Wtime();
  int rc_mpi = MPI_Alltoallv(send, sc, sd, unit, recv, rc, rd, unit, MPI_COMM_WORLD);
  t = MPI_Wtime() - t;
  int64_t bad = 0;
  for (int64_t i = 0; i < items; i++) bad += recv[i] != pat(from, (uint64_t)i);
  int64_t all_bad = 0;
  MPI_Reduce(&bad, &all_bad, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf(
        "%d ranks, one message of %.2f GiB (%lld units of 512 B) a rank: rc %d, %lld wrong items, "
        "%.2f s, %.2f GB/s a rank\n",
        size, (double)items * 8 / (1 << 30), (long long)units, rc_mpi, (long long)all_bad, t,
        (double)items * 8 / t / 1e9);
  MPI_Type_free(&unit);
  MPI_Finalize();
  return all_bad != 0;
}
