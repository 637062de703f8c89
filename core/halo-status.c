#include "halo-status.h"

#include <stdio.h>
#include <string.h>

static char log_prefix[64] = "halo";
static char log_context[64]; /* halo_log_set_context's, or "" */
static int log_quiet;
static char *log_held; /* halo_log_hold's buffer, or NULL */
static size_t log_held_size;

const char *halo_status_str(halo_status st) {
  switch (st) {
#define HALO__STATUS_CASE(name, value, text) \
  case name:                                 \
    return text;
    HALO_STATUS_TABLE(HALO__STATUS_CASE)
#undef HALO__STATUS_CASE
  }
  return "unknown status";
}

void halo_log_set_prefix(const char *prefix) {
  snprintf(log_prefix, sizeof log_prefix, "%s", prefix ? prefix : "halo");
}

void halo_log_set_context(const char *context) {
  snprintf(log_context, sizeof log_context, "%s", context ? context : "");
}

void halo_log_set_quiet(int quiet) { log_quiet = quiet; }

void halo_log_hold(char *line, size_t size) {
  log_held = size > 0 ? line : NULL;
  log_held_size = size;
  if (log_held) log_held[0] = '\0';
}

static void log_line(const char *kind, const char *fmt, va_list ap) {
  if (log_quiet) return;
  /* Format into one buffer so that lines from several ranks do not interleave. */
  char line[2048];
  int n = snprintf(line, sizeof line, "%s: %s: %s", log_prefix, kind,
                   kind[0] == 'e' ? log_context : "");
  if (n < 0) return;
  if ((size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  if (log_held && kind[0] == 'e') {
    if (!log_held[0]) snprintf(log_held, log_held_size, "%s", line);
    return;
  }
  fprintf(stderr, "%s\n", line);
  fflush(stderr);
}

void halo_log_verror(const char *fmt, va_list ap) { log_line("error", fmt, ap); }

void halo_log_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line("error", fmt, ap);
  va_end(ap);
}

void halo_log_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line("warning", fmt, ap);
  va_end(ap);
}
