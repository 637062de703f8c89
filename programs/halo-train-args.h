/* The command line of halo-train. */
#ifndef HALO_TRAIN_ARGS_H
#define HALO_TRAIN_ARGS_H

#include <stdint.h>

#include "halo-net.h"
#include "halo-status.h"

typedef struct halo_train_args {
  const char *dir; /* shard folder (borrowed from argv) */
  char model[8];   /* "gcn" */
  halo_net_options gcn;
  int64_t epochs;
  int64_t warmup;           /* epochs left out of mean_epoch_s */
  char device[16];          /* "cpu" or "cuda" */
  int tf32;                 /* cuda: TF32 GEMM */
  int threads;              /* 0: the node's cores divided among its ranks */
  const char *metrics;      /* JSON-lines file, or NULL */
  const char *checkpoint;   /* checkpoint folder, or NULL (borrowed from argv) */
  int64_t checkpoint_every; /* save after every N epochs (and after the last) */
  int keep;                 /* checkpoints kept */
  int resume;               /* start from the newest valid checkpoint */
  int resume_auto;          /* --resume auto: resume only when DIR holds a checkpoint */
  const char *predict;      /* --predict FILE.h5, or NULL (borrowed from argv) */
  int64_t early_stop;       /* stop after N epochs without a better val accuracy; 0: off */
  int eval_only;            /* --eval-only: evaluate the resumed parameters, train nothing */
  int force;                /* --force: --metrics may overwrite a file that is not halo's */
  int metric;               /* --metric: a train_metric (programs/train-metrics.h) */
  int metric_given;         /* 1 when --metric was given (a multi-label run defaults to auc) */
  double timeout;           /* watchdog seconds; 0: off */
  int quiet;
  int help;
  int version; /* --version: print it and stop */
} halo_train_args;

/* Parses argv.  A bad flag or value fails with HALO_ERR_ARG and one line that
 * names the flag.  --help sets out->help and stops parsing. Local. */
halo_status halo_train_args_parse(int argc, char **argv, halo_train_args *out);

/* The usage text. Local. */
const char *halo_train_usage(void);

#endif /* HALO_TRAIN_ARGS_H */
