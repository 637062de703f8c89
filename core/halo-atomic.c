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
