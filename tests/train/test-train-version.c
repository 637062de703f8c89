/* halo-train refuses a part whose format_version differs from its manifest's:
 * every rank exits non-zero, within the timeout, and each such part is named
 * by one error line that gives both versions (no other rank adds a line).
 *
 * The runs come from a random fixture graph (fx_write_shards, format 2) and
 * are re-versioned through the shard API, digests included, so that the
 * version is all that differs.  The fixture's owned rows ascend and it has no
 * interior prefix, so each part is valid at format 1 too; the unmixed runs
 * of either version train, which shows that the refusals are the version
 * check's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-shard.h"
#include "train-fixture.h"
#include "train-run.h"

#ifndef TRAIN_EXE
#error "TRAIN_EXE must name the halo-train binary"
#endif

enum { PARTS = 3 };

static void manifest_path(char *buf, size_t size, const char *dir) {
  cr_assert_lt(snprintf(buf, size, "%s/manifest.h5", dir), (int)size);
}

/* Rewrites DIR/manifest.h5 at `version`, everything else as it was. */
static void rewrite_manifest(const char *dir, int32_t version) {
  char path[1024];
  halo_manifest *m = NULL;
  manifest_path(path, sizeof path, dir);
  cr_assert_eq(halo_manifest_read(path, &m), HALO_OK, "%s", path);
  m->format_version = version;
  cr_assert_eq(remove(path), 0, "%s", path);
  cr_assert_eq(halo_manifest_write(path, m), HALO_OK, "%s", path);
  halo_manifest_destroy(&m);
}

/* Rewrites part p at `version`, and its digest in the manifest to match. */
static void rewrite_part(const char *dir, int32_t p, int32_t version) {
  char path[1024];
  halo_manifest *m = NULL;
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_path(path, sizeof path, dir, p, PARTS), HALO_OK);
  cr_assert_eq(halo_shard_read(path, NULL, &s), HALO_OK, "%s", path);
  s->format_version = version;
  cr_assert_eq(remove(path), 0, "%s", path);
  cr_assert_eq(halo_shard_write(path, s), HALO_OK, "%s at format %d", path, (int)version);
  manifest_path(path, sizeof path, dir);
  cr_assert_eq(halo_manifest_read(path, &m), HALO_OK, "%s", path);
  m->part_digest[p] = halo_shard_digest(s);
  cr_assert_eq(remove(path), 0, "%s", path);
  cr_assert_eq(halo_manifest_write(path, m), HALO_OK, "%s", path);
  halo_manifest_destroy(&m);
  halo_shard_destroy(&s);
}

/* Runs halo-train on DIR with every rank's exit status printed and asserts
 * that every rank finished.  Returns the output (malloc'd). */
static char *train_every_rank(const char *dir, const char *log) {
  int rc = tr_mpirun(PARTS, 60, log,
                     "sh -c '\"$0\" \"$@\"; echo \"rank-exit $?\"' %s '%s' --threads 1 "
                     "--epochs 1 --quiet",
                     TRAIN_EXE, dir);
  cr_assert_neq(rc, 124, "halo-train on %s hung (timeout)", dir);
  char *out = tr_slurp(log);
  cr_assert(out, "%s", log);
  cr_assert_eq(tr_count_lines(out, "rank-exit "), PARTS, "%d ranks started, output:\n%s", PARTS,
               out);
  return out;
}

static void expect_trains(const char *what, const char *dir, const char *log) {
  char *out = train_every_rank(dir, log);
  cr_expect_eq(tr_count_lines(out, "rank-exit 0"), PARTS, "%s: not every rank succeeded:\n%s", what,
               out);
  cr_expect_eq(tr_count_lines(out, ": error: "), 0, "%s: error lines:\n%s", what, out);
  free(out);
}

/* Expects every rank to fail, and one error line: the lowest part p with
 * part_version[p] != manifest_version, named with both versions, and how
 * many other parts differ too. */
static void expect_refused(const char *what, const char *dir, const char *log,
                           int32_t manifest_version, const int32_t part_version[PARTS]) {
  char *out = train_every_rank(dir, log);
  cr_expect_eq(tr_count_lines(out, "rank-exit 0"), 0, "%s: a rank exited with status 0:\n%s", what,
               out);
  int mismatched = 0, first = -1;
  for (int32_t p = 0; p < PARTS; p++) {
    if (part_version[p] == manifest_version) continue;
    mismatched++;
    if (first < 0) first = p;
  }
  char path[1024], line[1200], others[64] = "";
  cr_assert_eq(halo_shard_path(path, sizeof path, dir, first, PARTS), HALO_OK);
  snprintf(line, sizeof line, "%s: format_version %d differs from the manifest's %d", path,
           (int)part_version[first], (int)manifest_version);
  cr_expect_eq(tr_count_lines(out, line), 1, "%s: no single line '%s':\n%s", what, line, out);
  if (mismatched > 1)
    snprintf(others, sizeof others, "(%d other rank%s failed too)", mismatched - 1,
             mismatched > 2 ? "s" : "");
  cr_expect(!others[0] || tr_count_lines(out, others) == 1, "%s: no line says '%s':\n%s", what,
            others, out);
  cr_expect_eq(tr_count_lines(out, ": error: "), 1, "%s: %d parts differ, but one error line:\n%s",
               what, mismatched, out);
  free(out);
}

Test(version, part_and_manifest_versions_must_agree, .timeout = 300) {
  const uint64_t seed = tr_seed("version.part_and_manifest", 23);
  const fx_spec spec = {.nodes = 150,
                        .avg_degree = 4,
                        .features = 6,
                        .density = 0.5f,
                        .classes = 3,
                        .parts = PARTS,
                        .seed = seed};
  fx_graph *g = fx_graph_new(&spec);
  char *dir = tr_tmpdir("version");
  cr_assert(dir);
  char run[512], log[600];
  snprintf(run, sizeof run, "%s/run", dir);
  snprintf(log, sizeof log, "%s/train.log", dir);
  cr_assert_eq(fx_write_shards(g, run, seed), 0, "%s", run);
  cr_assert_eq(HALO_SHARD_FORMAT_DENSE, 2, "the cases below name versions 1 and 2 (dense parts)");

  const int32_t twos[PARTS] = {2, 2, 2}, ones[PARTS] = {1, 1, 1}, mixed[PARTS] = {2, 1, 2};
  expect_trains("format 2 throughout", run, log);

  /* A manifest of format 1 over parts of format 2: every rank's own part. */
  rewrite_manifest(run, 1);
  expect_refused("manifest 1, parts 2", run, log, 1, twos);

  for (int32_t p = 0; p < PARTS; p++) rewrite_part(run, p, 1);
  expect_trains("format 1 throughout", run, log);

  /* The reverse: parts of format 1 under a manifest of format 2. */
  rewrite_manifest(run, 2);
  expect_refused("manifest 2, parts 1", run, log, 2, ones);

  /* One part alone: its rank reports, every rank stops. */
  rewrite_part(run, 0, 2);
  rewrite_part(run, 2, 2);
  expect_refused("manifest 2, part 1 at 1", run, log, 2, mixed);

  tr_rmdir(dir);
  fx_graph_free(g);
}
