/* halo-train's report (private to programs/): what rank 0 prints and
 * writes, as the hooks (halo_train_report_ops, train/halo-train.h) that
 * halo_train_run calls.  The header lines before training, one line per
 * epoch (unless --quiet), the --metrics JSON lines (one object per epoch,
 * then a summary object; halo_train assembles them), and the summary and
 * "memory:" lines.  docs/train.md ("Output") shows each and lists the JSON
 * keys.
 */
#ifndef HALO_TRAIN_REPORT_H
#define HALO_TRAIN_REPORT_H

#include <stdio.h>

#include "halo-json.h"
#include "halo-status.h"
#include "halo-train.h"

/* The hooks' context, on rank 0 (zeroed, then metrics_path set). */
typedef struct train_report {
  const char *metrics_path; /* --metrics, or NULL (borrowed from argv) */
  /* The stream (owned: train_report_metrics_close) and the writer on it. */
  FILE *metrics;
  halo_json json;
  /* Where rank 0 prints the header, epoch and summary lines: stdout, or
   * stderr when the metrics go to stdout (NULL: stdout). Borrowed. */
  FILE *text;
  int metrics_failed; /* a metrics line could not be written */
} train_report;

/* The hooks, with a train_report as their context. */
extern const halo_train_report_ops train_report_ops;

/* --metrics must not overwrite the run's data: a regular FILE that exists
 * and is HDF5 (a part, the manifest, a checkpoint) is refused, with one line
 * naming the flag, and so is any other file that is not empty and not a
 * halo metrics file, unless `force` (--force).  Metrics next to the shards
 * are fine, and so is /dev/stdout or a pipe, which are not read.  NULL
 * passes. Local. */
halo_status train_report_metrics_check(const char *path, int force, int resume);

/* Closes the metrics stream, if open; HALO_ERR_IO and one line naming
 * --metrics `path` when the writes failed. Local. */
halo_status train_report_metrics_close(train_report *rep, const char *path);

#endif /* HALO_TRAIN_REPORT_H */
