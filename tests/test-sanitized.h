/* Whether a test runs in the ASan+UBSan build (-DHALO_SANITIZE=ON), and the
 * line a case prints when it does less there.
 *
 * Sanitizers look for memory errors and undefined behaviour, not for more
 * sizes: one case of each kind reaches the same code as many.  So a case
 * that repeats one check over many shapes, epochs or runs may repeat it
 * fewer times in the sanitized build, which runs every test once more in CI
 * at several times the cost.  It keeps at least one case of every kind of
 * check, and says what it left out.  The build without sanitizers runs
 * every case in full. */
#ifndef TEST_SANITIZED_H
#define TEST_SANITIZED_H

#include <stdio.h>

/* GCC defines __SANITIZE_ADDRESS__ under -fsanitize=address; clang answers
 * __has_feature(address_sanitizer). */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_SANITIZED 1
#endif
#endif
#ifndef TEST_SANITIZED
#define TEST_SANITIZED 0
#endif

/* Prints "[CASE] sanitized build: WHAT; ..." to stderr: what the case runs
 * less of here, and that the build without sanitizers runs all of it. */
static inline void test_sanitized_note(const char *test_case, const char *what) {
  fprintf(stderr,
          "[%s] sanitized build: %s (sanitizers look for memory errors and undefined "
          "behaviour, not for more sizes; the build without sanitizers runs the whole case)\n",
          test_case, what);
}

#endif /* TEST_SANITIZED_H */
