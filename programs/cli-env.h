/* The environment variables of halo-partition and halo-train (private to
 * programs/): read in one place, cli-env.c, whose top comment is the table
 * of every variable, and handed to the libraries as options, so that no
 * library reads the environment.  docs/train.md ("Environment") documents
 * them for users.
 */
#ifndef HALO_CLI_ENV_H
#define HALO_CLI_ENV_H

#include <stdint.h>

#include "halo-status.h"

/* Which variables a program reads (a bit mask). */
enum {
  CLI_ENV_MEMORY = 1,     /* HALO_MEMORY_AVAILABLE */
  CLI_ENV_CUDA = 2,       /* HALO_CUDA_SPMM, HALO_CUDA_AWARE */
  CLI_ENV_FAULT = 4,      /* HALO_FAULT_STALL */
  CLI_ENV_TEST_PARTS = 8, /* HALO_TEST_PARTS_FILE, HALO_TEST_CLEAN_ROUND */
};

typedef struct cli_env {
  int64_t memory_available; /* HALO_MEMORY_AVAILABLE: bytes; -1: unset (measure) */
  int cuda_spmm_rows;       /* HALO_CUDA_SPMM: 1 for rows, 0 for cusparse or unset */
  int cuda_aware;           /* HALO_CUDA_AWARE: 0 or 1; -1: unset (ask MPI) */
  int stall;                /* HALO_FAULT_STALL set: rank stall_rank stalls at stall_epoch */
  int stall_rank;
  int64_t stall_epoch;
  const char *test_parts_file; /* HALO_TEST_PARTS_FILE: a path (the environment's); NULL: unset */
  int64_t test_clean_round;    /* HALO_TEST_CLEAN_ROUND: pairs a round; 0: unset */
} cli_env;

/* Reads the variables `which` names into *out (the others keep their
 * defaults).  Unset or empty is the default; any other value that does not
 * parse fails with HALO_ERR_ARG and one line naming the variable and its
 * value. Local. */
halo_status cli_env_read(cli_env *out, unsigned which);

/* halo-train's OpenMP wait policy, before MPI_Init: the user's
 * OMP_WAIT_POLICY or GOMP_SPINCOUNT when set; else it sets
 * OMP_WAIT_POLICY=passive and executes the program again with `argv`
 * (execv of the file /proc/self/exe links to, which does not return),
 * since the runtime reads the variable only when it loads; not under
 * valgrind, which would not follow the exec.  Returns the policy in words
 * for the report ("passive wait"), "spin wait" when the exec failed or was
 * skipped.  Local. */
const char *cli_env_wait_policy(char **argv);

#endif /* HALO_CLI_ENV_H */
