/* The halo-partition binary: statistics against hand-computed values and its
 * own JSON, shards read back, --force, and every bad-input case. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "halo-shard.h"
#include "partition-util.h"

#define EXE HALO_PARTITION_EXE
#define CORA HALO_DATASETS_DIR "/cora"

static int exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* Entries of `dir` whose name starts with `prefix`. */
/* Writes `text` to `path` (replacing it). */
static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "cannot write %s", path);
  fputs(text, f);
  cr_assert_eq(fclose(f), 0, "cannot write %s", path);
}

static int count_entries(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) count++;
  closedir(d);
  return count;
}

/* The integers of JSON array `key`. */
static int json_array(const char *json, const char *key, int64_t *out, int max) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\": [", key);
  const char *p = strstr(json, pattern);
  cr_assert_not_null(p, "JSON has no array %s", key);
  p += strlen(pattern);
  int n = 0;
  while (*p != ']') {
    char *end;
    cr_assert_lt(n, max);
    out[n++] = strtoll(p, &end, 10);
    cr_assert(end != p, "bad array %s", key);
    p = end;
    while (*p == ',' || *p == ' ') p++;
  }
  return n;
}

/* The number after `label` in the table. */
static int64_t table_number(const char *table, const char *label) {
  const char *p = strstr(table, label);
  cr_assert_not_null(p, "table has no '%s':\n%s", label, table);
  p += strlen(label);
  return strtoll(p, NULL, 10);
}

Test(cli, cora_four_parts_statistics_and_shards) {
  char *dir = pt_temp_dir("cli"), *out = NULL;
  int rc =
      pt_run(&out, "%s --input %s --parts 4 --out %s/cora-4 --dims 1433,16,7 --json %s/cora.json",
             EXE, CORA, dir, dir);
  cr_assert_eq(rc, 0, "halo-partition failed:\n%s", out);
  char json_path[512];
  snprintf(json_path, sizeof json_path, "%s/cora.json", dir);
  char *json = pt_read_file(json_path);
  cr_assert_not_null(json);

  const char *keys[] = {"nodes",
                        "edges",
                        "parts",
                        "edge_cut",
                        "comm_volume",
                        "replication_factor",
                        "balance",
                        "predicted_halo_bytes_per_epoch",
                        "predicted_halo_bytes_per_epoch_static",
                        "predicted_setup_halo_bytes",
                        "predicted_setup_halo_bytes_dropout",
                        "cagnet1d_bytes_per_epoch",
                        "broadcast1d_bytes_per_epoch"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) pt_json_number(json, keys[i]);
  cr_expect_not_null(strstr(json, "\"method\": \"metis\""));

  int64_t n = (int64_t)pt_json_number(json, "nodes"),
          H = (int64_t)pt_json_number(json, "comm_volume");
  cr_expect_eq(n, 2708);
  cr_expect_eq((int64_t)pt_json_number(json, "edges"), 10556);
  cr_expect_eq((int64_t)pt_json_number(json, "parts"), 4);
  int64_t owned[8], halo[8];
  cr_assert_eq(json_array(json, "owned", owned, 8), 4);
  cr_assert_eq(json_array(json, "halo", halo, 8), 4);
  int64_t sum_owned = 0, sum_halo = 0, max_owned = 0;
  for (int p = 0; p < 4; p++) {
    sum_owned += owned[p];
    sum_halo += halo[p];
    if (owned[p] > max_owned) max_owned = owned[p];
  }
  cr_expect_eq(sum_owned, 2708);
  cr_expect_eq(sum_halo, H);
  cr_expect_float_eq(pt_json_number(json, "replication_factor"), (2708.0 + (double)H) / 2708.0,
                     1e-5);
  cr_expect_float_eq(pt_json_number(json, "balance"), (double)max_owned / 677.0, 1e-5);

  /* By hand, 1433 -> 16 -> 7 with input dropout: layer 1 multiplies by W
   * first and exchanges 16 columns forward and 16 backward, layer 2 exchanges
   * 7 and 7: 46 float32 columns per halo row per epoch. */
  cr_expect_eq((int64_t)pt_json_number(json, "predicted_halo_bytes_per_epoch"), H * 46 * 4);
  cr_expect_eq((int64_t)pt_json_number(json, "predicted_halo_bytes_per_epoch_static"), H * 14 * 4);
  cr_expect_eq((int64_t)pt_json_number(json, "predicted_setup_halo_bytes"), H * 1433 * 4);
  /* With input dropout, GCN's evaluation keeps ÂX: the same exchange of X. */
  cr_expect_eq((int64_t)pt_json_number(json, "predicted_setup_halo_bytes_dropout"), H * 1433 * 4);
  cr_expect_eq((int64_t)pt_json_number(json, "cagnet1d_bytes_per_epoch"),
               3LL * 2708 * (1433 + 16 + 16 + 7) * 4);
  cr_expect_eq((int64_t)pt_json_number(json, "broadcast1d_bytes_per_epoch"), 3LL * 2708 * 46 * 4);

  /* The table says the same. */
  cr_expect_eq(table_number(out, "edge cut"), (int64_t)pt_json_number(json, "edge_cut"));
  cr_expect_eq(table_number(out, "comm volume"), H);
  cr_expect_eq(table_number(out, "per epoch, input dropout (training default)"), H * 46 * 4);
  cr_expect_eq(table_number(out, "CAGNET 1D per epoch"), 3LL * 2708 * 1472 * 4);
  const char *total = strstr(out, "\ntotal");
  cr_assert_not_null(total, "no total row:\n%s", out);
  int64_t t_owned = 0, t_halo = 0;
  cr_assert_eq(sscanf(total, "\ntotal %lld %lld", (long long *)&t_owned, (long long *)&t_halo), 2);
  cr_expect_eq(t_owned, 2708);
  cr_expect_eq(t_halo, H);
  for (int p = 0; p < 4; p++) {
    char row[32];
    snprintf(row, sizeof row, "\n%5d ", p);
    const char *line = strstr(out, row);
    cr_assert_not_null(line, "no row for part %d:\n%s", p, out);
    long long o, h;
    cr_assert_eq(sscanf(line + strlen(row), "%lld %lld", &o, &h), 2);
    cr_expect_eq(o, owned[p]);
    cr_expect_eq(h, halo[p]);
  }

  /* The shards on disk hold exactly the plans of the cleaned graph. */
  char path[512];
  snprintf(path, sizeof path, "%s/cora-4/manifest.h5", dir);
  halo_manifest *m = NULL;
  cr_assert_eq(halo_manifest_read(path, &m), HALO_OK);
  cr_expect_eq(m->nodes, 2708);
  cr_expect_eq(m->parts, 4);
  cr_expect_str_eq(m->method, "metis");
  char run_id[32];
  snprintf(run_id, sizeof run_id, "\"run_id\": \"%016llx\"", (unsigned long long)m->run_id);
  cr_expect_not_null(strstr(json, run_id), "manifest run id %s not in the JSON", run_id);
  halo_shard *shards[4] = {NULL};
  for (int p = 0; p < 4; p++) {
    snprintf(path, sizeof path, "%s/cora-4/part-%05d-of-%05d.h5", dir, p, 4);
    cr_assert_eq(halo_shard_read(path, m, &shards[p]), HALO_OK, "%s", path);
    cr_expect_eq(m->part_halo[p], halo[p]);
  }
  halo_graph *g = pt_graph_cora();
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  pt_check_shards(g, m->part, 4, HALO_ORDER_COMMUNITY, shards);
  for (int p = 0; p < 4; p++) halo_shard_destroy(&shards[p]);

  /* A rerun is the same run. */
  free(out);
  rc = pt_run(&out, "%s --input %s --parts 4 --out %s/cora-4 --force --json %s/again.json", EXE,
              CORA, dir, dir);
  cr_assert_eq(rc, 0, "%s", out);
  snprintf(json_path, sizeof json_path, "%s/again.json", dir);
  char *again = pt_read_file(json_path);
  cr_expect_not_null(strstr(again, run_id), "a rerun has another run id");
  free(again);

  halo_graph_destroy(&g);
  halo_manifest_destroy(&m);
  free(json);
  free(out);
  pt_remove_tree(dir);
  free(dir);
}

/* --json - is standard output: the JSON alone goes there, one object with
 * the figures that --json FILE writes for the same input, the table goes to
 * stderr, and no file named "-" appears.  --json /dev/stdout stays refused
 * (not a regular file), with the line naming "-". */
Test(cli, json_dash_is_standard_output) {
  char *dir = pt_temp_dir("json-stdout"), *ref = NULL, *out = NULL, *dev = NULL;
  int rc = pt_run(&ref, "%s --input %s --parts 3 --out %s/ref --dims 1433,16,7 --json %s/ref.json",
                  EXE, CORA, dir, dir);
  cr_assert_eq(rc, 0, "halo-partition --json FILE failed:\n%s", ref);
  char path[512];
  snprintf(path, sizeof path, "%s/ref.json", dir);
  char *json = pt_read_file(path);
  cr_assert_not_null(json);

  rc = pt_run(&out,
              "cd '%s' && { %s --input %s --parts 3 --out c --dims 1433,16,7 --json - 2>err; }",
              dir, EXE, CORA);
  snprintf(path, sizeof path, "%s/err", dir);
  char *err = pt_read_file(path);
  cr_assert_not_null(err);
  cr_assert_eq(rc, 0, "halo-partition --json - failed:\n%s\nstderr:\n%s", out, err);
  const size_t len = strlen(out);
  cr_expect(len > 2 && out[0] == '{' && out[len - 2] == '}' && out[len - 1] == '\n',
            "stdout is not one JSON object:\n%s", out);
  int braces = 0, brackets = 0;
  for (const char *p = out; *p; p++) {
    braces += (*p == '{') - (*p == '}');
    brackets += (*p == '[') - (*p == ']');
    cr_assert(braces >= 0 && brackets >= 0, "unbalanced JSON on stdout:\n%s", out);
  }
  cr_expect(braces == 0 && brackets == 0, "unbalanced JSON on stdout:\n%s", out);
  cr_expect_null(strstr(out, "edge cut"), "the table is on stdout:\n%s", out);
  static const char *const keys[] = {"nodes",
                                     "edges",
                                     "edge_cut",
                                     "comm_volume",
                                     "predicted_halo_bytes_per_epoch",
                                     "replication_factor"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    cr_expect_eq(pt_json_number(out, keys[i]), pt_json_number(json, keys[i]), "%s", keys[i]);
  cr_expect_not_null(strstr(out, "\"output\": \"c\""), "%s", out);
  cr_expect_eq(table_number(err, "comm volume"), (int64_t)pt_json_number(json, "comm_volume"),
               "the table is not on stderr:\n%s", err);
  snprintf(path, sizeof path, "%s/-", dir);
  cr_expect(!exists(path), "a file named '-' was written");
  snprintf(path, sizeof path, "%s/c/manifest.h5", dir);
  cr_expect(exists(path), "no %s", path);

  rc = pt_run(&dev, "%s --input %s --parts 3 --out %s/d --json /dev/stdout", EXE, CORA, dir);
  cr_expect_eq(rc, 1, "--json /dev/stdout exited %d:\n%s", rc, dev);
  cr_expect_not_null(strstr(dev, "--json /dev/stdout: exists and is not a regular file"), "%s",
                     dev);
  cr_expect_not_null(strstr(dev, "--json - writes the JSON to standard output"), "%s", dev);
  free(json);
  free(err);
  free(ref);
  free(out);
  free(dev);
  pt_remove_tree(dir);
}

Test(cli, one_part_and_other_methods) {
  char *dir = pt_temp_dir("cli"), *out = NULL;
  const char *runs[] = {"--parts 1 --dims 1433,16,7", "--parts 3 --method random --seed 9",
                        "--parts 2 --method block", "--parts 4 --objective vol --ufactor 50"};
  for (int i = 0; i < 4; i++) {
    int rc = pt_run(&out, "%s --input %s %s --out %s/o%d --json %s/o%d.json", EXE, CORA, runs[i],
                    dir, i, dir, i);
    cr_assert_eq(rc, 0, "%s:\n%s", runs[i], out);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/o%d.json", dir, i);
    char *json = pt_read_file(path);
    if (i == 0) {
      cr_expect_eq((int64_t)pt_json_number(json, "comm_volume"), 0);
      cr_expect_eq((int64_t)pt_json_number(json, "predicted_halo_bytes_per_epoch"), 0);
      cr_expect_not_null(strstr(json, "\"cagnet1d_ratio\": null"));
    }
    if (i == 1) cr_expect_not_null(strstr(json, "\"method\": \"random\""));
    if (i == 2) cr_expect_not_null(strstr(json, "\"method\": \"block\""));
    if (i == 3) cr_expect_not_null(strstr(json, "\"objective\": \"vol\""));
    free(json);
  }
  pt_remove_tree(dir);
  free(dir);
}

Test(cli, force_replaces_only_our_own_folders) {
  char *dir = pt_temp_dir("cli"), *out = NULL, path[512];
  cr_assert_eq(pt_run(&out, "%s --input %s --parts 2 --out %s/o", EXE, CORA, dir), 0, "%s", out);
  free(out);

  /* Without --force an existing folder is refused and left alone. */
  int rc = pt_run(&out, "%s --input %s --parts 3 --out %s/o", EXE, CORA, dir);
  cr_expect_neq(rc, 0);
  cr_expect_not_null(strstr(out, "already exists"), "%s", out);
  cr_expect_not_null(strstr(out, "--force"), "%s", out);
  free(out);
  snprintf(path, sizeof path, "%s/o/part-00001-of-00002.h5", dir);
  cr_expect(exists(path));

  /* With --force it is replaced. */
  cr_assert_eq(pt_run(&out, "%s --input %s --parts 3 --out %s/o --force", EXE, CORA, dir), 0, "%s",
               out);
  free(out);
  cr_expect(!exists(path));
  snprintf(path, sizeof path, "%s/o/part-00002-of-00003.h5", dir);
  cr_expect(exists(path));
  cr_expect_eq(count_entries(dir, "o."), 0, "leftover temporary folders");

  /* A folder with files halo-partition did not write is never replaced. */
  snprintf(path, sizeof path, "%s/o/notes.txt", dir);
  write_text(path, "mine\n");
  rc = pt_run(&out, "%s --input %s --parts 2 --out %s/o --force", EXE, CORA, dir);
  cr_expect_neq(rc, 0);
  cr_expect_not_null(strstr(out, "notes.txt"), "%s", out);
  free(out);
  cr_expect(exists(path));
  snprintf(path, sizeof path, "%s/o/part-00002-of-00003.h5", dir);
  cr_expect(exists(path));
  cr_expect_eq(count_entries(dir, "o."), 0, "leftover temporary folders");
  pt_remove_tree(dir);
  free(dir);
}

Test(cli, write_metis_help_version) {
  char *dir = pt_temp_dir("cli"), *out = NULL, path[512];
  cr_assert_eq(pt_run(&out, "%s --input %s --write-metis %s/g.metis", EXE, CORA, dir), 0, "%s",
               out);
  free(out);
  snprintf(path, sizeof path, "%s/g.metis", dir);
  char *text = pt_read_file(path);
  cr_assert_not_null(text);
  cr_expect_eq(strncmp(text, "2708 5278\n", 10), 0, "header: %.20s", text);
  free(text);
  cr_expect_eq(pt_run(&out, "%s --help", EXE), 0);
  cr_expect_not_null(strstr(out, "usage: halo-partition"));
  free(out);
  cr_expect_eq(pt_run(&out, "%s --version", EXE), 0);
  cr_expect_not_null(strstr(out, "halo-partition"));
  free(out);
  pt_remove_tree(dir);
  free(dir);
}

/* Bad input: non-zero exit, ONE line naming the flag or file, no output
 * folder and no temporary folder left behind. */
static void expect_refused(const char *args, const char *named) {
  char *dir = pt_temp_dir("bad"), *out = NULL;
  int rc = pt_run(&out, "cd %s && %s %s", dir, EXE, args);
  cr_expect_neq(rc, 0, "%s: exit 0", args);
  int lines = 0;
  for (const char *p = out; *p; p++) lines += *p == '\n';
  cr_expect_eq(lines, 1, "%s: %d lines:\n%s", args, lines, out);
  cr_expect_not_null(strstr(out, named), "%s: message does not name '%s':\n%s", args, named, out);
  cr_expect_not_null(strstr(out, "halo-partition: error: "), "%s: %s", args, out);
  cr_expect_eq(count_entries(dir, "o"), 0, "%s: left an output folder behind", args);
  cr_expect_eq(count_entries(dir, "j"), 0, "%s: left a JSON file behind", args);
  free(out);
  pt_remove_tree(dir);
  free(dir);
}

Test(cli, bad_input) {
  const char *base = "--input " CORA;
  char args[1024];
  const struct {
    const char *args, *named;
  } cases[] = {
      {"--parts 0 --out o", "--parts"},
      {"--parts 2709 --out o", "--parts"},
      {"--parts two --out o", "--parts"},
      {"--parts 4", "--out"},
      {"--out o", "--parts"},
      {"--parts 4 --out o --method kmeans", "--method"},
      {"--parts 4 --out o --format csv", "--format"},
      {"--parts 4 --out o --objective speed", "--objective"},
      {"--parts 4 --out o --seed -1", "--seed"},
      {"--parts 4 --out o --seed 3000000000", "--seed"},
      {"--parts 4 --out o --ufactor 0", "--ufactor"},
      {"--parts 4 --out o --coarsen-levels 2", "--coarsen-levels: only --method ptscotch"},
      {"--parts 4 --out o --method scotch --coarsen-levels 0", "the method is scotch"},
      {"--parts 4 --out o --dims 1433", "--dims"},
      {"--parts 4 --out o --dims 1433,x,7", "--dims"},
      {"--parts 4 --out o --dims 1433,0,7", "--dims"},
      {"--parts 4 --out o --dims 1433,,7", "--dims"},
      {"--parts 4 --out o --dims 100,16,7", "--dims"},
      {"--parts 4 --out o --dims 1433,16,8", "--dims"},
      {"--parts 4 --out /nonexistent-halo-dir/o", "/nonexistent-halo-dir"},
      {"--parts 4 --out /proc/halo-test-o", "/proc/halo-test-o"},
      {"--parts 4 --out o --json /nonexistent-halo-dir/j.json", "--json"},
      {"--parts 4 --out o --synthetic-features 8", "--synthetic"},
      {"--parts 4 --out o --bogus", "--bogus"},
      {"--parts 4 --out o --method", "--method"},
      /* Whole flag names only, as halo-train: an abbreviation names the
       * flag it abbreviates, and an ambiguous one every candidate. */
      {"--par 4 --out o", "abbreviated flag names are not accepted; did you mean --parts?"},
      {"--parts 4 --out o --fo x", "ambiguous; abbreviated flag names are not accepted; did you "
                                   "mean --format or --force?"},
      {"--parts=4 --out o --meth=metis", "did you mean --method?"},
      {"--parts 4 --out o --model gcn --dims 1433,16,7 --gin", "did you mean --gin-train-eps?"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(args, sizeof args, "%s %s", base, cases[i].args);
    expect_refused(args, cases[i].named);
  }
  expect_refused("--input /nonexistent-halo-input.txt --parts 2 --out o",
                 "/nonexistent-halo-input.txt");
  expect_refused("--parts 2 --out o", "--input");
}

Test(cli, output_file_in_the_way) {
  char *dir = pt_temp_dir("cli"), *out = NULL, path[512];
  snprintf(path, sizeof path, "%s/o", dir);
  FILE *f = fopen(path, "w");
  fclose(f);
  int rc = pt_run(&out, "%s --input %s --parts 2 --out %s --force", EXE, CORA, path);
  cr_expect_neq(rc, 0);
  cr_expect_not_null(strstr(out, "not a folder"), "%s", out);
  free(out);
  cr_expect_eq(count_entries(dir, "o."), 0);
  pt_remove_tree(dir);
  free(dir);
}

Test(cli, structure_only_input_with_node_data) {
  char *dir = pt_temp_dir("cli"), *out = NULL, path[512];
  /* A 6-node edge list with sparse ids, one direction only, a self-loop and
   * a repeat; features and labels from files, then synthetic ones. */
  snprintf(path, sizeof path, "%s/g.txt", dir);
  write_text(path, "# tiny\n10 20\n20 30\n30 10\n40 50\n50 60\n60 60\n10 20\n");
  snprintf(path, sizeof path, "%s/x.csv", dir);
  FILE *f = fopen(path, "w");
  for (int v = 0; v < 6; v++) fprintf(f, "%d.5,%d,1\n", v, -v);
  fclose(f);
  snprintf(path, sizeof path, "%s/y.csv", dir);
  f = fopen(path, "w");
  for (int v = 0; v < 6; v++) fprintf(f, "%d\n", v % 2);
  fclose(f);

  int rc = pt_run(&out,
                  "%s --input %s/g.txt --features %s/x.csv --labels %s/y.csv --parts 2 --out %s/a "
                  "--dims 3,2 --json %s/a.json",
                  EXE, dir, dir, dir, dir, dir);
  cr_assert_eq(rc, 0, "%s", out);
  free(out);
  snprintf(path, sizeof path, "%s/a.json", dir);
  char *json = pt_read_file(path);
  cr_expect_eq((int64_t)pt_json_number(json, "nodes"), 6);
  cr_expect_eq((int64_t)pt_json_number(json, "edges"), 10); /* 5 undirected edges */
  cr_expect_eq((int64_t)pt_json_number(json, "features"), 3);
  cr_expect_eq((int64_t)pt_json_number(json, "classes"), 2);
  cr_expect_not_null(strstr(json, "\"self_loops\": 1, \"duplicates\": 1, \"reverse_added\": 5"),
                     "%s", json);
  free(json);

  rc = pt_run(
      &out,
      "%s --input %s/g.txt --synthetic-features 8 --synthetic-classes 3 --parts 3 --out %s/b "
      "--dims 8,4,3 --json %s/b.json",
      EXE, dir, dir, dir);
  cr_assert_eq(rc, 0, "%s", out);
  free(out);
  snprintf(path, sizeof path, "%s/b.json", dir);
  json = pt_read_file(path);
  cr_expect_eq((int64_t)pt_json_number(json, "features"), 8);
  cr_expect_eq((int64_t)pt_json_number(json, "classes"), 3);

  /* Other synthetic node data is another run, even with the same partition. */
  rc = pt_run(&out,
              "%s --input %s/g.txt --synthetic-features 9 --synthetic-classes 3 --parts 3 "
              "--out %s/b9 --json %s/b9.json",
              EXE, dir, dir, dir);
  cr_assert_eq(rc, 0, "%s", out);
  free(out);
  snprintf(path, sizeof path, "%s/b9.json", dir);
  char *json9 = pt_read_file(path);
  const char *id8 = strstr(json, "\"run_id\""), *id9 = strstr(json9, "\"run_id\"");
  cr_assert(id8 && id9);
  cr_expect_neq(strncmp(id8, id9, 30), 0, "same run id for 8 and 9 synthetic features");
  free(json9);
  free(json);

  /* Labels out of range are the loader's to report: one line naming the file. */
  snprintf(path, sizeof path, "%s/y.csv", dir);
  write_text(path, "0\n1\n0\n-7\n1\n0\n");
  rc =
      pt_run(&out, "%s --input %s/g.txt --features %s/x.csv --labels %s/y.csv --parts 2 --out %s/c",
             EXE, dir, dir, dir, dir);
  cr_expect_neq(rc, 0);
  cr_expect_not_null(strstr(out, "y.csv"), "%s", out);
  free(out);
  cr_expect_eq(count_entries(dir, "c"), 0);
  pt_remove_tree(dir);
  free(dir);
}

/* The whole of file `path`, or "" when it cannot be read. */
static char *slurp_or_empty(const char *path) {
  char *text = pt_read_file(path);
  return text ? text : strdup("");
}

/* A refusal: non-zero exit and one "halo-partition: error:" line holding `words`. */
static void expect_one_error(int rc, const char *out, const char *const *words) {
  cr_expect_neq(rc, 0, "exit 0:\n%s", out);
  int lines = 0;
  for (const char *p = out; *p; p++) lines += *p == '\n';
  cr_expect_eq(lines, 1, "%d lines:\n%s", lines, out);
  cr_expect_not_null(strstr(out, "halo-partition: error: "), "%s", out);
  for (; *words; words++) cr_expect_not_null(strstr(out, *words), "no '%s' in:\n%s", *words, out);
}

#define EXPECT_ONE_ERROR(rc, out, ...) \
  expect_one_error((rc), (out), (const char *const[]){__VA_ARGS__, NULL})

/* --write-metis once opened FILE in place and unlink()ed it on a write
 * error: as root, --write-metis /dev/full deleted the device node.  Now the
 * graph goes to a temporary file that replaces FILE only when complete, and
 * only a regular FILE, only with --force. */
Test(cli, write_metis_replaces_only_regular_files_when_complete) {
  char *dir = pt_temp_dir("cli"), *out = NULL, path[512];
  struct stat sb;

  int rc = pt_run(&out, "%s --input %s --write-metis /dev/null", EXE, CORA);
  EXPECT_ONE_ERROR(rc, out, "--write-metis /dev/null", "not a regular file");
  free(out);
  cr_expect(stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode), "/dev/null is gone");
  rc =
      pt_run(&out, "cd %s && mkdir sub && %s --input %s --write-metis sub --force", dir, EXE, CORA);
  EXPECT_ONE_ERROR(rc, out, "--write-metis sub", "not a regular file");
  free(out);
  snprintf(path, sizeof path, "%s/sub", dir);
  cr_expect(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode));

  /* A new file; the same again is refused without --force, replaced with it. */
  rc = pt_run(&out, "cd %s && %s --input %s --write-metis g.metis", dir, EXE, CORA);
  cr_expect_eq(rc, 0, "%s", out);
  free(out);
  rc = pt_run(&out, "cd %s && echo mine > g.metis && %s --input %s --write-metis g.metis", dir, EXE,
              CORA);
  EXPECT_ONE_ERROR(rc, out, "--write-metis g.metis", "already exists", "--force");
  free(out);
  snprintf(path, sizeof path, "%s/g.metis", dir);
  char *text = slurp_or_empty(path);
  cr_expect_str_eq(text, "mine\n");
  free(text);
  rc = pt_run(&out, "cd %s && %s --input %s --write-metis g.metis --force", dir, EXE, CORA);
  cr_expect_eq(rc, 0, "%s", out);
  free(out);
  text = slurp_or_empty(path);
  cr_expect_eq(strncmp(text, "2708 5278\n", 10), 0, "header: %.20s", text);
  free(text);

  /* A write that fails (the file size limit, as a full disk would) leaves the
   * old file as it was and no temporary. */
  rc = pt_run(&out,
              "cd %s && echo keep > k.metis && (trap '' XFSZ; ulimit -f 16; %s --input %s "
              "--write-metis k.metis --force)",
              dir, EXE, CORA);
  EXPECT_ONE_ERROR(rc, out, "--write-metis k.metis", "write failed", "File too large");
  free(out);
  snprintf(path, sizeof path, "%s/k.metis", dir);
  text = slurp_or_empty(path);
  cr_expect_str_eq(text, "keep\n", "the old file was not kept");
  free(text);
  cr_expect_eq(count_entries(dir, "k.metis."), 0, "a temporary file was left");
  cr_expect_eq(count_entries(dir, "g.metis."), 0, "a temporary file was left");
  pt_remove_tree(dir);
  free(dir);
}

/* --json and --write-metis naming an input (the file, a --features file, a
 * hard link to it, a file inside an OGB folder) once overwrote it. */
Test(cli, outputs_that_are_inputs_are_refused) {
  char *dir = pt_temp_dir("cli"), *out = NULL, path[512];
  snprintf(path, sizeof path, "%s/g.txt", dir);
  write_text(path, "0 1\n1 2\n2 3\n3 0\n");
  snprintf(path, sizeof path, "%s/x.csv", dir);
  write_text(path, "1\n2\n3\n4\n");
  cr_assert_eq(pt_run(&out, "cd %s && ln g.txt h.txt && cp -r %s d", dir,
                      HALO_SOURCE_DIR "/tests/data/bad/ogb-good"),
               0, "%s", out);
  free(out);
  const struct {
    const char *args, *words[3];
  } cases[] = {
      {"--input g.txt --parts 2 --out o --json g.txt --force", {"--json g.txt", "input file"}},
      {"--input g.txt --write-metis ./g.txt --force", {"--write-metis ./g.txt", "input file"}},
      {"--input g.txt --parts 2 --out o --json h.txt --force", {"--json h.txt", "input file"}},
      {"--input g.txt --features x.csv --parts 2 --out o --json x.csv --force",
       {"--json x.csv", "--features file"}},
      {"--input d --parts 2 --out o --json d/edge.csv --force",
       {"--json d/edge.csv", "inside the input folder d"}},
      {"--input d --write-metis d/../d/node-feat.csv --force",
       {"--write-metis d/../d/node-feat.csv", "inside the input folder"}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = pt_run(&out, "cd %s && %s %s", dir, EXE, cases[i].args);
    EXPECT_ONE_ERROR(rc, out, cases[i].words[0], cases[i].words[1]);
    free(out);
    cr_expect_eq(count_entries(dir, "o"), 0, "%s: left an output folder", cases[i].args);
  }
  snprintf(path, sizeof path, "%s/g.txt", dir);
  char *text = slurp_or_empty(path);
  cr_expect_str_eq(text, "0 1\n1 2\n2 3\n3 0\n", "the input was overwritten");
  free(text);
  snprintf(path, sizeof path, "%s/d/edge.csv", dir);
  text = slurp_or_empty(path);
  cr_expect_eq(strncmp(text, "0,1\n", 4), 0, "the OGB folder was written: %.40s", text);
  free(text);

  /* Inside an existing --out DIR, the file would go with the old DIR. */
  int rc =
      pt_run(&out, "cd %s && mkdir o && %s --input g.txt --parts 2 --out o --force --json o/s.json",
             dir, EXE);
  EXPECT_ONE_ERROR(rc, out, "--json o/s.json", "inside the output folder o");
  free(out);
  cr_expect_eq(count_entries(dir, "o."), 0, "a temporary folder was left");

  /* A new file inside the input folder overwrites nothing. */
  rc = pt_run(&out, "cd %s && %s --input d --parts 2 --out o2 --json d/stats.json", dir, EXE);
  cr_expect_eq(rc, 0, "%s", out);
  free(out);
  pt_remove_tree(dir);
  free(dir);
}

/* --features, --labels and --synthetic-* are for structure-only inputs; on
 * an input with node data of its own they once replaced it silently. */
Test(cli, node_data_flags_on_inputs_that_have_node_data) {
  const char *ogb = HALO_SOURCE_DIR "/tests/data/bad/ogb-good";
  char args[1024];
  snprintf(args, sizeof args,
           "--input %s --synthetic-features 8 --synthetic-classes 3 --parts 2 --out o", CORA);
  expect_refused(args, "--synthetic-features");
  expect_refused(
      "--input sbm:nodes=50,feat=4 --synthetic-features 8 --synthetic-classes 3 --parts 2 --out o",
      "already has node data");
  snprintf(args, sizeof args, "--input %s --features %s/node-feat.csv --parts 2 --out o", ogb, ogb);
  expect_refused(args, "already has 3 features");
  snprintf(args, sizeof args, "--input %s --labels %s/node-label.csv --parts 2 --out o", ogb, ogb);
  expect_refused(args, "already has labels");
}

/* A --json that cannot be written once failed only after DIR was in place,
 * although nothing is to be left behind; and --out DIR/. failed only after
 * all the work, at the rename.  Both are refused before the input is read
 * (a missing input would be reported first otherwise). */
Test(cli, refused_outputs_leave_nothing_and_come_first) {
  char *dir = pt_temp_dir("cli"), *out = NULL;
  int rc = pt_run(&out, "cd %s && %s --input %s --parts 2 --out o --json %s", dir, EXE, CORA, dir);
  EXPECT_ONE_ERROR(rc, out, "--json", "not a regular file");
  free(out);
  cr_expect_eq(count_entries(dir, "o"), 0, "the output folder was left behind");
  const char *outs[] = {"o/.", "o/..", "o/./", "."};
  for (int i = 0; i < 4; i++) {
    rc = pt_run(&out,
                "cd %s && mkdir -p o && %s --input /nonexistent-halo-in.txt --parts 2 "
                "--out %s --force",
                dir, EXE, outs[i]);
    EXPECT_ONE_ERROR(rc, out, "--out", "name the output folder itself");
    free(out);
  }
  rc = pt_run(&out, "cd %s && %s --input %s --parts 2 --out o/. --force", dir, EXE, CORA);
  EXPECT_ONE_ERROR(rc, out, "--out o/.", "ends in '.'");
  free(out);
  cr_expect_eq(count_entries(dir, "o."), 0, "a temporary folder was left");
  pt_remove_tree(dir);
  free(dir);
}

/* --help lists every flag and every value of the enumerated ones. */
Test(cli, help_lists_every_flag_and_value) {
  char *out = NULL;
  cr_assert_eq(pt_run(&out, "%s --help", EXE), 0);
  char words[] =
      "--input --format --features --labels --header --nodes --classes --synthetic-features "
      "--synthetic-classes --parts "
      "--method --seed --ufactor --coarsen-levels --objective --order --out --force --dims --json "
      "--write-metis "
      "--help --version auto ogb edgelist snap mtx spec metis random block cut vol community yes "
      "no";
  char *save = NULL;
  for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save))
    cr_expect_not_null(strstr(out, w), "--help does not mention %s", w);
  free(out);
}
