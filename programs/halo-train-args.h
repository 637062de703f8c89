/* The command line of halo-train.  The fields, struct halo_train_args, are
 * halo_train's (train/halo-train.h), which runs what they describe. */
#ifndef HALO_TRAIN_ARGS_H
#define HALO_TRAIN_ARGS_H

#include <stdint.h>

#include "halo-net.h"
#include "halo-status.h"
#include "halo-train.h"

/* Parses argv.  A bad flag or value fails with HALO_ERR_ARG and one line that
 * names the flag.  --help sets out->help and stops parsing. Local. */
halo_status halo_train_args_parse(int argc, char **argv, halo_train_args *out);

/* The usage text. Local. */
const char *halo_train_usage(void);

#endif /* HALO_TRAIN_ARGS_H */
