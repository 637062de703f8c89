/* halo-partition's splits for any input (--split DIR, --synthetic-split,
 * --split-name) and its warnings about shards halo-train would refuse: the
 * real binary, its shards read back, each node's split compared with what
 * the files or the fractions say, computed here independently. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-graph.h"
#include "halo-rng.h"
#include "halo-shard.h"
#include "partition-util.h"

#define EXE HALO_PARTITION_EXE
#define BAD HALO_SOURCE_DIR "/tests/data/bad"

/* The split of every global node (HALO_SPLIT_*) and its label, gathered
 * from the P parts in dir; also checks that each node is owned once. */
static void read_splits(const char *dir, int parts, int64_t n, uint8_t *split, int32_t *label) {
  char path[4096];
  halo_manifest *m = NULL;
  snprintf(path, sizeof path, "%s/manifest.h5", dir);
  cr_assert_eq(halo_manifest_read(path, &m), HALO_OK, "%s", path);
  cr_assert_eq(m->nodes, n);
  memset(split, 0xff, (size_t)n);
  for (int p = 0; p < parts; p++) {
    halo_shard *s = NULL;
    cr_assert_eq(halo_shard_path(path, sizeof path, dir, p, parts), HALO_OK);
    cr_assert_eq(halo_shard_read(path, m, &s), HALO_OK, "%s", path);
    for (int64_t i = 0; i < s->n_owned; i++) {
      const int64_t v = s->global_id[i];
      cr_assert_eq(split[v], 0xff, "node %lld owned twice", (long long)v);
      split[v] = HALO_SPLIT_NONE;
      if (label) label[v] = s->labels ? s->labels[i] : -2;
    }
    const int64_t counts[3] = {s->n_train, s->n_valid, s->n_test};
    const int32_t *rows[3] = {s->train, s->valid, s->test};
    for (int k = 0; k < 3; k++)
      for (int64_t j = 0; j < counts[k]; j++) split[s->global_id[rows[k][j]]] = (uint8_t)(k + 1);
    halo_shard_destroy(&s);
  }
  for (int64_t v = 0; v < n; v++)
    cr_assert_neq(split[v], 0xff, "node %lld owned by no part", (long long)v);
  halo_manifest_destroy(&m);
}

/* SNAP ids 5, 7, 42, 1000 become nodes 0..3 in ascending order; the split
 * files name the ids of the file (train 1000 7, valid 42, test 5). */
Test(splits, snap_split_names_the_files_ids) {
  char *dir = pt_temp_dir("split-snap"), *out = NULL, od[512];
  snprintf(od, sizeof od, "%s/o", dir);
  int rc = pt_run(&out,
                  "%s --input %s/snap-sparse-ids.txt --split %s/snap-split --labels "
                  "%s/snap-sparse-ids-labels.csv --parts 2 --out %s",
                  EXE, BAD, BAD, BAD, od);
  cr_assert_eq(rc, 0, "%s", out);
  const int64_t file_ids[4] = {1000, 7, 42, 5}; /* as in the split files */
  const uint8_t want_of_file[4] = {HALO_SPLIT_TRAIN, HALO_SPLIT_TRAIN, HALO_SPLIT_VALID,
                                   HALO_SPLIT_TEST};
  const int64_t sorted[4] = {5, 7, 42, 1000};
  uint8_t split[4];
  int32_t label[4];
  read_splits(od, 2, 4, split, label);
  for (int k = 0; k < 4; k++) {
    int64_t v = 0;
    while (sorted[v] != file_ids[k]) v++;
    cr_expect_eq(split[v], want_of_file[k], "id %lld (node %lld): split %d, expected %d",
                 (long long)file_ids[k], (long long)v, split[v], want_of_file[k]);
  }
  const int32_t want_label[4] = {0, 1, 0, 1}; /* the labels file, in node order */
  for (int v = 0; v < 4; v++) cr_expect_eq(label[v], want_label[v], "node %d", v);
  free(out);
  pt_remove_tree(dir);
  free(dir);
}

/* --split-name picks one of two schemes; --split replaces the folder's own. */
Test(splits, split_name_and_split_folder_for_ogb) {
  char *dir = pt_temp_dir("split-ogb"), *out = NULL, od[512];
  const uint8_t time_split[5] = {1, 1, 2, 3, 3}, random_split[5] = {2, 3, 1, 1, 1};
  const char *args[2] = {"--split-name time", "--split " BAD "/ogb-two-splits/split/random"};
  const uint8_t *want[2] = {time_split, random_split};
  for (int k = 0; k < 2; k++) {
    snprintf(od, sizeof od, "%s/o%d", dir, k);
    int rc =
        pt_run(&out, "%s --input %s/ogb-two-splits %s --parts 2 --out %s", EXE, BAD, args[k], od);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    uint8_t split[5];
    read_splits(od, 2, 5, split, NULL);
    for (int v = 0; v < 5; v++)
      cr_expect_eq(split[v], want[k][v], "%s: node %d in split %d, expected %d", args[k], v,
                   split[v], want[k][v]);
  }
  pt_remove_tree(dir);
  free(dir);
}

/* The same split for P = 1 and P = 3 (keyed by global id), equal to the
 * rule of the docs evaluated here, about the fractions asked, and nodes
 * labelled -1 in no split. */
Test(splits, synthetic_split_is_keyed_by_global_id) {
  const uint64_t seed = pt_seed("synthetic_split", 29);
  const int64_t n = 4096;
  char *dir = pt_temp_dir("split-synth"), *out = NULL, path[512], od[512];
  snprintf(path, sizeof path, "%s/labels.csv", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  int32_t *want_label = malloc(sizeof(int32_t) * (size_t)n);
  for (int64_t v = 0; v < n; v++) {
    want_label[v] = v % 7 == 3 ? -1 : (int32_t)(halo_rng_mix(seed + (uint64_t)v) % 3);
    fprintf(f, "%d\n", want_label[v]);
  }
  fclose(f);
  uint8_t *split[2] = {malloc((size_t)n), malloc((size_t)n)};
  const int parts[2] = {1, 3};
  for (int k = 0; k < 2; k++) {
    snprintf(od, sizeof od, "%s/o%d", dir, k);
    int rc = pt_run(&out,
                    "%s --input rmat:scale=12,edge-factor=4,seed=2 --labels %s --synthetic-split "
                    "0.6,0.15,0.2 --seed %llu --method random --parts %d --out %s",
                    EXE, path, (unsigned long long)seed, parts[k], od);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    read_splits(od, parts[k], n, split[k], NULL);
  }
  int64_t count[4] = {0};
  const uint64_t key = halo_rng_key(seed, HALO_RNG_FEATURES, 5, 0);
  for (int64_t v = 0; v < n; v++) {
    cr_assert_eq(split[0][v], split[1][v], "node %lld: split %d at P=1, %d at P=3", (long long)v,
                 split[0][v], split[1][v]);
    const double u = halo_rng_uniform_double(key, (uint64_t)v, 0);
    const uint8_t want = want_label[v] < 0 ? HALO_SPLIT_NONE
                         : u < 0.6         ? HALO_SPLIT_TRAIN
                         : u < 0.75        ? HALO_SPLIT_VALID
                         : u < 0.95        ? HALO_SPLIT_TEST
                                           : HALO_SPLIT_NONE;
    cr_assert_eq(split[0][v], want, "node %lld: split %d, expected %d", (long long)v, split[0][v],
                 want);
    count[split[0][v]]++;
  }
  /* Labelled nodes: 6/7 of n; the fractions within 5 standard deviations. */
  const double labelled = (double)n * 6.0 / 7.0, frac[4] = {0.05, 0.6, 0.15, 0.2};
  for (int k = 1; k < 4; k++) {
    const double mean = labelled * frac[k], sd = sqrt(labelled * frac[k] * (1 - frac[k]));
    cr_expect(fabs((double)count[k] - mean) < 5 * sd, "split %d: %lld nodes, expected about %.0f",
              k, (long long)count[k], mean);
  }
  free(split[0]);
  free(split[1]);
  free(want_label);
  pt_remove_tree(dir);
  free(dir);
}

/* A structure-only input warns once per missing piece, naming the flag; a
 * complete dataset (Cora) gets no warning. */
Test(splits, warnings_for_shards_halo_train_refuses) {
  char *dir = pt_temp_dir("split-warn"), *out = NULL;
  int rc = pt_run(&out, "%s --input %s/snap-crlf.txt --parts 2 --out %s/o", EXE, BAD, dir);
  cr_assert_eq(rc, 0, "%s", out);
  const char *const want[3] = {
      "halo-partition: warning: " BAD
      "/snap-crlf.txt has no node features: halo-train will "
      "refuse these shards (give --features FILE or --synthetic-features F --synthetic-classes C)",
      "halo-partition: warning: " BAD
      "/snap-crlf.txt has no labels: halo-train will refuse to train on these "
      "shards (give --labels FILE or --synthetic-features F --synthetic-classes C; halo-train "
      "--eval-only --checkpoint FILE scores them)",
      "halo-partition: warning: " BAD
      "/snap-crlf.txt has no split: halo-train will refuse to train on these "
      "shards (no part has a train node; give --split DIR or --synthetic-split 0.6,0.2,0.2; "
      "halo-train --eval-only --checkpoint FILE scores them)"};
  for (int k = 0; k < 3; k++)
    cr_expect_not_null(strstr(out, want[k]), "no '%s' in:\n%s", want[k], out);
  free(out);
  rc = pt_run(&out, "%s --input %s/cora --parts 2 --out %s/c", EXE, HALO_DATASETS_DIR, dir);
  cr_assert_eq(rc, 0, "%s", out);
  cr_expect_null(strstr(out, "warning"), "Cora warned:\n%s", out);
  free(out);
  pt_remove_tree(dir);
  free(dir);
}
