/* halo-train: full-batch GNN training over the shards of one partition run,
 * one MPI rank per part.  This file is the program: MPI, the flags
 * (halo-train-args.c) and the environment variables (cli-env.c), the call
 * into the training driver (train/halo-train.h), and the exit code; what
 * rank 0 prints and writes is train-report.c.
 *
 * Phases (each ends in a collective agreement on status, so that one rank's
 * failure stops every rank instead of leaving them in a collective):
 *   args -> environment -> halo_train_run (backend -> load -> resume ->
 *   memory check -> plan/model -> train).
 * Only main() may call MPI_Abort, and only when the agreement itself fails,
 * the watchdog (--timeout) gave up on a peer, or the epoch loop failed.
 */
#include <stdio.h>

#include "cli-env.h"
#include "halo-memory.h"
#include "halo-mpi.h"
#include "halo-shard.h"
#include "halo-train-args.h"
#include "halo-train.h"
#include "train-report.h"

#ifndef HALO_VERSION
#define HALO_VERSION "unknown"
#endif

/* The flags and the environment, agreed on by every rank; *stop when
 * --help or --version printed all there was to do. Collective. */
static halo_status start(MPI_Comm comm, int rank, int argc, char **argv, halo_train_args *args,
                         halo_train_env *env, int *stop) {
  halo_status st = HALO_OK;
  char held[2048]; /* an error line held for halo_mpi_agree_first */
  cli_env e;

  HALO_TRY(halo_mpi_agree(comm, halo_train_check_same_args(comm, argc, argv)));
  /* Every rank parses the same argv; rank 0 alone reports a bad flag. */
  if (rank != 0) halo_log_set_quiet(1);
  st = halo_train_args_parse(argc, argv, args);
  /* Rank 0 alone writes the metrics, so it alone checks the file. */
  if (st == HALO_OK && rank == 0) st = train_report_metrics_check(args->metrics, args->force, args->resume);
  halo_log_set_quiet(0);
  HALO_TRY(halo_mpi_agree(comm, st));
  if (args->help || args->version) {
    if (rank == 0 && args->help) fputs(halo_train_usage(), stdout);
    if (rank == 0 && args->version)
      printf("halo-train %s (shard format %d)\n", HALO_VERSION, HALO_SHARD_FORMAT_VERSION);
    *stop = 1;
    goto done;
  }

  /* Each rank reads its own environment (mpirun -x passes variables on);
   * the lowest rank with a bad value says so. */
  halo_log_hold(held, sizeof held);
  st = cli_env_read(&e, CLI_ENV_MEMORY | CLI_ENV_CUDA | CLI_ENV_FAULT);
  halo_log_hold(NULL, 0);
  HALO_TRY(halo_mpi_agree_first(comm, st, held));
  halo_memory_set_available(e.memory_available);
  *env = (halo_train_env){.cuda_spmm_rows = e.cuda_spmm_rows,
                          .cuda_aware = e.cuda_aware,
                          .stall = e.stall,
                          .stall_rank = e.stall_rank,
                          .stall_epoch = e.stall_epoch};
done:
  return st;
}

int main(int argc, char **argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  halo_train_args args = {0};
  halo_train_env env = {0};
  halo_train_result result = {0};
  train_report report = {0};
  int rank = 0, stop = 0;
  char prefix[64];

  /* Before anything else: it may execute the program again (cli-env.c). */
  const char *wait = cli_env_wait_policy(argv);
  /* OpenMP and OpenBLAS threads run between MPI calls; only the main thread
   * calls MPI. */
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "halo-train: error: MPI_Init_thread failed\n");
    return 1;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  halo_train_signals_install();
  MPI_Comm_rank(comm, &rank);
  snprintf(prefix, sizeof prefix, "[rank %d] halo-train", rank);
  halo_log_set_prefix(prefix);

  halo_status st = start(comm, rank, argc, argv, &args, &env, &stop);
  env.wait = wait;
  report.metrics_path = args.metrics;
  if (st == HALO_OK && !stop)
    st = halo_train_run(comm, &args, &env, &train_report_ops, &report, &result);

  const halo_status closed = train_report_metrics_close(&report, args.metrics);
  if (st == HALO_OK) st = closed;
  if (st == HALO_ERR_MPI || st == HALO_ERR_TIMEOUT || result.abort) {
    /* A peer may be stuck in a collective or an exchange, so only the
     * runtime can end it (halo_train_result).  MPI_Abort ends the process
     * without running exit handlers. */
    fprintf(stderr, "[rank %d] halo-train: aborting the job (MPI_Abort)\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  /* docs/reliability.md, "Exit codes". */
  if (st < 0) return result.nonfinite ? HALO_TRAIN_EXIT_NONFINITE : 1;
  return result.stopped_by ? 128 + result.stopped_by : 0;
}
