#include "train-run.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

struct tr_batch {
  char *dir;       /* the batch's folder: cases.txt and case-K/ */
  FILE *file;      /* cases.txt, open until tr_batch_run */
  char **case_dir; /* size cases */
  int cases, cap;
};

tr_batch *tr_batch_new(const char *tag) {
  tr_batch *b = calloc(1, sizeof *b);
  if (!b || !(b->dir = tr_tmpdir(tag))) {
    free(b);
    return NULL;
  }
  b->file = tr_fopenf("w", "%s/cases.txt", b->dir);
  if (!b->file) tr_batch_free(&b);
  return b;
}

int tr_batch_add(tr_batch *b, const char *settings, const char *fmt, ...) {
  if (!b->file) return -1;
  if (b->cases == b->cap) {
    const int cap = b->cap ? 2 * b->cap : 64;
    char **grown = realloc(b->case_dir, (size_t)cap * sizeof *grown);
    if (!grown) return -1;
    b->case_dir = grown;
    b->cap = cap;
  }
  const size_t len = strlen(b->dir) + 32;
  char *dir = malloc(len);
  if (!dir) return -1;
  snprintf(dir, len, "%s/case-%d", b->dir, b->cases);
  if (mkdir(dir, 0755) != 0) {
    free(dir);
    return -1;
  }
  char words[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(words, sizeof words, fmt, ap);
  va_end(ap);
  fprintf(b->file, "%s %s %s\n", settings, dir, words);
  b->case_dir[b->cases] = dir;
  return b->cases++;
}

int tr_batch_cases(const tr_batch *b) { return b->cases; }

const char *tr_batch_dir(const tr_batch *b, int k) { return b->case_dir[k]; }

int tr_batch_run(tr_batch *b, const char *probe, int np, int per_case_s, int limit_s) {
  if (!b->file) return -1;
  const int closed = fclose(b->file);
  b->file = NULL;
  if (closed != 0) return -1;
  const long timeout = 30 + (long)per_case_s * b->cases;
  return tr_mpirun(np, timeout < limit_s ? (int)timeout : limit_s, NULL, "%s --cases %s/cases.txt",
                   probe, b->dir);
}

int tr_batch_status(const tr_batch *b, int k) {
  FILE *f = tr_fopenf("r", "%s/status.txt", b->case_dir[k]);
  int status = -1;
  if (f && fscanf(f, "%d", &status) != 1) status = -1;
  if (f) fclose(f);
  return status;
}

char *tr_batch_logs(const tr_batch *b, int k, int np) {
  size_t len = 0;
  char *all = calloc(1, 1);
  for (int r = 0; r < np && all; r++) {
    char path[1024], head[64];
    snprintf(path, sizeof path, "%s/log-%d.txt", b->case_dir[k], r);
    char *log = tr_slurp(path);
    snprintf(head, sizeof head, "--- rank %d\n", r);
    const size_t add = strlen(head) + (log ? strlen(log) : 0);
    char *grown = realloc(all, len + add + 1);
    if (grown) {
      snprintf(grown + len, add + 1, "%s%s", head, log ? log : "");
      len += add;
    } else {
      free(all);
    }
    all = grown;
    free(log);
  }
  return all;
}

void tr_batch_free(tr_batch **b) {
  if (!b || !*b) return;
  if ((*b)->file) fclose((*b)->file);
  for (int k = 0; k < (*b)->cases; k++) free((*b)->case_dir[k]);
  free((*b)->case_dir);
  tr_rmdir((*b)->dir);
  free(*b);
  *b = NULL;
}
