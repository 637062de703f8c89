/* Atomic outputs (core/halo-atomic.h): the temporary names of the one rule,
 * the rename over an existing name, and the removal of a temporary file or
 * folder. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halo-atomic.h"

/* A fresh scratch folder under the build's temporary space. */
static void scratch(char *dir, size_t size) {
  snprintf(dir, size, "%s/test-atomic.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  cr_assert_not_null(mkdtemp(dir));
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  fputs(text, f);
  cr_assert_eq(fclose(f), 0);
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

Test(atomic, owned_names_are_name_dot_tmp) {
  char tmp[64];
  cr_assert_eq(halo_atomic_tmp_name("out/part-1-of-2.h5", tmp, sizeof tmp), 0);
  cr_assert_str_eq(tmp, "out/part-1-of-2.h5.tmp");
  cr_assert_eq(halo_atomic_tmp_name("a-name-longer-than-eight", tmp, 8), ENAMETOOLONG);
}

Test(atomic, a_user_named_folder_is_name_dot_tmp_dot_pid) {
  char dir[256], out[300], tmp[400], want[400];
  scratch(dir, sizeof dir);
  snprintf(out, sizeof out, "%s/o", dir);
  cr_assert_eq(halo_atomic_create_dir(out, tmp, sizeof tmp), 0);
  snprintf(want, sizeof want, "%s.tmp.%ld", out, (long)getpid());
  cr_assert_str_eq(tmp, want);
  struct stat sb;
  cr_assert(stat(tmp, &sb) == 0 && S_ISDIR(sb.st_mode));
  cr_assert_eq(halo_atomic_create_dir(out, tmp, sizeof tmp), EEXIST, "the name is taken");
  write_text(strcat(strcpy(want, tmp), "/part-0-of-1.h5"), "x");
  cr_assert_eq(halo_atomic_sync(tmp), 0);
  cr_assert_eq(halo_atomic_rename(tmp, out), 0);
  cr_assert(!exists(tmp) && exists(out));
  cr_assert_eq(halo_atomic_remove(out, 1), 0, "a folder goes with its files");
  cr_assert(!exists(out));
  rmdir(dir);
}

Test(atomic, a_user_named_file_replaces_the_old_one_whole) {
  char dir[256], out[300], tmp[400];
  scratch(dir, sizeof dir);
  snprintf(out, sizeof out, "%s/o.json", dir);
  write_text(out, "old");
  const int fd = halo_atomic_create_file(out, tmp, sizeof tmp);
  cr_assert_geq(fd, 0, "%s", strerror(-fd));
  cr_assert_eq(strncmp(tmp, out, strlen(out)), 0);
  cr_assert_eq(strncmp(tmp + strlen(out), ".tmp.", 5), 0, "%s", tmp);
  cr_assert_eq(strlen(tmp), strlen(out) + strlen(".tmp.XXXXXX"));
  /* The mode is fopen's: 0666 less the umask. */
  const mode_t mask = umask(0);
  umask(mask);
  struct stat sb;
  cr_assert_eq(fstat(fd, &sb), 0);
  cr_assert_eq(sb.st_mode & 0777, 0666 & ~mask);
  cr_assert_eq(write(fd, "new", 3), 3);
  cr_assert_eq(fsync(fd), 0);
  cr_assert_eq(close(fd), 0);
  FILE *f = fopen(out, "r");
  char text[8] = "";
  cr_assert_not_null(f);
  cr_assert_not_null(fgets(text, sizeof text, f));
  fclose(f);
  cr_assert_str_eq(text, "old", "the name is untouched until the rename");
  cr_assert_eq(halo_atomic_rename(tmp, out), 0);
  f = fopen(out, "r");
  cr_assert_not_null(fgets(text, sizeof text, f));
  fclose(f);
  cr_assert_str_eq(text, "new");
  cr_assert(!exists(tmp));
  cr_assert_eq(halo_atomic_rename(tmp, out), ENOENT, "a failed rename names its errno");
  cr_assert_eq(halo_atomic_remove(out, 0), 0);
  cr_assert_eq(halo_atomic_remove(out, 0), ENOENT);
  rmdir(dir);
}
