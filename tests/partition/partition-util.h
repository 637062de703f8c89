/* Helpers shared by the partition tests: graphs built in memory, a slow
 * reference clean-up, independent plan checks and a CLI runner. */
#ifndef HALO_TEST_PARTITION_UTIL_H
#define HALO_TEST_PARTITION_UTIL_H

#include <stdint.h>

#include "halo-graph.h"
#include "halo-partition.h"

/* The seed of a randomized test: $HALO_TEST_SEED or `fallback`, printed. */
uint64_t pt_seed(const char *test, uint64_t fallback);

/* A graph with n nodes and the m directed edges (src[k], dst[k]) as given,
 * rows in input order (unsorted, duplicates and self-loops kept). */
halo_graph *pt_graph_from_edges(int64_t n, int64_t m, const int64_t *src, const int64_t *dst);

/* A random messy graph: about m edges drawn with the seed, a share of them
 * one-directional, duplicated or self-loops, some nodes isolated; features
 * (width 5), 3 classes and a split, all random. */
halo_graph *pt_graph_random(int64_t n, int64_t m, uint64_t seed);

/* Cora from datasets/cora (aborts the test if it cannot be read). */
halo_graph *pt_graph_cora(void);

/* A deep copy. */
halo_graph *pt_graph_copy(const halo_graph *g);

/* Reference clean-up with a dense n x n matrix (small n only): the expected
 * sorted symmetric simple graph, as a new graph without node data. */
halo_graph *pt_clean_dense(const halo_graph *g);

/* Checks every invariant of the P shards built from clean graph g and
 * part[] with owned-row order `order` against brute-force references
 * computed from g alone; reports failures through Criterion. */
void pt_check_shards(const halo_graph *g, const int32_t *part, int32_t parts, halo_order order,
                     halo_shard **shards);

/* Builds all shards of a partition (in memory) in `order` and checks them. */
void pt_build_and_check(const halo_graph *g, const int32_t *part, int32_t parts, halo_order order);

/* part[] of clean g by `method` into `parts` with `seed` (the other options
 * the defaults), as a new array; fails the test when the method does. */
int32_t *pt_partition(halo_graph *g, halo_method method, int32_t parts, int64_t seed);

/* Edge cut of part[] on clean g: undirected edges across parts. */
int64_t pt_edge_cut(const halo_graph *g, const int32_t *part);

/* Runs a shell command line; returns its exit status (or -1) and stores
 * stdout+stderr, NUL-terminated, in a new *output. */
int pt_run(char **output, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The number after "key": in a JSON text, or fails the test. */
double pt_json_number(const char *json, const char *key);

/* Reads a whole file into a new NUL-terminated string (NULL if missing). */
char *pt_read_file(const char *path);

/* A fresh empty folder under /tmp for one test (the caller removes it). */
char *pt_temp_dir(const char *tag);

/* rm -rf of a test folder made by pt_temp_dir. */
void pt_remove_tree(const char *dir);

#endif /* HALO_TEST_PARTITION_UTIL_H */
