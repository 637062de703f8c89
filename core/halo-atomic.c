/* Atomic outputs (halo-atomic.h). */
#include "halo-atomic.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int halo_atomic_tmp_name(const char *path, char *tmp, size_t size) {
  const int n = snprintf(tmp, size, "%s.tmp", path);
  return n < 0 || (size_t)n >= size ? ENAMETOOLONG : 0;
}

int halo_atomic_create_file(const char *path, char *tmp, size_t size) {
  const int n = snprintf(tmp, size, "%s.tmp.XXXXXX", path);
  if (n < 0 || (size_t)n >= size) return -ENAMETOOLONG;
  const int fd = mkstemp(tmp);
  if (fd < 0) return -(errno ? errno : EIO);
  /* mkstemp makes the file 0600; give it the mode fopen(path, "w") would. */
  const mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, 0666 & ~mask) != 0) {
    const int err = errno ? errno : EIO;
    close(fd);
    unlink(tmp);
    return -err;
  }
  return fd;
}

int halo_atomic_create_dir(const char *path, char *tmp, size_t size) {
  const int n = snprintf(tmp, size, "%s.tmp.%ld", path, (long)getpid());
  if (n < 0 || (size_t)n >= size) return ENAMETOOLONG;
  return mkdir(tmp, 0777) != 0 ? (errno ? errno : EIO) : 0;
}

int halo_atomic_sync(const char *path) {
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return errno ? errno : EIO;
  int err = fsync(fd) != 0 ? errno : 0;
  close(fd);
  return err;
}

void halo_atomic_sync_parent(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
  if (!dir) return;
  (void)halo_atomic_sync(dir);
  free(dir);
}

int halo_atomic_rename(const char *tmp, const char *path) {
  if (rename(tmp, path) != 0) return errno ? errno : EIO;
  halo_atomic_sync_parent(path);
  return 0;
}

int halo_atomic_remove(const char *tmp, int is_dir) {
  if (!is_dir) return unlink(tmp) != 0 ? errno : 0;
  int err = 0;
  DIR *d = opendir(tmp);
  if (!d) return errno;
  const size_t len = strlen(tmp);
  for (struct dirent *e; (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char *file = malloc(len + strlen(e->d_name) + 2);
    if (!file) {
      err = ENOMEM;
      break;
    }
    sprintf(file, "%s/%s", tmp, e->d_name);
    if (unlink(file) != 0 && !err) err = errno;
    free(file);
  }
  closedir(d);
  if (!err && rmdir(tmp) != 0) err = errno;
  return err;
}

/* The folder that holds `path`, into dir (`size` bytes): "." when it names
 * none, "/" for a file at the root. */
static void parent_of(const char *path, char *dir, size_t size) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, size, ".");
  else
    snprintf(dir, size, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

/* Creates and removes a temporary next to `path` (PATH.tmp.XXXXXX): 0 or
 * the errno of the creation. */
static int probe(const char *path) {
  char tmp[4200];
  const int fd = halo_atomic_create_file(path, tmp, sizeof tmp);
  if (fd < 0) return -fd;
  close(fd);
  unlink(tmp);
  return 0;
}

/* One line for a failed probe of `folder` (errno `err`) on behalf of
 * `flag` `path`.  The folder itself says what is wrong with it: creating a
 * file in /proc fails with ENOENT, though /proc exists. */
static halo_status probe_error(const char *flag, const char *path, const char *folder, int err) {
  struct stat sb;
  if (err == ENAMETOOLONG)
    halo_log_error("%s %s: the path is too long", flag, path);
  else if (stat(folder, &sb) != 0 && (errno == ENOENT || errno == ENOTDIR))
    halo_log_error("%s %s: the folder %s does not exist", flag, path, folder);
  else if (stat(folder, &sb) == 0 && !S_ISDIR(sb.st_mode))
    halo_log_error("%s %s: %s is not a folder", flag, path, folder);
  else
    halo_log_error("%s %s: cannot write in the folder %s: %s", flag, path, folder, strerror(err));
  return HALO_ERR_ARG;
}

halo_status halo_atomic_check_target(const char *path, int force, const char *flag) {
  char dir[4096];
  struct stat sb;
  if (!path || !*path) {
    halo_log_error("%s: the file name is empty", flag);
    return HALO_ERR_ARG;
  }
  /* A device or a pipe (/dev/stdout) is written as it is: nothing in its
   * folder changes, and nothing is overwritten. */
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) return HALO_OK;
  parent_of(path, dir, sizeof dir);
  const int err = probe(path);
  if (err) return probe_error(flag, path, dir, err);
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    halo_log_error("%s %s: is a folder; give a file name", flag, path);
    return HALO_ERR_ARG;
  }
  if (!force && lstat(path, &sb) == 0) {
    halo_log_error("%s %s: already exists; give --force to overwrite it, or another name", flag,
                   path);
    return HALO_ERR_EXISTS;
  }
  return HALO_OK;
}

halo_status halo_atomic_check_folder(const char *name, const char *flag) {
  char dir[4096], parent[4096], inside[4200];
  struct stat sb;
  if (!name || !*name) {
    halo_log_error("%s: the folder name is empty", flag);
    return HALO_ERR_ARG;
  }
  /* "out/" is the folder out, whose parent is ".". */
  snprintf(dir, sizeof dir, "%s", name);
  for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--) dir[n - 1] = '\0';
  if (stat(dir, &sb) == 0) {
    if (!S_ISDIR(sb.st_mode)) {
      halo_log_error("%s %s: exists and is not a folder", flag, dir);
      return HALO_ERR_ARG;
    }
    /* A file name inside DIR, so that the probe lands there. */
    const int n = snprintf(inside, sizeof inside, "%s/.halo-probe", dir);
    const int err = n < 0 || (size_t)n >= sizeof inside ? ENAMETOOLONG : probe(inside);
    return err ? probe_error(flag, dir, dir, err) : HALO_OK;
  }
  parent_of(dir, parent, sizeof parent);
  const int err = probe(dir);
  return err ? probe_error(flag, dir, parent, err) : HALO_OK;
}
