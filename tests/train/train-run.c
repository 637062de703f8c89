#include "train-run.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

uint64_t tr_seed(const char *test, uint64_t fallback) {
  const char *env = getenv("HALO_TEST_SEED");
  uint64_t seed = env ? strtoull(env, NULL, 10) : fallback;
  fprintf(stderr, "[%s] seed %llu (set HALO_TEST_SEED to change)\n", test, (unsigned long long)seed);
  return seed;
}

char *tr_tmpdir(const char *tag) {
  char *dir = malloc(256);
  snprintf(dir, 256, "/tmp/halo-train-%s-XXXXXX", tag);
  if (!mkdtemp(dir)) {
    free(dir);
    return NULL;
  }
  return dir;
}

void tr_rmdir(char *dir) {
  if (!dir) return;
  if (!getenv("HALO_TEST_KEEP")) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  free(dir);
}

static int run_shell(int timeout_s, const char *out_file, const char *cmd) {
  size_t len = strlen(cmd) + 1024;
  char *full = malloc(len);
  snprintf(full, len, "timeout --kill-after=5 %d %s %s%s%s", timeout_s, cmd,
           out_file ? "> '" : "", out_file ? out_file : "", out_file ? "' 2>&1" : "");
  fprintf(stderr, "$ %s\n", full);
  int status = system(full);
  free(full);
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

int tr_run(int timeout_s, const char *out_file, const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  return run_shell(timeout_s, out_file, cmd);
}

int tr_mpirun(int np, int timeout_s, const char *out_file, const char *fmt, ...) {
  char args[8192], cmd[8400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd,
           "mpirun --allow-run-as-root --oversubscribe --bind-to none -np %d "
           "-x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 %s",
           np, args);
  return run_shell(timeout_s, out_file, cmd);
}

FILE *tr_fopenf(const char *mode, const char *fmt, ...) {
  char path[1024];
  va_list ap;
  va_start(ap, fmt);
  const int len = vsnprintf(path, sizeof path, fmt, ap);
  va_end(ap);
  if (len < 0 || (size_t)len >= sizeof path) return NULL;
  return fopen(path, mode);
}

int tr_write_logits(const char *path, const int64_t *gid, int64_t n, int64_t classes, int models,
                    float *const *z) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  for (int64_t i = 0; i < n; i++) {
    fprintf(f, "%lld", (long long)gid[i]);
    for (int k = 0; k < models; k++)
      for (int64_t j = 0; j < classes; j++) fprintf(f, " %.9g", z[k][i * classes + j]);
    fprintf(f, "\n");
  }
  return fclose(f) == 0 ? 0 : -1;
}

char *tr_slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  size_t got = fread(buf, 1, (size_t)n, f);
  buf[got] = '\0';
  fclose(f);
  return buf;
}

int tr_count_lines(const char *text, const char *needle) {
  int count = 0;
  const char *line = text;
  while (line && *line) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char *hit = strstr(line, needle);
    if (hit && hit < line + len) count++;
    line = end ? end + 1 : NULL;
  }
  return count;
}

double tr_json_num(const char *line, const char *key) {
  char pat[128];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *hit = strstr(line, pat);
  if (!hit) return NAN;
  return strtod(hit + strlen(pat), NULL);
}

pid_t tr_spawn(const char *cmd, const char *log) {
  fprintf(stderr, "$ %s\n", cmd);
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(log, "w", stdout) || dup2(fileno(stdout), 2) < 0) _exit(126);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  return pid;
}
