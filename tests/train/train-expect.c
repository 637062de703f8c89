#include "train-expect.h"

#include <criterion/criterion.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "train-run.h"

int te_probe_begin(int *argc, char ***argv, int has_mode, te_probe *p) {
  *p = (te_probe){.size = 1};
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &p->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p->size);
  const int first = 3 + !!has_mode; /* argv[0] --probe OUT [MODE] */
  if (*argc != first + FX_CASE_ARGS + 1) {
    if (p->rank == 0)
      fprintf(stderr, "--probe: expected %d arguments (OUT%s, %d of the case, seed), got %d\n",
              first - 1 + FX_CASE_ARGS, has_mode ? " MODE" : "", FX_CASE_ARGS, *argc - 2);
    return -1;
  }
  char **a = *argv;
  p->out = a[2];
  p->mode = has_mode ? a[3] : NULL;
  p->c = fx_case_parse(a + first);
  p->seed = strtoull(a[first + FX_CASE_ARGS], NULL, 10);
  const fx_spec spec = fx_case_spec(&p->c, p->size, p->seed);
  p->graph = fx_graph_new(&spec);
  return 0;
}

halo_net_options te_probe_options(const te_probe *p) {
  halo_net_options o;
  halo_net_options_default(&o);
  o.normalize_features = 1; /* as the reference model (fx_case_model) */
  const fx_model m = fx_case_model(&p->c, p->seed, 1);
  o.hidden = p->c.hidden;
  o.dropout = m.dropout;
  o.input_dropout = m.input_dropout;
  o.seed = p->seed;
  return o;
}

void te_probe_end(te_probe *p) {
  fx_graph_free(p->graph);
  p->graph = NULL;
  MPI_Finalize();
}

int te_main(int argc, char **argv, int (*probe_main)(int argc, char **argv)) {
  if (argc > 1 && strcmp(argv[1], "--probe") == 0) return probe_main(argc, argv);
  struct criterion_test_set *tests = criterion_initialize();
  int result = 0;
  if (criterion_handle_args(argc, argv, true)) result = !criterion_run_all_tests(tests);
  criterion_finalize(tests);
  return result;
}

char *te_run_probe(const char *self, const char *tag, int np, const char *mode, const fx_case *c,
                   uint64_t seed) {
  char *dir = tr_tmpdir(tag);
  cr_assert(dir, "no temporary folder for %s", tag);
  /* Criterion's sandbox hands its workers BXFI_MAP; a probe that inherited
   * it would take itself for one of them, so it starts without. */
  const int rc =
      tr_mpirun(np, 120, NULL, "env -u BXFI_MAP %s --probe %s %s " FX_CASE_FMT " %llu", self, dir,
                mode ? mode : "", FX_CASE_FMT_ARGS(c), (unsigned long long)seed);
  cr_assert_eq(rc, 0, "the %s probe at P=%d%s%s exited with %d", tag, np, mode ? ", " : "",
               mode ? mode : "", rc);
  return dir;
}

FILE *te_open(const char *fmt, ...) {
  char path[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(path, sizeof path, fmt, ap);
  va_end(ap);
  FILE *f = fopen(path, "r");
  cr_assert(f, "no %s", path);
  return f;
}

void te_read_columns(const char *dir, const char *name, int64_t n, int numbered, int ncols,
                     double **col) {
  FILE *f = te_open("%s/%s.txt", dir, name);
  for (int k = 0; k < ncols; k++) col[k] = calloc((size_t)n + 1, sizeof(double));
  for (int64_t i = 0; i < n; i++) {
    long long e = i;
    if (numbered) cr_assert_eq(fscanf(f, "%lld", &e), 1, "%s.txt: line %lld", name, (long long)i);
    cr_assert_eq(e, i, "%s.txt: line %lld numbered %lld", name, (long long)i, e);
    for (int k = 0; k < ncols; k++)
      cr_assert_eq(fscanf(f, "%lf", &col[k][i]), 1, "%s.txt: line %lld", name, (long long)i);
  }
  fclose(f);
}

int64_t te_read_logits(const char *path, const fx_case *c, int models, double *const *logits) {
  FILE *f = te_open("%s", path);
  long long gid;
  int64_t seen = 0;
  while (fscanf(f, "%lld", &gid) == 1) {
    cr_assert(gid >= 0 && gid < c->nodes, "%s: global id %lld of %lld nodes", path, gid,
              (long long)c->nodes);
    for (int k = 0; k < models; k++)
      for (int32_t j = 0; j < c->classes; j++)
        cr_assert_eq(fscanf(f, "%lf", &logits[k][gid * c->classes + j]), 1, "%s: gid %lld", path,
                     gid);
    seen++;
  }
  fclose(f);
  return seen;
}

void te_expect_first_loss(const char *what, const fx_case *c, uint64_t seed, const fx_graph *g,
                          double got) {
  const fx_model m = fx_case_model(c, seed, 1);
  double *p0 = calloc((size_t)fx_model_params(&m), sizeof *p0);
  fx_model_init(&m, p0);
  const double want = fx_model_loss(&m, g, p0, NULL);
  cr_expect(fx_rel(got, want) <= 1e-5, "%s: first loss %.9g, reference %.9g", what, got, want);
  free(p0);
}

void te_expect_logits(const char *what, const fx_case *c, uint64_t seed, const fx_graph *g,
                      const double *params, const double *got) {
  const fx_model m = fx_case_model(c, seed, 0);
  const int64_t nz = g->n * c->classes;
  double *z = calloc((size_t)nz, sizeof *z);
  fx_model_loss(&m, g, params, z);
  const double zmax = fx_max_abs(z, nz);
  cr_assert_gt(zmax, 0.0, "%s: the reference's logits are all 0", what);
  int bad = 0;
  for (int64_t i = 0; i < nz; i++)
    if (fabs(got[i] - z[i]) > 1e-5 * zmax + 1e-5 * fabs(z[i]) && bad++ < 5)
      cr_expect_fail("%s: logit %lld is %.9g, reference %.9g", what, (long long)i, got[i], z[i]);
  cr_expect_eq(bad, 0, "%s: %d logits off the reference", what, bad);
  free(z);
}
