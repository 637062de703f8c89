/* The distributed partitioner, end to end: `mpirun -np K halo-partition
 * --method ptscotch` for K = 1, 2 and 3, its folders read back and checked
 * against what this test computes itself from the whole graph (the plan
 * invariants of pt_check_shards), against the sequential writer (the same
 * cleaned graph; given the same assignment, through the HALO_TEST_PARTS_FILE
 * hook, the same datasets, which h5diff compares), against METIS (the
 * quality) and against training (the same loss curve, bit for bit, with
 * --deterministic).  Bad input stops every rank with one line. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-load.h"
#include "halo-shard.h"
#include "partition-util.h"

#define EXE HALO_PARTITION_EXE
#define TRAIN HALO_TRAIN_EXE
#define MPIRUN "mpirun --allow-run-as-root --oversubscribe --bind-to none"

/* A small SBM with node data, and an R-MAT graph with self-loops,
 * duplicates and one-way edges, given node data by flags. */
static void sbm_spec(char *buf, size_t size, uint64_t seed) {
  snprintf(buf, size, "sbm:nodes=900,classes=4,avg-degree=8,feat=6,seed=%llu",
           (unsigned long long)(seed % 1000000));
}

#define RMAT_FLAGS "--synthetic-features 5 --synthetic-classes 3 --synthetic-split 0.5,0.2,0.3"

static void rmat_spec(char *buf, size_t size, uint64_t seed) {
  snprintf(buf, size, "rmat:scale=10,edge-factor=6,seed=%llu",
           (unsigned long long)(seed % 1000000));
}

/* halo-partition --method ptscotch on K ranks into dir; `env` is passed to
 * every rank (-x NAME=VALUE ..., or "").  HALO_TEST_PTSCOTCH_DIRECT=0: these
 * small graphs go through halo's coarsening, as graphs over 65,536 vertices
 * do (partition-ptscotch.c). */
static int run_dist(char **out, int K, const char *env, const char *input, int parts,
                    const char *dir, const char *extra) {
  return pt_run(out,
                MPIRUN
                " -np %d -x HALO_TEST_PTSCOTCH_DIRECT=0 %s %s --method ptscotch --input '%s' "
                "--parts %d --out %s %s",
                K, env, EXE, input, parts, dir, extra);
}

/* The sequential halo-partition. */
static int run_seq(char **out, const char *method, const char *input, int parts, const char *dir,
                   const char *extra) {
  return pt_run(out, "%s --method %s --input '%s' --parts %d --out %s %s", EXE, method, input,
                parts, dir, extra);
}

/* The manifest of dir (with its part vector). */
static halo_manifest *read_manifest(const char *dir) {
  char path[4096];
  halo_manifest *m = NULL;
  snprintf(path, sizeof path, "%s/manifest.h5", dir);
  cr_assert_eq(halo_manifest_read(path, &m), HALO_OK, "%s", path);
  return m;
}

/* Every shard of dir checked against the clean graph g and the manifest's
 * part vector, computed here from g alone. */
static void check_folder(const halo_graph *g, const char *dir, halo_order order) {
  char path[4096];
  halo_manifest *m = read_manifest(dir);
  cr_assert_eq(m->nodes, g->n, "%s", dir);
  cr_assert_eq(m->edges, g->m, "%s", dir);
  cr_assert_str_eq(m->method, "ptscotch");
  halo_shard **shards = calloc((size_t)m->parts, sizeof *shards);
  for (int32_t p = 0; p < m->parts; p++) {
    cr_assert_eq(halo_shard_path(path, sizeof path, dir, p, m->parts), HALO_OK);
    cr_assert_eq(halo_shard_read(path, m, &shards[p]), HALO_OK, "%s", path);
  }
  pt_check_shards(g, m->part, m->parts, order, shards);
  for (int32_t p = 0; p < m->parts; p++) halo_shard_destroy(&shards[p]);
  free(shards);
  halo_manifest_destroy(&m);
}

/* The spec loaded and cleaned here, in one process, with node data as the
 * flags of RMAT_FLAGS give it when `synth`. */
static halo_graph *clean_graph(const char *spec, int synth, uint64_t seed) {
  halo_graph *g = NULL;
  cr_assert_eq(halo_load(spec, HALO_FORMAT_AUTO, &g), HALO_OK, "%s", spec);
  if (synth) {
    const double frac[3] = {0.5, 0.2, 0.3};
    cr_assert_eq(halo_graph_synthesize_node_data(g, 5, 3, seed), HALO_OK);
    cr_assert_eq(halo_graph_synthesize_split(g, frac, seed), HALO_OK);
  }
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  return g;
}

Test(dist, shards_pass_the_plan_invariants_for_k_1_2_3, .timeout = 300) {
  const uint64_t seed = pt_seed("dist.invariants", 17);
  char spec[128], od[600], *out = NULL;
  char *dir = pt_temp_dir("dist-valid");
  sbm_spec(spec, sizeof spec, seed);
  halo_graph *g = clean_graph(spec, 0, 0);
  /* 5 parts: K = 2 and 3 write them in 3 and 2 rounds. */
  for (int K = 1; K <= 3; K++) {
    snprintf(od, sizeof od, "%s/k%d", dir, K);
    cr_assert_eq(run_dist(&out, K, "", spec, 5, od, ""), 0, "K=%d: %s", K, out);
    free(out);
    check_folder(g, od, HALO_ORDER_COMMUNITY);
  }
  snprintf(od, sizeof od, "%s/id", dir);
  cr_assert_eq(run_dist(&out, 2, "", spec, 3, od, "--order id --seed 4"), 0, "%s", out);
  free(out);
  check_folder(g, od, HALO_ORDER_ID);
  /* PT-Scotch's own multilevel alone, without halo's coarsening. */
  snprintf(od, sizeof od, "%s/pt", dir);
  cr_assert_eq(run_dist(&out, 2, "", spec, 5, od, "--coarsen-levels 0"), 0, "%s", out);
  cr_expect(strstr(out, "coarsening levels 0"), "%s", out);
  free(out);
  check_folder(g, od, HALO_ORDER_COMMUNITY);
  /* R-MAT: isolated nodes, one-way edges and self-loops, node data by flag. */
  halo_graph_destroy(&g);
  rmat_spec(spec, sizeof spec, seed);
  g = clean_graph(spec, 1, 1);
  snprintf(od, sizeof od, "%s/rmat", dir);
  cr_assert_eq(run_dist(&out, 3, "", spec, 4, od, RMAT_FLAGS), 0, "%s", out);
  free(out);
  check_folder(g, od, HALO_ORDER_COMMUNITY);
  halo_graph_destroy(&g);
  pt_remove_tree(dir);
  free(dir);
}

/* The run id of a --json file. */
static void run_id_of(const char *path, char *buf, size_t size);

Test(dist, the_same_input_flags_and_k_give_the_same_parts, .timeout = 300) {
  const uint64_t seed = pt_seed("dist.reproducible", 41);
  char spec[128], od[600], flags[700], path[700], id[2][32], *out = NULL;
  char *dir = pt_temp_dir("dist-repro");
  rmat_spec(spec, sizeof spec, seed);
  /* Scotch's thread count from the environment must not change the parts. */
  const char *env[2] = {"", "-x SCOTCH_PTHREAD_NUMBER=4"};
  for (int i = 0; i < 2; i++) {
    snprintf(od, sizeof od, "%s/o%d", dir, i);
    snprintf(flags, sizeof flags, "--json %s/o%d.json", dir, i);
    cr_assert_eq(run_dist(&out, 2, env[i], spec, 6, od, flags), 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/o%d.json", dir, i);
    run_id_of(path, id[i], sizeof id[i]);
  }
  cr_expect_str_eq(id[1], id[0], "two runs of the same input, flags and K differ");
  pt_remove_tree(dir);
  free(dir);
}

/* The member `key` of the JSON object `member` ("cleanup") or of the top. */
static double json_at(const char *json, const char *member, const char *key) {
  const char *at = member ? strstr(json, member) : json;
  cr_assert(at, "no %s in %s", member, json);
  return pt_json_number(at, key);
}

static char *json_string(const char *json, const char *key, char *buf, size_t size) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\": \"", key);
  const char *at = strstr(json, pattern);
  cr_assert(at, "no %s in %s", key, json);
  at += strlen(pattern);
  snprintf(buf, size, "%.*s", (int)strcspn(at, "\""), at);
  return buf;
}

Test(dist, the_cleaned_graph_is_the_same_for_any_k, .timeout = 300) {
  const uint64_t seed = pt_seed("dist.independent", 23);
  char spec[128], od[600], path[700], *out = NULL, want_digest[32], digest[32];
  char *dir = pt_temp_dir("dist-k");
  static const char *const counts[] = {"input_edges", "self_loops", "duplicates", "reverse_added",
                                       "isolated"};
  rmat_spec(spec, sizeof spec, seed);
  snprintf(od, sizeof od, "%s/seq", dir);
  snprintf(path, sizeof path, "--json %s/seq.json " RMAT_FLAGS, dir);
  cr_assert_eq(run_seq(&out, "metis", spec, 4, od, path), 0, "%s", out);
  free(out);
  snprintf(path, sizeof path, "%s/seq.json", dir);
  char *want = pt_read_file(path);
  json_string(want, "source_digest", want_digest, sizeof want_digest);
  cr_assert_gt(json_at(want, "\"cleanup\"", "reverse_added"), 0, "the graph has one-way edges");
  cr_assert_gt(json_at(want, "\"cleanup\"", "self_loops"), 0, "the graph has self-loops");
  /* R-MAT's degrees fall with the id: blocks of n/K ids would hold up to
   * 2x the mean of the edges at K = 3 (computed here from the clean graph);
   * the ranks' blocks are cut by load instead. */
  halo_graph *g = clean_graph(spec, 0, seed);
  double uniform[4] = {0};
  for (int K = 2; K <= 3; K++)
    for (int r = 0; r < K; r++) {
      const int64_t lo = g->n * r / K, hi = g->n * (r + 1) / K;
      const double share = (double)(g->indptr[hi] - g->indptr[lo]) * K / (double)g->indptr[g->n];
      if (share > uniform[K]) uniform[K] = share;
    }
  halo_graph_destroy(&g);
  cr_assert_gt(uniform[3], 1.4, "the graph is skewed (blocks of n/3 ids: %.2fx)", uniform[3]);
  for (int K = 1; K <= 3; K++) {
    snprintf(od, sizeof od, "%s/k%d", dir, K);
    snprintf(path, sizeof path, "--json %s/k%d.json " RMAT_FLAGS, dir, K);
    cr_assert_eq(run_dist(&out, K, "", spec, 4, od, path), 0, "K=%d: %s", K, out);
    free(out);
    snprintf(path, sizeof path, "%s/k%d.json", dir, K);
    char *got = pt_read_file(path);
    cr_expect_str_eq(json_string(got, "source_digest", digest, sizeof digest), want_digest, "K=%d",
                     K);
    cr_expect_eq(json_at(got, NULL, "nodes"), json_at(want, NULL, "nodes"), "K=%d", K);
    cr_expect_eq(json_at(got, NULL, "edges"), json_at(want, NULL, "edges"), "K=%d", K);
    cr_expect_eq(json_at(got, NULL, "ranks"), K);
    const double most = json_at(got, NULL, "block_edges_max") * K / json_at(got, NULL, "edges");
    fprintf(stderr, "K=%d: the largest block holds %.2fx the mean of the edges (n/K ids: %.2fx)\n",
            K, most, K > 1 ? uniform[K] : 1.0);
    cr_expect_leq(most, 1.25, "K=%d: the largest block of rows holds %.2fx the mean", K, most);
    for (int i = 0; i < 5; i++)
      cr_expect_eq(json_at(got, "\"cleanup\"", counts[i]), json_at(want, "\"cleanup\"", counts[i]),
                   "K=%d: cleanup.%s", K, counts[i]);
    free(got);
  }
  free(want);
  pt_remove_tree(dir);
  free(dir);
}

static void run_id_of(const char *path, char *buf, size_t size) {
  char *json = pt_read_file(path);
  cr_assert(json, "%s", path);
  json_string(json, "run_id", buf, size);
  free(json);
}

/* dir's part vector as a file of one part per line (HALO_TEST_PARTS_FILE). */
static void export_parts(const char *dir, const char *path) {
  halo_manifest *m = read_manifest(dir);
  FILE *f = fopen(path, "w");
  cr_assert(f, "%s", path);
  for (int64_t v = 0; v < m->nodes; v++) fprintf(f, "%d\n", m->part[v]);
  cr_assert_eq(fclose(f), 0);
  halo_manifest_destroy(&m);
}

/* The same groups, datasets and attributes, of the same types and shapes
 * (h5dump's header; a string's size aside: the method's name differs):
 * h5diff compares the objects that both files hold, not which. */
static void same_headers(const char *a, const char *b) {
  char *ha = NULL, *hb = NULL;
  cr_assert_eq(pt_run(&ha, "h5dump -H %s | sed 1d | grep -v STRSIZE", a), 0, "%s", ha);
  cr_assert_eq(pt_run(&hb, "h5dump -H %s | sed 1d | grep -v STRSIZE", b), 0, "%s", hb);
  cr_expect_str_eq(ha, hb, "%s and %s hold different objects", a, b);
  free(ha);
  free(hb);
}

/* h5diff of two shards: they may differ in their run id alone (it names
 * the method, which differs), every dataset the same. */
static void same_datasets(const char *a, const char *b) {
  char *out = NULL;
  same_headers(a, b);
  int rc = pt_run(&out, "h5diff -c %s %s", a, b);
  if (rc != 0) {
    int differences = -1;
    const char *found = strstr(out, " differences found");
    const char *at = found;
    while (at && at > out && at[-1] >= '0' && at[-1] <= '9') at--;
    if (found) differences = atoi(at);
    cr_expect(rc == 1 && differences == 1 && strstr(out, "attribute: <run_id of </>>"),
              "%s and %s differ beyond their run id:\n%s", a, b, out);
  }
  free(out);
}

/* h5diff of two manifests: they may differ in their method and run id
 * attributes and in /parts/digest (the digest of a shard covers its run
 * id), nowhere else: the part vector, the counts, the original-id digests
 * and the source digest are the same. */
static void same_manifest(const char *a, const char *b) {
  char *out = NULL;
  same_headers(a, b);
  if (pt_run(&out, "h5diff -c %s %s", a, b) == 0) {
    free(out);
    return;
  }
  static const char *const allowed[] = {"attribute: <method of </>>", "attribute: <run_id of </>>",
                                        "dataset: </parts/digest>"};
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
    if (strncmp(line, "attribute:", 10) != 0 && strncmp(line, "dataset:", 8) != 0) continue;
    int ok = 0;
    for (int k = 0; k < 3; k++) ok |= strncmp(line, allowed[k], strlen(allowed[k])) == 0;
    cr_expect(ok, "%s and %s differ beyond method, run id and part digests: %s", a, b, line);
  }
  free(out);
}

/* The sequential writer's shards and manifest against the distributed
 * writer's on K = k_first .. 3 ranks, given the sequential assignment. */
static void compare_with_sequential_env(const char *tag, const char *spec, const char *method,
                                        int parts, const char *flags, const char *extra_env,
                                        int k_first) {
  char od[600], seq[600], parts_file[700], env[1000], a[900], b[900], *out = NULL;
  char *dir = pt_temp_dir(tag);
  snprintf(seq, sizeof seq, "%s/seq", dir);
  cr_assert_eq(run_seq(&out, method, spec, parts, seq, flags), 0, "%s", out);
  free(out);
  snprintf(parts_file, sizeof parts_file, "%s/parts.txt", dir);
  export_parts(seq, parts_file);
  snprintf(env, sizeof env, "-x HALO_TEST_PARTS_FILE=%s %s", parts_file, extra_env);
  for (int K = k_first; K <= 3; K++) {
    snprintf(od, sizeof od, "%s/k%d", dir, K);
    cr_assert_eq(run_dist(&out, K, env, spec, parts, od, flags), 0, "K=%d: %s", K, out);
    cr_expect(strstr(out, "parts imported"), "%s", out);
    free(out);
    for (int p = 0; p < parts; p++) {
      cr_assert_eq(halo_shard_path(a, sizeof a, seq, p, parts), HALO_OK);
      cr_assert_eq(halo_shard_path(b, sizeof b, od, p, parts), HALO_OK);
      same_datasets(a, b);
    }
    snprintf(a, sizeof a, "%s/manifest.h5", seq);
    snprintf(b, sizeof b, "%s/manifest.h5", od);
    same_manifest(a, b);
  }
  pt_remove_tree(dir);
  free(dir);
}

/* K = 1, 2, 3; under ASan K = 3 alone (uneven blocks, every exchange),
 * which halves the sanitized run's time of this file. */
#ifdef __SANITIZE_ADDRESS__
enum { K_FIRST = 3 };
#else
enum { K_FIRST = 1 };
#endif

static void compare_with_sequential(const char *tag, const char *spec, const char *method,
                                    int parts, const char *flags) {
  compare_with_sequential_env(tag, spec, method, parts, flags, "", K_FIRST);
}

/* The same on K = 3 alone: a variant (a format's gzip, another split) of
 * an input compared for every K. */
static void compare_at_k3(const char *tag, const char *spec, const char *method, int parts,
                          const char *flags) {
  compare_with_sequential_env(tag, spec, method, parts, flags, "", 3);
}

Test(dist, the_same_assignment_gives_the_sequential_writers_datasets, .timeout = 300) {
  const uint64_t seed = pt_seed("dist.same-datasets", 29);
  char spec[128];
  sbm_spec(spec, sizeof spec, seed);
  compare_with_sequential("dist-same-sbm", spec, "metis", 5, "");
  rmat_spec(spec, sizeof spec, seed);
  compare_with_sequential("dist-same-rmat", spec, "random", 4, RMAT_FLAGS " --order id");
  /* A split without labels: every node drawn, as halo_graph_synthesize_split does. */
  compare_with_sequential("dist-same-split", spec, "metis", 3, "--synthetic-split 0.5,0.2,0.3");
  /* The clean-up in rounds of 500 pairs a rank: many rounds, the same shards. */
  compare_with_sequential_env("dist-same-rounds", spec, "metis", 3, RMAT_FLAGS,
                              "-x HALO_TEST_CLEAN_ROUND=500", K_FIRST);
}

/* A SNAP-like edge list of sparse ids, with comments, blank lines,
 * self-loops, repeats and one-way edges, drawn from the seed. */
static void write_snap(const char *path, uint64_t seed) {
  FILE *f = fopen(path, "w");
  cr_assert(f, "%s", path);
  uint64_t state = seed * 2654435761u + 1;
  const int n = 1500;
  fprintf(f, "# FromNodeId\tToNodeId\n");
  for (int i = 0; i < 7000; i++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int u = (int)((state >> 33) % n), v = i % 50 == 0 ? u : (int)((state >> 13) % n);
    fprintf(f, "%d\t%d\n", 7 * u + 1000, 7 * v + 1000); /* ids 1000, 1007, ...: renumbered */
    if (i % 40 == 0) fprintf(f, "%d %d\n", 7 * u + 1000, 7 * v + 1000);
    if (i % 900 == 0) fprintf(f, "\n# a comment\n");
  }
  cr_assert_eq(fclose(f), 0);
}

static int lines_with(const char *text, const char *needle);
static void refused(const char *dir, int K, const char *env, const char *input, int parts,
                    const char *extra, const char *want);
static void refused_as_sequential(const char *dir, int K, const char *input, int parts,
                                  const char *extra);

/* --write-metis under ptscotch: the sequential run's file, byte for byte,
 * for K = 1, 2, 3, from a spec and from a renumbered SNAP list; gpmetis
 * reads it.  An existing file is refused without --force and left as it
 * was, with nothing else left behind. */
Test(dist, write_metis_gives_the_sequential_file_for_any_k, .timeout = 300) {
  const uint64_t seed = pt_seed("dist.write-metis", 43);
  char *dir = pt_temp_dir("dist-metis"), snap[600], spec[128], seq[700], got[700], *out = NULL;
  snprintf(snap, sizeof snap, "%s/edges.txt", dir);
  write_snap(snap, seed);
  rmat_spec(spec, sizeof spec, seed);
  const char *inputs[2] = {spec, snap};
  for (int i = 0; i < 2; i++) {
    snprintf(seq, sizeof seq, "%s/seq%d.metis", dir, i);
    cr_assert_eq(pt_run(&out, "%s --input '%s' --write-metis %s", EXE, inputs[i], seq), 0, "%s",
                 out);
    free(out);
    for (int K = 1; K <= 3; K++) {
      snprintf(got, sizeof got, "%s/k%d-%d.metis", dir, K, i);
      cr_assert_eq(pt_run(&out, MPIRUN " -np %d %s --method ptscotch --input '%s' --write-metis %s",
                          K, EXE, inputs[i], got),
                   0, "%s", out);
      cr_expect(strstr(out, "undirected edges"), "%s", out);
      free(out);
      cr_expect_eq(pt_run(&out, "cmp %s %s", seq, got), 0, "%s: K=%d: %s", inputs[i], K, out);
      free(out);
    }
  }
#ifndef __SANITIZE_ADDRESS__
  /* Past the writer's 1 MB pieces on every rank: 5 MB of lines at K = 2 (the
   * build with sanitizers writes the small files only). */
  snprintf(seq, sizeof seq, "%s/big.metis", dir);
  snprintf(got, sizeof got, "%s/big-k2.metis", dir);
  cr_assert_eq(
      pt_run(&out, "%s --input rmat:scale=16,edge-factor=8,seed=3 --write-metis %s", EXE, seq), 0,
      "%s", out);
  free(out);
  cr_assert_eq(
      pt_run(&out,
             MPIRUN " -np 2 %s --method ptscotch --input rmat:scale=16,edge-factor=8,seed=3 "
                    "--write-metis %s",
             EXE, got),
      0, "%s", out);
  free(out);
  cr_expect_eq(pt_run(&out, "test $(stat -c %%s %s) -gt 4000000 && cmp %s %s", seq, seq, got), 0,
               "the 5 MB file at K = 2: %s", out);
  free(out);
#endif
  cr_assert_eq(pt_run(&out, "cd %s && gpmetis k3-1.metis 4", dir), 0, "%s", out);
  cr_expect(strstr(out, "Edgecut"), "%s", out);
  free(out);
  /* An existing file without --force. */
  const int rc = pt_run(&out, MPIRUN " -np 2 %s --method ptscotch --input '%s' --write-metis %s",
                        EXE, spec, seq);
  cr_expect_neq(rc, 0, "%s", out);
  cr_expect_eq(lines_with(out, "halo-partition: error"), 1, "one error line: %s", out);
  cr_expect(strstr(out, "--force"), "%s", out);
  free(out);
  cr_expect_eq(pt_run(&out, "cmp %s/seq0.metis %s/k1-0.metis", dir, dir), 0,
               "the refused run changed the file: %s", out);
  free(out);
  pt_run(&out, "ls %s | grep tmp", dir);
  cr_expect_str_eq(out, "", "left behind: %s", out);
  free(out);
  pt_remove_tree(dir);
  free(dir);
}

/* A feature CSV of width 5 and a labels file (4 classes, "nan" for every
 * 17th node) of n rows each. */
static void write_node_files(const char *feat, const char *lab, int64_t n, uint64_t seed) {
  FILE *f = fopen(feat, "w"), *l = fopen(lab, "w");
  cr_assert(f && l, "%s, %s", feat, lab);
  uint64_t state = seed + 99;
  for (int64_t v = 0; v < n; v++) {
    for (int c = 0; c < 5; c++) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      fprintf(f, "%s%.4f", c ? "," : "", (double)(state >> 40) / (double)(1 << 24) - 0.5);
    }
    fprintf(f, "\n");
    if (v % 17 == 0)
      fprintf(l, "nan\n");
    else
      fprintf(l, "%d\n", (int)((state >> 20) % 4));
  }
  cr_assert_eq(fclose(f), 0);
  cr_assert_eq(fclose(l), 0);
}

Test(dist, edge_list_slices_give_the_sequential_readers_graph_and_shards, .timeout = 300) {
  const uint64_t seed = pt_seed("dist.edge-list", 37);
  char *dir = pt_temp_dir("dist-snap"), path[600], od[700], flags[800], *out = NULL;
  char want_digest[32], digest[32];
  snprintf(path, sizeof path, "%s.txt", dir);
  write_snap(path, seed);
  compare_with_sequential("dist-same-snap", path, "metis", 3,
                          "--synthetic-features 4 --synthetic-classes 3");
  /* With node data from files: one feature row and one label ("nan" for
   * some) per node, routed to the writers. */
  halo_graph *g0 = NULL;
  cr_assert_eq(halo_load(path, HALO_FORMAT_AUTO, &g0), HALO_OK);
  char feat[700], lab[700], data_flags[1600];
  snprintf(feat, sizeof feat, "%s.feat.csv", dir);
  snprintf(lab, sizeof lab, "%s.labels.txt", dir);
  write_node_files(feat, lab, g0->n, seed);
  halo_graph_destroy(&g0);
  snprintf(data_flags, sizeof data_flags, "--features %s --labels %s --synthetic-split 0.5,0.2,0.3",
           feat, lab);
  compare_with_sequential("dist-same-files", path, "metis", 4, data_flags);
  /* Gzipped node data: rank 0 streams the rows to their blocks' ranks. */
  cr_assert_eq(pt_run(&out, "gzip %s %s", feat, lab), 0, "%s", out);
  free(out);
  snprintf(data_flags, sizeof data_flags, "--features %s.gz --labels %s.gz", feat, lab);
  compare_at_k3("dist-same-files-gz", path, "metis", 3, data_flags);
  snprintf(feat + strlen(feat), sizeof feat - strlen(feat), ".gz");
  snprintf(lab + strlen(lab), sizeof lab - strlen(lab), ".gz");
  remove(feat);
  remove(lab);
  /* Gzipped, and long enough for rank 0 to deal out several blocks. */
  char gz[700];
  snprintf(gz, sizeof gz, "%s.gz", path);
  cr_assert_eq(pt_run(&out,
                      "(cat %s; seq 0 150000 | awk '{ print 7 * ($1 %% 1500) + 1000, 7 * "
                      "(($1 * 13) %% 1500) + 1000 }') | gzip -c > %s",
                      path, gz),
               0, "%s", out);
  free(out);
  compare_with_sequential("dist-same-gzip", gz, "metis", 3, "");
  remove(gz);
  /* --split DIR naming the file's own (sparse) ids: each block answers for
   * the ids from its first to the next block's. */
  char split_dir[700], split_flags[900];
  snprintf(split_dir, sizeof split_dir, "%s/split", dir);
  cr_assert_eq(pt_run(&out,
                      "mkdir -p %s && grep -v '^#' %s | awk 'NF == 2 { print $1; print $2 }' | "
                      "sort -n -u | awk -v d=%s '{ f = NR %% 5 == 0 ? \"valid\" : NR %% 5 == 1 ? "
                      "\"test\" : \"train\"; if (NR %% 7 != 0) print > (d \"/\" f \".csv\") }'",
                      split_dir, path, split_dir),
               0, "%s", out);
  free(out);
  snprintf(split_flags, sizeof split_flags,
           "--split %s --synthetic-features 4 --synthetic-classes 3", split_dir);
  compare_at_k3("dist-same-split-dir", path, "metis", 3, split_flags);
  /* Without the hook: the same cleaned graph, and shards that pass the plan
   * invariants against the graph halo_load reads. */
  halo_graph *g = NULL;
  cr_assert_eq(halo_load(path, HALO_FORMAT_AUTO, &g), HALO_OK);
  cr_assert(g->original_id, "the ids are renumbered");
  cr_assert_eq(halo_graph_synthesize_node_data(g, 4, 3, 1), HALO_OK);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  snprintf(od, sizeof od, "%s/seq", dir);
  snprintf(flags, sizeof flags, "--synthetic-features 4 --synthetic-classes 3 --json %s/seq.json",
           dir);
  cr_assert_eq(run_seq(&out, "metis", path, 3, od, flags), 0, "%s", out);
  free(out);
  snprintf(od, sizeof od, "%s/seq.json", dir);
  char *want = pt_read_file(od);
  json_string(want, "source_digest", want_digest, sizeof want_digest);
  snprintf(od, sizeof od, "%s/k2", dir);
  snprintf(flags, sizeof flags, "--synthetic-features 4 --synthetic-classes 3 --json %s/k2.json",
           dir);
  cr_assert_eq(run_dist(&out, 2, "", path, 3, od, flags), 0, "%s", out);
  free(out);
  check_folder(g, od, HALO_ORDER_COMMUNITY);
  snprintf(od, sizeof od, "%s/k2.json", dir);
  char *got = pt_read_file(od);
  cr_expect_str_eq(json_string(got, "source_digest", digest, sizeof digest), want_digest);
  cr_expect_eq(json_at(got, "\"cleanup\"", "duplicates"),
               json_at(want, "\"cleanup\"", "duplicates"));
  cr_expect_eq(json_at(got, "\"cleanup\"", "self_loops"),
               json_at(want, "\"cleanup\"", "self_loops"));
  cr_expect_eq(json_at(got, "\"cleanup\"", "reverse_added"),
               json_at(want, "\"cleanup\"", "reverse_added"));
  free(got);
  free(want);
  halo_graph_destroy(&g);
  remove(path);
  pt_remove_tree(dir);
  free(dir);
}

/* Text as people write it (loaders' load-text.c): a CSV edge list with a
 * header row over the nodes 0..N-1 with --nodes (the last ones isolated),
 * features separated by spaces under a header, labels under a header with
 * --classes: every rank's slice skips the header line only where it holds
 * it, and the shards are the sequential run's; the class rule and
 * --nodes' bound refuse on the sequential reader's line. */
Test(dist, headed_text_inputs_give_the_sequential_shards, .timeout = 300) {
  const uint64_t seed = pt_seed("dist.text", 36);
  char *dir = pt_temp_dir("dist-text"), edges[600], feat[600], lab[600], flags[2400];
  const int n = 900, isolated = 25, classes = 6;
  snprintf(edges, sizeof edges, "%s.edges.csv", dir);
  snprintf(feat, sizeof feat, "%s.x.txt", dir);
  snprintf(lab, sizeof lab, "%s.y.csv", dir);
  FILE *e = fopen(edges, "w"), *f = fopen(feat, "w"), *l = fopen(lab, "w");
  cr_assert(e && f && l);
  uint64_t state = seed * 2654435761u + 7;
  fprintf(e, "src,dst\n");
  for (int i = 0; i < 5000; i++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    fprintf(e, "%d,%d\n", (int)((state >> 33) % (n - isolated)),
            (int)((state >> 13) % (n - isolated)));
  }
  fprintf(f, "a b c\n");
  fprintf(l, "label\n");
  for (int v = 0; v < n; v++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    fprintf(f, "%.3f %.3f %d\n", (double)(state >> 44) / 1e6, -(double)(state >> 50) / 1e3, v % 5);
    fprintf(l, "%d\n", (int)((state >> 20) % (classes - 1))); /* class 5 unused */
  }
  cr_assert(!fclose(e) && !fclose(f) && !fclose(l));
  snprintf(flags, sizeof flags,
           "--nodes %d --features %s --labels %s --classes %d --synthetic-split 0.5,0.2,0.3", n,
           feat, lab, classes);
  compare_with_sequential("dist-same-text", edges, "metis", 3, flags);
  /* Gzipped node data, which rank 0 streams, skips the header too. */
  char *out = NULL;
  cr_assert_eq(pt_run(&out, "gzip -k %s %s", feat, lab), 0, "%s", out);
  free(out);
  snprintf(flags, sizeof flags,
           "--nodes %d --features %s.gz --labels %s.gz --classes %d --synthetic-split 0.5,0.2,0.3",
           n, feat, lab, classes);
  compare_at_k3("dist-same-text-gz", edges, "metis", 3, flags);
  /* Refusals on the sequential reader's line: an id past --nodes, a
   * label past --classes, a stray label without it, a header with
   * --header no. */
  char *bad = pt_temp_dir("dist-text-bad");
  snprintf(flags, sizeof flags, "--nodes %d --synthetic-features 2 --synthetic-classes 2",
           n - isolated - 1);
  refused_as_sequential(bad, 3, edges, 2, flags);
  snprintf(flags, sizeof flags, "--nodes %d --features %s --labels %s --classes 4", n, feat, lab);
  refused_as_sequential(bad, 3, edges, 2, flags);
  cr_assert_eq(pt_run(&out, "sed -i '700s/.*/99/' %s", lab), 0, "%s", out);
  free(out);
  snprintf(flags, sizeof flags, "--nodes %d --features %s --labels %s", n, feat, lab);
  refused_as_sequential(bad, 3, edges, 2, flags);
  refused(bad, 3, "", edges, 2, flags, ":700: label 99 makes 100 classes");
  snprintf(flags, sizeof flags, "--header no --nodes %d --features %s", n, feat);
  refused(bad, 2, "", edges, 2, flags, ":1: has a header row ('src,dst')");
  pt_remove_tree(bad);
  free(bad);
  char gz[700];
  snprintf(gz, sizeof gz, "%s.gz", feat);
  remove(gz);
  snprintf(gz, sizeof gz, "%s.gz", lab);
  remove(gz);
  remove(edges);
  remove(feat);
  remove(lab);
  pt_remove_tree(dir);
  free(dir);
}

/* Ids up to INT64_MAX: the renumbering's ranges of ids are cut without
 * overflow (max_id + 1 once wrapped and corrupted the heap), and the
 * numbering is the sequential reader's. */
Test(dist, ids_up_to_int64_max_give_the_sequential_shards, .timeout = 300) {
  char *dir = pt_temp_dir("dist-int64-max"), path[700];
  cr_assert_lt(snprintf(path, sizeof path, "%s.txt", dir), (int)sizeof path);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  const int64_t top = INT64_MAX;
  for (int64_t i = 0; i < 40; i++) /* a ring of sparse ids, and the top id on a chord */
    fprintf(f, "%" PRId64 " %" PRId64 "\n", i * 1000003, ((i + 1) % 40) * 1000003);
  for (int64_t i = 0; i < 40; i += 7) fprintf(f, "%" PRId64 " %" PRId64 "\n", top, i * 1000003);
  fprintf(f, "%" PRId64 " %" PRId64 "\n", top - 1, top);
  fclose(f);
  compare_with_sequential("dist-same-int64-max", path, "metis", 2,
                          "--synthetic-features 4 --synthetic-classes 3");
  remove(path);
  pt_remove_tree(dir);
  free(dir);
}

/* An OGB folder of plain CSVs, drawn from the seed: raw/ with edge.csv
 * (repeats, self-loops and one-way edges), node-feat.csv, node-label.csv
 * (one label a node, or `tasks` > 0 columns of 0, 1 or nan; every 13th
 * node unlabelled), and two split schemes, split/time/ and split/random/,
 * of labelled nodes only. */
/* snprintf into a fixed buffer, failing the test when the path does not fit
 * (which also tells GCC's -Wformat-truncation the result is checked). */
#define PATH_PRINTF(buf, ...) \
  cr_assert_lt(snprintf(buf, sizeof buf, __VA_ARGS__), (int)sizeof buf, "path too long")

static void write_ogb(const char *dir, uint64_t seed, int tasks, int edges) {
  char path[700], *out = NULL;
  const int n = 2000;
  cr_assert_eq(pt_run(&out, "mkdir -p %s/raw %s/split/time %s/split/random", dir, dir, dir), 0,
               "%s", out);
  free(out);
  uint64_t state = seed * 2654435761u + 7;
#define OGB_NEXT() (state = state * 6364136223846793005ull + 1442695040888963407ull, state >> 33)
  PATH_PRINTF(path, "%s/raw/num-node-list.csv", dir);
  FILE *f = fopen(path, "w");
  fprintf(f, "%d\n", n);
  fclose(f);
  PATH_PRINTF(path, "%s/raw/edge.csv", dir);
  f = fopen(path, "w");
  for (int i = 0; i < edges; i++) {
    const int u = (int)(OGB_NEXT() % n), v = i % 60 == 0 ? u : (int)(OGB_NEXT() % n);
    fprintf(f, "%d,%d\n", u, v);
    if (i % 45 == 0) fprintf(f, "%d,%d\n", u, v);
  }
  fclose(f);
  PATH_PRINTF(path, "%s/raw/node-feat.csv", dir);
  f = fopen(path, "w");
  char lab_path[700];
  PATH_PRINTF(lab_path, "%s/raw/node-label.csv", dir);
  FILE *l = fopen(lab_path, "w");
  int labelled[2000], count = 0;
  for (int v = 0; v < n; v++) {
    for (int c = 0; c < 6; c++)
      fprintf(f, "%s%.4f", c ? "," : "", (double)(OGB_NEXT() % 20000) / 10000.0 - 1.0);
    fprintf(f, "\n");
    if (tasks > 0) {
      for (int t = 0; t < tasks; t++) {
        const int draw = v % 13 == 0 ? 2 : (int)(OGB_NEXT() % (t == 0 ? 2 : 3));
        fprintf(l, "%s%s", t ? "," : "", draw == 2 ? "nan" : draw ? "1" : "0");
      }
      fprintf(l, "\n");
      if (v % 13 != 0) labelled[count++] = v; /* task 1 is never missing */
    } else if (v % 13 == 0) {
      fprintf(l, "nan\n");
    } else {
      fprintf(l, "%d\n", (int)(OGB_NEXT() % 5));
      labelled[count++] = v;
    }
  }
  fclose(f);
  fclose(l);
  static const char *const scheme[2] = {"time", "random"}, *const name[3] = {"train", "valid",
                                                                             "test"};
  for (int s = 0; s < 2; s++) {
    for (int i = count - 1; i > 0; i--) { /* a shuffle per scheme */
      const int j = (int)(OGB_NEXT() % (uint64_t)(i + 1)), t = labelled[i];
      labelled[i] = labelled[j];
      labelled[j] = t;
    }
    const int cut[4] = {0, count * 6 / 10, count * 8 / 10, count};
    for (int k = 0; k < 3; k++) {
      PATH_PRINTF(path, "%s/split/%s/%s.csv", dir, scheme[s], name[k]);
      f = fopen(path, "w");
      for (int i = cut[k]; i < cut[k + 1]; i++) fprintf(f, "%d\n", labelled[i]);
      fclose(f);
    }
  }
#undef OGB_NEXT
}

Test(dist, ogb_folders_give_the_sequential_readers_shards, .timeout = 300) {
  const uint64_t seed = pt_seed("dist.ogb", 41);
  char *dir = pt_temp_dir("dist-ogb"), *out = NULL;
  /* Plain CSVs, read in byte-range slices: a split scheme picked by name. */
  write_ogb(dir, seed, 0, 9000);
  compare_with_sequential("dist-ogb-plain", dir, "metis", 4, "--split-name random");
  /* Every file gzipped: rank 0 streams the edges and node rows. */
  cr_assert_eq(pt_run(&out, "gzip %s/raw/*.csv %s/split/*/*.csv", dir, dir), 0, "%s", out);
  free(out);
  compare_at_k3("dist-ogb-gzip", dir, "metis", 3, "--split-name time");
  /* --split DIR replaces the folder's own split. */
  char flags[900];
  snprintf(flags, sizeof flags, "--split %s/split/random", dir);
  compare_at_k3("dist-ogb-split-dir", dir, "metis", 3, flags);
  /* Multi-label rows of 11 tasks (two items of a record), plain and
   * gzipped. */
  char ml[700];
  snprintf(ml, sizeof ml, "%s/ml", dir);
  write_ogb(ml, seed + 1, 11, 9000);
  compare_with_sequential("dist-ogb-multilabel", ml, "metis", 3, "--split-name time");
  cr_assert_eq(pt_run(&out, "gzip %s/raw/node-label.csv", ml), 0, "%s", out);
  free(out);
  compare_at_k3("dist-ogb-multilabel-gz", ml, "metis", 3, "--split-name random");
  /* A drawn split over multi-label rows: rows without a task get none. */
  compare_at_k3("dist-ogb-multilabel-drawn", ml, "metis", 3, "--synthetic-split 0.5,0.2,0.3");
  /* A real OGB-format dataset (Cora, all .csv.gz). */
  compare_at_k3("dist-ogb-cora", HALO_DATASETS_DIR "/cora", "metis", 4, "");
  pt_remove_tree(dir);
  free(dir);
}

/* .npy edge arrays (2 x E edge_index in C order; E x 2 int32 in Fortran
 * order; with --classes, with --nodes), and an .npz of stored members,
 * with .npy node data (float32 C order, big-endian float64 Fortran order;
 * float labels with NaN, big-endian int16 labels): each rank preads
 * its edges and its block's rows, and the shards are the sequential
 * reader's, digest included.  The inputs are tests/loaders/gen-binary.py's
 * (standard-library Python). */
Test(dist, npy_edge_arrays_give_the_sequential_readers_shards, .timeout = 300) {
  const uint64_t seed = pt_seed("dist.npy", 53);
  char *dir = pt_temp_dir("dist-npy"), *out = NULL, in[700], flags[2200];
  cr_assert_eq(pt_run(&out, "python3 %s/tests/loaders/gen-binary.py %s/gen %llu", HALO_SOURCE_DIR,
                      dir, (unsigned long long)(seed % 100000)),
               0, "%s", out);
  free(out);
  snprintf(in, sizeof in, "%s/gen/npy/edges.npy", dir);
  snprintf(flags, sizeof flags, "--features %s/gen/npy/feat.npy --labels %s/gen/npy/labels.npy",
           dir, dir);
  compare_with_sequential("dist-npy", in, "metis", 3, flags);
  snprintf(in, sizeof in, "%s/gen/npy/edges-e2.npy", dir);
  snprintf(flags, sizeof flags,
           "--features %s/gen/npy/feat-f.npy --labels %s/gen/npy/labels-i.npy "
           "--synthetic-split 0.5,0.2,0.3",
           dir, dir);
  compare_at_k3("dist-npy-e2", in, "metis", 3, flags);
  /* --classes over the block's rows; --nodes past the largest id: the
   * last nodes isolated, their data drawn. */
  int64_t n = 0;
  snprintf(in, sizeof in, "%s/gen/npy/feat.npy", dir);
  cr_assert_eq(halo_load_npy_rows(in, &n), HALO_OK);
  snprintf(in, sizeof in, "%s/gen/npy/edges.npy", dir);
  snprintf(flags, sizeof flags,
           "--features %s/gen/npy/feat.npy --labels %s/gen/npy/labels.npy --classes 9", dir, dir);
  compare_at_k3("dist-npy-classes", in, "metis", 3, flags);
  snprintf(flags, sizeof flags, "--nodes %" PRId64 " --synthetic-features 3 --synthetic-classes 2",
           n + 5);
  compare_at_k3("dist-npy-nodes", in, "metis", 3, flags);
  /* A heterophilous-graphs .npz of stored members (Fortran order, big
   * endian): edges, node rows and masks by pread; its split 1, and a drawn
   * split instead. */
  snprintf(in, sizeof in, "%s/gen/hetero-f.npz", dir);
  compare_with_sequential("dist-npz", in, "metis", 3, "--split-name 1");
  compare_at_k3("dist-npz-drawn", in, "metis", 3, "--synthetic-split 0.5,0.2,0.3");
  pt_remove_tree(dir);
  free(dir);
}

/* Files of many digest chunks: the ranks share the reading of each plain
 * file for the source digest (each digests its run of whole chunks, rank 0
 * the bytes around them), and the digest is still the sequential reader's,
 * which streams the file.  The SNAP list and the features file start at a
 * chunk boundary of their streams, the labels file after the features,
 * the OGB edge.csv after num-node-list: both in the middle of a chunk. */
Test(dist, the_source_digest_of_files_of_many_chunks_is_the_sequential_runs, .timeout = 300) {
  const uint64_t seed = pt_seed("dist.digest", 47);
  char *dir = pt_temp_dir("dist-digest"), path[600], feat[700], lab[700], flags[1600];
  char *out = NULL;
  snprintf(path, sizeof path, "%s/big.txt", dir);
  cr_assert_eq(pt_run(&out,
                      "seq 0 199999 | awk '{ print ($1 * 7919 + %llu) %% 20000, "
                      "($1 * 104729 + 13) %% 20000 }' > %s",
                      (unsigned long long)(seed % 1000), path),
               0, "%s", out);
  free(out);
  snprintf(feat, sizeof feat, "%s/feat.csv", dir);
  snprintf(lab, sizeof lab, "%s/labels.txt", dir);
  write_node_files(feat, lab, 20000, seed);
  snprintf(flags, sizeof flags, "--features %s --labels %s --synthetic-split 0.5,0.2,0.3", feat,
           lab);
  compare_with_sequential("dist-digest-snap", path, "metis", 3, flags);
  char ogb[700];
  snprintf(ogb, sizeof ogb, "%s/ogb", dir);
  write_ogb(ogb, seed, 0, 150000);
  compare_with_sequential("dist-digest-ogb", ogb, "metis", 3, "--split-name time");
  pt_remove_tree(dir);
  free(dir);
}

/* A Matrix Market file of n nodes drawn from the seed: `symmetric`
 * stores one triangle (with some diagonal entries), else a general 'real'
 * file whose values are all 1; comment lines in the header and among the
 * entries. Returns the entries written. */
static int write_mtx(const char *path, uint64_t seed, int symmetric, int n, int entries) {
  FILE *f = fopen(path, "w");
  cr_assert(f, "%s", path);
  uint64_t state = seed * 2654435761u + 11;
  fprintf(f, "%%%%MatrixMarket matrix coordinate %s %s\n%% drawn by test-partition-dist\n%%\n",
          symmetric ? "pattern" : "real", symmetric ? "symmetric" : "general");
  fprintf(f, "%d %d %d\n", n, n, entries);
  for (int i = 0; i < entries; i++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    int u = (int)((state >> 33) % (uint64_t)n), v = (int)((state >> 13) % (uint64_t)n);
    if (i % 70 == 0) v = u;
    if (symmetric && v > u) {
      const int t = u;
      u = v;
      v = t;
    }
    fprintf(f, symmetric ? "%d %d\n" : "%d %d 1.0\n", u + 1, v + 1);
    if (i % 2000 == 0) fprintf(f, "%% a comment among the entries\n");
  }
  cr_assert_eq(fclose(f), 0);
  return entries;
}

Test(dist, matrix_market_slices_give_the_sequential_readers_shards, .timeout = 300) {
  const uint64_t seed = pt_seed("dist.mtx", 43);
  char *dir = pt_temp_dir("dist-mtx"), path[600], gz[700], *out = NULL;
  snprintf(path, sizeof path, "%s/sym.mtx", dir);
  write_mtx(path, seed, 1, 1800, 9000);
  compare_with_sequential("dist-mtx-sym", path, "metis", 4,
                          "--synthetic-features 4 --synthetic-classes 3");
  snprintf(gz, sizeof gz, "%s/sym.mtx.gz", dir);
  cr_assert_eq(pt_run(&out, "gzip -c %s > %s", path, gz), 0, "%s", out);
  free(out);
  compare_at_k3("dist-mtx-gz", gz, "metis", 3, "");
  snprintf(path, sizeof path, "%s/general.mtx", dir);
  write_mtx(path, seed + 1, 0, 1500, 8000);
  compare_at_k3("dist-mtx-general", path, "metis", 3, "");
  pt_remove_tree(dir);
  free(dir);
}

/* The "loss" values of a --metrics JSONL file, in order, as one string. */
static char *losses(const char *path) {
  char *text = pt_read_file(path), *list = calloc(strlen(text ? text : "") + 1, 1);
  cr_assert(text, "%s", path);
  for (const char *at = strstr(text, "\"loss\":"); at; at = strstr(at + 1, "\"loss\":")) {
    at += strlen("\"loss\":");
    strncat(list, at, strcspn(at, ","));
    strcat(list, " ");
  }
  free(text);
  return list;
}

Test(dist, training_gives_the_same_loss_curve_as_on_metis_shards, .timeout = 300) {
  char spec[128], od[600], metrics[700], *out = NULL;
  char *dir = pt_temp_dir("dist-train");
  const char *names[2] = {"metis", "ptscotch"};
  char *curve[2];
  sbm_spec(spec, sizeof spec, pt_seed("dist.train", 31));
  for (int i = 0; i < 2; i++) {
    snprintf(od, sizeof od, "%s/%s", dir, names[i]);
    if (i == 0)
      cr_assert_eq(run_seq(&out, "metis", spec, 3, od, ""), 0, "%s", out);
    else
      cr_assert_eq(run_dist(&out, 2, "", spec, 3, od, ""), 0, "%s", out);
    free(out);
    snprintf(metrics, sizeof metrics, "%s/%s.jsonl", dir, names[i]);
    cr_assert_eq(pt_run(&out,
                        MPIRUN " -np 3 -x OMP_NUM_THREADS=1 %s %s --epochs 12 --deterministic "
                               "--metrics %s",
                        TRAIN, od, metrics),
                 0, "%s", out);
    cr_expect(strstr(out, "equal to the prediction"), "%s", out);
    free(out);
    curve[i] = losses(metrics);
  }
  cr_expect_gt(strlen(curve[0]), 12);
  cr_expect_str_eq(curve[1], curve[0], "the loss curves differ");
  free(curve[0]);
  free(curve[1]);
  pt_remove_tree(dir);
  free(dir);
}

/* PT-Scotch on K = 2, 3 and 4 ranks against METIS on 16 parts: cut and
 * volume within 1.15x (the issue asks 1.3x; 1.06x is the worst measured
 * when the clustering crossed ranks, 1.31x before). */
static void against_metis(const char *spec) {
#ifdef __SANITIZE_ADDRESS__
  /* 1M-edge graphs through the instrumented pipeline take minutes, and
   * check the cut, not memory: the plan tests run the same code there. */
  cr_skip_test("quality is checked in the build without sanitizers");
#endif
  char od[600], flags[700], path[700], *out = NULL;
  char *dir = pt_temp_dir("dist-quality");
  double cut[4], volume[4];
  for (int k = 1; k <= 4; k++) {
    const int i = k - 1; /* k = 1 is METIS */
    snprintf(od, sizeof od, "%s/o%d", dir, k);
    snprintf(flags, sizeof flags, "--json %s/o%d.json", dir, k);
    const int rc = k == 1 ? run_seq(&out, "metis", spec, 16, od, flags)
                          : run_dist(&out, k, "", spec, 16, od, flags);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/o%d.json", dir, k);
    char *json = pt_read_file(path);
    cut[i] = json_at(json, NULL, "edge_cut");
    volume[i] = json_at(json, NULL, "comm_volume");
    cr_expect_leq(json_at(json, NULL, "balance"), 1.031, "%s", spec);
    free(json);
    pt_remove_tree(od);
    if (k == 1) continue;
    fprintf(stderr,
            "%s, 16 parts: cut metis %.0f ptscotch (K=%d) %.0f (%.3fx), volume %.0f %.0f "
            "(%.3fx)\n",
            spec, cut[0], k, cut[i], cut[i] / cut[0], volume[0], volume[i], volume[i] / volume[0]);
    cr_expect_leq(cut[i], 1.15 * cut[0], "%s: PT-Scotch's cut at K = %d is over 1.15x METIS'", spec,
                  k);
    cr_expect_leq(volume[i], 1.15 * volume[0],
                  "%s: PT-Scotch's volume at K = %d is over 1.15x METIS'", spec, k);
  }
  pt_remove_tree(dir);
  free(dir);
}

Test(dist, quality_within_1_15x_of_metis_on_sbm, .timeout = 600) {
  against_metis("sbm:nodes=100000,classes=8,avg-degree=10,homophily=0.8,seed=3");
}

Test(dist, quality_within_1_15x_of_metis_on_rmat, .timeout = 600) {
  against_metis("rmat:scale=16,edge-factor=8,seed=3");
}

/* Lines of `text` that hold `needle`. */
static int lines_with(const char *text, const char *needle) {
  int n = 0;
  for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle)) n++;
  return n;
}

/* A bad run on K ranks: a non-zero exit, one error line holding `want`,
 * and no output folder, temporary or final. */
static void refused(const char *dir, int K, const char *env, const char *input, int parts,
                    const char *extra, const char *want) {
  char od[600], *out = NULL, *ls = NULL;
  snprintf(od, sizeof od, "%s/o", dir);
  const int rc = run_dist(&out, K, env, input, parts, od, extra);
  cr_expect_neq(rc, 0, "%s", out);
  cr_expect_eq(lines_with(out, "halo-partition: error"), 1, "one error line: %s", out);
  cr_expect(strstr(out, want), "'%s' not in: %s", want, out);
  pt_run(&ls, "ls -A %s", dir);
  cr_expect_str_eq(ls, "", "left behind: %s", ls);
  free(ls);
  free(out);
}

/* A bad input that the sequential reader refuses: the distributed run on K
 * ranks refuses it with the very line (file, line number and message), the
 * first bad place a sequential read meets, even where a later rank's
 * slice holds another. */
static void refused_as_sequential(const char *dir, int K, const char *input, int parts,
                                  const char *extra) {
  char od[600], *out = NULL, want[2048];
  snprintf(od, sizeof od, "%s/o", dir);
  cr_assert_neq(run_seq(&out, "metis", input, parts, od, extra), 0, "%s", out);
  const char *at = strstr(out, "halo-partition: error: ");
  cr_assert(at, "%s", out);
  at += strlen("halo-partition: error: ");
  const size_t len = strcspn(at, "\n");
  snprintf(want, sizeof want, "%.*s", (int)len, at);
  free(out);
  refused(dir, K, "", input, parts, extra, want);
}

/* The refusals are five cases, not one: each refused mpirun idles about 2 s
 * in Open MPI's kill sequence after the non-zero exit, and the cases run
 * side by side (tests/CMakeLists.txt, JOBS). */
#define SMALL_SPEC "sbm:nodes=300,classes=3,avg-degree=6"

Test(dist, bad_input_stops_every_rank_with_one_line, .timeout = 300) {
  char *dir = pt_temp_dir("dist-bad"), path[600], env[700], *out = NULL;
  const char *spec = SMALL_SPEC;
  refused(dir, 2, "", spec, 301, "", "--parts 301 exceeds the 300 nodes");
  refused(dir, 3, "-x HALO_MEMORY_AVAILABLE=4096", "sbm:nodes=300000,classes=3,avg-degree=6", 2, "",
          "available");
  refused(dir, 2, "", HALO_DATASETS_DIR "/cora", 2, "--synthetic-features 4 --synthetic-classes 3",
          "already has node data");
  refused(dir, 2, "", spec, 2, "--objective vol", "edge cut only");
  refused(dir, 2, "", spec, 2, "--coarsen-levels 17", "--coarsen-levels");
  /* A bad line in the imported assignment, in the second rank's block. */
  snprintf(path, sizeof path, "%s.parts", dir);
  FILE *f = fopen(path, "w");
  for (int v = 0; v < 300; v++) fprintf(f, "%s\n", v == 200 ? "x" : "0");
  fclose(f);
  snprintf(env, sizeof env, "-x HALO_TEST_PARTS_FILE=%s", path);
  char want[1600];
  snprintf(want, sizeof want, "%s:201: not a part", path);
  refused(dir, 2, env, spec, 2, "", want);
  remove(path);
  /* A sequential method under mpirun: one line, from rank 0. */
  const int rc = pt_run(&out, MPIRUN " -np 2 %s --input '%s' --parts 2 --out %s/o", EXE, spec, dir);
  cr_expect_neq(rc, 0, "%s", out);
  cr_expect_eq(lines_with(out, "halo-partition: error"), 1, "%s", out);
  cr_expect(strstr(out, "only --method ptscotch runs on several ranks"), "%s", out);
  free(out);
  pt_remove_tree(dir);
  free(dir);
}

Test(dist, bad_edge_lists_stop_every_rank_with_one_line, .timeout = 300) {
  char *dir = pt_temp_dir("dist-bad-edges"), path[600], want[1600], *out = NULL;
  /* A bad line in the second rank's slice of an edge list: the sequential
   * reader's very line, file and line number. */
  snprintf(path, sizeof path, "%s.txt", dir);
  FILE *f = fopen(path, "w");
  for (int v = 0; v < 3000; v++) {
    if (v == 2400)
      fprintf(f, "%d banana\n", v % 300);
    else
      fprintf(f, "%d %d\n", v % 300, (v * 7) % 300);
  }
  fclose(f);
  snprintf(want, sizeof want, "%s:2401: 'banana' is not a node id", path);
  refused(dir, 2, "", path, 2, "", want);
  /* The same bad line in a gzip stream, which rank 0 reads, and a
   * truncated stream. */
  char gz[700];
  snprintf(gz, sizeof gz, "%s.gz", path);
  cr_assert_eq(pt_run(&out, "gzip -c %s > %s", path, gz), 0, "%s", out);
  free(out);
  snprintf(want, sizeof want, "%s:2401: 'banana' is not a node id", gz);
  refused(dir, 3, "", gz, 2, "", want);
  cr_assert_eq(pt_run(&out,
                      "seq 0 200000 | awk '{ print $1, ($1 * 7) %% 1000 }' | gzip -c | "
                      "head -c 20000 > %s",
                      gz),
               0, "%s", out);
  free(out);
  refused(dir, 2, "", gz, 2, "", "truncated");
  remove(gz);
  remove(path);
  pt_remove_tree(dir);
  free(dir);
}

Test(dist, bad_node_data_files_stop_every_rank_with_one_line, .timeout = 300) {
  char *dir = pt_temp_dir("dist-bad-data"), path[600], want[1600], *out = NULL;
  const char *spec = SMALL_SPEC;
  /* Node data files: a bad value in the third rank's slice, a row short. */
  char feat[700];
  snprintf(feat, sizeof feat, "%s.feat.csv", dir);
  snprintf(path, sizeof path, "%s.txt", dir);
  FILE *f = fopen(path, "w");
  for (int v = 0; v < 300; v++) fprintf(f, "%d %d\n", v, (v + 1) % 300);
  fclose(f);
  char flags[800];
  snprintf(flags, sizeof flags, "--features %s", feat);
  for (int bad = 0; bad < 2; bad++) {
    f = fopen(feat, "w");
    for (int v = 0; v < 300 - bad; v++) fprintf(f, v == 250 && !bad ? "1,x\n" : "1,2\n");
    fclose(f);
    if (!bad)
      snprintf(want, sizeof want, "%s:251: 'x' is not a number", feat);
    else
      snprintf(want, sizeof want, "%s:299: 299 feature rows, but the graph has 300 nodes", feat);
    refused(dir, 3, "", path, 2, flags, want);
  }
  refused(dir, 2, "", spec, 2, flags, "already has 32 features; --features is for");
  remove(feat);
  remove(path);
  /* --split DIR on a renumbered list: an id no edge names, between two
   * blocks' ids, is named once. */
  snprintf(path, sizeof path, "%s.txt", dir);
  f = fopen(path, "w");
  for (int v = 0; v < 300; v++) fprintf(f, "%d %d\n", 10 * v, 10 * ((v + 1) % 300));
  fclose(f);
  char split_dir[700];
  snprintf(split_dir, sizeof split_dir, "%s.split", dir);
  cr_assert_eq(pt_run(&out,
                      "mkdir -p %s && echo 10 > %s/train.csv && echo 20 > %s/valid.csv && "
                      "printf '30\\n1505\\n' > %s/test.csv",
                      split_dir, split_dir, split_dir, split_dir),
               0, "%s", out);
  free(out);
  snprintf(flags, sizeof flags, "--split %s --synthetic-features 2 --synthetic-classes 2",
           split_dir);
  snprintf(want, sizeof want, "%s/test.csv:2: node id 1505 is not a node of %s (no edge names it",
           split_dir, path);
  refused(dir, 3, "", path, 2, flags, want);
  pt_remove_tree(split_dir);
  remove(path);
  pt_remove_tree(dir);
  free(dir);
}

Test(dist, bad_matrix_market_stops_every_rank_with_one_line, .timeout = 300) {
  char *dir = pt_temp_dir("dist-bad-mtx"), path[600], want[1600], *out = NULL;
  /* Matrix Market: a bad entry in the second rank's slice, an entry past
   * the size line's count, one short; each at halo_load's line. */
  snprintf(path, sizeof path, "%s.mtx", dir);
  write_mtx(path, 5, 1, 300, 3000); /* the entries are lines 5..3047 */
  cr_assert_eq(pt_run(&out, "sed -i '2500s/.*/7 banana/' %s", path), 0, "%s", out);
  free(out);
  snprintf(want, sizeof want, "%s:2500: 'banana' is not an index", path);
  refused(dir, 2, "", path, 2, "", want);
  cr_assert_eq(pt_run(&out, "sed -i '2500s/.*/7 8/; 4s/.*/300 300 2990/' %s", path), 0, "%s", out);
  free(out);
  refused(dir, 3, "", path, 2, "", "more entries than the 2990 declared on the size line (line 4)");
  cr_assert_eq(pt_run(&out, "sed -i '4s/.*/300 300 3001/' %s", path), 0, "%s", out);
  free(out);
  refused(dir, 2, "", path, 2, "",
          "file ends after 3000 entries, but the size line (line 4) declares 3001");
  /* An entry past the count before a bad one in the last rank's slice:
   * the first is named, as the sequential reader names it. */
  cr_assert_eq(pt_run(&out, "sed -i '4s/.*/300 300 10/; 2900s/.*/7 banana/' %s", path), 0, "%s",
               out);
  free(out);
  refused_as_sequential(dir, 3, path, 2, "");
  remove(path);
  pt_remove_tree(dir);
  free(dir);
}

Test(dist, bad_ogb_folders_stop_every_rank_with_one_line, .timeout = 300) {
  char *dir = pt_temp_dir("dist-bad-ogb"), want[1600], *out = NULL;
  const char *spec = SMALL_SPEC;
  /* An OGB folder: a bad line in the second rank's slice of edge.csv, a
   * bad value in a gzipped node-feat (rank 0's stream), a split node
   * without a label, each named by file and line as halo_load names it. */
  char ogb[700], bad[800];
  snprintf(ogb, sizeof ogb, "%s.ogb", dir);
  write_ogb(ogb, 3, 0, 9000);
  snprintf(bad, sizeof bad, "%s/raw/edge.csv", ogb);
  cr_assert_eq(pt_run(&out, "sed -i '7000s/.*/12,x/' %s", bad), 0, "%s", out);
  free(out);
  snprintf(want, sizeof want, "%s:7000: 'x' is not a node id", bad);
  refused(dir, 2, "", ogb, 2, "--split-name time", want);
  cr_assert_eq(pt_run(&out, "sed -i '7000s/.*/12,13/' %s", bad), 0, "%s", out);
  free(out);
  snprintf(bad, sizeof bad, "%s/raw/node-feat.csv", ogb);
  cr_assert_eq(pt_run(&out, "sed -i '1500s/^[^,]*,/oops,/' %s && gzip %s", bad, bad), 0, "%s", out);
  free(out);
  snprintf(want, sizeof want, "%s.gz:1500: 'oops' is not a number", bad);
  refused(dir, 3, "", ogb, 2, "--split-name time", want);
  cr_assert_eq(pt_run(&out, "gunzip %s.gz && sed -i '1500s/oops/0.5/' %s", bad, bad), 0, "%s", out);
  free(out);
  snprintf(bad, sizeof bad, "%s/split/time/test.csv", ogb);
  cr_assert_eq(pt_run(&out, "echo 1300 >> %s", bad), 0, "%s", out); /* 1300 = 13 * 100: nan */
  free(out);
  refused(dir, 2, "", ogb, 2, "--split-name time",
          "node 1300 is in the test split but has no label");
  /* Two bad ids: a high node's repeat (the third rank's block) before a
   * low one's (the first rank's): the first in the file is named. */
  cr_assert_eq(pt_run(&out,
                      "sed -i '$d' %s && (awk '$1 >= 1400' %s/split/time/train.csv | head -1; "
                      "awk '$1 < 600' %s/split/time/valid.csv | head -1) >> %s",
                      bad, ogb, ogb, bad),
               0, "%s", out);
  free(out);
  refused_as_sequential(dir, 3, ogb, 2, "--split-name time");
  refused_as_sequential(dir, 2, spec, 2, "--split-name time"); /* not an OGB folder */
  pt_remove_tree(ogb);
  pt_remove_tree(dir);
  free(dir);
}
