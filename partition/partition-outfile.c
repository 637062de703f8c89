/* Output files (halo-partition's --json and --write-metis) that appear only
 * when complete.
 *
 * The file follows core/halo-atomic.h's rule: it is written as
 * FILE.tmp.XXXXXX in FILE's own folder (the user names FILE, so two runs,
 * or two outputs of one, may write it at once), fsync'ed, renamed over
 * FILE, and the folder fsync'ed.
 * Nothing but the temporary is ever removed: FILE itself is only replaced by
 * a complete new file, and only when it is a regular file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halo-atomic.h"
#include "halo-partition.h"

struct halo_outfile {
  char *path;  /* FILE */
  char *tmp;   /* FILE.tmp.XXXXXX */
  char *name;  /* "--json FILE" or "FILE", for messages */
  FILE *f;     /* open on tmp until commit */
  int force;   /* an existing regular FILE may be replaced */
  int created; /* tmp exists and is ours to remove */
};

/* Fails unless `path` is free to write: absent, or a regular file and
 * `force`.  Checked at open, and again just before the rename, so that a
 * device or folder put there meanwhile is not replaced either. */
static halo_status check_target(const halo_outfile *o) {
  halo_status st = HALO_OK;
  struct stat sb;
  /* lstat: a symbolic link is refused too, rather than replaced by a file. */
  if (lstat(o->path, &sb) != 0) {
    if (errno == ENOENT) goto done;
    HALO_FAIL(HALO_ERR_IO, "%s: cannot check it: %s", o->name, strerror(errno));
  }
  if (!S_ISREG(sb.st_mode))
    HALO_FAIL(HALO_ERR_EXISTS, "%s: exists and is not a regular file; not replacing it", o->name);
  if (!o->force) HALO_FAIL(HALO_ERR_EXISTS, "%s: already exists; not replacing it", o->name);
done:
  return st;
}

halo_status halo_outfile_open(const char *path, const char *flag, int force, halo_outfile **out) {
  halo_status st = HALO_OK;
  halo_outfile *o = NULL;
  int fd = -1;
  *out = NULL;
  if (!path || !*path) HALO_FAIL(HALO_ERR_ARG, "%s: no file name given", flag ? flag : "output");
  HALO_ALLOC(o, 1, "output file");
  o->force = force;
  size_t len = strlen(path);
  o->path = strdup(path);
  o->name = malloc(len + (flag ? strlen(flag) + 2 : 1));
  const size_t tmp_size = len + sizeof ".tmp.XXXXXX";
  o->tmp = malloc(tmp_size);
  if (!o->path || !o->name || !o->tmp) HALO_FAIL(HALO_ERR_NOMEM, "out of memory");
  if (flag)
    sprintf(o->name, "%s %s", flag, path);
  else
    strcpy(o->name, path);
  if (path[len - 1] == '/') HALO_FAIL(HALO_ERR_ARG, "%s: names a folder, expected a file", o->name);
  HALO_TRY(check_target(o));

  /* Created and registered at once: a signal removes it (halo_cleanup_on_signals). */
  halo_cleanup_lock();
  fd = halo_atomic_create_file(path, o->tmp, tmp_size);
  if (fd >= 0) {
    o->created = 1;
    st = halo_cleanup_add(o->tmp, 0);
  }
  halo_cleanup_unlock();
  if (fd < 0)
    HALO_FAIL(HALO_ERR_IO, "%s: cannot create a file next to it: %s", o->name, strerror(-fd));
  HALO_TRY(st);
  o->f = fdopen(fd, "w");
  if (!o->f) HALO_FAIL(HALO_ERR_IO, "%s: cannot write %s: %s", o->name, o->tmp, strerror(errno));
  fd = -1;
  *out = o;
  o = NULL;
done:
  if (fd >= 0) close(fd);
  halo_outfile_close(&o);
  return st;
}

FILE *halo_outfile_stream(const halo_outfile *f) { return f->f; }

const char *halo_outfile_name(const halo_outfile *f) { return f->name; }

const char *halo_outfile_tmp(const halo_outfile *f) { return f->tmp; }

halo_status halo_outfile_commit(halo_outfile *o) {
  halo_status st = HALO_OK;
  FILE *f = o->f;
  o->f = NULL;
  int failed = fflush(f) != 0 || ferror(f);
  int err = errno;
  if (!failed && fsync(fileno(f)) != 0) {
    failed = 1;
    err = errno;
  }
  if (fclose(f) != 0 && !failed) {
    failed = 1;
    err = errno;
  }
  if (failed) HALO_FAIL(HALO_ERR_IO, "%s: write failed: %s", o->name, strerror(err ? err : EIO));
  HALO_TRY(check_target(o));
  halo_cleanup_lock();
  err = halo_atomic_rename(o->tmp, o->path);
  if (err != 0) {
    halo_cleanup_unlock();
    HALO_FAIL(HALO_ERR_IO, "%s: cannot rename %s to it: %s", o->name, o->tmp, strerror(err));
  }
  o->created = 0;
  halo_cleanup_drop(o->tmp);
  halo_cleanup_unlock();
done:
  if (st < 0 && o->created && halo_atomic_remove(o->tmp, 0) == 0) {
    o->created = 0;
    halo_cleanup_drop(o->tmp);
  }
  return st;
}

void halo_outfile_close(halo_outfile **f) {
  if (!f || !*f) return;
  halo_outfile *o = *f;
  if (o->f) fclose(o->f);
  if (o->created) {
    (void)halo_atomic_remove(o->tmp, 0);
    halo_cleanup_drop(o->tmp);
  }
  free(o->tmp);
  free(o->name);
  free(o->path);
  free(o);
  *f = NULL;
}
