/* Every environment variable halo's programs read, read here and nowhere
 * else in halo (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK aside, which
 * src/halo-mpi.c reads as a fact about the launcher, like MPI_Comm_rank).
 *
 *   variable               values          read by          passed down as
 *   HALO_MEMORY_AVAILABLE  bytes (digits)  both programs    halo_memory_set_available (core)
 *   HALO_CUDA_SPMM         cusparse, rows  halo-train       halo_backend_options.spmm
 *   HALO_CUDA_AWARE        0, 1            halo-train       halo_backend_options.mpi
 *   HALO_FAULT_STALL       RANK:EPOCH      halo-train       halo_watch_options.stall*
 *   HALO_TEST_PARTS_FILE   a path          halo-partition   halo_partition_run_request.parts_file
 *                                          (ptscotch)
 *   HALO_TEST_CLEAN_ROUND  pairs (digits)  halo-partition   halo_partition_run_request.clean_round
 *                                          (ptscotch)
 *   OMP_WAIT_POLICY,       OpenMP's        halo-train       the OpenMP runtime itself, and
 *   GOMP_SPINCOUNT         (checked only)                   halo_train_env.wait (the header)
 *
 * OMP_WAIT_POLICY: when neither it nor GOMP_SPINCOUNT is set, halo-train
 *   sets OMP_WAIT_POLICY=passive and executes itself again, before MPI
 *   starts (cli_env_wait_policy).  libgomp reads the variable once, when it
 *   loads, before main; its default spins a waiting thread for about 300,000
 *   rounds, and on a node where another process holds a core the thread
 *   that spins takes the core from the one that works: Cora with 2
 *   threads at 13-21 ms an epoch instead of about 1.9 (docs/benchmarks.md,
 *   "A busy node").  Set it (active) to keep libgomp's spinning.
 *
 * HALO_MEMORY_AVAILABLE replaces the measured free memory in every admission
 *   check (the loaders' size checks, the clean-up's, the model's), so that
 *   tests see the refusals: tests/bad/cases.txt (mtx-rows-2e9-memory,
 *   train-memory-short, memory-not-bytes).
 * HALO_CUDA_SPMM=rows sends every sparse product to halo's row kernel
 *   instead of cuSPARSE: tests/gpu/test-train-cuda.c, tests/gpu/run-device.sh
 *   (its "rows SpMM" row).
 * HALO_CUDA_AWARE overrides what MPI reports about taking device pointers:
 *   tests/gpu/test-train-cuda.c runs both exchange modes with it.
 * HALO_FAULT_STALL is a test hook, not a feature: rank RANK sleeps for an
 *   hour at the start of EPOCH (the last epoch + 1: after the loop), so that
 *   the --timeout watchdog fires: tests/reliability/test-faults.c.
 * HALO_TEST_PARTS_FILE is a test hook too: --method ptscotch takes node v's
 *   part from line v + 1 of the file instead of from PT-Scotch, so that a
 *   test gives the distributed writer the sequential one's assignment:
 *   tests/partition/test-partition-dist.c.
 * HALO_TEST_CLEAN_ROUND, another: the input pairs a rank sends per round of
 *   ptscotch's distributed clean-up (4M by default), so that the test's
 *   small graphs take several rounds.
 *
 * Unset or empty means the default.  Any other value that does not parse is
 * refused with one line naming the variable and the value.  docs/train.md
 * ("Environment") documents them for users.  The tests' own variables
 * (HALO_TEST_SEED, HALO_TEST_KEEP, HALO_PROBE_BACKEND, HALO_CHECKED_FAIL_*,
 * HALO_CUDA_EMU_*) are read by the tests and the CUDA emulator, never by the
 * programs.
 */
#include "cli-env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The value of `name`, or NULL when unset or empty. */
static const char *value_of(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* A whole-string decimal integer in [0, INT64_MAX], no sign. */
static int parse_count(const char *text, const char *end_at, int64_t *out) {
  char *end = NULL;
  if (*text < '0' || *text > '9') return -1;
  errno = 0;
  const long long v = strtoll(text, &end, 10);
  if (errno || end == text || (end_at ? end != end_at : *end != '\0')) return -1;
  *out = v;
  return 0;
}

halo_status cli_env_read(cli_env *out, unsigned which) {
  halo_status st = HALO_OK;
  const char *v = NULL;
  *out = (cli_env){.memory_available = -1, .cuda_aware = -1};
  if ((which & CLI_ENV_MEMORY) && (v = value_of("HALO_MEMORY_AVAILABLE")) &&
      parse_count(v, NULL, &out->memory_available) != 0)
    HALO_FAIL(HALO_ERR_ARG, "HALO_MEMORY_AVAILABLE=%s: expected a number of bytes (digits only)",
              v);
  if ((which & CLI_ENV_CUDA) && (v = value_of("HALO_CUDA_SPMM"))) {
    if (strcmp(v, "cusparse") != 0 && strcmp(v, "rows") != 0)
      HALO_FAIL(HALO_ERR_ARG, "HALO_CUDA_SPMM=%s: expected cusparse or rows", v);
    out->cuda_spmm_rows = strcmp(v, "rows") == 0;
  }
  if ((which & CLI_ENV_CUDA) && (v = value_of("HALO_CUDA_AWARE"))) {
    if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
      HALO_FAIL(HALO_ERR_ARG, "HALO_CUDA_AWARE=%s: expected 0 or 1", v);
    out->cuda_aware = v[0] == '1';
  }
  if ((which & CLI_ENV_FAULT) && (v = value_of("HALO_FAULT_STALL"))) {
    const char *colon = strchr(v, ':');
    int64_t rank = 0;
    if (!colon || parse_count(v, colon, &rank) != 0 || rank > INT32_MAX ||
        parse_count(colon + 1, NULL, &out->stall_epoch) != 0)
      HALO_FAIL(HALO_ERR_ARG, "HALO_FAULT_STALL=%s: expected RANK:EPOCH (a test hook)", v);
    out->stall = 1;
    out->stall_rank = (int)rank;
  }
  if (which & CLI_ENV_TEST_PARTS) out->test_parts_file = value_of("HALO_TEST_PARTS_FILE");
  if ((which & CLI_ENV_TEST_PARTS) && (v = value_of("HALO_TEST_CLEAN_ROUND")) &&
      (parse_count(v, NULL, &out->test_clean_round) != 0 || out->test_clean_round < 1))
    HALO_FAIL(HALO_ERR_ARG,
              "HALO_TEST_CLEAN_ROUND=%s: expected a positive number of pairs (a "
              "test hook)",
              v);
done:
  return st;
}

const char *cli_env_wait_policy(char **argv) {
  const char *policy = getenv("OMP_WAIT_POLICY");
  const char *spin = getenv("GOMP_SPINCOUNT");
  if (policy && *policy) return strcasecmp(policy, "passive") == 0 ? "passive wait" : "active wait";
  if (spin && *spin) return "GOMP_SPINCOUNT wait";
  /* Under valgrind (its preload library in LD_PRELOAD) a new image would
   * run outside the tool, which follows no exec by default: keep this one,
   * and libgomp's default. */
  const char *preload = getenv("LD_PRELOAD");
  if (preload && strstr(preload, "vgpreload")) return "spin wait (under valgrind)";
  /* The runtime read its variables when it loaded: only a new image of
   * the program sees this one.  The process (and so mpirun's view of it)
   * stays the same; MPI has not started yet.  The image is named by its
   * file, not by /proc/self/exe, so that the process keeps its name
   * ("halo-train" in ps and /proc/PID/comm, not "exe"). */
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0 && (size_t)n < sizeof self - 1 && setenv("OMP_WAIT_POLICY", "passive", 1) == 0) {
    self[n] = '\0';
    execv(self, argv);
  }
  unsetenv("OMP_WAIT_POLICY"); /* no /proc, or no exec: libgomp's default stays */
  return "spin wait";
}
