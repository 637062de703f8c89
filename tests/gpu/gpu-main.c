/* main() for the CUDA unit tests: skip without a device, else run Criterion.
 *
 * Without a usable CUDA device the program prints "skipped: no CUDA device"
 * and exits with 77, which tests/gpu/CMakeLists.txt declares as ctest's
 * SKIP_RETURN_CODE: such a run counts as skipped, never as passed.  Under
 * halo-cuda-emu, which always has a device, that is a failure instead.
 *
 * The device is probed in a child process.  Criterion runs each test in a
 * process of its own, and a CUDA context does not survive fork(), so the
 * parent must never initialise CUDA itself.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu-test.h"
#include "halo-spmm-cuda.h"

/* 1 when a child process sees at least one CUDA device; otherwise 0, with
 * the child's reason in `why`. */
static int have_device(char *why, size_t size) {
  int pipe_fd[2];
  snprintf(why, size, "the probe could not run");
  fflush(NULL);
  if (pipe(pipe_fd) != 0) return 0;
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    const char *problem = halo_cuda_device_problem();
    if (problem) (void)!write(pipe_fd[1], problem, strlen(problem));
    _exit(problem ? 1 : 0);
  }
  close(pipe_fd[1]);
  ssize_t got = read(pipe_fd[0], why, size - 1);
  close(pipe_fd[0]);
  if (got > 0) why[got] = '\0';
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* main() puts the seed in the environment, which every test process
 * inherits, so all tests of one run share it. */
uint64_t gpu_test_seed(const char *test) {
  const char *env = getenv("HALO_TEST_SEED");
  const uint64_t seed = env ? strtoull(env, NULL, 0) : 1;
  fprintf(stderr, "%s: seed %" PRIu64 " (set HALO_TEST_SEED=%" PRIu64 " to repeat)\n", test, seed,
          seed);
  return seed;
}

int main(int argc, char *argv[]) {
  char why[256];
  if (!have_device(why, sizeof why)) {
#ifdef HALO_CUDA_EMU
    /* The emulator always has a device unless told to hide it
     * (CUDA_VISIBLE_DEVICES): a skip would pass CI without a test run. */
    fprintf(stderr, "%s: halo-cuda-emu shows no device (%s): is CUDA_VISIBLE_DEVICES set?\n",
            argv[0], why);
    return 1;
#else
    printf("skipped: no CUDA device (%s)\n", why);
    return 77;
#endif
  }
  if (!getenv("HALO_TEST_SEED")) {
    char buf[32];
    const uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    snprintf(buf, sizeof buf, "%" PRIu64, seed);
    setenv("HALO_TEST_SEED", buf, 1);
  }
  fprintf(stderr, "%s: seed %s\n", argv[0], getenv("HALO_TEST_SEED"));
  struct criterion_test_set *tests = criterion_initialize();
  int result = 0;
  if (criterion_handle_args(argc, argv, true)) result = !criterion_run_all_tests(tests);
  criterion_finalize(tests);
  return result;
}
