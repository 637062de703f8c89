/* Criterion helpers of the end-to-end trainer tests (tests/train and
 * tests/gpu): run the real halo-partition and halo-train binaries, under a
 * timeout, and read what they report.  Each helper fails the calling test
 * with one message when something goes wrong. */
#ifndef TRAIN_CLI_H
#define TRAIN_CLI_H

#include <stdint.h>

#define TRAIN_BIN HALO_BINARY_DIR "/bin/halo-train"
#define PARTITION_BIN HALO_BINARY_DIR "/bin/halo-partition"

enum { MAX_EPOCHS = 256 };

/* The --metrics file of one run. */
typedef struct metrics {
  int epochs;
  double loss[MAX_EPOCHS];
  double halo[MAX_EPOCHS], predicted[MAX_EPOCHS];
  double val_loss[MAX_EPOCHS], eval_halo[MAX_EPOCHS]; /* each epoch's evaluation */
  double train_acc, val_acc, test_acc; /* of the last epoch */
  double final_test, setup_bytes;
  double memory_used, memory_predicted; /* the summary's memory_*_bytes; -1: not measured */
  int has_summary;
} metrics;

void read_metrics(const char *path, metrics *m);

/* halo-partition --input INPUT --parts P --method M --dims D --out OUT --json JSON. */
void partition(const char *input, int parts, const char *method, const char *dims, const char *out,
               const char *json);

/* mpirun -np NP halo-train SHARDS --threads 1 --quiet --metrics PATH EXTRA. */
void train(int np, const char *shards, const char *extra, const char *metrics_path);

/* Checks the summary's memory figures: the model's memory was measured,
 * and the prediction halo-train admits runs by is within 5% of it, plus
 * `unmodelled` bytes the libraries may add (their own buffers, which the
 * prediction leaves out), and at most 1.25 times it.  `tag` names the run
 * in messages. */
void expect_memory_bounded(const metrics *m, double unmodelled, const char *tag);

/* A --deterministic run: its metrics, and the summary's params_sha256. */
typedef struct run_report {
  metrics m;
  char sha[65];
} run_report;

/* The summary's params_sha256 of a --metrics file into sha (64 hex digits). */
void read_params_sha256(const char *path, char sha[65]);

/* read_metrics and read_params_sha256 of one file. */
void read_report(const char *path, run_report *r);

/* The same for a run whose first epoch may be past 1 (a resumed run): its
 * losses in r->m.loss[0..r->m.epochs), and the digest. */
void read_resumed_report(const char *path, run_report *r);

/* Every epoch's loss, the digest and the final test accuracy of b equal
 * a's, bit for bit; `what` names the comparison in messages. */
void expect_bit_identical(const run_report *a, const run_report *b, const char *what);

/* The summary line of a --metrics file (malloc'd), or a failed test. */
char *summary_line(const char *path);

/* A number from halo-partition's --json. */
double json_figure(const char *path, const char *key);

/* Largest |a - b| / |a| over the first n epochs' losses; *at gets the epoch
 * (1-based) where it occurs. */
double worst_loss_difference(const metrics *a, const metrics *b, int n, int *at);

/* A multi-label OGB folder DIR/graph of TR_ML_NODES nodes in
 * TR_ML_COMMUNITIES communities (85% of edges inside one), TR_ML_FEATURES
 * noisy one-hot features and TR_ML_TASKS binary tasks that are functions of
 * the community (task 5 missing, nan, for about 30% of the nodes), and a
 * random 60/20/20 split, drawn from `seed`; targets (may be NULL) gets each
 * node's tasks (-1: missing). */
enum { TR_ML_NODES = 800, TR_ML_TASKS = 6, TR_ML_FEATURES = 8, TR_ML_COMMUNITIES = 8 };
void tr_multilabel_graph(const char *dir, uint64_t seed, int8_t targets[][TR_ML_TASKS]);

#endif /* TRAIN_CLI_H */
