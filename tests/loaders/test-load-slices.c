/* The line reader's slices (load_reader_open_slice): for any number of
 * slices, the slices' lines, in slice order, are the whole file's lines, each
 * once, and a slice that adds the lines of the lower slices to its own
 * numbers names every line as the whole-file reader does.  Files are drawn
 * at random (seed printed): empty lines, CRLF, a byte-order mark, long lines,
 * no final newline; and by hand where a cut falls next to a '\n'. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "halo-rng.h"
#include "load-impl.h"

/* Lines joined by '\n' into a growing buffer. */
typedef struct joined {
  char *text;
  size_t used, cap;
} joined;

static joined joined_new(void) {
  joined j = {.text = calloc(1, 1 << 16), .cap = 1 << 16};
  cr_assert(j.text);
  return j;
}

static void join(joined *j, const char *line, size_t len) {
  while (j->used + len + 2 > j->cap) j->text = realloc(j->text, j->cap *= 2);
  cr_assert(j->text);
  memcpy(j->text + j->used, line, len);
  j->used += len;
  j->text[j->used++] = '\n';
  j->text[j->used] = '\0';
}

/* The whole-file reader's lines of `path`, joined by '\n', and their count. */
static char *whole_lines(const char *path, int64_t *count) {
  load_reader r;
  cr_assert_eq(load_reader_open_maybe_empty(&r, path, NULL), HALO_OK);
  joined all = joined_new();
  char *line;
  size_t len;
  int got;
  *count = 0;
  while ((got = load_reader_next(&r, &line, &len)) > 0) {
    join(&all, line, len);
    ++*count;
  }
  cr_assert_eq(got, 0);
  load_reader_close(&r);
  return all.text;
}

/* The same through `slices` slices, each numbering from the lines below it;
 * every line's global number must come out as its position. */
static char *sliced_lines(const char *path, int64_t slices, int64_t *count) {
  joined all = joined_new();
  char *line;
  *count = 0;
  for (int64_t k = 0; k < slices; k++) {
    load_reader r;
    cr_assert_eq(load_reader_open_slice(&r, path, k, slices), HALO_OK, "slice %lld of %lld",
                 (long long)k, (long long)slices);
    r.line_base = *count;
    size_t len;
    int got;
    while ((got = load_reader_next(&r, &line, &len)) > 0) {
      join(&all, line, len);
      ++*count;
      cr_assert_eq(r.line_base + r.line, *count, "slice %lld/%lld numbers line %lld as %lld",
                   (long long)k, (long long)slices, (long long)*count,
                   (long long)(r.line_base + r.line));
    }
    cr_assert_eq(got, 0);
    load_reader_close(&r);
  }
  return all.text;
}

static void write_file(const char *path, const char *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert(f);
  cr_assert_eq(fwrite(bytes, 1, n, f), n);
  cr_assert_eq(fclose(f), 0);
}

static void expect_slices_agree(const char *path, const char *what) {
  int64_t whole_count = 0;
  char *whole = whole_lines(path, &whole_count);
  for (int64_t slices = 1; slices <= 9; slices++) {
    int64_t count = 0;
    char *sliced = sliced_lines(path, slices, &count);
    cr_expect_eq(count, whole_count, "%s, %lld slices: %lld lines, the file has %lld", what,
                 (long long)slices, (long long)count, (long long)whole_count);
    cr_expect_str_eq(sliced, whole, "%s, %lld slices: other lines", what, (long long)slices);
    free(sliced);
  }
  /* More slices than bytes: most are empty. */
  int64_t count = 0;
  char *sliced = sliced_lines(path, 97, &count);
  cr_expect_str_eq(sliced, whole, "%s, 97 slices: other lines", what);
  free(sliced);
  free(whole);
}

Test(slices, random_files_any_number_of_slices) {
  const char *env = getenv("HALO_TEST_SEED");
  uint64_t seed = env ? strtoull(env, NULL, 10) : 20261202;
  fprintf(stderr, "slices.random_files: seed %llu (set HALO_TEST_SEED to change)\n",
          (unsigned long long)seed);
  char path[] = "/tmp/halo-test-slices-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  char *text = malloc(1 << 20);
  for (int file = 0; file < 40; file++) {
    uint64_t key = halo_rng_key(seed, 91, (uint64_t)file, 0);
    size_t n = 0, lines = 1 + halo_rng_bits(key, 0, 0) % 200;
    if (halo_rng_bits(key, 0, 1) % 4 == 0) n += (size_t)sprintf(text, "\xEF\xBB\xBF");
    for (size_t i = 0; i < lines; i++) {
      uint64_t b = halo_rng_bits(key, 1 + i, 0);
      size_t len = b % 7 == 0 ? 0 : b % 11 == 0 ? 3000 + b % 5000 : b % 40;
      for (size_t c = 0; c < len; c++) text[n++] = (char)('a' + (b >> 8 ^ c) % 26);
      if (i + 1 < lines || halo_rng_bits(key, 0, 2) % 2) {
        if (b % 5 == 0) text[n++] = '\r';
        text[n++] = '\n';
      }
    }
    write_file(path, text, n);
    char what[64];
    snprintf(what, sizeof what, "file %d (%zu bytes, %zu lines)", file, n, lines);
    expect_slices_agree(path, what);
  }
  free(text);
  unlink(path);
}

Test(slices, cuts_next_to_newlines) {
  char path[] = "/tmp/halo-test-slices-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  /* 2 slices of "a\nb\n" cut at byte 2, a line start; of "ab\ncd" at 2, the
   * '\n' itself; of "\n\n\n\n" everywhere; one line; a file of no bytes. */
  const char *cases[] = {"a\nb\n", "ab\ncd", "\n\n\n\n", "abcdefgh", ""};
  for (int i = 0; i < 5; i++) {
    write_file(path, cases[i], strlen(cases[i]));
    expect_slices_agree(path, cases[i]);
  }
  /* By hand: "a\nb\n" in 2 slices is "a" and "b". */
  write_file(path, "a\nb\n", 4);
  for (int k = 0; k < 2; k++) {
    load_reader r;
    char *line;
    size_t len;
    cr_assert_eq(load_reader_open_slice(&r, path, k, 2), HALO_OK);
    cr_assert_eq(load_reader_next(&r, &line, &len), 1);
    cr_expect_str_eq(line, k ? "b" : "a");
    cr_expect_eq(load_reader_next(&r, &line, &len), 0);
    load_reader_close(&r);
  }
  unlink(path);
}

Test(slices, gzip_and_folders_are_refused) {
  char path[] = "/tmp/halo-test-slices-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  write_file(path, "\x1f\x8b\x08\x00", 4);
  load_reader r;
  halo_log_set_quiet(1);
  cr_expect_eq(load_reader_open_slice(&r, path, 0, 2), HALO_ERR_UNSUPPORTED);
  cr_expect_eq(load_reader_open_slice(&r, "/tmp", 0, 2), HALO_ERR_IO);
  cr_expect_eq(load_reader_open_slice(&r, path, 2, 2), HALO_ERR_ARG);
  halo_log_set_quiet(0);
  unlink(path);
}
