/* train-probe: runs under mpirun for the trainer's tests.  Every rank builds
 * the same random fixture graph, takes its own part's shard (in memory, no
 * files), builds the model and computes the gradients of one training epoch.
 * It writes, into OUT/:
 *   logits-R.txt   "gid z_0 z_1 ..." for every owned node of rank R
 *   grads.txt      one gradient value per line (rank 0; allreduced, so global)
 *   bytes.txt      "halo_bytes predicted setup_bytes predicted_setup" (rank 0, Σ over ranks)
 *   after.txt      the parameters after one Adam step, then the train/valid/test
 *                  nodes an evaluation classifies right (rank 0; Σ over ranks)
 *   memory-R.txt   "planned peak" backend bytes of rank R's model buffers: its
 *                  buffer plan's peak and what it allocated (halo_net_info)
 *   setup-copies-R.txt  "uploads downloads synchronizes" of rank R's halo_net_create
 *                  (checked backend only)
 *
 * HALO_PROBE_DETERMINISTIC=1 trains with --deterministic's exact sums.
 * HALO_PROBE_MODEL=gcn|sage|gin|gat picks the model, and HALO_PROBE_FLAGS its
 * options: n (--sage-normalize), e (--gin-train-eps), u (--activation elu),
 * k (--activation leaky_relu --negative-slope 0.2), g (--activation gelu),
 * r (--residual), l (--norm layer), b (--norm batch), s (--halo-sample 0.5),
 * q (--halo-precision int8 --halo-precision-bwd int4), w (a weighted graph:
 * fx_graph_weigh from the graph seed, the weights used as PyG's edge_weight).  HALO_PROBE_GAT="K K_out p" gives GAT's
 * heads, output heads and attention dropout (hidden is then per head).
 * HALO_PROBE_BACKEND picks the backend: cpu (default), or the device-like
 * checked backend of backend-checked.c with the halo exchange staged
 * ("staged") or in place ("device-mpi").
 *
 * usage: train-probe OUT nodes degree features density classes layers hidden
 *                    dropout input_dropout sparse(-1|0|1) model_seed graph_seed
 *                    epoch
 *        train-probe --cases FILE
 * The graph's words (nodes .. classes) are read by fx_spec_parse, as every
 * probe reads them; the rest are this probe's model.
 *
 * --cases runs every case of FILE in this one mpirun, in order: under the
 * sanitizers an mpirun costs seconds at start-up and at each rank's exit
 * (LeakSanitizer's check), more than a small case.  Each line is a case:
 * its settings, KEY=VALUE with a key of case_settings below (a value with
 * spaces in double quotes: HALO_PROBE_GAT="4 2 0.5"), then the words of the
 * first form, OUT first; blank lines and lines starting with '#' are
 * skipped.  A case sees the settings of its line and no other of
 * case_settings, whatever the environment holds.  Each case runs on its own
 * MPI_Comm_dup of MPI_COMM_WORLD (a failed agreement marks its communicator
 * for good: halo-mpi.h), with each rank's stdout and stderr in
 * OUT/log-R.txt; then the ranks agree on its status and rank 0 writes
 * OUT/status.txt, "0" when every rank succeeded, else "1".  A failed case
 * does not stop the ones after it; the exit status is 0 when every case
 * succeeded.  LeakSanitizer checks once, at exit: to find the case a leak
 * came from, run cases of the file alone (a line of it is a whole case).
 */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend-checked.h"
#include "halo-backend.h"
#include "halo-mpi.h"
#include "halo-net.h"
#include "halo-predict.h"
#include "train-fixture.h"

/* The model's words, after OUT and the graph's. */
enum { LAYERS, HIDDEN, DROPOUT, DROPIN, SPARSE, MODEL_SEED, GRAPH_SEED, EPOCH, MODEL_ARGS };
enum { CASE_WORDS = 1 + FX_SPEC_ARGS + MODEL_ARGS };

/* What a case reads from the environment; a line of --cases gives them. */
static const char *const case_settings[] = {
    "HALO_PROBE_MODEL",         "HALO_PROBE_FLAGS",           "HALO_PROBE_GAT",
    "HALO_PROBE_BACKEND",       "HALO_PROBE_DETERMINISTIC",   "HALO_PROBE_BN_EPOCHS",
    "HALO_CHECKED_FAIL_UPLOAD", "HALO_CHECKED_FAIL_DOWNLOAD", "HALO_CHECKED_FAIL_SYNCHRONIZE",
};
enum { CASE_SETTINGS = sizeof case_settings / sizeof case_settings[0] };

/* One case on `comm`: argv[0] is OUT, then CASE_WORDS - 1 words.  Returns 0,
 * or 1 when this rank failed.  Collective on `comm`. */
static int run_case(MPI_Comm comm, char *const *argv) {
  int rank = 0, size = 1, rc = 1;
  fx_graph *graph = NULL;
  halo_shard *shard = NULL;
  halo_backend *be = NULL;
  halo_net *model = NULL;
  float *buf = NULL;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const char *out = argv[0];
  char *const *word = argv + 1 + FX_SPEC_ARGS;
  const fx_spec spec = fx_spec_parse(argv + 1, size, strtoull(word[GRAPH_SEED], NULL, 10));
  halo_net_options o;
  halo_net_options_default(&o);
  o.normalize_features = 1; /* the reference model normalises (fx_case_model) */
  o.layers = atoi(word[LAYERS]);
  o.hidden = atoi(word[HIDDEN]);
  o.dropout = (float)atof(word[DROPOUT]);
  o.input_dropout = (float)atof(word[DROPIN]);
  o.sparse_features = atoi(word[SPARSE]);
  o.seed = strtoull(word[MODEL_SEED], NULL, 10);
  const int64_t epoch = atoll(word[EPOCH]);
  const char *det = getenv("HALO_PROBE_DETERMINISTIC");
  o.deterministic = det && strcmp(det, "1") == 0;
  const char *model_name = getenv("HALO_PROBE_MODEL");
  if (model_name && halo_model_parse(model_name, &o.model) != HALO_OK) {
    if (rank == 0) fprintf(stderr, "train-probe: HALO_PROBE_MODEL=%s is not a model\n", model_name);
    goto done;
  }
  /* "n": normalize, "e": train ε, "u": ELU, "k": LeakyReLU 0.2, "g": GELU,
   * "r": residual, "l": layer norm, "M": SAGE max, "S": SAGE sum, "L": GCN
   * without self-loops, "N": GCN unnormalised */
  const char *flags = getenv("HALO_PROBE_FLAGS");
  if (flags) {
    o.residual = strchr(flags, 'r') != NULL;
    o.norm = strchr(flags, 'b')   ? HALO_NORM_BATCH
             : strchr(flags, 'l') ? HALO_NORM_LAYER
                                  : HALO_NORM_NONE;
    o.sage_normalize = strchr(flags, 'n') != NULL;
    o.gin_train_eps = strchr(flags, 'e') != NULL;
    o.aggr = strchr(flags, 'M')   ? HALO_AGGR_MAX
             : strchr(flags, 'S') ? HALO_AGGR_SUM
                                  : HALO_AGGR_MEAN;
    o.gcn_self_loops = strchr(flags, 'L') == NULL;
    o.gcn_normalize = strchr(flags, 'N') == NULL;
    o.activation = strchr(flags, 'u')   ? HALO_ACT_ELU
                   : strchr(flags, 'k') ? HALO_ACT_LEAKY_RELU
                   : strchr(flags, 'g') ? HALO_ACT_GELU
                                        : HALO_ACT_RELU;
    o.negative_slope = 0.2f; /* the fixture's fx_model.negative_slope for 'k' */
    if (strchr(flags, 's')) o.halo_sample = 0.5f;
    if (strchr(flags, 'q')) { /* low-bit halo rows: the backend's quant_* slots */
      o.halo_precision = HALO_PREC_INT8;
      o.halo_precision_bwd = HALO_PREC_INT4;
    }
  }
  const char *gat = getenv("HALO_PROBE_GAT");
  if (gat && sscanf(gat, "%d %d %f", &o.heads, &o.output_heads, &o.attn_dropout) != 3) {
    if (rank == 0) fprintf(stderr, "train-probe: HALO_PROBE_GAT=%s is not \"K K_out p\"\n", gat);
    goto done;
  }

  graph = fx_graph_new(&spec);
  if (flags && strchr(flags, 'w')) fx_graph_weigh(graph, spec.seed);
  shard = fx_shard_new(graph, rank, 77);
  const char *kind = getenv("HALO_PROBE_BACKEND");
  halo_status made = !kind || strcmp(kind, "cpu") == 0
                         ? halo_backend_create(&(halo_backend_options){.device = "cpu"}, &be)
                     : strcmp(kind, "staged") == 0     ? checked_backend_create(0, &be)
                     : strcmp(kind, "device-mpi") == 0 ? checked_backend_create(1, &be)
                                                       : HALO_ERR_ARG;
  if (made != HALO_OK) {
    fprintf(stderr, "train-probe: HALO_PROBE_BACKEND=%s: cannot create it\n", kind ? kind : "cpu");
    goto done;
  }
  if (halo_net_create(comm, be, shard, &o, &model) != HALO_OK) goto done;
  if (kind && strcmp(kind, "cpu") != 0) {
    /* The copies set-up made, for the tests that fail each of them in turn. */
    int64_t uploads = 0, downloads = 0, host_allocs = 0, syncs = 0;
    checked_backend_counts(be, &uploads, &downloads, &host_allocs, &syncs);
    char counts[1024];
    snprintf(counts, sizeof counts, "%s/setup-copies-%d.txt", out, rank);
    FILE *cf = fopen(counts, "w");
    if (!cf) goto done;
    fprintf(cf, "%lld %lld %lld\n", (long long)uploads, (long long)downloads, (long long)syncs);
    fclose(cf);
  }

  halo_net_stats stats;
  if (halo_net_gradients(model, epoch, &stats) != HALO_OK) goto done;
  halo_net_info info;
  halo_net_info_get(model, &info);

  const int32_t classes = info.model.dims[info.model.layers];
  const halo_model_comm exchanges = halo_model_comm_of(&info.model);
  buf = calloc((size_t)(info.n_owned * classes + info.params + 1), sizeof *buf);
  char path[1024];
  snprintf(path, sizeof path, "%s/logits-%d.txt", out, rank);
  FILE *f = fopen(path, "w");
  if (!f || halo_net_logits_get(model, buf) != HALO_OK) goto done;
  for (int64_t i = 0; i < info.n_owned; i++) {
    fprintf(f, "%lld", (long long)shard->global_id[i]);
    for (int32_t c = 0; c < classes; c++) fprintf(f, " %.9g", buf[i * classes + c]);
    fprintf(f, "\n");
  }
  fclose(f);
  snprintf(path, sizeof path, "%s/memory-%d.txt", out, rank);
  if (!(f = fopen(path, "w"))) goto done;
  fprintf(f, "%lld %lld\n", (long long)info.backend_bytes_planned,
          (long long)info.backend_bytes_peak);
  fclose(f);

  /* The rows each exchange of the epoch moves: all, or --halo-sample's draw. */
  const int64_t rows = halo_predict_sample_rows(shard->global_id + shard->n_owned, shard->n_halo,
                                                o.seed, epoch, o.halo_sample);
  int64_t local[4] = {stats.halo_bytes, info.setup_halo_bytes, info.n_halo, rows}, sum[4];
  MPI_Allreduce(local, sum, 4, MPI_INT64_T, MPI_SUM, comm);
  if (rank == 0) {
    if (halo_net_grads_get(model, buf) != HALO_OK) goto done;
    snprintf(path, sizeof path, "%s/grads.txt", out);
    f = fopen(path, "w");
    if (!f) goto done;
    for (int64_t k = 0; k < info.params; k++) fprintf(f, "%.9g\n", buf[k]);
    fclose(f);
    snprintf(path, sizeof path, "%s/bytes.txt", out);
    f = fopen(path, "w");
    if (!f) goto done;
    fprintf(f, "%lld %lld %lld %lld %d\n", (long long)sum[0],
            (long long)halo_predict_epoch_bytes(sum[3], &exchanges), (long long)sum[1],
            (long long)halo_predict_setup_bytes(sum[2], &exchanges), info.sparse_features);
    fclose(f);
  }

  /* HALO_PROBE_BN_EPOCHS=K (--norm batch): K - 1 more training forwards
   * at epochs epoch+1 .. epoch+K-1 with the same parameters, then (rank 0)
   * bn-running.txt, the running statistics, one a line; then an
   * evaluation, whose logits (running statistics, no dropout) go to
   * eval-logits-R.txt as logits-R.txt's. */
  const char *bn_epochs = getenv("HALO_PROBE_BN_EPOCHS");
  if (bn_epochs && info.model.running > 0) {
    const int k = atoi(bn_epochs);
    for (int e = 1; e < k; e++)
      if (halo_net_gradients(model, epoch + e, NULL) != HALO_OK) goto done;
    float *running = calloc((size_t)info.model.running, sizeof *running);
    if (!running) goto done;
    halo_net_bn_running_get(model, running);
    snprintf(path, sizeof path, "%s/bn-running.txt", out);
    f = rank == 0 ? fopen(path, "w") : NULL;
    for (int64_t j = 0; f && j < info.model.running; j++) fprintf(f, "%.9g\n", running[j]);
    if (f) fclose(f);
    free(running);
    if (halo_net_evaluate(model, NULL) != HALO_OK) goto done;
    snprintf(path, sizeof path, "%s/eval-logits-%d.txt", out, rank);
    f = fopen(path, "w");
    if (!f || halo_net_logits_get(model, buf) != HALO_OK) goto done;
    for (int64_t i = 0; i < info.n_owned; i++) {
      fprintf(f, "%lld", (long long)shard->global_id[i]);
      for (int32_t c = 0; c < classes; c++) fprintf(f, " %.9g", buf[i * classes + c]);
      fprintf(f, "\n");
    }
    fclose(f);
  }

  /* One Adam step and an evaluation: the rest of what an epoch does. */
  halo_net_stats eval;
  if (halo_net_update(model) != HALO_OK || halo_net_evaluate(model, &eval) != HALO_OK) goto done;
  int64_t correct[3];
  MPI_Allreduce(eval.correct, correct, 3, MPI_INT64_T, MPI_SUM, comm);
  if (rank == 0) {
    if (halo_net_params_get(model, buf) != HALO_OK) goto done;
    snprintf(path, sizeof path, "%s/after.txt", out);
    f = fopen(path, "w");
    if (!f) goto done;
    for (int64_t k = 0; k < info.params; k++) fprintf(f, "%.9g\n", buf[k]);
    fprintf(f, "%lld %lld %lld\n", (long long)correct[0], (long long)correct[1],
            (long long)correct[2]);
    fclose(f);
  }
  rc = 0;
done:
  free(buf);
  halo_net_destroy(&model);
  halo_backend_destroy(&be);
  halo_shard_destroy(&shard);
  fx_graph_free(graph);
  return rc;
}

/* Splits `line` in place into at most `max` words at blanks, a double
 * quote keeping blanks inside a word (the quotes are dropped).  Returns the
 * count, or -1 when there are more words or a quote is not closed. */
static int split_words(char *line, char **word, int max) {
  int n = 0;
  char *in = line;
  while (*in) {
    while (*in == ' ' || *in == '\t' || *in == '\n' || *in == '\r') in++;
    if (!*in) break;
    if (n == max) return -1;
    char *out = in;
    word[n++] = out;
    int quoted = 0;
    for (; *in && (quoted || (*in != ' ' && *in != '\t' && *in != '\n' && *in != '\r')); in++)
      if (*in == '"')
        quoted = !quoted;
      else
        *out++ = *in;
    if (quoted) return -1;
    if (*in) in++;
    *out = '\0';
  }
  return n;
}

/* Sets the case's settings from its words: unsets every one of
 * case_settings, then sets those given.  Returns how many words were
 * settings, or -1 (message on rank 0) when one is not of case_settings. */
static int apply_settings(char **word, int n, const char *where, int rank) {
  for (int k = 0; k < CASE_SETTINGS; k++) unsetenv(case_settings[k]);
  int used = 0;
  for (; used < n; used++) {
    char *eq = strchr(word[used], '=');
    if (!eq) break;
    int known = 0;
    for (int k = 0; k < CASE_SETTINGS && !known; k++)
      known = strlen(case_settings[k]) == (size_t)(eq - word[used]) &&
              strncmp(word[used], case_settings[k], (size_t)(eq - word[used])) == 0;
    if (!known) {
      if (rank == 0)
        fprintf(stderr, "train-probe: %s: %.*s is not a setting of train-probe\n", where,
                (int)(eq - word[used]), word[used]);
      return -1;
    }
    *eq = '\0';
    setenv(word[used], eq + 1, 1);
    *eq = '=';
  }
  return used;
}

/* Runs one case of --cases with this rank's stdout and stderr in
 * OUT/log-RANK.txt, on a fresh duplicate of MPI_COMM_WORLD; returns 0 when
 * every rank succeeded, 1 otherwise, on every rank.  Collective. */
static int run_logged_case(char *const *word, int rank) {
  char log[1024];
  snprintf(log, sizeof log, "%s/log-%d.txt", word[0], rank);
  int rc = 1;
  fflush(stdout);
  fflush(stderr);
  const int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int keep_out = dup(1), keep_err = dup(2);
  /* The case is collective: every rank runs it or none does (a rank
   * without its log would leave the others waiting inside the case). */
  const int ready =
      fd >= 0 && keep_out >= 0 && keep_err >= 0 && dup2(fd, 1) >= 0 && dup2(fd, 2) >= 0;
  int all_ready = 0;
  MPI_Allreduce(&ready, &all_ready, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all_ready) {
    MPI_Comm comm;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &comm) == MPI_SUCCESS) {
      rc = run_case(comm, word);
      MPI_Comm_free(&comm);
    }
    fflush(stdout);
    fflush(stderr);
  }
  if (keep_out >= 0) dup2(keep_out, 1);
  if (keep_err >= 0) dup2(keep_err, 2);
  if (keep_out >= 0) close(keep_out);
  if (keep_err >= 0) close(keep_err);
  if (fd >= 0) close(fd);
  if (!ready)
    fprintf(stderr, "train-probe: rank %d: %s: cannot write the case's log there\n", rank, log);
  int worst = 1;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    char path[1024];
    snprintf(path, sizeof path, "%s/status.txt", word[0]);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%d\n", worst) < 0 || fclose(f) != 0) {
      fprintf(stderr, "train-probe: %s: cannot write it\n", path);
      worst = 1;
    }
  }
  return worst;
}

/* --cases FILE: every case of FILE in turn.  Every rank reads FILE, so a
 * bad line stops every rank at the same place.  Returns 0 when every case
 * succeeded.  Collective. */
static int run_cases(const char *file, int rank) {
  FILE *f = fopen(file, "r");
  if (!f) {
    if (rank == 0) fprintf(stderr, "train-probe: --cases %s: cannot read it\n", file);
    return 1;
  }
  char *line = NULL, where[1100];
  size_t cap = 0;
  int failed = 0, line_no = 0, cases = 0;
  while (getline(&line, &cap, f) >= 0) {
    line_no++;
    snprintf(where, sizeof where, "--cases %s:%d", file, line_no);
    char *word[64];
    const int n = split_words(line, word, 64);
    if (n == 0 || (n > 0 && word[0][0] == '#')) continue;
    const int settings = n < 0 ? -1 : apply_settings(word, n, where, rank);
    if (n < 0 && rank == 0)
      fprintf(stderr, "train-probe: %s: an unclosed quote or more than 64 words\n", where);
    if (settings >= 0 && n - settings != CASE_WORDS && rank == 0)
      fprintf(stderr, "train-probe: %s: expected %d words after the settings, got %d\n", where,
              CASE_WORDS, n - settings);
    if (settings < 0 || n - settings != CASE_WORDS) {
      failed = 1;
      break;
    }
    cases++;
    if (run_logged_case(word + settings, rank) != 0) {
      failed = 1;
      if (rank == 0)
        fprintf(stderr, "train-probe: %s: the case failed; each rank's output is in %s/log-R.txt\n",
                where, word[settings]);
    }
  }
  free(line);
  fclose(f);
  if (!failed && cases == 0) {
    if (rank == 0) fprintf(stderr, "train-probe: --cases %s: no case in it\n", file);
    failed = 1;
  }
  return failed;
}

int main(int argc, char **argv) {
  int rank = 0, rc = 1;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc == 3 && strcmp(argv[1], "--cases") == 0)
    rc = run_cases(argv[2], rank);
  else if (argc == 1 + CASE_WORDS)
    rc = run_case(MPI_COMM_WORLD, argv + 1);
  else if (rank == 0)
    fprintf(stderr, "train-probe: expected %d arguments or --cases FILE, got %d arguments\n",
            CASE_WORDS, argc - 1);
  MPI_Finalize();
  return rc;
}
