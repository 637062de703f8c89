/* Runs every committed corpus file (tests/fuzz/<harness>/: seeds and the
 * inputs of fixed bugs) through its harness in the ordinary build, so the
 * oracles guard against regressions without libFuzzer.  A broken promise
 * aborts inside the harness and fails the test. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-util.h"
#include "halo-shard.h"

typedef int (*harness)(const uint8_t *data, size_t size);

/* Feeds each regular file of `dir` to `fn`; returns how many there were. */
static int replay_dir(const char *dir, harness fn) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "cannot list %s", dir);
  int count = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    uint8_t *data = malloc(FUZZ_MAX_INPUT + 1);
    size_t size = fread(data, 1, FUZZ_MAX_INPUT + 1, f);
    fclose(f);
    cr_assert_leq(size, FUZZ_MAX_INPUT, "%s is larger than a harness takes", path);
    fprintf(stderr, "replay %s (%zu bytes)\n", path, size);
    fn(data, size);
    free(data);
    count++;
  }
  closedir(d);
  return count;
}

static void replay(const char *name, harness fn) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/%s", HALO_FUZZ_CORPUS, name);
  int count = replay_dir(dir, fn);
  cr_assert_geq(count, 3, "%s: %d corpus files, expected seeds for several paths", dir, count);
}

Test(fuzz_replay, snap) { replay("snap", fuzz_snap); }
Test(fuzz_replay, mtx) { replay("mtx", fuzz_mtx); }
Test(fuzz_replay, ogb) { replay("ogb", fuzz_ogb); }
Test(fuzz_replay, spec) { replay("spec", fuzz_spec); }
Test(fuzz_replay, npy) { replay("npy", fuzz_npy); }
Test(fuzz_replay, shard) { replay("shard", fuzz_shard); }

Test(fuzz_replay, shard_bytes) {
  replay("shard-bytes", fuzz_shard_bytes);
  cr_assert_eq(replay_dir(HALO_FUZZ_SHARD_BASE, fuzz_shard_bytes), 3);
}

/* The base partition the shard harnesses mutate must itself be valid, or
 * every mutation would only test the first refusal. */
Test(fuzz_replay, shard_base_is_valid) {
  char path[1024];
  halo_manifest *m = NULL;
  snprintf(path, sizeof path, "%s/manifest.h5", HALO_FUZZ_SHARD_BASE);
  cr_assert_eq(halo_manifest_read(path, &m), HALO_OK,
               "%s (regenerate it: see docs/reliability.md, Fuzzing)", path);
  for (int p = 0; p < 2; p++) {
    halo_shard *s = NULL;
    cr_assert_eq(halo_shard_path(path, sizeof path, HALO_FUZZ_SHARD_BASE, p, 2), HALO_OK);
    cr_assert_eq(halo_shard_read(path, m, &s), HALO_OK, "%s", path);
    cr_expect_gt(s->n_halo, 0, "the base parts should have a halo to mutate");
    halo_shard_destroy(&s);
  }
  halo_manifest_destroy(&m);
}
