/* halo-partition: reads a graph, partitions it and writes one HDF5 shard per
 * part plus a manifest.  A thin CLI over halo_loaders and halo_partition;
 * docs/partition.md is its reference. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli-env.h"
#include "halo-dpartition.h"
#include "halo-gat.h"
#include "halo-json.h"
#include "halo-load.h"
#include "halo-memory.h"
#include "halo-model.h"
#include "halo-mpi.h"
#include "halo-partition.h"
#include "halo-predict.h"

#ifndef HALO_VERSION
#define HALO_VERSION "unknown"
#endif

/* Progress lines appear for inputs of more than this many edges. */
enum { PROGRESS_EDGES = 1000000 };

static const char usage[] =
    "usage: halo-partition --input PATH|SPEC --parts P --out DIR [options]\n"
    "\n"
    "Reads a graph, cleans it (symmetric, no duplicates, no self-loops), partitions\n"
    "it and writes DIR/manifest.h5 and one DIR/part-NNNNN-of-NNNNN.h5 per part.\n"
    "\n"
    "input\n"
    "  --input PATH|SPEC        OGB raw folder, edge list, .mtx[.gz] or a synthetic spec\n"
    "                           (sbm:nodes=..,classes=..,avg-degree=..  rmat:scale=..)\n"
    "  --format F               auto (default), ogb, edgelist (or snap), mtx, spec\n"
    "  --features FILE          node features for a structure-only input (CSV, one row per node)\n"
    "  --labels FILE            node labels for a structure-only input: one per line, or\n"
    "                           several 0/1 columns (multi-label tasks; nan = missing)\n"
    "  --synthetic-features F   F random class-dependent features (with --synthetic-classes)\n"
    "  --synthetic-classes C    C random classes and a random 10/10/80 split\n"
    "  --split DIR              the split from DIR/{train,valid,test}.csv[.gz] (one node id per\n"
    "                           line; an edge list's own ids), replacing the input's own\n"
    "  --split-name NAME        an OGB folder's split/NAME, when split/ holds several\n"
    "  --synthetic-split T,V,E  a random split of fractions T, V, E, from --seed\n"
    "partition\n"
    "  --parts P                number of parts, 1 <= P <= nodes (required)\n"
    "  --method M               metis (default), scotch, ptscotch, random or block; metis\n"
    "                           switches to scotch, saying so, past its limit of 2^31-1\n"
    "                           nodes or directed edges; ptscotch is distributed:\n"
    "                           mpirun -np K halo-partition --method ptscotch ... (each rank\n"
    "                           reads a slice of the input, any format; DIR on a shared file\n"
    "                           system)\n"
    "  --seed N                 METIS or Scotch seed / random permutation seed (default 1)\n"
    "  --ufactor N              METIS and Scotch allowed imbalance 1+N/1000 (default 30)\n"
    "  --coarsen-levels N       ptscotch: up to N levels of halo's distributed coarsening\n"
    "                           before PT-Scotch (default 8); 0: PT-Scotch's own alone,\n"
    "                           more memory a rank, on skewed graphs a better cut\n"
    "  --objective O            METIS objective: cut (default) or vol (Scotch: cut only)\n"
    "  --order O                local numbering of each part's owned rows: community\n"
    "                           (default: rows without remote neighbours first, then\n"
    "                           neighbours together, for SpMM locality) or id (ascending\n"
    "                           global id, as format 1 had it)\n"
    "output\n"
    "  --out DIR                output folder; written as DIR.tmp.<pid>, renamed when complete\n"
    "  --force                  replace an existing DIR written by halo-partition, and an\n"
    "                           existing --json or --write-metis FILE (regular files only)\n"
    "  --dims D0,D1,..          model widths (input, hidden.., classes): predict halo bytes\n"
    "  --model gcn|sage|gin|gat the model --dims predicts for (gcn); GIN's MLP width is D1\n"
    "                           (16 for one layer), as halo-train's --hidden; GAT's hidden\n"
    "                           widths are heads x per-head width (64 for 8 x 8)\n"
    "  --heads K, --output-heads K  with --model gat: the heads of the hidden layers (8)\n"
    "                           and of the output layer (1), as halo-train's\n"
    "  --gin-train-eps          with --model gin: predict for a learned epsilon (no change\n"
    "                           in bytes; accepted so the two programs take the same flags)\n"
    "  --residual               predict for halo-train --residual (GCN's first layer is then\n"
    "                           not cached without input dropout)\n"
    "  --json FILE              write the statistics as JSON (FILE.tmp.XXXXXX, renamed);\n"
    "                           - writes it to stdout, and the table to stderr\n"
    "  --write-metis FILE       write the cleaned graph in METIS format and stop (no --parts,\n"
    "                           --out or --json; FILE.tmp.XXXXXX, renamed)\n"
    "  --help, --version\n";

typedef struct cli {
  const char *input, *out, *json, *features, *labels, *write_metis, *split, *split_name;
  double synth_split[3];
  int synth_split_given;
  halo_format format;
  halo_partition_options opt;
  int force;
  int32_t synth_features, synth_classes;
  int32_t dims[HALO_MAX_LAYERS + 1];
  int ndims;
  halo_model_config model; /* what --dims predicts for */
  int method_given;        /* --method was on the command line */
  int metis_switched;      /* metis was asked for, and the graph is past its limit */
  const char *parts_file;  /* ptscotch: HALO_TEST_PARTS_FILE, a test hook (cli-env.c) */
  int64_t clean_round;     /* ptscotch: HALO_TEST_CLEAN_ROUND, a test hook; 0: unset */
} cli;

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

/* Wall and cpu (all threads, user + system) seconds per phase. */
enum { PHASE_LOAD, PHASE_CLEAN, PHASE_PARTITION, PHASE_WRITE, PHASE_TOTAL, PHASES };
static const char *const phase_names[PHASES] = {"load", "clean", "partition", "write", "total"};

/* What a run took: time per phase, and memory over its ranks (one rank
 * but for --method ptscotch). */
typedef struct timing {
  double wall[PHASES], cpu[PHASES];
  double wall_start, cpu_start, wall_mark, cpu_mark;
  int ranks;
  int64_t peak_rss_max, peak_rss_sum; /* bytes: the largest rank's peak, and the sum */
  int64_t block_edges_max; /* the most clean edges in one rank's block of rows (the graph's: one
                              rank) */
} timing;

static void timing_start(timing *t) {
  *t = (timing){.wall_start = now_s(), .cpu_start = clock_s(CLOCK_PROCESS_CPUTIME_ID), .ranks = 1};
  t->wall_mark = t->wall_start;
  t->cpu_mark = t->cpu_start;
}

/* Charges the time since the last lap to `phase`, and updates the total. */
static void timing_lap(timing *t, int phase) {
  double wall = now_s(), cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  t->wall[phase] += wall - t->wall_mark;
  t->cpu[phase] += cpu - t->cpu_mark;
  t->wall[PHASE_TOTAL] = wall - t->wall_start;
  t->cpu[PHASE_TOTAL] = cpu - t->cpu_start;
  t->wall_mark = wall;
  t->cpu_mark = cpu;
}

/* ---- argument parsing ------------------------------------------------ */

/* Whole-string decimal integer in [lo, hi]; the error names the flag. */
static halo_status parse_int(const char *flag, const char *text, int64_t lo, int64_t hi,
                             int64_t *out) {
  halo_status st = HALO_OK;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end != '\0')
    HALO_FAIL(HALO_ERR_ARG, "%s: '%s' is not an integer", flag, text);
  if (errno == ERANGE || v < lo || v > hi)
    HALO_FAIL(HALO_ERR_ARG, "%s: %s is out of range [%lld, %lld]", flag, text, (long long)lo,
              (long long)hi);
  *out = v;
done:
  return st;
}

/* "1433,16,7": 2 to HALO_MAX_LAYERS+1 positive widths. */
static halo_status parse_dims(const char *text, cli *c) {
  halo_status st = HALO_OK;
  const char *p = text;
  c->ndims = 0;
  for (;;) {
    char *end = NULL;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0') || *p == '-' || *p == '+')
      HALO_FAIL(HALO_ERR_ARG, "--dims: '%s' is not a comma-separated list of widths", text);
    if (errno == ERANGE || v < 1 || v > INT32_MAX)
      HALO_FAIL(HALO_ERR_ARG, "--dims: width %.*s must be between 1 and %d", (int)(end - p), p,
                INT32_MAX);
    if (c->ndims == HALO_MAX_LAYERS + 1)
      HALO_FAIL(HALO_ERR_ARG, "--dims: at most %d widths (%d layers)", HALO_MAX_LAYERS + 1,
                HALO_MAX_LAYERS);
    c->dims[c->ndims++] = (int32_t)v;
    if (*end == '\0') break;
    p = end + 1;
  }
  if (c->ndims < 2)
    HALO_FAIL(HALO_ERR_ARG, "--dims: '%s' needs at least 2 widths (input and classes)", text);
done:
  return st;
}

/* "0.6,0.2,0.2": three fractions in [0, 1] summing to at most 1. */
static halo_status parse_fractions(const char *text, double frac[3]) {
  halo_status st = HALO_OK;
  const char *p = text;
  int count = 0;
  for (;;) {
    char *end = NULL;
    errno = 0;
    double v = strtod(p, &end);
    if (end == p || (*end != ',' && *end != '\0') || count == 3 || errno == ERANGE || !(v >= 0) ||
        v > 1)
      HALO_FAIL(HALO_ERR_ARG,
                "--synthetic-split: '%s' is not three fractions TRAIN,VALID,TEST in [0, 1]", text);
    frac[count++] = v;
    if (*end == '\0') break;
    p = end + 1;
  }
  if (count != 3)
    HALO_FAIL(HALO_ERR_ARG,
              "--synthetic-split: '%s' is not three fractions TRAIN,VALID,TEST in [0, 1]", text);
  if (frac[0] + frac[1] + frac[2] > 1.0 + 1e-9)
    HALO_FAIL(HALO_ERR_ARG, "--synthetic-split: %s sums to %g, more than 1", text,
              frac[0] + frac[1] + frac[2]);
done:
  return st;
}

enum {
  OPT_FORCE = 256,
  OPT_FEATURES,
  OPT_LABELS,
  OPT_SYNTH_FEATURES,
  OPT_SYNTH_CLASSES,
  OPT_WRITE_METIS,
  OPT_OBJECTIVE,
  OPT_UFACTOR,
  OPT_COARSEN_LEVELS,
  OPT_DIMS,
  OPT_MODEL,
  OPT_GIN_TRAIN_EPS,
  OPT_RESIDUAL,
  OPT_HEADS,
  OPT_OUTPUT_HEADS,
  OPT_JSON,
  OPT_ORDER,
  OPT_SPLIT,
  OPT_SPLIT_NAME,
  OPT_SYNTH_SPLIT,
};

/* The long flags that `typed` ("--fo", "--par=2") abbreviates, as
 * "--force or --format", into out; returns how many. */
static int flags_starting(const struct option *opts, const char *typed, char *out, size_t size) {
  const size_t len = strcspn(typed + 2, "=");
  int n = 0;
  size_t used = 0;
  out[0] = '\0';
  for (int k = 0; opts[k].name; k++) {
    if (strncmp(opts[k].name, typed + 2, len) != 0) continue;
    if (used < size)
      used += (size_t)snprintf(out + used, size - used, "%s--%s", n ? " or " : "", opts[k].name);
    n++;
  }
  return n;
}

/* getopt_long takes any unique prefix of a long flag; halo-partition, like
 * halo-train, takes whole names only, so that a script keeps its meaning
 * when a flag is added.  An abbreviation, or a prefix of several flags, is
 * refused with the flags it could mean. */
static halo_status check_whole_flag(const struct option *opts, const char *typed) {
  char could[256];
  if (strncmp(typed, "--", 2) != 0) return HALO_OK;
  const size_t len = strcspn(typed + 2, "=");
  for (int k = 0; opts[k].name; k++)
    if (strlen(opts[k].name) == len && strncmp(opts[k].name, typed + 2, len) == 0) return HALO_OK;
  const int n = flags_starting(opts, typed, could, sizeof could);
  if (n == 0) return HALO_OK; /* not a prefix of any: the caller's "unknown option" */
  halo_log_error("%.*s: %s flag names are not accepted; did you mean %s?", (int)len + 2, typed,
                 n > 1 ? "ambiguous; abbreviated" : "abbreviated", could);
  return HALO_ERR_ARG;
}

/* Returns 1 when the program should stop successfully (--help, --version). */
static halo_status parse_args(int argc, char **argv, cli *c, int *stop) {
  halo_status st = HALO_OK;
  static const struct option longopts[] = {
      {"input", required_argument, NULL, 'i'},
      {"format", required_argument, NULL, 'f'},
      {"parts", required_argument, NULL, 'p'},
      {"out", required_argument, NULL, 'o'},
      {"method", required_argument, NULL, 'm'},
      {"seed", required_argument, NULL, 's'},
      {"ufactor", required_argument, NULL, OPT_UFACTOR},
      {"coarsen-levels", required_argument, NULL, OPT_COARSEN_LEVELS},
      {"objective", required_argument, NULL, OPT_OBJECTIVE},
      {"order", required_argument, NULL, OPT_ORDER},
      {"dims", required_argument, NULL, OPT_DIMS},
      {"model", required_argument, NULL, OPT_MODEL},
      {"gin-train-eps", no_argument, NULL, OPT_GIN_TRAIN_EPS},
      {"residual", no_argument, NULL, OPT_RESIDUAL},
      {"heads", required_argument, NULL, OPT_HEADS},
      {"output-heads", required_argument, NULL, OPT_OUTPUT_HEADS},
      {"json", required_argument, NULL, OPT_JSON},
      {"force", no_argument, NULL, OPT_FORCE},
      {"features", required_argument, NULL, OPT_FEATURES},
      {"labels", required_argument, NULL, OPT_LABELS},
      {"synthetic-features", required_argument, NULL, OPT_SYNTH_FEATURES},
      {"synthetic-classes", required_argument, NULL, OPT_SYNTH_CLASSES},
      {"write-metis", required_argument, NULL, OPT_WRITE_METIS},
      {"split", required_argument, NULL, OPT_SPLIT},
      {"split-name", required_argument, NULL, OPT_SPLIT_NAME},
      {"synthetic-split", required_argument, NULL, OPT_SYNTH_SPLIT},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  int64_t v = 0;
  int parts_given = 0, model_given = 0, levels_given = 0;
  *stop = 0;
  opterr = 0; /* getopt's own messages are replaced by one line each below */
  for (;;) {
    int longindex = -1;
    const int at = optind;
    int ch = getopt_long(argc, argv, ":hV", longopts, &longindex);
    if (ch == -1) break;
    if (at < argc) HALO_TRY(check_whole_flag(longopts, argv[at]));
    switch (ch) {
      case 'i':
        c->input = optarg;
        break;
      case 'o':
        c->out = optarg;
        break;
      case OPT_JSON:
        c->json = optarg;
        break;
      case OPT_FORCE:
        c->force = 1;
        break;
      case OPT_FEATURES:
        c->features = optarg;
        break;
      case OPT_LABELS:
        c->labels = optarg;
        break;
      case OPT_WRITE_METIS:
        c->write_metis = optarg;
        break;
      case OPT_SPLIT:
        c->split = optarg;
        break;
      case OPT_SPLIT_NAME:
        c->split_name = optarg;
        break;
      case OPT_SYNTH_SPLIT:
        HALO_TRY(parse_fractions(optarg, c->synth_split));
        c->synth_split_given = 1;
        break;
      case 'f':
        halo_log_set_context("--format: ");
        st = halo_format_parse(optarg, &c->format);
        halo_log_set_context(NULL);
        HALO_TRY(st);
        break;
      case 'm':
        if (halo_method_parse(optarg, &c->opt.method) != HALO_OK)
          HALO_FAIL(HALO_ERR_ARG,
                    "--method: unknown method '%s' (metis, scotch, ptscotch, random, block)",
                    optarg);
        c->method_given = 1;
        break;
      case OPT_OBJECTIVE:
        if (halo_objective_parse(optarg, &c->opt.objective) != HALO_OK)
          HALO_FAIL(HALO_ERR_ARG, "--objective: unknown objective '%s' (cut, vol)", optarg);
        break;
      case OPT_ORDER:
        if (halo_order_parse(optarg, &c->opt.order) != HALO_OK)
          HALO_FAIL(HALO_ERR_ARG, "--order: unknown order '%s' (community, id)", optarg);
        break;
      case 'p':
        HALO_TRY(parse_int("--parts", optarg, 1, INT32_MAX, &v));
        c->opt.parts = (int32_t)v;
        parts_given = 1;
        break;
      case 's':
        HALO_TRY(parse_int("--seed", optarg, 0, INT64_MAX, &v));
        c->opt.seed = v;
        break;
      case OPT_UFACTOR:
        HALO_TRY(parse_int("--ufactor", optarg, 1, 1000000, &v));
        c->opt.ufactor = (int32_t)v;
        break;
      case OPT_COARSEN_LEVELS:
        HALO_TRY(parse_int("--coarsen-levels", optarg, 0, HALO_PTSCOTCH_LEVELS_MAX, &v));
        c->opt.levels = (int32_t)v;
        levels_given = 1;
        break;
      case OPT_SYNTH_FEATURES:
        HALO_TRY(parse_int("--synthetic-features", optarg, 1, INT32_MAX, &v));
        c->synth_features = (int32_t)v;
        break;
      case OPT_SYNTH_CLASSES:
        HALO_TRY(parse_int("--synthetic-classes", optarg, 1, INT32_MAX, &v));
        c->synth_classes = (int32_t)v;
        break;
      case OPT_DIMS:
        HALO_TRY(parse_dims(optarg, c));
        break;
      case OPT_MODEL:
        model_given = 1;
        if (halo_model_parse(optarg, &c->model.kind) != HALO_OK)
          HALO_FAIL(HALO_ERR_ARG, "--model: '%s' is not a model (%s)", optarg, halo_model_names());
        break;
      case OPT_GIN_TRAIN_EPS:
        c->model.train_eps = 1;
        break;
      case OPT_RESIDUAL:
        c->model.residual = 1;
        break;
      case OPT_HEADS:
      case OPT_OUTPUT_HEADS:
        HALO_TRY(parse_int(ch == OPT_HEADS ? "--heads" : "--output-heads", optarg, 1,
                           HALO_GAT_MAX_HEADS, &v));
        *(ch == OPT_HEADS ? &c->model.heads : &c->model.output_heads) = (int32_t)v;
        break;
      case 'h':
        fputs(usage, stdout);
        *stop = 1;
        goto done;
      case 'V':
        printf("halo-partition %s (shard format %d)\n", HALO_VERSION, HALO_SHARD_FORMAT_VERSION);
        *stop = 1;
        goto done;
      case ':':
        HALO_FAIL(HALO_ERR_ARG, "%s needs a value", argv[optind - 1]);
      default:
        HALO_FAIL(HALO_ERR_ARG, "unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (optind < argc) HALO_FAIL(HALO_ERR_ARG, "unexpected argument '%s' (see --help)", argv[optind]);
  const int heads_given = c->model.heads > 0 || c->model.output_heads > 0;
  if (c->ndims == 0 && (model_given || c->model.train_eps || c->model.residual || heads_given))
    HALO_FAIL(HALO_ERR_ARG, "%s: it says what --dims predicts for; give --dims too",
              model_given          ? "--model"
              : c->model.train_eps ? "--gin-train-eps"
              : c->model.residual  ? "--residual"
              : c->model.heads > 0 ? "--heads"
                                   : "--output-heads");
  if (heads_given && c->model.kind != HALO_MODEL_GAT)
    HALO_FAIL(HALO_ERR_ARG, "%s: the model is %s, not gat",
              c->model.heads > 0 ? "--heads" : "--output-heads", halo_model_name(c->model.kind));
  if (c->model.heads < 1) c->model.heads = 8;
  if (c->model.output_heads < 1) c->model.output_heads = 1;
  if (!c->input) HALO_FAIL(HALO_ERR_ARG, "--input is required (see --help)");
  if (!*c->input) HALO_FAIL(HALO_ERR_ARG, "--input: no input path or spec given");
  if (!c->write_metis) {
    if (!parts_given) HALO_FAIL(HALO_ERR_ARG, "--parts is required (see --help)");
    if (!c->out) HALO_FAIL(HALO_ERR_ARG, "--out is required (see --help)");
  }
  if (levels_given && c->opt.method != HALO_METHOD_PTSCOTCH)
    HALO_FAIL(HALO_ERR_ARG,
              "--coarsen-levels: only --method ptscotch coarsens before it "
              "partitions; the method is %s",
              halo_method_name(c->opt.method));
  if ((c->synth_features || c->synth_classes) && (c->features || c->labels))
    HALO_FAIL(HALO_ERR_ARG, "--synthetic-* and --features/--labels exclude each other");
  if (c->write_metis && c->json)
    HALO_FAIL(HALO_ERR_ARG, "--json: --write-metis writes no statistics; drop one of them");
  if (c->split && c->synth_split_given)
    HALO_FAIL(HALO_ERR_ARG, "--split and --synthetic-split exclude each other");
  if (c->split_name && (c->split || c->synth_split_given))
    HALO_FAIL(HALO_ERR_ARG, "--split-name picks an OGB folder's own split; %s replaces it",
              c->split ? "--split" : "--synthetic-split");
  if (!c->synth_features != !c->synth_classes)
    HALO_FAIL(HALO_ERR_ARG, "--synthetic-features and --synthetic-classes go together");
  if (c->opt.method == HALO_METHOD_SCOTCH && c->opt.objective != HALO_OBJECTIVE_CUT)
    HALO_FAIL(HALO_ERR_ARG, "--objective %s: Scotch minimises the edge cut only (drop --objective)",
              halo_objective_name(c->opt.objective));
  /* METIS takes seeds up to its idx_t's maximum; one part never calls it.
   * The default method is checked after loading, where it may turn out to
   * be Scotch's (switch_past_metis_limit). */
  if (!c->write_metis && c->method_given && c->opt.method == HALO_METHOD_METIS &&
      c->opt.parts > 1 && c->opt.seed > halo_partition_metis_seed_max())
    HALO_FAIL(HALO_ERR_ARG,
              "--seed: %lld is out of range [0, %lld] for METIS (the random method takes any "
              "seed)",
              (long long)c->opt.seed, (long long)halo_partition_metis_seed_max());
done:
  return st;
}

/* ---- output ---------------------------------------------------------- */

/* An array of `n` int64 values as the member `key`. */
static void json_i64_array(halo_json *j, const char *key, const int64_t *a, int32_t n) {
  halo_json_key(j, key);
  halo_json_array_begin(j);
  for (int32_t i = 0; i < n; i++) halo_json_int(j, a[i]);
  halo_json_array_end(j);
}

/* Columns per halo row of one training epoch of model d. */
static int64_t epoch_columns(const halo_model_desc *d) {
  const halo_model_comm comm = halo_model_comm_of(d);
  return halo_predict_epoch_columns(&comm);
}

/* Everything --dims derives. */
typedef struct prediction {
  int64_t epoch, epoch_static, setup, cagnet1d, broadcast1d;
  halo_model_desc dropout, no_dropout; /* the model with and without input dropout */
} prediction;

static halo_status predict(const cli *c, const halo_partition_stats *s, prediction *out) {
  halo_status st = HALO_OK;
  if (c->model.train_eps && c->model.kind != HALO_MODEL_GIN)
    HALO_FAIL(HALO_ERR_ARG, "--gin-train-eps: the model is %s, not gin",
              halo_model_name(c->model.kind));
  halo_model_config model = c->model;
  model.mlp_hidden = c->ndims >= 3 ? c->dims[1] : 16;
  model.input_dropout = 1;
  HALO_TRY(halo_model_describe(&model, c->dims, c->ndims, &out->dropout));
  model.input_dropout = 0;
  HALO_TRY(halo_model_describe(&model, c->dims, c->ndims, &out->no_dropout));
  const halo_model_comm dropout = halo_model_comm_of(&out->dropout);
  const halo_model_comm no_dropout = halo_model_comm_of(&out->no_dropout);
  out->epoch = halo_predict_epoch_bytes(s->comm_volume, &dropout);
  out->epoch_static = halo_predict_epoch_bytes(s->comm_volume, &no_dropout);
  out->setup = halo_predict_setup_bytes(s->comm_volume, &no_dropout);
  out->cagnet1d = halo_predict_cagnet1d_bytes(s->nodes, s->parts, c->dims, c->ndims);
  out->broadcast1d = halo_predict_broadcast1d_bytes(s->nodes, s->parts, &dropout);
done:
  return st;
}

/* "halo_bytes_between_parts": [q][p] = bytes part q sends part p in one
 * training epoch (input dropout on, as predicted_halo_bytes_per_epoch, which
 * the entries sum to), sender by receiver; beyond
 * HALO_PARTITION_MATRIX_MAX_PARTS parts a note says why it is left out. */
static void json_halo_matrix(halo_json *j, const halo_partition_stats *s, const prediction *pr) {
  if (!s->between) {
    char note[160];
    snprintf(note, sizeof note,
             "%d parts exceed %d: the %d x %d matrix is left out to keep the JSON small",
             (int)s->parts, HALO_PARTITION_MATRIX_MAX_PARTS, (int)s->parts, (int)s->parts);
    halo_json_key_string(j, "halo_bytes_between_parts_omitted", note);
    return;
  }
  const halo_model_comm dropout = halo_model_comm_of(&pr->dropout);
  halo_json_key(j, "halo_bytes_between_parts");
  halo_json_array_begin(j);
  for (int32_t q = 0; q < s->parts; q++) {
    halo_json_array_begin(j);
    for (int32_t p = 0; p < s->parts; p++)
      halo_json_int(j, halo_predict_epoch_bytes(s->between[(int64_t)q * s->parts + p], &dropout));
    halo_json_array_end(j);
  }
  halo_json_array_end(j);
}

/* num / den, or null when there is no denominator. */
static void json_ratio(halo_json *j, const char *key, int64_t num, int64_t den) {
  if (den > 0)
    halo_json_key_double(j, key, (double)num / (double)den, "%.6g");
  else
    halo_json_key_null(j, key);
}

/* The statistics as one JSON object, its members one per line
 * (docs/partition.md lists them). */
static halo_status write_json(FILE *f, const cli *c, const halo_graph *g,
                              const halo_clean_report *clean, const halo_partition_stats *s,
                              const prediction *pr, uint64_t run_id, const timing *t) {
  halo_json j;
  char hex[32];
  halo_json_init(&j, f, 1);
  halo_json_object_begin(&j);
  halo_json_key_string(&j, "input", g->source);
  snprintf(hex, sizeof hex, "%016" PRIx64, g->source_digest);
  halo_json_key_string(&j, "source_digest", hex);
  halo_json_key_string(&j, "output", c->out);
  snprintf(hex, sizeof hex, "%016" PRIx64, run_id);
  halo_json_key_string(&j, "run_id", hex);
  halo_json_key_int(&j, "nodes", s->nodes);
  halo_json_key_int(&j, "edges", s->edges);
  halo_json_key_int(&j, "features", g->features);
  halo_json_key_int(&j, "classes", g->classes);
  halo_json_key_bool(&j, "multilabel", g->multilabel);
  halo_json_key(&j, "cleanup");
  halo_json_object_begin(&j);
  halo_json_key_int(&j, "input_edges", clean->input_edges);
  halo_json_key_int(&j, "self_loops", clean->self_loops);
  halo_json_key_int(&j, "duplicates", clean->duplicates);
  halo_json_key_int(&j, "reverse_added", clean->reverse_added);
  halo_json_key_int(&j, "isolated", clean->isolated);
  halo_json_object_end(&j);
  halo_json_key_int(&j, "parts", s->parts);
  halo_json_key_string(&j, "method", halo_method_name(c->opt.method));
  halo_json_key_string(&j, "objective", halo_objective_name(c->opt.objective));
  halo_json_key_int(&j, "seed", c->opt.seed);
  halo_json_key_int(&j, "ufactor", c->opt.ufactor);
  if (c->opt.method == HALO_METHOD_PTSCOTCH) halo_json_key_int(&j, "coarsen_levels", c->opt.levels);
  halo_json_key_string(&j, "order", halo_order_name(c->opt.order));
  halo_json_key_int(&j, "edge_cut", s->edge_cut);
  halo_json_key_int(&j, "comm_volume", s->comm_volume);
  json_i64_array(&j, "owned", s->owned, s->parts);
  json_i64_array(&j, "halo", s->halo, s->parts);
  json_i64_array(&j, "local_edges", s->nnz, s->parts);
  json_i64_array(&j, "send", s->send, s->parts);
  halo_json_key(&j, "peers");
  halo_json_array_begin(&j);
  for (int32_t p = 0; p < s->parts; p++) halo_json_int(&j, s->peers[p]);
  halo_json_array_end(&j);
  halo_json_key_double(&j, "replication_factor", s->replication_factor, "%.6f");
  halo_json_key_double(&j, "balance", s->balance, "%.6f");
  if (pr) {
    halo_json_key_string(&j, "model", halo_model_name(c->model.kind));
    halo_json_key(&j, "dims");
    halo_json_array_begin(&j);
    for (int i = 0; i < c->ndims; i++) halo_json_int(&j, c->dims[i]);
    halo_json_array_end(&j);
    halo_json_key_int(&j, "predicted_halo_bytes_per_epoch", pr->epoch);
    halo_json_key_int(&j, "predicted_halo_bytes_per_epoch_static", pr->epoch_static);
    halo_json_key_int(&j, "predicted_setup_halo_bytes", pr->setup);
    halo_json_key_int(&j, "cagnet1d_bytes_per_epoch", pr->cagnet1d);
    halo_json_key_int(&j, "broadcast1d_bytes_per_epoch", pr->broadcast1d);
    json_ratio(&j, "cagnet1d_ratio", pr->cagnet1d, pr->epoch);
    json_ratio(&j, "broadcast1d_ratio", pr->broadcast1d, pr->epoch);
    json_halo_matrix(&j, s, pr);
  }
  halo_json_key_int(&j, "ranks", t->ranks);
  halo_json_key_int(&j, "peak_rss_bytes_max", t->peak_rss_max);
  halo_json_key_int(&j, "peak_rss_bytes_sum", t->peak_rss_sum);
  halo_json_key_int(&j, "block_edges_max", t->block_edges_max);
  for (int kind = 0; kind < 2; kind++) {
    const double *v = kind == 0 ? t->wall : t->cpu;
    halo_json_key(&j, kind == 0 ? "seconds" : "cpu_seconds");
    halo_json_object_begin(&j);
    for (int i = 0; i < PHASES; i++) halo_json_key_double(&j, phase_names[i], v[i], "%.3f");
    halo_json_object_end(&j);
  }
  halo_json_object_end(&j);
  if (halo_json_status(&j) == HALO_OK) return HALO_OK;
  halo_log_error("--json: internal error: the statistics were written out of order");
  return HALO_ERR_ARG;
}

/* "1.23 MB" (decimal units, as network traffic is usually counted). */
static const char *human_bytes(char *buf, size_t size, int64_t bytes) {
  static const char *const units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1000.0 && u < 5) {
    v /= 1000.0;
    u++;
  }
  snprintf(buf, size, u ? "%.2f %s" : "%.0f %s", v, units[u]);
  return buf;
}

static int digits(int64_t x) {
  int d = 1;
  while (x >= 10) {
    x /= 10;
    d++;
  }
  return d;
}

/* The table goes to `out`: stdout, or stderr when stdout carries the JSON
 * (--json -). */
static void print_table(FILE *out, const cli *c, const halo_graph *g,
                        const halo_clean_report *clean, const halo_partition_stats *s,
                        const prediction *pr, uint64_t run_id, const timing *t) {
  char b1[32], b2[32];
  fprintf(out, "input        %s\n", g->source);
  fprintf(out,
          "graph        %" PRId64 " nodes, %" PRId64 " directed edges (%" PRId64
          " undirected), %d features, %d %s\n",
          s->nodes, s->edges, s->edges / 2, g->features, g->classes,
          g->multilabel ? "binary tasks (multi-label)" : "classes");
  fprintf(out,
          "clean-up     %" PRId64 " input edges: %" PRId64 " self-loops and %" PRId64
          " duplicates removed, %" PRId64 " reverse edges added, %" PRId64 " isolated nodes\n",
          clean->input_edges, clean->self_loops, clean->duplicates, clean->reverse_added,
          clean->isolated);
  if (c->opt.method == HALO_METHOD_METIS)
    fprintf(out, "method       metis k-way, objective %s, ufactor %d, seed %" PRId64 "\n",
            halo_objective_name(c->opt.objective), c->opt.ufactor, c->opt.seed);
  else if (c->opt.method == HALO_METHOD_SCOTCH)
    fprintf(out, "method       scotch k-way, objective cut, ufactor %d, seed %" PRId64 "%s\n",
            c->opt.ufactor, c->opt.seed, c->metis_switched ? " (past METIS' limit)" : "");
  else if (c->opt.method == HALO_METHOD_PTSCOTCH)
    fprintf(out,
            "method       ptscotch k-way on %d rank%s, objective cut, ufactor %d, seed %" PRId64
            ", coarsening levels %d%s\n",
            t->ranks, t->ranks == 1 ? "" : "s", c->opt.ufactor, c->opt.seed, c->opt.levels,
            c->parts_file ? " (parts imported: HALO_TEST_PARTS_FILE)" : "");
  else if (c->opt.method == HALO_METHOD_RANDOM)
    fprintf(out, "method       random, seed %" PRId64 "\n", c->opt.seed);
  else
    fprintf(out, "method       block\n");
  if (c->opt.order == HALO_ORDER_COMMUNITY)
    fprintf(out, "row order    community: interior rows first, greedy blocks of at most %d rows\n",
            HALO_PARTITION_BLOCK_ROWS);
  else
    fprintf(out, "row order    id: ascending global id\n");
  fprintf(out, "\n");

  int64_t total_nnz = 0, total_send = 0, widest = s->edges;
  for (int32_t p = 0; p < s->parts; p++) {
    total_nnz += s->nnz[p];
    total_send += s->send[p];
  }
  int w = digits(widest) + 2;
  if (w < 8) w = 8;
  int wp = digits(s->parts) > 5 ? digits(s->parts) : 5;
  fprintf(out, "%*s%*s%*s%*s%*s%*s\n", wp, "part", w, "owned", w, "halo", w, "edges", w, "send", 7,
          "peers");
  for (int32_t p = 0; p < s->parts; p++)
    fprintf(out, "%*d%*" PRId64 "%*" PRId64 "%*" PRId64 "%*" PRId64 "%*d\n", wp, p, w, s->owned[p],
            w, s->halo[p], w, s->nnz[p], w, s->send[p], 7, s->peers[p]);
  fprintf(out, "%*s%*" PRId64 "%*" PRId64 "%*" PRId64 "%*" PRId64 "\n\n", wp, "total", w, s->nodes,
          w, s->comm_volume, w, total_nnz, w, total_send);

  fprintf(out, "edge cut            %" PRId64 " of %" PRId64 " undirected edges (%.2f%%)\n",
          s->edge_cut, s->edges / 2,
          s->edges ? 100.0 * (double)s->edge_cut / (double)(s->edges / 2) : 0.0);
  fprintf(out, "comm volume         %" PRId64 " halo rows per exchange (sum of halo counts)\n",
          s->comm_volume);
  fprintf(out, "replication factor  %.4f ((nodes + halo) / nodes)\n", s->replication_factor);
  fprintf(out, "balance             %.4f (max owned / mean owned)\n", s->balance);
  if (pr) {
    fprintf(out, "\npredicted halo traffic for %s, dims ", halo_model_name(c->model.kind));
    for (int i = 0; i < c->ndims; i++) fprintf(out, "%s%d", i ? "," : "", c->dims[i]);
    fprintf(out, " (float32)\n");
    fprintf(out,
            "  per epoch, input dropout (training default)  %14" PRId64 " B  %12s  (%" PRId64
            " columns per halo row)\n",
            pr->epoch, human_bytes(b1, sizeof b1, pr->epoch), epoch_columns(&pr->dropout));
    fprintf(out,
            "  per epoch, no input dropout (static layer 1) %14" PRId64
            " B  %12s  + %s once at "
            "set-up\n",
            pr->epoch_static, human_bytes(b1, sizeof b1, pr->epoch_static),
            human_bytes(b2, sizeof b2, pr->setup));
    fprintf(out, "  CAGNET 1D per epoch                          %14" PRId64 " B  %12s",
            pr->cagnet1d, human_bytes(b1, sizeof b1, pr->cagnet1d));
    if (pr->epoch > 0)
      fprintf(out, "  %.1fx halo's\n", (double)pr->cagnet1d / (double)pr->epoch);
    else
      fprintf(out, "  -\n");
    fprintf(out, "  1D broadcast of halo's widths                %14" PRId64 " B  %12s",
            pr->broadcast1d, human_bytes(b1, sizeof b1, pr->broadcast1d));
    if (pr->epoch > 0)
      fprintf(out, "  %.1fx halo's\n", (double)pr->broadcast1d / (double)pr->epoch);
    else
      fprintf(out, "  -\n");
  }
  fprintf(out, "\noutput              %s (manifest.h5 + %d part%s), run id %016" PRIx64 "\n",
          c->out, s->parts, s->parts == 1 ? "" : "s", run_id);
  fprintf(out,
          "time                %.2f s wall, %.2f s cpu (wall: load %.2f, clean %.2f, partition "
          "%.2f, write %.2f)\n",
          t->wall[PHASE_TOTAL], t->cpu[PHASE_TOTAL], t->wall[PHASE_LOAD], t->wall[PHASE_CLEAN],
          t->wall[PHASE_PARTITION], t->wall[PHASE_WRITE]);
  char m1[32], m2[32];
  if (t->ranks > 1)
    fprintf(out,
            "memory              peak RSS %s on the largest of %d ranks, %s summed; the largest "
            "block of rows holds %" PRId64 " edges (%.2fx the mean)\n",
            halo_memory_str(t->peak_rss_max, m1, sizeof m1), t->ranks,
            halo_memory_str(t->peak_rss_sum, m2, sizeof m2), t->block_edges_max,
            s->edges > 0 ? (double)t->block_edges_max * t->ranks / (double)s->edges : 1.0);
  else
    fprintf(out, "memory              peak RSS %s\n",
            halo_memory_str(t->peak_rss_max, m1, sizeof m1));
}

/* ---- progress -------------------------------------------------------- */

typedef struct progress {
  int on;
  double t0;
} progress;

static void phase(const progress *pg, const char *what) {
  if (pg->on) fprintf(stderr, "halo-partition: [%7.1f s] %s\n", now_s() - pg->t0, what);
}

static void write_progress(void *ctx, int64_t done, int64_t total) {
  const progress *pg = ctx;
  if (!pg->on) return;
  fprintf(stderr, "\rhalo-partition: [%7.1f s] wrote part %" PRId64 " of %" PRId64,
          now_s() - pg->t0, done, total);
  if (done == total) fputc('\n', stderr);
  fflush(stderr);
}

/* ---- checks ---------------------------------------------------------- */

/* 1 when `path` lies somewhere below the folder `folder` (by device and
 * inode), 0 when not, -1 when out of memory.  Walks up from path's folder
 * through "..", to the root (its own parent), so symbolic links and other
 * spellings of the folder are seen through. */
static int inside_folder(const char *path, const struct stat *folder) {
  const char *slash = strrchr(path, '/');
  size_t len = slash ? (size_t)(slash - path) + 1 : 0, cap = len + 3 * 256 + 2;
  char *up = malloc(cap);
  int inside = 0;
  if (!up) return -1;
  snprintf(up, cap, "%.*s.", (int)len, path);
  for (int level = 0; level < 256 && !inside; level++) {
    struct stat sb, parent_sb;
    if (stat(up, &sb) != 0) break;
    inside = sb.st_dev == folder->st_dev && sb.st_ino == folder->st_ino;
    strcat(up, "/..");
    if (stat(up, &parent_sb) != 0 ||
        (parent_sb.st_dev == sb.st_dev && parent_sb.st_ino == sb.st_ino))
      break;
  }
  free(up);
  return inside;
}

/* Refuses an output file `path` (of `flag`) that would overwrite what is
 * being read: the input file, a --features or --labels file, or, for a
 * folder input (OGB), a file already inside that folder; and one inside an
 * existing --out DIR, which is moved aside and deleted with the file in it.
 * Files are compared by device and inode, so another spelling of the same
 * path ("./g.txt", a hard link) is caught too.  A file that does not exist
 * yet overwrites nothing, so only DIR is checked for it. */
static halo_status check_not_input(const cli *c, const char *flag, const char *path) {
  halo_status st = HALO_OK;
  struct stat out_sb, in_sb;
  int inside = 0;
  if (c->out && !c->write_metis && stat(c->out, &in_sb) == 0 && S_ISDIR(in_sb.st_mode) &&
      (inside = inside_folder(path, &in_sb)) != 0) {
    if (inside < 0) HALO_FAIL(HALO_ERR_NOMEM, "out of memory");
    HALO_FAIL(HALO_ERR_ARG, "%s %s: is inside the output folder %s, which is replaced", flag, path,
              c->out);
  }
  if (stat(path, &out_sb) != 0) goto done;
  const char *inputs[3][2] = {
      {"input", c->input}, {"--features", c->features}, {"--labels", c->labels}};
  for (int k = 0; k < 3; k++) {
    const char *in = inputs[k][1];
    if (!in || stat(in, &in_sb) != 0) continue; /* a spec, or the loader's error to report */
    if (in_sb.st_dev == out_sb.st_dev && in_sb.st_ino == out_sb.st_ino)
      HALO_FAIL(HALO_ERR_ARG, "%s %s: is the %s file %s; writing it would destroy it", flag, path,
                inputs[k][0], in);
    if (S_ISDIR(in_sb.st_mode) && (inside = inside_folder(path, &in_sb)) != 0) {
      if (inside < 0) HALO_FAIL(HALO_ERR_NOMEM, "out of memory");
      HALO_FAIL(HALO_ERR_ARG,
                "%s %s: is a file inside the input folder %s; writing it could destroy the "
                "dataset",
                flag, path, in);
    }
  }
done:
  return st;
}

/* --out DIR, before halo_outdir_open, which refuses the same without
 * naming the flags: a name ending in "." or "..", which could never be
 * renamed into place, and an existing folder without --force. */
static halo_status check_out(const char *dir, int force) {
  halo_status st = HALO_OK;
  char *name = strdup(dir);
  struct stat sb;
  if (!name) HALO_FAIL(HALO_ERR_NOMEM, "out of memory");
  size_t len = strlen(name);
  while (len > 1 && name[len - 1] == '/') name[--len] = '\0';
  const char *slash = strrchr(name, '/');
  const char *base = slash ? slash + 1 : name;
  if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
    HALO_FAIL(HALO_ERR_ARG, "--out %s: ends in '%s'; name the output folder itself", dir, base);
  if (!force && lstat(name, &sb) == 0 && S_ISDIR(sb.st_mode))
    HALO_FAIL(HALO_ERR_EXISTS, "output folder %s already exists (pass --force to replace it)",
              name);
done:
  free(name);
  return st;
}

/* An output FILE of `flag` that exists as a regular file, without --force,
 * before halo_outfile_open, which refuses it without naming --force. */
static halo_status check_out_file(const char *flag, const char *path, int force) {
  halo_status st = HALO_OK;
  struct stat sb;
  /* /dev/stdout is a link to a device: never written through, but named. */
  if (strcmp(flag, "--json") == 0 && *path && lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
    HALO_FAIL(HALO_ERR_EXISTS,
              "--json %s: exists and is not a regular file; not replacing it (--json - writes "
              "the JSON to standard output)",
              path);
  if (!force && *path && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode))
    HALO_FAIL(HALO_ERR_EXISTS, "%s %s: already exists (pass --force to replace it)", flag, path);
done:
  return st;
}

/* --features, --labels and --synthetic-* are for structure-only inputs:
 * given for an input that has node data of its own, they would replace it
 * without a word. */
static halo_status check_node_data(const cli *c, const halo_graph *g) {
  halo_status st = HALO_OK;
  if (c->features && g->features > 0)
    HALO_FAIL(HALO_ERR_ARG,
              "--features %s: %s already has %d features; --features is for structure-only "
              "inputs (edge lists, Matrix Market, rmat)",
              c->features, g->source, g->features);
  if (c->labels && (g->classes > 0 || g->labels))
    HALO_FAIL(HALO_ERR_ARG,
              "--labels %s: %s already has labels (%d classes); --labels is for structure-only "
              "inputs (edge lists, Matrix Market, rmat)",
              c->labels, g->source, g->classes);
  if (c->synth_features && (g->features > 0 || g->classes > 0 || g->labels || g->split))
    HALO_FAIL(HALO_ERR_ARG,
              "--synthetic-features: %s already has node data (%d features, %d classes); "
              "--synthetic-* are for structure-only inputs (edge lists, Matrix Market, rmat)",
              g->source, g->features, g->classes);
done:
  return st;
}

/* Shards that halo-train will refuse are still written (they partition
 * well, and another tool may read them), with a warning that says why and
 * which flag adds what is missing. */
static void warn_untrainable_counts(const halo_graph *g, int has_split, int64_t train) {
  if (g->features == 0)
    halo_log_warn(
        "%s has no node features: halo-train will refuse these shards (give "
        "--features FILE or --synthetic-features F --synthetic-classes C)",
        g->source);
  if (g->classes == 0)
    halo_log_warn(
        "%s has no labels: halo-train will refuse these shards (give --labels FILE or "
        "--synthetic-features F --synthetic-classes C)",
        g->source);
  if (train == 0)
    halo_log_warn(
        "%s has %s: halo-train will refuse these shards (no part has a train node; "
        "give --split DIR or --synthetic-split 0.6,0.2,0.2)",
        g->source, has_split ? "no node in the train split" : "no split");
}

/* The same for a graph that holds its split (a sequential run's). */
static void warn_untrainable(const halo_graph *g) {
  int64_t train = 0;
  for (int64_t v = 0; g->split && v < g->n; v++) train += g->split[v] == HALO_SPLIT_TRAIN;
  warn_untrainable_counts(g, g->split != NULL, train);
}

/* The clean-up needs two arrays of n + 1 offsets beside the graph (row
 * shifts and fill positions when it adds reverse edges): refuse up front,
 * with the sizes, rather than be killed half-way by the kernel. */
static halo_status check_clean_memory(const halo_graph *g) {
  halo_status st = HALO_OK;
  const double need = 16.0 * ((double)g->n + 1.0);
  const int64_t avail = halo_memory_available();
  if (avail < 0 || need <= (double)avail) goto done;
  char b0[32], b1[32];
  HALO_FAIL(HALO_ERR_NOMEM,
            "%s: cleaning %lld nodes needs about %s more memory, but %s is available", g->source,
            (long long)g->n, halo_memory_str((int64_t)need, b0, sizeof b0),
            halo_memory_str(avail, b1, sizeof b1));
done:
  return st;
}

/* METIS' idx_t cannot index a graph past its limit; Scotch's int64 build
 * can, so the default method hands such a graph to it, with one line that
 * says why.  The manifest and the summary then name scotch.  A METIS run
 * then checks the seed it was not checked for at parse time. */
static halo_status switch_past_metis_limit(cli *c, const halo_graph *g) {
  halo_status st = HALO_OK;
  const int64_t limit = halo_partition_metis_limit();
  if (c->opt.method != HALO_METHOD_METIS || c->opt.parts < 2) goto done;
  if (g->n <= limit && g->m <= limit) {
    if (c->opt.seed > halo_partition_metis_seed_max())
      HALO_FAIL(HALO_ERR_ARG,
                "--seed: %lld is out of range [0, %lld] for METIS (the scotch and random methods "
                "take any seed)",
                (long long)c->opt.seed, (long long)halo_partition_metis_seed_max());
    goto done;
  }
  halo_log_warn(
      "%s: %" PRId64 " nodes and %" PRId64 " directed edges exceed METIS' limit of %" PRId64
      " (its idx_t): partitioning with scotch instead%s",
      g->source, g->n, g->m, limit,
      c->opt.objective == HALO_OBJECTIVE_VOL ? ", for the edge cut (vol is METIS' only)" : "");
  c->opt.method = HALO_METHOD_SCOTCH;
  c->opt.objective = HALO_OBJECTIVE_CUT;
  c->metis_switched = 1;
done:
  return st;
}

/* --dims against the input's widths. */
static halo_status check_dims(const cli *c, const halo_graph *g) {
  halo_status st = HALO_OK;
  if (c->ndims == 0) goto done;
  if (g->features > 0 && c->dims[0] != g->features)
    HALO_FAIL(HALO_ERR_ARG, "--dims: input width %d does not match the %d features of %s",
              c->dims[0], g->features, g->source);
  if (g->classes > 0 && c->dims[c->ndims - 1] != g->classes)
    HALO_FAIL(HALO_ERR_ARG, "--dims: output width %d does not match the %d classes of %s",
              c->dims[c->ndims - 1], g->classes, g->source);
done:
  return st;
}

/* ---- main ------------------------------------------------------------ */

/* The outputs a run writes, opened before any work, so that an unusable
 * one (an output that is an input, a device or folder where a file goes,
 * an existing one without --force) is refused at once. */
typedef struct outputs {
  halo_outdir *dir;
  halo_outfile *json, *metis;
  int json_stdout; /* --json - puts the JSON alone on stdout; the table then goes to stderr */
} outputs;

static halo_status outputs_open(const cli *c, outputs *o) {
  halo_status st = HALO_OK;
  o->json_stdout = c->json && strcmp(c->json, "-") == 0;
  if (c->json && !o->json_stdout) HALO_TRY(check_not_input(c, "--json", c->json));
  if (c->write_metis) HALO_TRY(check_not_input(c, "--write-metis", c->write_metis));
  if (!c->write_metis) {
    HALO_TRY(check_out(c->out, c->force));
    HALO_TRY(halo_outdir_open(c->out, c->force, &o->dir));
  }
  if (c->json && !o->json_stdout) {
    HALO_TRY(check_out_file("--json", c->json, c->force));
    HALO_TRY(halo_outfile_open(c->json, "--json", c->force, &o->json));
  }
  if (c->write_metis) {
    HALO_TRY(check_out_file("--write-metis", c->write_metis, c->force));
    HALO_TRY(halo_outfile_open(c->write_metis, "--write-metis", c->force, &o->metis));
  }
done:
  return st;
}

static void outputs_close(outputs *o) {
  halo_outfile_close(&o->json);
  halo_outfile_close(&o->metis);
  halo_outdir_close(&o->dir);
}

/* A finished partition's outputs: the prediction, the JSON, the folder put
 * into place, and the table.  The JSON goes into place before DIR, and is
 * taken back if DIR cannot follow: a failure leaves neither
 * (docs/partition.md, "Errors"). */
static halo_status publish(const cli *c, const halo_graph *g, const halo_clean_report *clean,
                           const halo_partition_stats *stats, uint64_t run_id, const timing *t,
                           outputs *o) {
  halo_status st = HALO_OK;
  prediction pred, *pr = NULL;
  int json_placed = 0;
  int32_t empty = 0;
  for (int32_t p = 0; p < stats->parts; p++) empty += stats->owned[p] == 0;
  if (empty > 0)
    halo_log_warn("%d of %d parts own no node (%s on %" PRId64 " nodes); their ranks will idle",
                  empty, stats->parts, halo_method_name(c->opt.method), g->n);
  if (c->ndims > 0) {
    HALO_TRY(predict(c, stats, &pred));
    pr = &pred;
  }
  if (o->json) {
    HALO_TRY(write_json(halo_outfile_stream(o->json), c, g, clean, stats, pr, run_id, t));
    /* A signal between the two commits removes the placed JSON too. */
    halo_cleanup_lock();
    st = halo_outfile_commit(o->json);
    if (st == HALO_OK) {
      json_placed = 1;
      st = halo_cleanup_add(c->json, 0);
    }
    halo_cleanup_unlock();
    HALO_TRY(st);
  }
  halo_cleanup_lock();
  st = halo_outdir_commit(o->dir);
  if (st == HALO_OK && json_placed) {
    halo_cleanup_drop(c->json);
    json_placed = 0;
  }
  halo_cleanup_unlock();
  HALO_TRY(st);

  /* Standard output cannot be taken back, so its JSON waits for DIR. */
  if (o->json_stdout) {
    HALO_TRY(write_json(stdout, c, g, clean, stats, pr, run_id, t));
    if (fflush(stdout) != 0 || ferror(stdout))
      HALO_FAIL(HALO_ERR_IO, "--json -: writing to standard output failed: %s", strerror(errno));
  }
  print_table(o->json_stdout ? stderr : stdout, c, g, clean, stats, pr, run_id, t);
  fflush(stdout);
done:
  if (json_placed) {
    unlink(c->json);
    halo_cleanup_drop(c->json);
  }
  return st;
}

static halo_status run(cli *c) {
  halo_status st = HALO_OK;
  halo_graph *g = NULL;
  halo_partition_stats *stats = NULL;
  int32_t *part = NULL;
  outputs out = {0};
  halo_clean_report clean = {0};
  timing t;
  timing_start(&t);
  progress pg = {.on = 0, .t0 = t.wall_start};
  const int tty = isatty(STDERR_FILENO);

  HALO_TRY(outputs_open(c, &out));
  timing_lap(&t, PHASE_LOAD); /* checking the outputs counts as loading */
  const halo_load_options load_opt = {.split_name = c->split_name,
                                      .skip_split = c->split || c->synth_split_given};
  HALO_TRY(halo_load_opts(c->input, c->format, &load_opt, &g));
  /* Nodes without edges are a graph (docs/partition.md, "Graphs without
   * edges"); no nodes at all is none, whatever the format. */
  if (g->n == 0)
    HALO_FAIL(HALO_ERR_ARG, "%s: holds no nodes (its node count is 0); a graph needs at least one",
              g->source);
  HALO_TRY(check_node_data(c, g));
  if (c->features || c->labels) HALO_TRY(halo_load_node_data(g, c->features, c->labels));
  if (c->synth_features)
    HALO_TRY(halo_graph_synthesize_node_data(g, c->synth_features, c->synth_classes,
                                             (uint64_t)c->opt.seed));
  if (c->split) HALO_TRY(halo_load_split(g, c->split));
  if (c->synth_split_given)
    HALO_TRY(halo_graph_synthesize_split(g, c->synth_split, (uint64_t)c->opt.seed));
  timing_lap(&t, PHASE_LOAD);
  if (!c->write_metis) warn_untrainable(g);
  pg.on = tty && g->m > PROGRESS_EDGES;
  if (pg.on)
    fprintf(stderr, "halo-partition: [%7.1f s] loaded %" PRId64 " nodes, %" PRId64 " edges\n",
            now_s() - pg.t0, g->n, g->m);

  if (!c->write_metis && c->opt.parts > g->n)
    HALO_FAIL(HALO_ERR_ARG, "--parts %d exceeds the %" PRId64 " nodes of %s", c->opt.parts, g->n,
              g->source);
  HALO_TRY(check_dims(c, g));

  phase(&pg, "cleaning (symmetrize, remove duplicates and self-loops)");
  timing_lap(&t, PHASE_LOAD);
  HALO_TRY(check_clean_memory(g));
  HALO_TRY(halo_partition_clean(g, &clean));
  timing_lap(&t, PHASE_CLEAN);

  if (c->write_metis) {
    phase(&pg, "writing the METIS graph");
    HALO_TRY(halo_partition_write_metis_to(g, out.metis));
    printf("wrote %s: %" PRId64 " nodes, %" PRId64 " undirected edges\n", c->write_metis, g->n,
           g->m / 2);
    goto done;
  }

  HALO_TRY(switch_past_metis_limit(c, g));
  if (pg.on) {
    char what[96];
    snprintf(what, sizeof what, "partitioning into %d parts (%s)", c->opt.parts,
             halo_method_name(c->opt.method));
    phase(&pg, what);
  }
  HALO_ALLOC(part, g->n, "part vector");
  HALO_TRY(halo_partition_lookup(c->opt.method)(g, &c->opt, part));
  timing_lap(&t, PHASE_PARTITION);

  uint64_t run_id = halo_partition_run_id(g, &c->opt, part);

  phase(&pg, "writing shards");
  HALO_TRY(halo_partition_write(halo_outdir_tmp(out.dir), g, part, &c->opt, run_id, write_progress,
                                &pg, &stats));
  timing_lap(&t, PHASE_WRITE);
  t.peak_rss_max = t.peak_rss_sum = halo_memory_peak();
  t.block_edges_max = g->m;
  HALO_TRY(publish(c, g, &clean, stats, run_id, &t, &out));
done:
  outputs_close(&out);
  halo_partition_stats_destroy(&stats);
  free(part);
  halo_graph_destroy(&g);
  return st;
}

/* ---- the distributed run (--method ptscotch) -------------------------- */

/* What the distributed partitioner refuses, by name, before any work. */
static halo_status check_distributed(const cli *c) {
  halo_status st = HALO_OK;
  if (c->opt.objective != HALO_OBJECTIVE_CUT)
    HALO_FAIL(HALO_ERR_ARG,
              "--objective %s: PT-Scotch minimises the edge cut only (drop --objective)",
              halo_objective_name(c->opt.objective));
done:
  return st;
}

static void dist_phase(void *ctx, const char *what) { phase(ctx, what); }

/* mpirun -np K halo-partition --method ptscotch: rank 0 opens the outputs
 * and publishes them, every rank takes part in the partition
 * (halo-dpartition.h).  A failure on any rank stops every rank. */
static halo_status run_distributed(cli *c, MPI_Comm comm) {
  halo_status st = HALO_OK;
  outputs out = {0};
  halo_partition_dist_result dr = {0};
  char line[1024], tmp[4096] = "";
  int rank = 0;
  timing t;
  timing_start(&t);
  progress pg = {.on = 0, .t0 = t.wall_start};
  MPI_Comm_rank(comm, &rank);

  line[0] = '\0';
  halo_log_hold(line, sizeof line);
  st = check_distributed(c);
  if (st == HALO_OK && rank == 0) st = outputs_open(c, &out);
  if (st == HALO_OK && rank == 0)
    snprintf(tmp, sizeof tmp, "%s",
             c->write_metis ? halo_outfile_tmp(out.metis) : halo_outdir_tmp(out.dir));
  halo_log_hold(NULL, 0);
  HALO_TRY(halo_mpi_agree_first(comm, st, line));
  HALO_MPI(MPI_Bcast(tmp, (int)sizeof tmp, MPI_CHAR, 0, comm));
  pg.on = rank == 0 && isatty(STDERR_FILENO);

  const halo_partition_dist_request rq = {
      .input = c->input,
      .format = c->format,
      .opt = c->opt,
      .synth_features = c->synth_features,
      .synth_classes = c->synth_classes,
      .synth_split = c->synth_split_given ? c->synth_split : NULL,
      .features = c->features,
      .labels = c->labels,
      .split_name = c->split_name,
      .split = c->split,
      .dims = c->dims,
      .ndims = c->ndims,
      .tmpdir = c->write_metis ? NULL : tmp,
      .metis_tmp = c->write_metis ? tmp : NULL,
      .metis_name = c->write_metis,
      .parts_file = c->parts_file,
      .clean_round_pairs = c->clean_round,
      .phase = dist_phase,
      .progress = write_progress,
      .ctx = &pg};
  HALO_TRY(halo_partition_dist_run(comm, &rq, &dr));
  static const int phases[HALO_DIST_PHASES] = {PHASE_LOAD, PHASE_CLEAN, PHASE_PARTITION,
                                               PHASE_WRITE};
  for (int i = 0; i < HALO_DIST_PHASES; i++) t.wall[phases[i]] = dr.wall[i];
  timing_lap(&t, PHASE_WRITE);
  t.wall[PHASE_WRITE] = dr.wall[HALO_DIST_WRITE];
  t.ranks = dr.ranks;
  t.peak_rss_max = dr.peak_rss_max;
  t.peak_rss_sum = dr.peak_rss_sum;
  t.block_edges_max = dr.block_edges_max;

  line[0] = '\0';
  halo_log_hold(line, sizeof line);
  if (rank == 0 && c->write_metis) {
    st = halo_outfile_commit(out.metis);
    if (st == HALO_OK)
      printf("wrote %s: %" PRId64 " nodes, %" PRId64 " undirected edges\n", c->write_metis,
             dr.summary.n, dr.summary.m / 2);
  } else if (rank == 0) {
    halo_log_hold(NULL, 0); /* warnings are not held */
    warn_untrainable_counts(&dr.summary, dr.has_split, dr.train);
    halo_log_hold(line, sizeof line);
    st = publish(c, &dr.summary, &dr.clean, dr.stats, dr.run_id, &t, &out);
  }
  halo_log_hold(NULL, 0);
  HALO_TRY(halo_mpi_agree_first(comm, st, line));
done:
  halo_partition_dist_result_free(&dr);
  outputs_close(&out);
  return st;
}

/* The world size mpirun gave this process (1 without mpirun), from Open
 * MPI's variables, before MPI is started: only --method ptscotch starts it. */
static int launched_ranks(int *rank) {
  const char *size = getenv("OMPI_COMM_WORLD_SIZE"), *r = getenv("OMPI_COMM_WORLD_RANK");
  *rank = r ? atoi(r) : 0;
  return size ? atoi(size) : 1;
}

/* --method ptscotch: MPI around the distributed run.  An MPI failure or a
 * watchdog timeout leaves the communicator untrusted: the job is aborted. */
static halo_status main_distributed(int *argc, char ***argv, cli *c) {
  halo_status st = HALO_OK;
  MPI_Comm comm = MPI_COMM_NULL;
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    halo_log_error("MPI_Init failed");
    return HALO_ERR_MPI;
  }
  HALO_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  HALO_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  st = run_distributed(c, comm);
done:
  if (st == HALO_ERR_MPI || st == HALO_ERR_TIMEOUT) {
    halo_cleanup_lock();
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  /* Every temporary is gone or committed: a SIGTERM from mpirun, sent once
   * a failed peer has exited, now waits for this exit instead of reporting
   * a stop that is not one. */
  halo_cleanup_lock();
  MPI_Finalize();
  return st;
}

int main(int argc, char **argv) {
  halo_log_set_prefix("halo-partition");
  cli c = {.format = HALO_FORMAT_AUTO, .opt = HALO_PARTITION_OPTIONS_INIT};
  int stop = 0;
  cli_env env;
  /* First, before any thread: SIGINT and SIGTERM remove the temporaries
   * and exit with 128 + signal (docs/partition.md, "Stopping it"). */
  halo_status st = halo_cleanup_on_signals("halo-partition");
  int rank = 0;
  const int ranks = launched_ranks(&rank);
  /* Every rank reads the same flags and environment and meets the same
   * error in them: rank 0 alone says so. */
  if (rank != 0) halo_log_set_quiet(1);
  if (st == HALO_OK) st = parse_args(argc, argv, &c, &stop);
  if (st == HALO_OK && !stop) st = cli_env_read(&env, CLI_ENV_MEMORY | CLI_ENV_TEST_PARTS);
  halo_log_set_quiet(0);
  if (st == HALO_OK && !stop && ranks > 1 && c.opt.method != HALO_METHOD_PTSCOTCH) {
    /* K copies of a sequential run would race for one folder: one says so. */
    if (rank == 0)
      halo_log_error(
          "mpirun started %d copies of halo-partition: only --method ptscotch runs "
          "on several ranks (--method %s runs in one process)",
          ranks, halo_method_name(c.opt.method));
    st = HALO_ERR_ARG;
  }
  if (st == HALO_OK && !stop) {
    halo_memory_set_available(env.memory_available);
    c.parts_file = env.test_parts_file;
    c.clean_round = env.test_clean_round;
    st = c.opt.method == HALO_METHOD_PTSCOTCH ? main_distributed(&argc, &argv, &c) : run(&c);
  }
  /* A signal being handled now finishes its cleanup and exit first. */
  halo_cleanup_lock();
  return st == HALO_OK ? 0 : 1;
}
