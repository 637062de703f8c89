/* The output folder: run id, all-or-nothing folder creation, shards and
 * manifest, and METIS' graph format for the reference tool.
 *
 * A folder that exists under its final name is always complete: files are
 * written into DIR.tmp.<pid> and the folder is fsync'ed, renamed when the
 * manifest is on disk, and its parent fsync'ed (core/halo-atomic.h).  An old DIR (--force) is moved
 * aside only then and removed last, and only when it holds nothing but files that halo-partition
 * writes.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halo-atomic.h"
#include "halo-digest.h"
#include "halo-partition.h"
#include "partition-impl.h"

uint64_t halo_partition_run_id(const halo_graph *g, const halo_partition_options *opt,
                               const int32_t *part) {
  /* The run's layout (resolved to SPARSE or DENSE by then) picks the version. */
  const int csr = g->features > 0 && opt->features_layout == HALO_FEATURES_SPARSE;
  const int64_t fields[] = {halo_shard_format_for(csr),
                            (int64_t)g->source_digest,
                            g->n,
                            g->m,
                            g->features,
                            g->classes,
                            opt->parts,
                            opt->method,
                            opt->objective,
                            opt->seed,
                            opt->ufactor,
                            opt->order,
                            opt->order == HALO_ORDER_COMMUNITY ? HALO_PARTITION_BLOCK_ROWS : 0};
  halo_digest d;
  halo_digest_init(&d);
  halo_digest_update(&d, "halo-partition run", 18);
  halo_digest_update(&d, fields, sizeof fields);
  halo_digest_update(&d, part, (size_t)g->n * sizeof *part);
  return halo_digest_final(&d);
}

/* ---- the folder ------------------------------------------------------ */

struct halo_outdir {
  char *dir;   /* final name, without trailing slashes */
  char *tmp;   /* DIR.tmp.<pid> */
  int replace; /* DIR existed and --force was given */
  int created; /* tmp was made by us */
  int committed;
};

static char *join(const char *a, const char *b) {
  size_t len = strlen(a) + strlen(b) + 1;
  char *s = malloc(len);
  if (s) snprintf(s, len, "%s%s", a, b);
  return s;
}

/* 1 for the names halo-partition writes: manifest.h5, part-N-of-N.h5, and
 * the .tmp files of an interrupted write. */
static int is_output_name(const char *name) {
  size_t len = strlen(name);
  if (len > 4 && strcmp(name + len - 4, ".tmp") == 0) len -= 4;
  if (len == 11 && strncmp(name, "manifest.h5", 11) == 0) return 1;
  unsigned a, b;
  int used = 0;
  return sscanf(name, "part-%u-of-%u.h5%n", &a, &b, &used) == 2 && (size_t)used == len &&
         strncmp(name, "part-", 5) == 0;
}

/* Fails (HALO_ERR_ARG, logged) when folder `dir` holds an entry that is not
 * an output name: halo-partition never deletes what it did not write. */
static halo_status check_only_ours(const char *dir) {
  halo_status st = HALO_OK;
  DIR *d = opendir(dir);
  if (!d) HALO_FAIL(HALO_ERR_IO, "%s: cannot open folder: %s", dir, strerror(errno));
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !is_output_name(e->d_name))
      HALO_FAIL(HALO_ERR_ARG,
                "output folder %s holds '%s', which halo-partition did not write; "
                "not replacing it (remove the folder yourself)",
                dir, e->d_name);
done:
  if (d) closedir(d);
  return st;
}

halo_status halo_outdir_open(const char *dir, int force, halo_outdir **out) {
  halo_status st = HALO_OK;
  halo_outdir *o = NULL;
  char *parent = NULL;
  *out = NULL;
  HALO_ALLOC(o, 1, "output folder");
  size_t len = dir ? strlen(dir) : 0;
  while (len > 1 && dir[len - 1] == '/') len--;
  if (len == 0 || (len == 1 && dir[0] == '/'))
    HALO_FAIL(HALO_ERR_ARG, "output folder '%s' is not usable", dir ? dir : "");
  o->dir = strndup(dir, len);
  if (!o->dir) HALO_FAIL(HALO_ERR_NOMEM, "out of memory");
  /* "out/." or "..": the folder could never be renamed into place (rename
   * refuses them), which would only show after all the work. */
  const char *base = strrchr(o->dir, '/');
  base = base ? base + 1 : o->dir;
  if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
    HALO_FAIL(HALO_ERR_ARG, "output folder %s: ends in '%s'; name the folder itself", dir, base);

  /* The parent must exist and be writable: the folder is created inside it. */
  char *slash = strrchr(o->dir, '/');
  parent = slash ? strndup(o->dir, slash == o->dir ? 1 : (size_t)(slash - o->dir)) : strdup(".");
  if (!parent) HALO_FAIL(HALO_ERR_NOMEM, "out of memory");
  struct stat sb;
  if (stat(parent, &sb) != 0 || !S_ISDIR(sb.st_mode))
    HALO_FAIL(HALO_ERR_ARG, "output folder %s: parent folder %s does not exist", o->dir, parent);
  if (access(parent, W_OK | X_OK) != 0)
    HALO_FAIL(HALO_ERR_ARG, "output folder %s: parent folder %s is not writable", o->dir, parent);

  if (lstat(o->dir, &sb) == 0) {
    if (!S_ISDIR(sb.st_mode))
      HALO_FAIL(HALO_ERR_EXISTS, "output folder %s exists and is not a folder", o->dir);
    if (!force)
      HALO_FAIL(HALO_ERR_EXISTS, "output folder %s already exists; not replacing it", o->dir);
    /* Check now, not after an hour of work, that it may be replaced. */
    HALO_TRY(check_only_ours(o->dir));
    o->replace = 1;
  }

  /* The user names DIR, so two runs may write it at once: DIR.tmp.<pid>
   * (core/halo-atomic.h). */
  const size_t tmp_size = strlen(o->dir) + sizeof ".tmp." + 3 * sizeof(long);
  o->tmp = malloc(tmp_size);
  if (!o->tmp) HALO_FAIL(HALO_ERR_NOMEM, "out of memory");
  /* Created and registered at once: a signal removes it (halo_cleanup_on_signals). */
  halo_cleanup_lock();
  const int err = halo_atomic_create_dir(o->dir, o->tmp, tmp_size);
  if (err != 0) {
    halo_cleanup_unlock();
    HALO_FAIL(HALO_ERR_IO, "output folder %s: cannot create %s: %s", o->dir, o->tmp, strerror(err));
  }
  o->created = 1;
  st = halo_cleanup_add(o->tmp, 1);
  halo_cleanup_unlock();
  HALO_TRY(st);
  *out = o;
  o = NULL;
done:
  free(parent);
  halo_outdir_close(&o);
  return st;
}

const char *halo_outdir_tmp(const halo_outdir *o) { return o->tmp; }

halo_status halo_outdir_commit(halo_outdir *o) {
  halo_status st = HALO_OK;
  char *old = NULL, suffix[32];
  int old_tracked = 0;
  /* The renames and the registry change together; a signal after them
   * finishes removing the old folder (already checked to hold only ours). */
  halo_cleanup_lock();
  if (o->replace) {
    snprintf(suffix, sizeof suffix, ".old.%ld", (long)getpid());
    old = join(o->dir, suffix);
    if (!old) HALO_FAIL(HALO_ERR_NOMEM, "out of memory");
    if (rename(o->dir, old) != 0)
      HALO_FAIL(HALO_ERR_IO, "cannot move the old %s aside: %s", o->dir, strerror(errno));
    old_tracked = halo_cleanup_add(old, 1) == HALO_OK;
  }
  /* The shards in it are on disk already (halo_h5_commit); its entries go
   * now, best effort like every folder's fsync. */
  (void)halo_atomic_sync(o->tmp);
  const int err = halo_atomic_rename(o->tmp, o->dir);
  if (err != 0) {
    if (old) rename(old, o->dir); /* put the old folder back */
    HALO_FAIL(HALO_ERR_IO, "cannot rename %s to %s: %s", o->tmp, o->dir, strerror(err));
  }
  o->committed = 1;
  halo_cleanup_drop(o->tmp);
  halo_cleanup_unlock();
  if (old && (check_only_ours(old) != HALO_OK || halo_atomic_remove(old, 1) != 0))
    halo_log_warn("the replaced folder is left at %s", old);
  if (old_tracked) halo_cleanup_drop(old);
  free(old);
  return st;
done:
  if (old_tracked) halo_cleanup_drop(old);
  halo_cleanup_unlock();
  free(old);
  return st;
}

void halo_outdir_close(halo_outdir **o) {
  if (!o || !*o) return;
  halo_outdir *d = *o;
  if (d->created && !d->committed) {
    halo_cleanup_lock();
    if (access(d->tmp, F_OK) == 0) (void)halo_atomic_remove(d->tmp, 1);
    halo_cleanup_drop(d->tmp);
    halo_cleanup_unlock();
  }
  free(d->tmp);
  free(d->dir);
  free(d);
  *o = NULL;
}

/* ---- shards and manifest --------------------------------------------- */

/* Planning one part on a helper thread. */
typedef struct plan_job {
  halo_partition_plan *plan;
  int32_t part;
  halo_shard *shard;
  halo_status st;
} plan_job;

static void *run_plan_job(void *arg) {
  plan_job *job = arg;
  job->st = halo_partition_plan_shard(job->plan, job->part, &job->shard);
  return NULL;
}

/* Writes one part's shard and records its digest, sizes and statistics. */
static halo_status write_part(const char *dir, const halo_shard *shard, halo_manifest *m,
                              halo_partition_stats *figures) {
  halo_status st = HALO_OK;
  char path[4096];
  HALO_TRY(halo_shard_path(path, sizeof path, dir, shard->part, shard->parts));
  HALO_TRY(halo_shard_write(path, shard));
  m->part_digest[shard->part] = halo_shard_digest(shard);
  m->part_owned[shard->part] = shard->n_owned;
  m->part_halo[shard->part] = shard->n_halo;
  if (m->part_original_id_digest)
    m->part_original_id_digest[shard->part] = halo_shard_digest_original_id(shard);
  if (m->part_edge_weight_digest)
    m->part_edge_weight_digest[shard->part] = halo_shard_digest_edge_weight(shard);
  if (figures) halo_partition_stats_add_shard(figures, shard);
done:
  return st;
}

halo_status halo_partition_write(const char *dir, const halo_graph *g, const int32_t *part,
                                 const halo_partition_options *opt, uint64_t run_id,
                                 halo_progress_fn progress, void *progress_ctx,
                                 halo_partition_stats **stats) {
  halo_status st = HALO_OK;
  halo_partition_plan *plan = NULL;
  halo_partition_stats *figures = NULL;
  halo_shard *ready = NULL;
  halo_manifest m = {0};
  char path[4096];
  const int32_t parts = opt->parts;

  m = (halo_manifest){
      .format_version = halo_shard_format_for(g->x_indptr != NULL),
      .nodes = g->n,
      .edges = g->m,
      .features = g->features,
      .classes = g->classes,
      .multilabel = g->multilabel,
      .parts = parts,
      .seed = opt->seed,
      .ufactor = opt->ufactor,
      .source_digest = g->source_digest,
      .run_id = run_id,
      .part = (int32_t *)part, /* the manifest writer only reads it */
  };
  snprintf(m.method, sizeof m.method, "%s", halo_method_name(opt->method));
  snprintf(m.objective, sizeof m.objective, "%s", halo_objective_name(opt->objective));
  snprintf(m.source, sizeof m.source, "%s", g->source);
  HALO_ALLOC(m.part_digest, parts, "part digests");
  HALO_ALLOC(m.part_owned, parts, "part sizes");
  HALO_ALLOC(m.part_halo, parts, "part sizes");
  if (g->original_id) HALO_ALLOC(m.part_original_id_digest, parts, "original id digests");
  if (g->edge_weight) HALO_ALLOC(m.part_edge_weight_digest, parts, "edge weight digests");

  if (stats) {
    *stats = NULL;
    HALO_TRY(halo_partition_stats_alloc(g->n, g->m, parts, &figures));
  }
  HALO_TRY(halo_partition_plan_create(g, part, parts, opt->order, run_id, &plan));

  /* A two-stage pipeline: a helper thread plans part p+1 while this thread
   * writes part p (HDF5 is only ever called from this thread, as the serial
   * library requires).  At most two parts exist in memory at once.  If no
   * thread can be started, the part is planned after the write instead. */
  HALO_TRY(halo_partition_plan_shard(plan, 0, &ready));
  for (int32_t p = 0; p < parts; p++) {
    plan_job job = {.plan = plan, .part = p + 1};
    pthread_t helper;
    int threaded = p + 1 < parts && pthread_create(&helper, NULL, run_plan_job, &job) == 0;
    halo_status write_st = write_part(dir, ready, &m, figures);
    if (threaded)
      pthread_join(helper, NULL);
    else if (p + 1 < parts && write_st == HALO_OK)
      run_plan_job(&job);
    halo_shard_destroy(&ready);
    ready = job.shard;
    HALO_TRY(write_st);
    HALO_TRY(job.st);
    if (progress) progress(progress_ctx, p + 1, parts);
  }
  if (snprintf(path, sizeof path, "%s/manifest.h5", dir) >= (int)sizeof path)
    HALO_FAIL(HALO_ERR_ARG, "output path %s/manifest.h5 is too long", dir);
  HALO_TRY(halo_manifest_write(path, &m));
  if (figures) {
    figures->work_row_cost = opt->work_row_cost;
    halo_partition_stats_finish(figures);
    *stats = figures;
    figures = NULL;
  }
done:
  halo_partition_stats_destroy(&figures);
  halo_shard_destroy(&ready);
  halo_partition_plan_destroy(&plan);
  free(m.part_original_id_digest);
  free(m.part_edge_weight_digest);
  free(m.part_halo);
  free(m.part_owned);
  free(m.part_digest);
  return st;
}

/* ---- METIS graph format ---------------------------------------------- */

/* Appends the decimal digits of x (>= 0) at p; returns the new end. */
static char *put_u64(char *p, uint64_t x) {
  char digits[20];
  int k = 0;
  do {
    digits[k++] = (char)('0' + x % 10);
    x /= 10;
  } while (x);
  while (k) *p++ = digits[--k];
  return p;
}

/* Writes buf[0..*end) out once it holds at least `at_least` bytes. */
static halo_status flush_at(FILE *f, const char *name, char *buf, char **end, ptrdiff_t at_least) {
  halo_status st = HALO_OK;
  size_t len = (size_t)(*end - buf);
  if (*end - buf < at_least || len == 0) goto done;
  if (fwrite(buf, 1, len, f) != len)
    HALO_FAIL(HALO_ERR_IO, "%s: write failed: %s", name, strerror(errno));
  *end = buf;
done:
  return st;
}

halo_status halo_partition_write_metis_to(const halo_graph *g, halo_outfile *out) {
  halo_status st = HALO_OK;
  char *buf = NULL;
  FILE *f = halo_outfile_stream(out);
  const char *name = halo_outfile_name(out);
  enum { BUF = 1 << 20, SLACK = 64 }; /* SLACK: room for one number and a separator */
  if (g->m % 2 != 0)
    HALO_FAIL(HALO_ERR_ARG, "%s: the graph is not symmetric (%lld directed edges); clean it first",
              name, (long long)g->m);
  HALO_ALLOC(buf, BUF + SLACK, "METIS file buffer");
  char *p = buf;
  p = put_u64(p, (uint64_t)g->n);
  *p++ = ' ';
  p = put_u64(p, (uint64_t)(g->m / 2));
  *p++ = '\n';
  for (int64_t v = 0; v < g->n; v++) {
    for (int64_t k = g->indptr[v]; k < g->indptr[v + 1]; k++) {
      if (k > g->indptr[v]) *p++ = ' ';
      p = put_u64(p, (uint64_t)g->indices[k] + 1);
      HALO_TRY(flush_at(f, name, buf, &p, BUF));
    }
    *p++ = '\n';
    HALO_TRY(flush_at(f, name, buf, &p, BUF));
  }
  HALO_TRY(flush_at(f, name, buf, &p, 1));
  HALO_TRY(halo_outfile_commit(out));
done:
  free(buf);
  return st;
}

halo_status halo_partition_write_metis(const halo_graph *g, const char *path) {
  halo_status st = HALO_OK;
  halo_outfile *out = NULL;
  HALO_TRY(halo_outfile_open(path, NULL, 1, &out));
  HALO_TRY(halo_partition_write_metis_to(g, out));
done:
  halo_outfile_close(&out);
  return st;
}
