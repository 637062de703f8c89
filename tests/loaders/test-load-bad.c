/* Bad input: each case gives a negative status and exactly one stderr line
 * naming the file and line (or the key) and what is wrong. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "halo-memory.h"
#include "loader-test.h"

/* A valid 5-node OGB folder in scratch `dir`; the test then spoils one file. */
static const char *good_ogb(const char *dir) {
  static char path[512];
  char name[256];
  static const char *const FILES[][2] = {
      {"num-node-list.csv", "5\n"},
      {"edge.csv", "0,1\n1,2\n2,3\n3,4\n"},
      {"node-feat.csv", "1,2,3\n4,5,6\n7,8,9\n1,1,1\n0,0,0\n"},
      {"node-label.csv", "0\n1\n2\n0\n1\n"},
      {"split/train.csv", "0\n1\n"},
      {"split/valid.csv", "2\n"},
      {"split/test.csv", "3\n4\n"},
  };
  for (size_t k = 0; k < sizeof FILES / sizeof FILES[0]; k++) {
    snprintf(name, sizeof name, "%s/%s", dir, FILES[k][0]);
    scratch_write(name, FILES[k][1]);
  }
  snprintf(path, sizeof path, "%s/%s", scratch_dir(), dir);
  return path;
}

/* Replaces file `name` of the folder and returns the folder path. */
static const char *spoil(const char *dir, const char *name, const char *text) {
  const char *path = good_ogb(dir);
  char file[256];
  snprintf(file, sizeof file, "%s/%s", dir, name);
  scratch_write(file, text);
  return path;
}

Test(bad_ogb, good_folder_loads) {
  halo_graph *g = NULL;
  cr_assert_eq(halo_load(good_ogb("ok"), HALO_FORMAT_OGB, &g), HALO_OK);
  cr_expect_eq(g->n, 5);
  halo_graph_destroy(&g);
}

Test(bad_ogb, missing_folder) {
  EXPECT_LOAD_ERROR("/nonexistent/halo/folder", HALO_FORMAT_OGB, HALO_ERR_IO,
                    "/nonexistent/halo/folder", "not a folder");
}

Test(bad_ogb, missing_edge_file) {
  scratch_write("e/num-node-list.csv", "3\n");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/e", scratch_dir());
  EXPECT_LOAD_ERROR(dir, HALO_FORMAT_OGB, HALO_ERR_IO, "no edge.csv", "not an OGB dataset folder");
}

Test(bad_ogb, missing_node_count) {
  scratch_write("c/edge.csv", "0,1\n");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/c", scratch_dir());
  EXPECT_LOAD_ERROR(dir, HALO_FORMAT_OGB, HALO_ERR_IO, "num-node-list.csv[.gz]", "missing");
}

/* An empty edge.csv is no error: num-node-list.csv gives the nodes, and the
 * graph is theirs without edges (docs/partition.md, "Graphs without
 * edges"); test-load-formats checks it loads.  Its count file may not be
 * empty. */
Test(bad_ogb, empty_node_count_file) {
  EXPECT_LOAD_ERROR(spoil("d", "num-node-list.csv", ""), HALO_FORMAT_OGB, HALO_ERR_PARSE,
                    "num-node-list.csv: file is empty");
}

Test(bad_ogb, empty_gzip_file) {
  const char *dir = good_ogb("d");
  scratch_write("d/node-label.csv.gz", "");
  EXPECT_LOAD_ERROR(dir, HALO_FORMAT_OGB, HALO_ERR_PARSE, "node-label.csv.gz: file is empty");
}

Test(bad_ogb, non_numeric_edge) {
  EXPECT_LOAD_ERROR(spoil("d", "edge.csv", "0,1\n0,x1\n"), HALO_FORMAT_OGB, HALO_ERR_PARSE,
                    "edge.csv:2:", "'x1' is not a node id");
}

Test(bad_ogb, edge_row_with_three_columns) {
  EXPECT_LOAD_ERROR(spoil("d", "edge.csv", "0,1\n1,2\n2,3,4\n"), HALO_FORMAT_OGB, HALO_ERR_PARSE,
                    "edge.csv:3:", "expected 2 columns", "found 3");
}

Test(bad_ogb, edge_row_with_one_column) {
  EXPECT_LOAD_ERROR(spoil("d", "edge.csv", "0\n"), HALO_FORMAT_OGB, HALO_ERR_PARSE,
                    "edge.csv:1:", "expected 2 columns", "found 1");
}

Test(bad_ogb, node_id_at_node_count) {
  EXPECT_LOAD_ERROR(spoil("d", "edge.csv", "0,1\n4,5\n"), HALO_FORMAT_OGB, HALO_ERR_RANGE,
                    "edge.csv:2:", "node id 5 is out of range [0, 5)");
}

Test(bad_ogb, negative_node_id) {
  EXPECT_LOAD_ERROR(spoil("d", "edge.csv", "-1,1\n"), HALO_FORMAT_OGB, HALO_ERR_RANGE,
                    "edge.csv:1:", "node id -1 is out of range");
}

Test(bad_ogb, feature_rows_of_unequal_length) {
  EXPECT_LOAD_ERROR(spoil("d", "node-feat.csv", "1,2,3\n4,5,6\n7,8\n1,1,1\n0,0,0\n"),
                    HALO_FORMAT_OGB, HALO_ERR_PARSE,
                    "node-feat.csv:3:", "row has 2 values, expected 3");
  EXPECT_LOAD_ERROR(spoil("d2", "node-feat.csv", "1,2,3\n4,5,6,7\n"), HALO_FORMAT_OGB,
                    HALO_ERR_PARSE, "node-feat.csv:2:", "row has 4 values, expected 3");
}

Test(bad_ogb, nan_feature) {
  EXPECT_LOAD_ERROR(spoil("d", "node-feat.csv", "1,2,3\n4,nan,6\n7,8,9\n1,1,1\n0,0,0\n"),
                    HALO_FORMAT_OGB, HALO_ERR_RANGE, "node-feat.csv:2:", "feature 2 is 'nan'",
                    "NaN and Inf");
}

Test(bad_ogb, inf_feature) {
  EXPECT_LOAD_ERROR(spoil("d", "node-feat.csv", "1,2,3\n4,5,6\n7,8,-inf\n1,1,1\n0,0,0\n"),
                    HALO_FORMAT_OGB, HALO_ERR_RANGE, "node-feat.csv:3:", "feature 3 is '-inf'");
  /* Too large for a float is infinite as well. */
  EXPECT_LOAD_ERROR(spoil("d2", "node-feat.csv", "1,2,3\n4,5,6\n7,8,9\n1e39,1,1\n0,0,0\n"),
                    HALO_FORMAT_OGB, HALO_ERR_RANGE, "node-feat.csv:4:", "feature 1 is '1e39'");
}

Test(bad_ogb, non_numeric_feature) {
  EXPECT_LOAD_ERROR(spoil("d", "node-feat.csv", "1,2,3\n4,5,6\n7,8,9\n1,abc,1\n0,0,0\n"),
                    HALO_FORMAT_OGB, HALO_ERR_PARSE, "node-feat.csv:4:", "'abc' is not a number");
  EXPECT_LOAD_ERROR(spoil("d2", "node-feat.csv", "1,2,3\n4,,6\n"), HALO_FORMAT_OGB, HALO_ERR_PARSE,
                    "node-feat.csv:2:", "missing value");
}

Test(bad_ogb, too_few_feature_rows) {
  EXPECT_LOAD_ERROR(spoil("d", "node-feat.csv", "1,2,3\n4,5,6\n"), HALO_FORMAT_OGB,
                    HALO_ERR_MISMATCH,
                    "node-feat.csv:2:", "2 feature rows, but the graph has 5 nodes");
}

Test(bad_ogb, label_below_minus_one) {
  EXPECT_LOAD_ERROR(spoil("d", "node-label.csv", "0\n1\n-2\n0\n1\n"), HALO_FORMAT_OGB,
                    HALO_ERR_RANGE, "node-label.csv:3:", "label -2 is out of range");
}

Test(bad_ogb, label_not_integral) {
  EXPECT_LOAD_ERROR(spoil("d", "node-label.csv", "0\n1.5\n"), HALO_FORMAT_OGB, HALO_ERR_PARSE,
                    "node-label.csv:2:", "'1.5' is not an integer class label");
}

Test(bad_ogb, too_many_labels) {
  EXPECT_LOAD_ERROR(spoil("d", "node-label.csv", "0\n1\n2\n0\n1\n1\n"), HALO_FORMAT_OGB,
                    HALO_ERR_MISMATCH, "node-label.csv:6:", "more labels than the 5 nodes");
}

Test(bad_ogb, split_id_out_of_range) {
  EXPECT_LOAD_ERROR(spoil("d", "split/valid.csv", "2\n9\n"), HALO_FORMAT_OGB, HALO_ERR_RANGE,
                    "split/valid.csv:2:", "node id 9 is out of range [0, 5)");
}

Test(bad_ogb, split_id_repeated_in_one_file) {
  EXPECT_LOAD_ERROR(spoil("d", "split/train.csv", "0\n1\n0\n"), HALO_FORMAT_OGB, HALO_ERR_PARSE,
                    "split/train.csv:3:", "node 0 is repeated in the train split");
}

Test(bad_ogb, split_id_in_two_splits) {
  EXPECT_LOAD_ERROR(spoil("d", "split/test.csv", "3\n1\n"), HALO_FORMAT_OGB, HALO_ERR_PARSE,
                    "split/test.csv:2:", "node 1 is repeated", "already in the train split");
}

Test(bad_ogb, split_file_missing) {
  const char *dir = good_ogb("d");
  char path[600]; /* the folder (up to 511 bytes) and the file name */
  snprintf(path, sizeof path, "%s/split/valid.csv", dir);
  remove(path);
  EXPECT_LOAD_ERROR(dir, HALO_FORMAT_OGB, HALO_ERR_IO, "split/valid.csv[.gz]: missing");
}

Test(bad_ogb, split_folder_ambiguous) {
  const char *dir = good_ogb("d");
  scratch_write("d2/num-node-list.csv", "1\n");
  scratch_write("d2/edge.csv", "0,0\n");
  scratch_write("d2/split/time/train.csv", "0\n");
  scratch_write("d2/split/random/train.csv", "0\n");
  (void)dir;
  char d2[512];
  snprintf(d2, sizeof d2, "%s/d2", scratch_dir());
  EXPECT_LOAD_ERROR(d2, HALO_FORMAT_OGB, HALO_ERR_FORMAT, "d2/split: holds 2 split schemes (",
                    "random", "time", "); pick one with --split-name NAME");
  /* Named: the one asked for is read; an unknown name lists the others. */
  scratch_write("d2/num-node-list.csv", "3\n");
  scratch_write("d2/split/time/valid.csv", "1\n");
  scratch_write("d2/split/time/test.csv", "2\n");
  halo_graph *g = NULL;
  halo_load_options opt = {.split_name = "nosuch"};
  halo_log_set_quiet(1);
  cr_expect_eq(halo_load_opts(d2, HALO_FORMAT_OGB, &opt, &g), HALO_ERR_ARG);
  halo_log_set_quiet(0);
  opt.split_name = "random";
  halo_log_set_quiet(1);
  cr_expect_eq(halo_load_opts(d2, HALO_FORMAT_OGB, &opt, &g), HALO_ERR_IO, "random has no valid");
  halo_log_set_quiet(0);
  opt.split_name = "time";
  cr_assert_eq(halo_load_opts(d2, HALO_FORMAT_OGB, &opt, &g), HALO_OK);
  cr_expect_eq(g->split[0], HALO_SPLIT_TRAIN);
  cr_expect_eq(g->split[1], HALO_SPLIT_VALID);
  cr_expect_eq(g->split[2], HALO_SPLIT_TEST);
  halo_graph_destroy(&g);
}

/* A gzip stream cut short, and one with a flipped byte (CRC mismatch). */
static const char *gz_bytes(size_t *len) {
  const char *plain =
      scratch_write("whole.csv.gz", "0,1\n1,2\n2,3\n3,4\n4,0\n0,2\n1,3\n2,4\n3,0\n4,1\n");
  return read_all(plain, len);
}

Test(bad_ogb, truncated_gzip) {
  size_t len;
  char *bytes = (char *)gz_bytes(&len);
  const char *dir = good_ogb("d");
  scratch_write_bytes("d/edge.csv.gz", bytes, len - 6);
  EXPECT_LOAD_ERROR(dir, HALO_FORMAT_OGB, HALO_ERR_CORRUPT,
                    "edge.csv.gz:", "truncated or corrupt gzip data");
  /* Cut in the middle of the deflate stream too. */
  scratch_write_bytes("d/edge.csv.gz", bytes, len / 2);
  EXPECT_LOAD_ERROR(dir, HALO_FORMAT_OGB, HALO_ERR_CORRUPT,
                    "edge.csv.gz:", "truncated or corrupt gzip data");
  free(bytes);
}

Test(bad_ogb, corrupt_gzip) {
  size_t len;
  char *bytes = (char *)gz_bytes(&len);
  bytes[len - 5] ^= 0x40; /* inside the stored length/CRC trailer */
  const char *dir = good_ogb("d");
  scratch_write_bytes("d/edge.csv.gz", bytes, len);
  EXPECT_LOAD_ERROR(dir, HALO_FORMAT_OGB, HALO_ERR_CORRUPT, "edge.csv.gz",
                    "truncated or corrupt gzip data");
  free(bytes);
}

/* zlib's gzread ignores whatever follows the last gzip member, so an edge
 * appended to a .gz file in plain text was dropped without a word.  Members
 * one after the other (cat a.gz b.gz) are gzip, and are read. */
Test(bad_gzip, data_after_the_last_member) {
  size_t len1, len2;
  char *one = read_all(scratch_write("one.txt.gz", "0 1\n1 2\n"), &len1);
  char *two = read_all(scratch_write("two.txt.gz", "2 3\n"), &len2);
  char *both = malloc(len1 + len2 + 16);
  memcpy(both, one, len1);
  memcpy(both + len1, two, len2);
  halo_graph *g = NULL;
  cr_assert_eq(
      halo_load(scratch_write_bytes("both.txt.gz", both, len1 + len2), HALO_FORMAT_EDGELIST, &g),
      HALO_OK);
  cr_expect_eq(g->n, 4, "the second member's edge was read");
  cr_expect_eq(g->m, 3);
  halo_graph_destroy(&g);

  memcpy(both + len1, "5 6\n", 4);
  EXPECT_LOAD_ERROR(scratch_write_bytes("tail.txt.gz", both, len1 + 4), HALO_FORMAT_EDGELIST,
                    HALO_ERR_CORRUPT, "tail.txt.gz: data after the end of the gzip stream");
  /* One stray byte is not another member either. */
  EXPECT_LOAD_ERROR(scratch_write_bytes("byte.txt.gz", both, len1 + 1), HALO_FORMAT_EDGELIST,
                    HALO_ERR_CORRUPT, "byte.txt.gz: data after the end of the gzip stream");
  /* Zero padding to the end (a block device, tape) is accepted, as gzip(1)
   * accepts it; zeros followed by data are not padding. */
  memset(both + len1, 0, 16);
  cr_assert_eq(
      halo_load(scratch_write_bytes("zeros.txt.gz", both, len1 + 16), HALO_FORMAT_EDGELIST, &g),
      HALO_OK);
  cr_expect_eq(g->m, 2, "zero padding changed the graph");
  halo_graph_destroy(&g);
  both[len1 + 15] = '7';
  EXPECT_LOAD_ERROR(scratch_write_bytes("zeros7.txt.gz", both, len1 + 16), HALO_FORMAT_EDGELIST,
                    HALO_ERR_CORRUPT, "zeros7.txt.gz: data after the end of the gzip stream");
  /* A second member cut short is truncated, not trailing data. */
  memcpy(both + len1, two, len2);
  EXPECT_LOAD_ERROR(scratch_write_bytes("cut.txt.gz", both, len1 + len2 - 3), HALO_FORMAT_EDGELIST,
                    HALO_ERR_CORRUPT, "cut.txt.gz: truncated or corrupt gzip data");
  free(both);
  free(two);
  free(one);
}

Test(bad_ogb, heterogeneous_node_count) {
  EXPECT_LOAD_ERROR(spoil("d", "num-node-list.csv", "5\n7\n"), HALO_FORMAT_OGB,
                    HALO_ERR_UNSUPPORTED, "num-node-list.csv:2:", "heterogeneous");
}

Test(bad_ogb, more_nodes_than_the_loaders_take) {
  EXPECT_LOAD_ERROR(spoil("d", "num-node-list.csv", "5000000000\n"), HALO_FORMAT_OGB,
                    HALO_ERR_LIMIT,
                    "num-node-list.csv: 5000000000 nodes exceed the loaders' limit of 2^32");
}

/* ---- SNAP edge lists ---------------------------------------------------- */

#define MM_PATTERN "%%MatrixMarket matrix coordinate pattern general\n"

Test(bad_edgelist, missing_file) {
  EXPECT_LOAD_ERROR("/nonexistent/graph.txt", HALO_FORMAT_AUTO, HALO_ERR_IO,
                    "/nonexistent/graph.txt", "cannot open");
}

/* An edge list names its nodes only through its edges: without edges it
 * has no nodes, and the line says so, whether the file is empty, blank or
 * comments alone (gzip-compressed too). */
Test(bad_edgelist, empty_file) {
  EXPECT_LOAD_ERROR(scratch_write("e.txt", ""), HALO_FORMAT_EDGELIST, HALO_ERR_PARSE,
                    "e.txt: holds no edges, and hence no nodes");
}

Test(bad_edgelist, only_comments) {
  EXPECT_LOAD_ERROR(scratch_write("c.txt", "# nothing\n\n# here\n"), HALO_FORMAT_EDGELIST,
                    HALO_ERR_PARSE, "c.txt: holds no edges, and hence no nodes");
  EXPECT_LOAD_ERROR(scratch_write("c.txt.gz", "# nothing\n"), HALO_FORMAT_AUTO, HALO_ERR_PARSE,
                    "c.txt.gz: holds no edges, and hence no nodes");
  EXPECT_LOAD_ERROR(scratch_write("b.txt", " \t\n\r\n"), HALO_FORMAT_AUTO, HALO_ERR_PARSE,
                    "b.txt: holds no edges, and hence no nodes");
}

Test(bad_edgelist, negative_id) {
  EXPECT_LOAD_ERROR(scratch_write("n.txt", "# x\n1 2\n2 -3\n"), HALO_FORMAT_EDGELIST,
                    HALO_ERR_RANGE, "n.txt:3:", "node id -3 is out of range");
}

Test(bad_edgelist, id_above_int64) {
  EXPECT_LOAD_ERROR(scratch_write("big.txt", "9223372036854775807 1\n9223372036854775808 1\n"),
                    HALO_FORMAT_EDGELIST, HALO_ERR_RANGE,
                    "big.txt:2:", "node id 9223372036854775808 is out of range");
}

Test(bad_edgelist, non_numeric) {
  EXPECT_LOAD_ERROR(scratch_write("a.txt", "1 2\n1 abc\n"), HALO_FORMAT_EDGELIST, HALO_ERR_PARSE,
                    "a.txt:2:", "'abc' is not a node id");
  EXPECT_LOAD_ERROR(scratch_write("b.txt", "1 2x\n"), HALO_FORMAT_EDGELIST, HALO_ERR_PARSE,
                    "b.txt:1:", "'2x' is not a node id");
}

/* A CSV-style line in an edge list is read (test-load-text.c); in Matrix
 * Market the whole token is quoted, and the wrong separator named. */
Test(bad_edgelist, comma_in_matrix_market) {
  EXPECT_LOAD_ERROR(scratch_write("c.mtx", MM_PATTERN "2 2 1\n1,2\n"), HALO_FORMAT_AUTO,
                    HALO_ERR_PARSE, "c.mtx:3:", "'1,2' is not an index", "expected spaces or tabs");
}

Test(bad_edgelist, wrong_column_count) {
  EXPECT_LOAD_ERROR(scratch_write("w.txt", "1 2\n1 2 3 4\n"), HALO_FORMAT_EDGELIST,
                    HALO_ERR_PARSE, "w.txt:2:", "expected 2 node ids, found 4");
  EXPECT_LOAD_ERROR(scratch_write("w1.txt", "1 2\r\n7\r\n"), HALO_FORMAT_EDGELIST, HALO_ERR_PARSE,
                    "w1.txt:2:", "expected 2 node ids, found 1");
}

/* A third column is the weight (docs/partition.md, "Edge weights"): the
 * first edge line decides, and every line keeps its count; a weight that
 * is not a finite number >= 0 is refused at its line. */
Test(bad_edgelist, weights_of_a_third_column) {
  const char *const lines[] = {"0 1\n1 2 3\n", "0 1 1\n1\t2\n", "# w\n0 1 x\n",
                               "0 1 2\n1 2 -0.5\n", "0 1 nan\n", "0 1 1\n1 2 -inf\n"};
  const char *const want[][2] = {{"w3a.txt:2:", "3 values, but the first edge line has 2"},
                                 {"w3b.txt:2:", "2 values, but the first edge line has 3"},
                                 {"w3c.txt:2:", "'x' is not an edge weight"},
                                 {"w3d.txt:2:", "edge weight -0.5 is negative"},
                                 {"w3e.txt:1:", "edge weight nan is NaN"},
                                 {"w3f.txt:2:", "edge weight -inf is infinite"}};
  const halo_status code[] = {HALO_ERR_PARSE, HALO_ERR_PARSE, HALO_ERR_PARSE,
                              HALO_ERR_RANGE, HALO_ERR_RANGE, HALO_ERR_RANGE};
  for (int k = 0; k < 6; k++) {
    char name[16];
    snprintf(name, sizeof name, "w3%c.txt", 'a' + k);
    EXPECT_LOAD_ERROR(scratch_write(name, lines[k]), HALO_FORMAT_EDGELIST, code[k], want[k][0],
                      want[k][1]);
  }
  /* A weighted list: its weights, in the CSR's order (rows by source, each
   * by destination, then weight), repeats kept for the clean-up to sum. */
  halo_graph *g = NULL;
  cr_assert_eq(halo_load(scratch_write("w3g.txt", "# weighted\n2 0 0.5\n0 1 2\n0 1 0.25\n1 2 0\n"),
                         HALO_FORMAT_EDGELIST, &g),
               HALO_OK);
  cr_assert(g->edge_weight);
  const int64_t indptr[] = {0, 2, 3, 4}, indices[] = {1, 1, 2, 0};
  const float weight[] = {0.25f, 2.0f, 0.0f, 0.5f};
  expect_csr(g, 3, indptr, 4, indices);
  for (int k = 0; k < 4; k++) cr_expect_eq(g->edge_weight[k], weight[k], "weight %d", k);
  halo_graph_destroy(&g);
}

/* ---- Matrix Market -------------------------------------------------------- */

#define MM_REAL "%%MatrixMarket matrix coordinate real general\n"

Test(bad_mtx, fewer_entries_than_declared) {
  EXPECT_LOAD_ERROR(scratch_write("f.mtx", MM_REAL "4 4 3\n1 2 1.0\n2 3 1.0\n"), HALO_FORMAT_AUTO,
                    HALO_ERR_FORMAT, "f.mtx:4:", "file ends after 2 entries",
                    "size line (line 2) declares 3");
}

Test(bad_mtx, more_entries_than_declared) {
  EXPECT_LOAD_ERROR(scratch_write("m.mtx", MM_REAL "% c\n4 4 2\n1 2 1.0\n2 3 1.0\n3 4 1.0\n"),
                    HALO_FORMAT_AUTO, HALO_ERR_FORMAT,
                    "m.mtx:6:", "more entries than the 2 declared", "line 3");
}

Test(bad_mtx, index_beyond_size) {
  EXPECT_LOAD_ERROR(scratch_write("i.mtx", MM_REAL "4 4 2\n1 2 1.0\n5 3 1.0\n"), HALO_FORMAT_AUTO,
                    HALO_ERR_RANGE, "i.mtx:4:", "row index 5 is out of range [1, 4]");
  EXPECT_LOAD_ERROR(scratch_write("z.mtx", MM_REAL "4 4 1\n1 0 1.0\n"), HALO_FORMAT_AUTO,
                    HALO_ERR_RANGE, "z.mtx:3:", "column index 0 is out of range [1, 4]");
}

Test(bad_mtx, not_square) {
  EXPECT_LOAD_ERROR(scratch_write("r.mtx", MM_REAL "4 5 1\n1 2 1.0\n"), HALO_FORMAT_AUTO,
                    HALO_ERR_FORMAT, "r.mtx:2:", "4 x 5", "square");
}

Test(bad_mtx, bad_banner) {
  EXPECT_LOAD_ERROR(scratch_write("b.mtx", "4 4 1\n1 2\n"), HALO_FORMAT_AUTO, HALO_ERR_FORMAT,
                    "b.mtx:1:", "not a Matrix Market file");
  EXPECT_LOAD_ERROR(
      scratch_write("a.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n"),
      HALO_FORMAT_AUTO, HALO_ERR_UNSUPPORTED, "a.mtx:1:", "'array'", "coordinate");
  EXPECT_LOAD_ERROR(
      scratch_write("h.mtx", "%%MatrixMarket matrix coordinate complex hermitian\n1 1 0\n"),
      HALO_FORMAT_AUTO, HALO_ERR_UNSUPPORTED, "h.mtx:1:", "field 'complex'");
}

Test(bad_mtx, value_column) {
  EXPECT_LOAD_ERROR(scratch_write("v.mtx", MM_REAL "2 2 1\n1 2\n"), HALO_FORMAT_AUTO,
                    HALO_ERR_PARSE, "v.mtx:3:", "expected 3 columns", "found 2");
  EXPECT_LOAD_ERROR(
      scratch_write("p.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2 3\n"),
      HALO_FORMAT_AUTO, HALO_ERR_PARSE, "p.mtx:3:", "expected 2 columns", "found 3");
  EXPECT_LOAD_ERROR(scratch_write("q.mtx", MM_REAL "2 2 1\n1 2 x\n"), HALO_FORMAT_AUTO,
                    HALO_ERR_PARSE, "q.mtx:3:", "'x' is not a real value");
}

/* A value other than 1 makes a weighted graph; a file of ones (even
 * "1.00000001" is not one) is unweighted; a negative, NaN or infinite
 * value is refused at its line. */
Test(bad_mtx, weights) {
  halo_graph *g = NULL;
  cr_assert_eq(halo_load(scratch_write("w1.mtx", MM_REAL "3 3 2\n1 2 1\n2 3 0.5\n"),
                         HALO_FORMAT_AUTO, &g),
               HALO_OK);
  cr_assert(g->edge_weight, "a real file with a value other than 1 is weighted");
  cr_expect_eq(g->edge_weight[0], 1.0f);
  cr_expect_eq(g->edge_weight[1], 0.5f);
  halo_graph_destroy(&g);
  cr_assert_eq(halo_load(scratch_write("w2.mtx", MM_REAL "3 3 1\n1 2 1.00000001\n"),
                         HALO_FORMAT_AUTO, &g),
               HALO_OK);
  cr_expect(g->edge_weight, "1.00000001 is a weight");
  halo_graph_destroy(&g);
  cr_assert_eq(halo_load(scratch_write("w3.mtx", "%%MatrixMarket matrix coordinate integer "
                                                 "symmetric\n3 3 2\n2 1 1\n3 1 2\n"),
                         HALO_FORMAT_AUTO, &g),
               HALO_OK);
  /* Both directions of a symmetric file's entry carry its value. */
  const int64_t indptr[] = {0, 2, 3, 4}, indices[] = {1, 2, 0, 0};
  const float weight[] = {1.0f, 2.0f, 1.0f, 2.0f};
  expect_csr(g, 3, indptr, 4, indices);
  for (int k = 0; k < 4; k++) cr_expect_eq(g->edge_weight[k], weight[k], "weight %d", k);
  halo_graph_destroy(&g);
  EXPECT_LOAD_ERROR(scratch_write("w4.mtx", MM_REAL "3 3 1\n1 2 -1\n"), HALO_FORMAT_AUTO,
                    HALO_ERR_RANGE, "w4.mtx:3:", "edge weight -1 is negative");
  EXPECT_LOAD_ERROR(scratch_write("w5.mtx", MM_REAL "3 3 2\n1 2 0\n2 3 nan\n"), HALO_FORMAT_AUTO,
                    HALO_ERR_RANGE, "w5.mtx:4:", "edge weight nan is NaN");
  EXPECT_LOAD_ERROR(scratch_write("w6.mtx", MM_REAL "3 3 1\n1 2 1e39\n"), HALO_FORMAT_AUTO,
                    HALO_ERR_RANGE, "w6.mtx:3:", "edge weight 1e39 is infinite");
}

Test(bad_mtx, more_rows_than_the_loaders_take) {
  EXPECT_LOAD_ERROR(scratch_write("l.mtx", MM_REAL "5000000000 5000000000 1\n1 1 1\n"),
                    HALO_FORMAT_AUTO, HALO_ERR_LIMIT, "l.mtx:2:", "5000000000 rows exceed");
}

/* A size line of 2e9 rows needs 16 GB of row offsets: refused at the size
 * line when memory is short, and when the allocation itself fails the line
 * names the file and the size, not only "graph row offsets". */
Test(bad_mtx, rows_beyond_memory) {
  const char *path = scratch_write("big.mtx", MM_PATTERN "2000000000 2000000000 1\n1 2\n");
  halo_memory_set_available(1000000000);
  EXPECT_LOAD_ERROR(path, HALO_FORMAT_AUTO, HALO_ERR_NOMEM, "big.mtx:2:", "2000000000 nodes",
                    "16.0 GB", "1.0 GB of memory is available");
  halo_memory_set_available(-1);
}

Test(bad_mtx, rows_beyond_the_address_space_limit) {
#if defined(__SANITIZE_ADDRESS__)
  cr_skip_test("AddressSanitizer needs more address space than the limit this test sets");
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  cr_skip_test("AddressSanitizer needs more address space than the limit this test sets");
#endif
#endif
  const char *path = scratch_write("huge.mtx", MM_PATTERN "2000000000 2000000000 1\n1 2\n");
  halo_memory_set_available(100000000000000); /* past the admission check */
  struct rlimit limit = {.rlim_cur = (rlim_t)4 << 30, .rlim_max = RLIM_INFINITY};
  cr_assert_eq(setrlimit(RLIMIT_AS, &limit), 0); /* this test's own process */
  EXPECT_LOAD_ERROR(path, HALO_FORMAT_AUTO, HALO_ERR_NOMEM, "huge.mtx:", "out of memory",
                    "row offsets of 2000000000 nodes", "16.0 GB");
  halo_memory_set_available(-1);
}

Test(bad_mtx, no_size_line) {
  EXPECT_LOAD_ERROR(scratch_write("s.mtx", MM_REAL "% only a comment\n"), HALO_FORMAT_AUTO,
                    HALO_ERR_FORMAT, "s.mtx:2:", "no size line");
}

/* ---- Specs and format names ---------------------------------------------- */

Test(bad_spec, unknown_key) {
  EXPECT_LOAD_ERROR("sbm:nodes=10,colors=3", HALO_FORMAT_AUTO, HALO_ERR_ARG,
                    "sbm: unknown key 'colors'", "known: nodes, classes");
}

Test(bad_spec, bad_values) {
  EXPECT_LOAD_ERROR("sbm:nodes=100,homophily=1.5", HALO_FORMAT_SPEC, HALO_ERR_RANGE,
                    "sbm: homophily=1.5 is out of range [0, 1]");
  EXPECT_LOAD_ERROR("sbm:nodes=abc", HALO_FORMAT_SPEC, HALO_ERR_ARG,
                    "sbm: nodes=abc is not an integer");
  EXPECT_LOAD_ERROR("sbm:nodes=10,avg-degree=x", HALO_FORMAT_SPEC, HALO_ERR_ARG,
                    "avg-degree=x is not a number");
  EXPECT_LOAD_ERROR("rmat:scale=0", HALO_FORMAT_SPEC, HALO_ERR_RANGE,
                    "rmat: scale=0 is out of range");
  EXPECT_LOAD_ERROR("rmat:scale=4,a=0.5,b=0.5,c=0.5", HALO_FORMAT_SPEC, HALO_ERR_RANGE,
                    "rmat: a+b+c");
  EXPECT_LOAD_ERROR("sbm:nodes=10,train=0.7,valid=0.5", HALO_FORMAT_SPEC, HALO_ERR_RANGE,
                    "sbm: train=0.7", "valid=0.5");
  EXPECT_LOAD_ERROR("sbm:nodes=10,seed=1,seed=2", HALO_FORMAT_SPEC, HALO_ERR_ARG,
                    "key 'seed' is given twice");
  EXPECT_LOAD_ERROR("sbm:nodes=10,,seed=2", HALO_FORMAT_SPEC, HALO_ERR_ARG, "sbm: empty item");
  EXPECT_LOAD_ERROR("sbm:nodes", HALO_FORMAT_SPEC, HALO_ERR_ARG, "sbm: 'nodes' is not key=value");
}

Test(bad_spec, missing_required_key) {
  EXPECT_LOAD_ERROR("sbm:classes=3", HALO_FORMAT_SPEC, HALO_ERR_ARG, "sbm: nodes= is required");
  EXPECT_LOAD_ERROR("rmat:seed=3", HALO_FORMAT_SPEC, HALO_ERR_ARG, "rmat: scale= is required");
}

Test(bad_spec, unknown_generator) {
  EXPECT_LOAD_ERROR("er:nodes=10", HALO_FORMAT_SPEC, HALO_ERR_ARG, "er: unknown generator",
                    "sbm, rmat");
}

Test(bad_spec, unknown_format_name) {
  halo_format f = HALO_FORMAT_AUTO;
  capture_begin();
  halo_status st = halo_format_parse("xml", &f);
  const char *text = capture_end();
  cr_expect_eq(st, HALO_ERR_ARG);
  cr_expect(strstr(text, "unknown format 'xml' (expected auto,") != NULL, "%s", text);
  /* The library names no flag: halo-partition puts "--format: " before it. */
  cr_expect(strstr(text, "--") == NULL, "%s", text);
}

/* ---- Node data files ------------------------------------------------------ */

Test(bad_node_data, feature_rows_do_not_match_the_graph) {
  halo_graph *g = NULL;
  cr_assert_eq(halo_load(LOADER_DATA "/snap-dense.txt", HALO_FORMAT_EDGELIST, &g), HALO_OK);
  const char *feat = scratch_write("f.csv", "1,2\n3,4\n5,6\n7,8\n");
  capture_begin();
  halo_status st = halo_load_node_data(g, feat, NULL);
  const char *text = capture_end();
  cr_expect_eq(st, HALO_ERR_MISMATCH);
  cr_expect(strstr(text, "f.csv:4: more feature rows than the 3 nodes") != NULL, "%s", text);
  cr_expect_eq(g->features, 0, "a failed load leaves the graph as it was");
  cr_expect_null(g->x);
  const char *labels = scratch_write("l.csv", "0\n1\n");
  capture_begin();
  st = halo_load_node_data(g, NULL, labels);
  text = capture_end();
  cr_expect_eq(st, HALO_ERR_MISMATCH);
  cr_expect(strstr(text, "l.csv:2: 2 labels, but the graph has 3 nodes") != NULL, "%s", text);
  cr_expect(strstr(text, "/nonexistent") == NULL);
  capture_begin();
  st = halo_load_node_data(g, "/nonexistent/feat.csv", NULL);
  text = capture_end();
  cr_expect_eq(st, HALO_ERR_IO);
  cr_expect(strstr(text, "/nonexistent/feat.csv: cannot open") != NULL, "%s", text);
  halo_graph_destroy(&g);
}
