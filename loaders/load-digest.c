/* Pieces of a plain file's chunked digest, so that several ranks can share
 * the reading of one file (halo_load_chunk_digests, halo_load_read_at). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load-impl.h"

/* Bytes [from, from + len) of fd into buf; a short file is refused. */
static halo_status read_at(int fd, const char *path, int64_t from, size_t len, uint8_t *buf) {
  halo_status st = HALO_OK;
  size_t got = 0;
  while (got < len) {
    const ssize_t k = pread(fd, buf + got, len - got, (off_t)from + (off_t)got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0)
      HALO_FAIL(HALO_ERR_IO, "%s: read failed at byte %lld: %s", path,
                (long long)from + (long long)got, strerror(errno));
    if (k == 0)
      HALO_FAIL(HALO_ERR_IO, "%s: file ends at byte %lld, before byte %lld (did it change?)", path,
                (long long)from + (long long)got, (long long)from + (long long)len);
    got += (size_t)k;
  }
done:
  return st;
}

static halo_status open_plain(const char *path, int *fd) {
  halo_status st = HALO_OK;
  *fd = open(path, O_RDONLY);
  if (*fd < 0) HALO_FAIL(HALO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  (void)posix_fadvise(*fd, 0, 0, POSIX_FADV_SEQUENTIAL);
done:
  return st;
}

halo_status halo_load_chunk_digests(const char *path, int64_t from, int64_t count, uint64_t *out) {
  halo_status st = HALO_OK;
  uint8_t *buf = NULL;
  int fd = -1;
  if (count <= 0) goto done;
  HALO_ALLOC(buf, HALO_DIGEST_CHUNK, "digest buffer");
  HALO_TRY(open_plain(path, &fd));
  for (int64_t c = 0; c < count; c++) {
    HALO_TRY(read_at(fd, path, from + c * (int64_t)HALO_DIGEST_CHUNK, HALO_DIGEST_CHUNK, buf));
    out[c] = halo_digest_bytes(buf, HALO_DIGEST_CHUNK);
  }
done:
  if (fd >= 0) close(fd);
  free(buf);
  return st;
}

halo_status halo_load_read_at(const char *path, int64_t from, int64_t len, void *out) {
  halo_status st = HALO_OK;
  int fd = -1;
  if (len <= 0) goto done;
  HALO_TRY(open_plain(path, &fd));
  HALO_TRY(read_at(fd, path, from, (size_t)len, out));
done:
  if (fd >= 0) close(fd);
  return st;
}
