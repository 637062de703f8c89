/* halo-train's preemption signals (train-impl.h, halo-train.h). */
#include "train-impl.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "halo-watchdog.h"

static volatile sig_atomic_t caught;

/* The first SIGTERM or SIGUSR1 is noted; a second SIGTERM restores the
 * default action and raises it, so that an impatient sender still wins. */
static void on_signal(int signo) {
  if (caught == SIGTERM && signo == SIGTERM) {
    signal(SIGTERM, SIG_DFL);
    raise(SIGTERM);
    return;
  }
  if (signo > caught) caught = signo;
}

void halo_train_signals_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART; /* MPI's and HDF5's system calls go on */
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL);
}

halo_status train_signals_agree(MPI_Comm comm, int failed, int *signo, int *any_failed) {
  const int mine[2] = {caught, failed != 0};
  int all[2] = {0, 0};
  const halo_status st =
      halo_watch_allreduce(mine, all, 2, MPI_INT, MPI_MAX, comm, "the epoch's signal check");
  *signo = all[0];
  *any_failed = all[1];
  return st;
}

const char *train_signal_name(int signo) {
  static char other[32];
  if (signo == SIGTERM) return "SIGTERM";
  if (signo == SIGUSR1) return "SIGUSR1";
  snprintf(other, sizeof other, "signal %d", signo);
  return other;
}
