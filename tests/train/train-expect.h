/* Criterion side of the trainer's self-probing tests (test-cached,
 * test-rows): the binary is both the test and, under `--probe`, the MPI
 * program the test runs with mpirun.  Only Criterion tests link this file;
 * train-probe links train-fixture and train-run alone. */
#ifndef TRAIN_EXPECT_H
#define TRAIN_EXPECT_H

#include <stdint.h>
#include <stdio.h>

#include "halo-net.h"
#include "train-fixture.h"

/* What a probe starts from: MPI is up, the command line
 * "--probe OUT [MODE] CASE SEED" is read and the case's graph built (the
 * same on every rank, split into `size` parts). */
typedef struct te_probe {
  int rank, size;
  const char *out, *mode; /* mode NULL when the probe takes none */
  fx_case c;
  uint64_t seed;
  fx_graph *graph;
} te_probe;

/* MPI_Init, then the above (MODE when has_mode).  Returns 0, or -1 after
 * one line on rank 0 naming what is wrong; either way te_probe_end undoes
 * it.  `p` needs no initialisation. */
int te_probe_begin(int *argc, char ***argv, int has_mode, te_probe *p);

/* The trainer's options of the case: its hidden width and input dropout,
 * the hidden layer's dropout 0.5 (fx_case_model's training model), the
 * seed; the rest default. */
halo_net_options te_probe_options(const te_probe *p);

/* Frees the graph and ends MPI. */
void te_probe_end(te_probe *p);

/* main() of such a binary: `--probe ...` runs probe_main, anything else
 * the Criterion tests. */
int te_main(int argc, char **argv, int (*probe_main)(int argc, char **argv));

/* Runs `self --probe DIR [MODE] CASE SEED` on np ranks (MODE left out when
 * NULL) in a fresh folder and asserts it exited 0.  Returns the folder, for
 * tr_rmdir. */
char *te_run_probe(const char *self, const char *tag, int np, const char *mode, const fx_case *c,
                   uint64_t seed);

/* fopen(…, "r") of the path `fmt` formats; asserts it opened. */
FILE *te_open(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reads DIR/NAME.txt: n lines of ncols numbers, after a leading line number
 * when `numbered`, into col[0..ncols) (calloc'd). */
void te_read_columns(const char *dir, const char *name, int64_t n, int numbered, int ncols,
                     double **col);

/* Reads lines "gid z..." of `path`, `models` rows of c->classes logits after
 * each gid, into logits[k][gid · classes + j].  Returns the number of lines. */
int64_t te_read_logits(const char *path, const fx_case *c, int models, double *const *logits);

/* Expects the first step's loss `got` (initial weights, the training
 * model's dropout at epoch 0) within 1e-5 of the dense double reference's
 * over graph g.  `what` names the run in the message. */
void te_expect_first_loss(const char *what, const fx_case *c, uint64_t seed, const fx_graph *g,
                          double got);

/* Expects logits `got` (g->n × classes, by global id) of a model with
 * parameters `params`, evaluating, within 1e-5·max|z| + 1e-5·|z| of the
 * dense double reference's z; logs the first five off. */
void te_expect_logits(const char *what, const fx_case *c, uint64_t seed, const fx_graph *g,
                      const double *params, const double *got);

#endif /* TRAIN_EXPECT_H */
