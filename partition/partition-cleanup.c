/* Stopping on SIGINT and SIGTERM without leaving temporaries behind.
 *
 * The signals are blocked in every thread and taken by one thread that
 * waits for them (sigwait), so no handler ever runs: the cleanup happens in
 * an ordinary thread, which may open folders and take locks, and whatever the
 * other threads are doing, METIS included, is simply ended by _exit.  This
 * matters because METIS_PartGraphKway installs its own SIGTERM handler
 * (GKlib's gk_sigtrap, a longjmp back into METIS_PartGraphKway), which turns
 * a SIGTERM during partitioning into a return of METIS_ERROR; a blocked
 * signal never reaches that handler.
 *
 * The paths to remove are registered under a recursive mutex by the code
 * that creates them (partition-output.c, partition-outfile.c), in the same
 * critical section as the mkdir, mkstemp or rename, so the list always
 * matches the disk.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "halo-partition.h"

enum { MAX_PATHS = 8 };

typedef struct tracked {
  char *path; /* NULL for a free slot */
  int is_dir; /* a folder of plain files (removed with them) or one file */
} tracked;

static pthread_mutex_t lock;
static pthread_once_t lock_once = PTHREAD_ONCE_INIT;
static tracked paths[MAX_PATHS];
static sigset_t waited;
static char program[64] = "halo";

static void lock_init(void) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&lock, &attr);
  pthread_mutexattr_destroy(&attr);
}

void halo_cleanup_lock(void) {
  pthread_once(&lock_once, lock_init);
  pthread_mutex_lock(&lock);
}

void halo_cleanup_unlock(void) { pthread_mutex_unlock(&lock); }

halo_status halo_cleanup_add(const char *path, int is_dir) {
  halo_status st = HALO_OK;
  char *copy = strdup(path);
  if (!copy) HALO_FAIL(HALO_ERR_NOMEM, "out of memory");
  halo_cleanup_lock();
  int k = 0;
  while (k < MAX_PATHS && paths[k].path) k++;
  if (k < MAX_PATHS) paths[k] = (tracked){.path = copy, .is_dir = is_dir};
  halo_cleanup_unlock();
  /* More temporaries than slots is a programming error, not bad input. */
  if (k == MAX_PATHS) {
    free(copy);
    HALO_FAIL(HALO_ERR_ARG, "internal error: more than %d temporary paths", MAX_PATHS);
  }
done:
  return st;
}

void halo_cleanup_drop(const char *path) {
  halo_cleanup_lock();
  for (int k = 0; k < MAX_PATHS; k++)
    if (paths[k].path && strcmp(paths[k].path, path) == 0) {
      free(paths[k].path);
      paths[k].path = NULL;
    }
  halo_cleanup_unlock();
}

/* Removes the files of folder `dir` and the folder; 0 when it is gone.  The
 * main thread may be creating a file meanwhile, hence the retries. */
static int remove_dir(const char *dir) {
  for (int attempt = 0; attempt < 100; attempt++) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char path[4096];
      if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path) unlink(path);
    }
    closedir(d);
    if (rmdir(dir) == 0 || errno == ENOENT) return 0;
    if (errno != ENOTEMPTY && errno != EEXIST) return -1;
  }
  return -1;
}

/* Posted by the signal thread once it runs (halo_cleanup_on_signals waits
 * for it). */
static sem_t started;

static void *wait_for_signal(void *arg) {
  (void)arg;
  int sig = 0;
  sem_post(&started);
  if (sigwait(&waited, &sig) != 0) return NULL;
  /* Held until _exit: nothing can register a new path or finish the run
   * (main takes the lock before it returns) while the paths go. */
  halo_cleanup_lock();
  char line[8192];
  int used = snprintf(line, sizeof line, "%s: stopped by %s", program,
                      sig == SIGINT ? "SIGINT" : "SIGTERM");
  int removed = 0, left = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < MAX_PATHS; k++) {
      const tracked *t = &paths[k];
      if (!t->path) continue;
      const int ok = t->is_dir ? remove_dir(t->path) == 0 : unlink(t->path) == 0 || errno == ENOENT;
      if (pass == 0 && ok && used < (int)sizeof line)
        used += snprintf(line + used, sizeof line - (size_t)used, "%s%s",
                         removed++ ? " and " : "; removed ", t->path);
      if (pass == 1 && !ok && used < (int)sizeof line)
        used += snprintf(line + used, sizeof line - (size_t)used, "%s%s",
                         left++ ? " and " : "; could not remove ", t->path);
    }
  if (used >= (int)sizeof line - 1) used = (int)sizeof line - 2;
  line[used++] = '\n';
  (void)!write(STDERR_FILENO, line, (size_t)used);
  _exit(128 + sig);
  return NULL;
}

halo_status halo_cleanup_on_signals(const char *name) {
  halo_status st = HALO_OK;
  sigset_t blocked;
  pthread_t thread;
  pthread_attr_t attr;
  snprintf(program, sizeof program, "%s", name);
  pthread_once(&lock_once, lock_init);
  sigemptyset(&blocked);
  sigemptyset(&waited);
  const int sigs[] = {SIGINT, SIGTERM};
  for (int k = 0; k < 2; k++) {
    struct sigaction old;
    sigaddset(&blocked, sigs[k]);
    /* A signal ignored from the start (SIGINT of `cmd &` in a script) stays
     * ignored; it is still blocked, so that METIS' handler never sees it. */
    if (sigaction(sigs[k], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
      sigaddset(&waited, sigs[k]);
  }
  int rc = pthread_sigmask(SIG_BLOCK, &blocked, NULL);
  if (rc != 0) HALO_FAIL(HALO_ERR_IO, "cannot block SIGINT and SIGTERM: %s", strerror(rc));
  if (sigismember(&waited, SIGINT) != 1 && sigismember(&waited, SIGTERM) != 1) goto done;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  sem_init(&started, 0, 0);
  rc = pthread_create(&thread, &attr, wait_for_signal, NULL);
  pthread_attr_destroy(&attr);
  if (rc != 0) HALO_FAIL(HALO_ERR_IO, "cannot start the signal thread: %s", strerror(rc));
  /* Until the thread runs, the C library (and ASan) are still setting it
   * up: a process that exited then (bad input found at once) would leave
   * that set-up half done, which LeakSanitizer reports as a leak. */
  while (sem_wait(&started) != 0 && errno == EINTR) {
  }
done:
  return st;
}
