/* A small, random, complete partition run built in memory, independently of
 * partition/: a random undirected graph (dense adjacency, so the reference is
 * obviously right), a random owner per node, and every part's shard derived
 * from them by the definitions in halo-shard.h.  Plus the file surgery the
 * corruption tests need. */
#ifndef SHARD_FIXTURE_H
#define SHARD_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "halo-shard.h"

enum { FIXTURE_MAX_PATHS = 64 };

typedef struct fixture {
  uint64_t seed;
  int64_t n;
  int32_t parts;
  uint8_t *adj;                   /* size n*n */
  halo_manifest *m;               /* part_digest filled from the shards */
  halo_shard **shards;            /* size parts */
  char dir[256];                  /* a fresh temporary folder */
  char *paths[FIXTURE_MAX_PATHS]; /* what fixture_path has handed out */
  int npaths;
} fixture;

/* Seed from $HALO_TEST_SEED when set, else `fallback`; printed either way. */
uint64_t fixture_seed(const char *test, uint64_t fallback);

/* With `empty_last`, no node is owned by the last part. */
fixture *fixture_create(uint64_t seed, int64_t n, int32_t parts, int32_t features, int32_t classes,
                        int empty_last);
/* Removes the temporary folder and everything in it. */
void fixture_destroy(fixture **f);

/* "DIR/name", valid until fixture_destroy. */
const char *fixture_path(fixture *f, const char *name);

/* Writes the fixture's manifest and every shard into its folder (asserts). */
void fixture_write_run(fixture *f);

/* Asserts that manifest `got` equals `want` in every field but /part, which
 * a manifest read with HALO_MANIFEST_NO_PART leaves out. */
void fixture_expect_manifest_equal(const halo_manifest *got, const halo_manifest *want);

/* Recomputes part_digest[part] (and part_original_id_digest[part], when the
 * manifest has it) after that shard was edited. */
void fixture_redigest(fixture *f, int32_t part);

/* Gives every node a random input id, strictly ascending in the node id as
 * the loaders renumber them, sets each shard's original_id from it and the
 * manifest's part_original_id_digest.  Returns the ids (size n; the caller
 * frees them). */
int64_t *fixture_add_original_ids(fixture *f);

/* Deep copy of a shard (for tests that edit one). */
halo_shard *shard_clone(const halo_shard *s);

/* Asserts (Criterion) that two shards agree in every count and array. */
void shard_expect_equal(const halo_shard *a, const halo_shard *b);

/* Captures everything written to stderr between begin and end. */
typedef struct capture {
  int saved_fd;
  int file_fd;
} capture;
void capture_begin(capture *c);
/* Returns the captured text (malloc'd, NUL-terminated). */
char *capture_end(capture *c);

/* Runs halo_shard_read (or halo_manifest_read) under a stderr capture and
 * asserts that it fails with `expect`, leaves *out NULL, prints exactly one
 * line, and that the line names `path` and contains every needle (a
 * NULL-terminated list of strings).  `expect` HALO_OK means any failure. */
void expect_shard_fails(const char *path, const halo_manifest *m, halo_status expect, ...);
void expect_manifest_fails(const char *path, halo_status expect, ...);
/* As expect_manifest_fails, through halo_manifest_read_opts(path, flags). */
void expect_manifest_opts_fails(const char *path, unsigned flags, halo_status expect, ...);

/* File surgery. */
void copy_file(const char *from, const char *to);
long file_size(const char *path);
void flip_byte(const char *path, long offset);
void truncate_file(const char *path, long size);
/* File offset and size of the first chunk of a chunked dataset. */
void chunk_location(const char *path, const char *dataset, long *offset, long *size);

/* Runs a shell command, returns its stdout (malloc'd) and exit status. */
char *run_command(const char *cmd, int *status);

#endif /* SHARD_FIXTURE_H */
