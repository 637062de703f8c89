/* halo-partition stopped by SIGTERM or SIGINT: exit status 128 + signal, one
 * line naming the signal and what was removed, and nothing left next to the
 * output.  The phase is read off halo-partition's progress lines, which it
 * prints when stderr is a terminal: stderr is a pseudo-terminal here, so
 * "partitioning into" says that METIS is about to run (METIS traps SIGTERM
 * itself, which once turned the signal into "METIS_PartGraphKway failed"). */
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "partition-util.h"

#define EXE HALO_PARTITION_EXE
/* 6M directed edges: more than the 1M that turn the progress lines on, and
 * a METIS run of seconds. */
#define SPEC "sbm:nodes=300000,avg-degree=20,feat=8,classes=4,seed=3"

typedef struct child {
  pid_t pid;
  int tty; /* the pty's master side: the child's stderr; -1 without */
  char text[1 << 16];
  size_t len;
} child;

/* Starts halo-partition on SPEC into dir/o with --json dir/o.json, with
 * SIGINT and SIGTERM at their defaults, and stderr on a pty when `pty`. */
static void start(child *c, const char *dir, int pty) {
  char out[512], json[512];
  snprintf(out, sizeof out, "%s/o", dir);
  snprintf(json, sizeof json, "%s/o.json", dir);
  c->tty = -1;
  c->len = 0;
  c->text[0] = '\0';
  const char *slave = NULL;
  if (pty) {
    c->tty = posix_openpt(O_RDWR | O_NOCTTY);
    cr_assert_geq(c->tty, 0, "posix_openpt: %s", strerror(errno));
    cr_assert_eq(grantpt(c->tty), 0);
    cr_assert_eq(unlockpt(c->tty), 0);
    slave = ptsname(c->tty);
    cr_assert_not_null(slave);
  }
  fflush(NULL);
  c->pid = fork();
  cr_assert_geq(c->pid, 0, "fork: %s", strerror(errno));
  if (c->pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    int null = open("/dev/null", O_RDWR);
    int err = slave ? open(slave, O_RDWR | O_NOCTTY) : open("/dev/null", O_RDWR);
    if (null < 0 || err < 0) _exit(126);
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execl(EXE, EXE, "--input", SPEC, "--parts", "4", "--out", out, "--json", json, (char *)NULL);
    _exit(127);
  }
}

/* Reads the child's stderr for up to `ms` milliseconds, or until it holds
 * `want` (NULL: until the deadline or the end); 1 when it does. */
static int read_until(child *c, const char *want, int ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (want && strstr(c->text, want)) return 1;
    clock_gettime(CLOCK_MONOTONIC, &t);
    int left = ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
    if (left <= 0) return 0;
    struct pollfd pfd = {.fd = c->tty, .events = POLLIN};
    int rc = poll(&pfd, 1, left);
    if (rc <= 0) continue;
    ssize_t got = read(c->tty, c->text + c->len, sizeof c->text - 1 - c->len);
    if (got <= 0) return 0; /* EIO: the child closed its end */
    c->len += (size_t)got;
    c->text[c->len] = '\0';
  }
}

/* The first entry of `dir` other than "." and "..", or NULL. */
static char *first_entry(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  char *name = NULL;
  struct dirent *e;
  while (!name && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) name = strdup(e->d_name);
  closedir(d);
  return name;
}

/* Sends `sig`, waits for the exit, and checks status, message and folder. */
static void stop_and_check(child *c, const char *dir, int sig, const char *phase) {
  cr_assert_eq(kill(c->pid, sig), 0);
  int status = 0;
  cr_assert_eq(waitpid(c->pid, &status, 0), c->pid);
  if (c->tty >= 0) {
    read_until(c, NULL, 2000);
    close(c->tty);
  }
  cr_assert(WIFEXITED(status), "%s: halo-partition did not exit (status %#x); stderr:\n%s", phase,
            status, c->text);
  cr_assert_eq(WEXITSTATUS(status), 128 + sig, "%s: exit status %d, expected %d; stderr:\n%s",
               phase, WEXITSTATUS(status), 128 + sig, c->text);
  char line[1024];
  snprintf(line, sizeof line,
           "halo-partition: stopped by %s; removed %s/o.tmp.%ld and %s/o.json.tmp.",
           sig == SIGINT ? "SIGINT" : "SIGTERM", dir, (long)c->pid, dir);
  if (c->tty >= 0) {
    cr_assert_not_null(strstr(c->text, line), "%s: no line '%s...' in:\n%s", phase, line, c->text);
    cr_assert_null(strstr(c->text, "error"), "%s: an error was reported:\n%s", phase, c->text);
  }
  char *left = first_entry(dir);
  cr_assert_null(left, "%s: %s is left in %s", phase, left, dir);
}

static void stop_in_phase(const char *tag, const char *phase, int delay_ms, int sig) {
  char *dir = pt_temp_dir(tag);
  child c;
  start(&c, dir, 1);
  cr_assert(read_until(&c, phase, 120000), "no '%s' line within 120 s:\n%s", phase, c.text);
  if (delay_ms) read_until(&c, "\001", delay_ms); /* let the phase get going */
  stop_and_check(&c, dir, sig, phase);
  pt_remove_tree(dir);
  free(dir);
}

Test(signals, sigterm_while_metis_runs) {
  stop_in_phase("sig-metis-term", "partitioning into 4 parts (metis)", 300, SIGTERM);
}

Test(signals, sigint_while_metis_runs) {
  stop_in_phase("sig-metis-int", "partitioning into 4 parts (metis)", 300, SIGINT);
}

Test(signals, sigterm_while_shards_are_written) {
  stop_in_phase("sig-write", "writing shards", 20, SIGTERM);
}

/* No pty: as soon as the temporary folder exists (the input is still being
 * generated), without the progress lines. */
Test(signals, sigterm_right_after_the_temporary_folder_appears) {
  char *dir = pt_temp_dir("sig-early");
  child c;
  start(&c, dir, 0);
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s/o.tmp.%ld", dir, (long)c.pid);
  struct stat sb;
  const struct timespec ms = {.tv_nsec = 1000000};
  for (int k = 0; k < 60000 && stat(tmp, &sb) != 0; k++) nanosleep(&ms, NULL);
  cr_assert_eq(stat(tmp, &sb), 0, "%s never appeared", tmp);
  stop_and_check(&c, dir, SIGTERM, "load");
  pt_remove_tree(dir);
  free(dir);
}
