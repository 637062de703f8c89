/* halo-train across two hosts made of network namespaces (netns-cluster.sh):
 * 2 ranks on each, launched by mpirun from the first with a hostfile and
 * Open MPI's rsh launcher pointed at netns-rsh.sh, TCP only, on the test's
 * own subnet.  It checks that
 *   - the ranks really sit two to a host (each prints its host name);
 *   - every epoch's halo bytes equal the prediction;
 *   - the --deterministic loss curve and parameters equal the single-host
 *     run's, bit for bit;
 *   - a rank killed on the second host ends the job within 10 s, with no
 *     process left on either host;
 *   - halo-partition --method ptscotch on the two hosts gives the parts it
 *     gives on one host with as many ranks (the same run id), into a folder
 *     both hosts see, and its shards train across the hosts.
 * Cross-namespace latency is about 1 ms here, so nothing else is timed.  The
 * test skips, saying why, where it cannot create namespaces. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test-sanitized.h"
#include "train-cli.h"
#include "train-run.h"

#define CLUSTER HALO_SOURCE_DIR "/tests/cluster"
#define CORA HALO_DATASETS_DIR "/cora"

static char name[32], subnet[32], addr[2][32];

static void teardown(void) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "%s/netns-cluster.sh down %s", CLUSTER, name);
  if (system(cmd) != 0) fprintf(stderr, "cluster: '%s' failed\n", cmd);
}

/* Removes the namespaces of earlier runs whose test process is gone (one
 * that ctest killed on a timeout never reached teardown). */
static void remove_stale(void) {
  FILE *p = popen("ip netns list 2>/dev/null", "r");
  if (!p) return;
  char line[256];
  while (fgets(line, sizeof line, p)) {
    int pid = 0;
    char side = 0;
    if (sscanf(line, "halo%d-%c", &pid, &side) != 2 || side != 'a' || pid <= 0) continue;
    char proc[64], cmd[256];
    snprintf(proc, sizeof proc, "/proc/%d", pid);
    if (access(proc, F_OK) == 0) continue;
    fprintf(stderr, "cluster: removing the namespaces of an earlier run (pid %d)\n", pid);
    snprintf(cmd, sizeof cmd, "%s/netns-cluster.sh down halo%d", CLUSTER, pid);
    if (system(cmd) != 0) fprintf(stderr, "cluster: '%s' failed\n", cmd);
  }
  pclose(p);
}

/* Two namespaces of names and a subnet drawn from the pid, so that runs side
 * by side do not meet; skips the test where they cannot be made. */
static void setup(void) {
  remove_stale();
  int octet = 20 + (int)(getpid() % 200);
  snprintf(name, sizeof name, "halo%d", (int)getpid());
  snprintf(subnet, sizeof subnet, "10.213.%d.0/24", octet);
  for (int i = 0; i < 2; i++) snprintf(addr[i], sizeof addr[i], "10.213.%d.%d", octet, i + 1);
  char cmd[256], *dir = tr_tmpdir("netns"), log[300];
  snprintf(log, sizeof log, "%s/up.log", dir);
  snprintf(cmd, sizeof cmd, "%s/netns-cluster.sh up %s %d", CLUSTER, name, octet);
  int rc = tr_run(30, log, "%s", cmd);
  char *why = tr_slurp(log);
  tr_rmdir(dir);
  if (rc == 77) {
    why[strcspn(why, "\n")] = '\0';
    cr_skip_test("no namespace cluster here: %s", why);
  }
  cr_assert_eq(rc, 0, "'%s' exited with %d: %s", cmd, rc, why);
  free(why);
}

/* The command that runs `args` under mpirun on the two hosts, 2 ranks each,
 * mpirun itself on the first (a shell line for tr_run). */
static void cluster_mpirun(char *out, size_t size, const char *dir, const char *args) {
  char hosts[300];
  snprintf(hosts, sizeof hosts, "%s/hostfile", dir);
  FILE *f = fopen(hosts, "w");
  cr_assert(f);
  fprintf(f, "%s slots=2\n%s slots=2\n", addr[0], addr[1]);
  cr_assert_eq(fclose(f), 0);
  /* mpirun hands its environment to the ranks it starts itself, not to
   * those the launcher starts: the sanitizer settings go by name. */
  char forward[128] = "";
  const char *sanitizers[] = {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"};
  for (int i = 0; i < 3; i++)
    if (getenv(sanitizers[i])) {
      strcat(forward, " -x ");
      strcat(forward, sanitizers[i]);
    }
  snprintf(out, size,
           "env HALO_NETNS_HOSTS='%s=%s-a=%s-a %s=%s-b=%s-b' "
           "ip netns exec %s-a unshare --uts sh -c 'hostname %s-a && exec mpirun "
           "--allow-run-as-root --bind-to none --hostfile %s -np 4 "
           "--mca plm_rsh_agent %s/netns-rsh.sh --mca btl tcp,self,vader "
           "--mca btl_tcp_if_include %s --mca oob_tcp_if_include %s "
           "-x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1%s %s'",
           addr[0], name, name, addr[1], name, name, name, name, hosts, CLUSTER, subnet, subnet,
           forward, args);
}

static void nap_ms(int ms) {
  struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The pids in namespace NAME-side whose comm starts with `comm` (all of them
 * when comm is NULL). */
static int pids_in(char side, const char *comm, pid_t *pids, int max) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "ip netns pids %s-%c 2>/dev/null", name, side);
  FILE *p = popen(cmd, "r");
  cr_assert(p);
  int count = 0, pid;
  while (count < max && fscanf(p, "%d", &pid) == 1) {
    char path[64], text[64] = "";
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (!fgets(text, sizeof text, f)) text[0] = '\0';
    fclose(f);
    if (!comm || strncmp(text, comm, strlen(comm)) == 0) pids[count++] = (pid_t)pid;
  }
  pclose(p);
  return count;
}

/* Cora in 4 parts, into dir/cora-4 (its path in shards). */
static void partition_cora(const char *dir, char *shards, size_t size) {
  char log[400];
  snprintf(shards, size, "%s/cora-4", dir);
  snprintf(log, sizeof log, "%s/partition.log", dir);
  cr_assert_eq(tr_run(60, log, "%s --input %s --parts 4 --out %s", PARTITION_BIN, CORA, shards), 0,
               "halo-partition failed (see %s)", log);
}

TestSuite(cluster, .init = setup, .fini = teardown, .timeout = 600);

Test(cluster, two_hosts_train_as_one) {
  char *dir = tr_tmpdir("cluster"), shards[300], cmd[4096], log[900], args[4096];
  partition_cora(dir, shards, sizeof shards);

  /* Two ranks on each host. */
  cluster_mpirun(cmd, sizeof cmd, dir, "hostname");
  snprintf(log, sizeof log, "%s/hostname.log", dir);
  int rc = tr_run(60, log, "%s", cmd);
  char *out = tr_slurp(log);
  cr_assert_eq(rc, 0, "mpirun across the namespaces failed (%d):\n%s", rc, out);
  char host[2][48];
  for (int i = 0; i < 2; i++) {
    snprintf(host[i], sizeof host[i], "%s-%c\n", name, 'a' + i);
    cr_expect_eq(tr_count_lines(out, host[i]), 2, "not 2 ranks on %s:\n%s", host[i], out);
  }
  free(out);

  /* The same run on one host and on two. */
  const int epochs = TEST_SANITIZED ? 10 : 30;
  run_report one, two;
  char path[2][400];
  for (int i = 0; i < 2; i++) {
    snprintf(path[i], sizeof path[i], "%s/%s.jsonl", dir, i ? "two-hosts" : "one-host");
    snprintf(args, sizeof args, "%s %s --deterministic --quiet --epochs %d --metrics %s", TRAIN_BIN,
             shards, epochs, path[i]);
    snprintf(log, sizeof log, "%s.log", path[i]);
    if (i == 0) {
      rc = tr_mpirun(4, 120, log, "%s", args);
    } else {
      cluster_mpirun(cmd, sizeof cmd, dir, args);
      rc = tr_run(120, log, "%s", cmd);
    }
    cr_assert_eq(rc, 0, "halo-train on %s exited with %d (see %s)", i ? "two hosts" : "one host",
                 rc, log);
  }
  read_report(path[0], &one);
  read_report(path[1], &two);
  cr_assert_eq(two.m.epochs, epochs);
  for (int e = 0; e < epochs; e++) {
    cr_expect_gt(two.m.halo[e], 0);
    cr_expect_eq(two.m.halo[e], two.m.predicted[e], "epoch %d: %.0f halo bytes, predicted %.0f",
                 e + 1, two.m.halo[e], two.m.predicted[e]);
  }
  expect_bit_identical(&one, &two, "two hosts against one");
  fprintf(stderr,
          "cluster: %d epochs on 2 hosts x 2 ranks: %.0f halo bytes per epoch (= the "
          "prediction), losses and params_sha256 %.16s... equal to one host's\n",
          epochs, two.m.halo[0], two.sha);
  tr_rmdir(dir);
}

/* The distributed partitioner across the two hosts, 2 ranks each, writes
 * into the folder both see: the same parts as on one host with K = 4
 * (equal run ids), and shards that train across the hosts. */
Test(cluster, two_hosts_partition_as_one) {
  char *dir = tr_tmpdir("cluster-pt"), cmd[4096], log[900], args[4096], json[2][400], id[2][32];
  const char *spec = "sbm:nodes=4000,classes=4,avg-degree=8,feat=8,seed=3";
  for (int i = 0; i < 2; i++) {
    snprintf(json[i], sizeof json[i], "%s/%s.json", dir, i ? "two-hosts" : "one-host");
    snprintf(args, sizeof args, "%s --method ptscotch --input '%s' --parts 4 --out %s/%s --json %s",
             PARTITION_BIN, spec, dir, i ? "two-hosts" : "one-host", json[i]);
    snprintf(log, sizeof log, "%s.log", json[i]);
    int rc;
    if (i == 0) {
      rc = tr_mpirun(4, 120, log, "%s", args);
    } else {
      cluster_mpirun(cmd, sizeof cmd, dir, args);
      rc = tr_run(120, log, "%s", cmd);
    }
    cr_assert_eq(rc, 0, "halo-partition --method ptscotch on %s exited with %d (see %s)",
                 i ? "two hosts" : "one host", rc, log);
    char *text = tr_slurp(json[i]);
    const char *at = strstr(text, "\"run_id\": \"");
    cr_assert(at, "no run id in %s", json[i]);
    snprintf(id[i], sizeof id[i], "%.16s", at + strlen("\"run_id\": \""));
    cr_expect(strstr(text, "\"ranks\": 4"), "%s: not 4 ranks", json[i]);
    free(text);
  }
  cr_expect_str_eq(id[1], id[0], "the parts on two hosts differ from one host's");
  snprintf(args, sizeof args, "%s %s/two-hosts --quiet --epochs 3", TRAIN_BIN, dir);
  snprintf(log, sizeof log, "%s/train.log", dir);
  cluster_mpirun(cmd, sizeof cmd, dir, args);
  const int rc = tr_run(120, log, "%s", cmd);
  char *out = tr_slurp(log);
  cr_expect_eq(rc, 0, "halo-train on the two hosts' shards exited with %d:\n%s", rc, out);
  cr_expect(strstr(out, "equal to the prediction"), "%s", out);
  free(out);
  tr_rmdir(dir);
}

Test(cluster, a_rank_killed_on_the_second_host_ends_the_job) {
  char *dir = tr_tmpdir("cluster-kill"), shards[300], cmd[4096], log[400], args[1000];
  partition_cora(dir, shards, sizeof shards);
  snprintf(args, sizeof args, "%s %s --quiet --epochs 100000", TRAIN_BIN, shards);
  cluster_mpirun(cmd, sizeof cmd, dir, args);
  snprintf(log, sizeof log, "%s/kill.log", dir);

  pid_t job = tr_spawn(cmd, log);
  cr_assert_geq(job, 0, "fork failed");
  /* Both ranks of the second host up, and training (give it a moment past
   * start-up so the kill lands in the epoch loop). */
  pid_t ranks[4];
  double give_up = now_s() + 60;
  while (pids_in('b', "halo-train", ranks, 4) < 2 && now_s() < give_up) nap_ms(50);
  cr_assert_eq(pids_in('b', "halo-train", ranks, 4), 2, "the second host has no 2 ranks");
  sleep(2);
  cr_assert_eq(kill(ranks[1], SIGKILL), 0);
  const double killed = now_s();

  int status = 0, ended = 0;
  while (!ended && now_s() < killed + 10) {
    ended = waitpid(job, &status, WNOHANG) == job;
    if (!ended) nap_ms(10);
  }
  const double took = now_s() - killed;
  if (!ended) {
    kill(job, SIGKILL);
    waitpid(job, &status, 0);
  }
  cr_assert(ended, "the job still runs 10 s after a rank on the second host was killed");
  cr_expect(!WIFEXITED(status) || WEXITSTATUS(status) != 0, "mpirun exited 0 after the kill");
  /* Left over: anything of the job on either host, within the same 10 s. */
  pid_t left[8];
  int count = 0;
  do {
    count = pids_in('a', NULL, left, 8) + pids_in('b', NULL, left, 8);
    if (count) nap_ms(50);
  } while (count && now_s() < killed + 10);
  cr_expect_eq(count, 0, "%d processes left in the namespaces 10 s after the kill", count);
  fprintf(stderr,
          "cluster: SIGKILL of a rank on the second host: the job ended %.3f s later, "
          "nothing left\n",
          took);
  tr_rmdir(dir);
}
