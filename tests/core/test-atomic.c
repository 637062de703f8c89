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
#include "halo-status.h"

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

/* halo_atomic_check_target and _check_folder: each refusal, and that the
 * probe leaves nothing behind. */
static int count_entries(const char *dir) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
  FILE *p = popen(cmd, "r");
  int n = -1;
  cr_assert_not_null(p);
  cr_assert_eq(fscanf(p, "%d", &n), 1);
  pclose(p);
  return n;
}

Test(atomic, an_output_is_checked_before_the_run) {
  char dir[256], out[300], file[400], under[400], sub[300];
  scratch(dir, sizeof dir);
  halo_log_set_quiet(1);
  snprintf(out, sizeof out, "%s/p.h5", dir);
  cr_assert_eq(halo_atomic_check_target(out, 0, "--predict"), HALO_OK);
  cr_assert_eq(count_entries(dir), 0, "the probe is removed");
  write_text(out, "old");
  cr_assert_eq(halo_atomic_check_target(out, 0, "--predict"), HALO_ERR_EXISTS);
  cr_assert_eq(halo_atomic_check_target(out, 1, "--predict"), HALO_OK, "--force");
  cr_assert_eq(count_entries(dir), 1);
  snprintf(under, sizeof under, "%s/nothing/p.h5", dir);
  cr_assert_eq(halo_atomic_check_target(under, 1, "--predict"), HALO_ERR_ARG, "no folder");
  /* A path under a regular file: unwritable even for root. */
  snprintf(under, sizeof under, "%s/p.h5", out);
  cr_assert_eq(halo_atomic_check_target(under, 1, "--predict"), HALO_ERR_ARG, "a file's child");
  cr_assert_eq(halo_atomic_check_target("", 1, "--predict"), HALO_ERR_ARG);
  cr_assert_eq(halo_atomic_check_target("/dev/null", 0, "--metrics"), HALO_OK, "a device");
  snprintf(sub, sizeof sub, "%s/sub", dir);
  cr_assert_eq(mkdir(sub, 0777), 0);
  cr_assert_eq(halo_atomic_check_target(sub, 1, "--predict"), HALO_ERR_ARG, "a folder");
  /* Folders: an existing one, a new one under an existing parent, a
   * missing parent, a file. */
  cr_assert_eq(halo_atomic_check_folder(sub, "--checkpoint"), HALO_OK);
  snprintf(under, sizeof under, "%s/new/", dir);
  cr_assert_eq(halo_atomic_check_folder(under, "--checkpoint"), HALO_OK, "a trailing slash");
  snprintf(under, sizeof under, "%s/no/new", dir);
  cr_assert_eq(halo_atomic_check_folder(under, "--checkpoint"), HALO_ERR_ARG);
  cr_assert_eq(halo_atomic_check_folder(out, "--checkpoint"), HALO_ERR_ARG, "a file");
  snprintf(file, sizeof file, "%s/x", out);
  cr_assert_eq(halo_atomic_check_folder(file, "--checkpoint"), HALO_ERR_ARG, "under a file");
  cr_assert_eq(count_entries(dir), 2, "nothing left but p.h5 and sub");
  cr_assert_eq(count_entries(sub), 0);
  halo_log_set_quiet(0);
  unlink(out);
  rmdir(sub);
  rmdir(dir);
}
