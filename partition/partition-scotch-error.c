/* Scotch's error hooks.  libscotch and libptscotch report through
 * SCOTCH_errorPrint and SCOTCH_errorPrintW, which the application defines
 * (Scotch's own libscotcherr prints a banner and libscotcherrexit exits).
 * halo keeps the first error since the last reset, so the caller that sees a
 * Scotch call fail logs it once, in halo's one-line style and with its own
 * context; warnings go to halo's log as they come.  Scotch may call these
 * from its worker threads, hence the lock. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "halo-status.h"
#include "partition-impl.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char first[HALO__SCOTCH_ERROR_MAX];

void halo__scotch_error_reset(void) {
  pthread_mutex_lock(&lock);
  first[0] = '\0';
  pthread_mutex_unlock(&lock);
}

void halo__scotch_error_take(char *buf, size_t size) {
  pthread_mutex_lock(&lock);
  snprintf(buf, size, "%s", first[0] ? first : "no reason given");
  first[0] = '\0';
  pthread_mutex_unlock(&lock);
}

/* Scotch's messages end without a newline; a stray one would break the line. */
static void strip_newlines(char *s) {
  for (char *c = s; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
}

/* The prototypes are scotch.h's; that header is not included here so that
 * this file does not depend on which of the two builds the include path holds. */
void SCOTCH_errorPrint(const char *const format, ...);
void SCOTCH_errorPrintW(const char *const format, ...);
void SCOTCH_errorProg(const char *const name);

void SCOTCH_errorPrint(const char *const format, ...) {
  va_list ap;
  pthread_mutex_lock(&lock);
  if (!first[0]) {
    va_start(ap, format);
    vsnprintf(first, sizeof first, format, ap);
    va_end(ap);
    strip_newlines(first);
  }
  pthread_mutex_unlock(&lock);
}

void SCOTCH_errorPrintW(const char *const format, ...) {
  char msg[HALO__SCOTCH_ERROR_MAX];
  va_list ap;
  va_start(ap, format);
  vsnprintf(msg, sizeof msg, format, ap);
  va_end(ap);
  strip_newlines(msg);
  halo_log_warn("Scotch: %s", msg);
}

void SCOTCH_errorProg(const char *const name) { (void)name; }
