/* halo-partition: reads a graph, partitions it and writes one HDF5 shard per
 * part plus a manifest.  A thin CLI: its flags, then one call into
 * halo_partition_run (partition/halo-partition-run.h), which reports;
 * docs/partition.md is its reference. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-env.h"
#include "halo-gat.h"
#include "halo-load.h"
#include "halo-memory.h"
#include "halo-model.h"
#include "halo-mpi.h"
#include "halo-partition-run.h"
#include "halo-partition.h"

#ifndef HALO_VERSION
#define HALO_VERSION "unknown"
#endif

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
  const char *parts_file;  /* ptscotch: HALO_TEST_PARTS_FILE, a test hook (cli-env.c) */
  int64_t clean_round;     /* ptscotch: HALO_TEST_CLEAN_ROUND, a test hook; 0: unset */
} cli;

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

/* The library's request: the flags' values, field by field. */
static halo_partition_run_request request_of(const cli *c) {
  halo_partition_run_request rq = {.input = c->input,
                                   .out = c->out,
                                   .json = c->json,
                                   .features = c->features,
                                   .labels = c->labels,
                                   .write_metis = c->write_metis,
                                   .split = c->split,
                                   .split_name = c->split_name,
                                   .synth_split_given = c->synth_split_given,
                                   .format = c->format,
                                   .opt = c->opt,
                                   .force = c->force,
                                   .synth_features = c->synth_features,
                                   .synth_classes = c->synth_classes,
                                   .ndims = c->ndims,
                                   .model = c->model,
                                   .parts_file = c->parts_file,
                                   .clean_round = c->clean_round};
  memcpy(rq.synth_split, c->synth_split, sizeof rq.synth_split);
  memcpy(rq.dims, c->dims, sizeof rq.dims);
  return rq;
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
static halo_status main_distributed(int *argc, char ***argv, halo_partition_run_request *rq) {
  halo_status st = HALO_OK;
  MPI_Comm comm = MPI_COMM_NULL;
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    halo_log_error("MPI_Init failed");
    return HALO_ERR_MPI;
  }
  HALO_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  HALO_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  st = halo_partition_run_distributed(rq, comm);
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
    halo_partition_run_request rq = request_of(&c);
    st = c.opt.method == HALO_METHOD_PTSCOTCH ? main_distributed(&argc, &argv, &rq)
                                              : halo_partition_run(&rq);
  }
  /* A signal being handled now finishes its cleanup and exit first. */
  halo_cleanup_lock();
  return st == HALO_OK ? 0 : 1;
}
