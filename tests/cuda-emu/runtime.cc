/* halo-cuda-emu: errors, memory, streams and events of the CUDA runtime.
 *
 * Memory: cudaMalloc memory is host memory, 256-byte aligned like a
 * device's, filled with 0xff bytes (NaN floats, index -1) where a device
 * would hold garbage, and known by its range, so every copy, memset,
 * kernel argument and library operand is checked to be device memory of
 * the right size.  cudaMallocHost memory is "pinned": only copies to and
 * from it are queued; a copy with pageable host memory runs at the call,
 * after the work it is ordered after (the stream's, and for the legacy
 * stream the blocking streams'), as the runtime documents.
 *
 * Streams: every operation is queued and runs when the host waits for it
 * (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize, a
 * copy to pageable memory, cudaFree): the late schedule, the default.  With
 * HALO_CUDA_EMU_SCHEDULE=eager each operation runs as soon as it is queued,
 * as a GPU that is idle may: host or MPI writes that come after the launch
 * then arrive too late for it.  A real GPU runs anywhere between the two,
 * so the tests run under both.  cudaStreamWaitEvent queues a wait
 * that runs the event's stream up to the event first.  The legacy default
 * stream (NULL) orders itself against blocking streams only, so work on a
 * cudaStreamNonBlocking stream runs after NULL-stream work only when
 * something makes it wait. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "emu.h"

struct CUstream_st {
  struct op {
    uint64_t seq;
    std::function<void()> work;
  };
  std::deque<op> queue;
  uint64_t next = 1; /* the sequence number of the next operation */
  uint64_t done = 0; /* every operation up to this one has run */
  bool blocking = true;
  bool legacy = false;
  bool destroyed = false;
};

struct CUevent_st {
  CUstream_st *stream = nullptr; /* where it was last recorded */
  uint64_t seq = 0;
  bool timing = true;
  double ms = 0.0; /* when its marker ran */
};

namespace halo_emu {

std::recursive_mutex &api_lock() {
  static std::recursive_mutex lock;
  return lock;
}

/* ---- errors -------------------------------------------------------------- */

namespace {
cudaError_t g_sticky = cudaSuccess;
cudaError_t g_last = cudaSuccess;

void vreport(const char *fmt, va_list ap) {
  fputs("halo-cuda-emu: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}
}  // namespace

void report(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(fmt, ap);
  va_end(ap);
}

void fault(cudaError_t e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(fmt, ap);
  va_end(ap);
  if (g_sticky == cudaSuccess) g_sticky = e;
}

cudaError_t sticky() { return g_sticky; }

void set_last(cudaError_t e) { g_last = e; }

void fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(fmt, ap);
  va_end(ap);
  fflush(stderr);
  abort();
}

/* ---- memory -------------------------------------------------------------- */

namespace {
struct allocation {
  size_t bytes;
  space kind;
};
std::map<uintptr_t, allocation> &allocations() {
  static std::map<uintptr_t, allocation> all;
  return all;
}
size_t g_device_bytes = 0;
constexpr size_t kTotalBytes = (size_t)16 << 30; /* what cudaMemGetInfo reports */
int g_device = 0;

/* HALO_CUDA_EMU_DEVICES emulated devices (1), of which a program sees
 * those CUDA_VISIBLE_DEVICES lists, as the runtime reads it: indices
 * separated by commas, up to the first that names no device.  Returns how
 * many it sees; physical[i] (when not NULL, 64 entries) gets the emulated
 * device behind visible device i. */
int visible_devices(int *physical) {
  const char *env = getenv("HALO_CUDA_EMU_DEVICES");
  int devices = env ? atoi(env) : 1;
  if (devices > 64) devices = 64; /* physical[]'s size */
  const char *visible = getenv("CUDA_VISIBLE_DEVICES");
  if (!visible) {
    for (int i = 0; physical && i < devices && i < 64; i++) physical[i] = i;
    return devices;
  }
  int seen = 0;
  for (const char *p = visible; seen < 64; p++) {
    char *end;
    const long id = strtol(p, &end, 10);
    if (end == p || id < 0 || id >= devices) break;
    if (physical) physical[seen] = (int)id;
    seen++;
    if (*end != ',') break;
    p = end;
  }
  return seen;
}

int device_count() { return visible_devices(nullptr); }
}  // namespace

space where(const void *p, size_t *left) {
  const uintptr_t a = (uintptr_t)p;
  auto &all = allocations();
  auto it = all.upper_bound(a);
  if (it == all.begin()) return space::pageable;
  --it;
  /* One past the end counts as inside (an empty tail of an array). */
  if (a > it->first + it->second.bytes) return space::pageable;
  if (left) *left = it->first + it->second.bytes - a;
  return it->second.kind;
}

bool device_range(const void *p, size_t bytes) {
  size_t left = 0;
  return where(p, &left) == space::device && bytes <= left;
}

/* ---- streams ------------------------------------------------------------- */

namespace {
std::vector<std::unique_ptr<CUstream_st>> &streams() {
  static std::vector<std::unique_ptr<CUstream_st>> all;
  return all;
}

CUstream_st *legacy_stream() {
  static CUstream_st *legacy = [] {
    streams().emplace_back(new CUstream_st);
    streams().back()->legacy = true;
    return streams().back().get();
  }();
  return legacy;
}

/* Queues a wait: when it runs, `other` first runs up to `seq`. */
void push_wait(CUstream_st *s, CUstream_st *other, uint64_t seq) {
  s->queue.push_back({s->next++, [other, seq] { drain(other, seq); }});
}
}  // namespace

CUstream_st *stream_of(cudaStream_t s) { return s ? s : legacy_stream(); }

namespace {
/* HALO_CUDA_EMU_SCHEDULE: "late" (default) or "eager", read at each
 * operation, so that a test may switch between its launches. */
bool eager_schedule() {
  const char *env = getenv("HALO_CUDA_EMU_SCHEDULE");
  if (!env || !*env || strcmp(env, "late") == 0) return false;
  if (strcmp(env, "eager") == 0) return true;
  fatal("HALO_CUDA_EMU_SCHEDULE=%s: expected late or eager", env);
}
}  // namespace

uint64_t enqueue(CUstream_st *s, std::function<void()> work) {
  CUstream_st *legacy = legacy_stream();
  if (s->legacy) {
    /* The legacy stream waits for all earlier work of blocking streams. */
    for (auto &other : streams())
      if (other.get() != s && other->blocking && !other->destroyed && !other->queue.empty())
        push_wait(s, other.get(), other->next - 1);
  } else if (s->blocking && !legacy->queue.empty()) {
    push_wait(s, legacy, legacy->next - 1);
  }
  const uint64_t seq = s->next++;
  s->queue.push_back({seq, std::move(work)});
  if (eager_schedule()) drain(s, seq);
  return seq;
}

void drain(CUstream_st *s, uint64_t seq) {
  while (!s->queue.empty() && s->queue.front().seq <= seq) {
    CUstream_st::op op = std::move(s->queue.front());
    s->queue.pop_front();
    op.work();
    s->done = op.seq;
  }
}

void drain_all(CUstream_st *s) { drain(s, s->next - 1); }

void drain_device() {
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < streams().size(); i++) {
      CUstream_st *s = streams()[i].get();
      if (!s->queue.empty()) {
        drain_all(s);
        again = true;
      }
    }
  }
}

}  // namespace halo_emu

using namespace halo_emu;

/* Every call but cudaGetLastError returns a sticky fault first. */
#define HALO_EMU_STICKY()                         \
  do {                                            \
    if (sticky() != cudaSuccess) return sticky(); \
  } while (0)

extern "C" {

const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    case cudaErrorMisalignedAddress:
      return "misaligned address";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
  }
  return "unrecognized error code";
}

cudaError_t cudaGetLastError(void) {
  HALO_EMU_API;
  HALO_EMU_STICKY();
  const cudaError_t e = g_last;
  g_last = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  HALO_EMU_API;
  HALO_EMU_STICKY();
  return g_last;
}

cudaError_t cudaGetDeviceCount(int *count) {
  if (!count) return cudaErrorInvalidValue;
  *count = device_count();
  return *count > 0 ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaSetDevice(int device) {
  HALO_EMU_API;
  if (device < 0 || device >= device_count()) return cudaErrorInvalidDevice;
  g_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
  if (!device) return cudaErrorInvalidValue;
  *device = g_device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  if (!prop) return cudaErrorInvalidValue;
  if (device < 0 || device >= device_count()) return cudaErrorInvalidDevice;
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "halo CUDA emulator (CPU)");
  prop->totalGlobalMem = kTotalBytes;
  prop->multiProcessorCount = 4;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->major = 9;
  prop->minor = 0;
  /* Each emulated device on a bus of its own, whatever index a process
   * sees it under, as a GPU's PCI location is. */
  int physical[64];
  visible_devices(physical);
  prop->pciBusID = 0x10 + physical[device];
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
  HALO_EMU_API;
  HALO_EMU_STICKY();
  if (!free_bytes || !total_bytes) return cudaErrorInvalidValue;
  *total_bytes = kTotalBytes;
  *free_bytes = kTotalBytes > g_device_bytes ? kTotalBytes - g_device_bytes : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  HALO_EMU_API;
  drain_device();
  HALO_EMU_STICKY();
  return cudaSuccess;
}

/* ---- memory -------------------------------------------------------------- */

static cudaError_t emu_alloc(void **ptr, size_t bytes, space kind) {
  if (!ptr) return cudaErrorInvalidValue;
  *ptr = nullptr;
  if (kind == space::device && bytes > kTotalBytes - g_device_bytes)
    return cudaErrorMemoryAllocation;
  void *p = nullptr;
  if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0) return cudaErrorMemoryAllocation;
  /* Fresh device memory holds garbage: NaN floats, negative indices. */
  memset(p, 0xff, bytes);
  allocations()[(uintptr_t)p] = {bytes, kind};
  if (kind == space::device) g_device_bytes += bytes;
  *ptr = p;
  return cudaSuccess;
}

static cudaError_t emu_free(void *ptr, space kind) {
  if (!ptr) return cudaSuccess;
  /* Freeing waits for the device, so queued work never sees freed memory. */
  drain_device();
  auto it = allocations().find((uintptr_t)ptr);
  if (it == allocations().end() || it->second.kind != kind) {
    report("%s(%p): not the start of a %s allocation",
           kind == space::device ? "cudaFree" : "cudaFreeHost", ptr,
           kind == space::device ? "cudaMalloc" : "cudaMallocHost");
    return cudaErrorInvalidValue;
  }
  if (kind == space::device) g_device_bytes -= it->second.bytes;
  allocations().erase(it);
  free(ptr);
  HALO_EMU_STICKY();
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **ptr, size_t bytes) {
  HALO_EMU_API;
  HALO_EMU_STICKY();
  return emu_alloc(ptr, bytes, space::device);
}

cudaError_t cudaFree(void *ptr) {
  HALO_EMU_API;
  return emu_free(ptr, space::device);
}

cudaError_t cudaMallocHost(void **ptr, size_t bytes) {
  HALO_EMU_API;
  HALO_EMU_STICKY();
  return emu_alloc(ptr, bytes, space::pinned);
}

cudaError_t cudaFreeHost(void *ptr) {
  HALO_EMU_API;
  return emu_free(ptr, space::pinned);
}

/* ---- copies and memsets ---------------------------------------------------- */

static const char *space_name(space s) {
  return s == space::device ? "device" : s == space::pinned ? "pinned host" : "pageable host";
}

/* Checks a copy's kind against where its pointers lie, and the device side
 * against its allocation's size. */
static cudaError_t check_copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                              const char *call) {
  const space d = where(dst), s = where(src);
  const bool dev_dst = d == space::device, dev_src = s == space::device;
  bool ok = true;
  switch (kind) {
    case cudaMemcpyHostToHost:
      ok = !dev_dst && !dev_src;
      break;
    case cudaMemcpyHostToDevice:
      ok = dev_dst && !dev_src;
      break;
    case cudaMemcpyDeviceToHost:
      ok = !dev_dst && dev_src;
      break;
    case cudaMemcpyDeviceToDevice:
      ok = dev_dst && dev_src;
      break;
    case cudaMemcpyDefault:
      break;
    default:
      report("%s: unknown kind %d", call, (int)kind);
      return cudaErrorInvalidValue;
  }
  if (!ok) {
    report("%s: kind %d, but the destination is %s memory and the source %s memory", call,
           (int)kind, space_name(d), space_name(s));
    return cudaErrorInvalidValue;
  }
  if ((dev_dst && !device_range(dst, bytes)) || (dev_src && !device_range(src, bytes))) {
    report("%s: %zu bytes run past the end of a device allocation", call, bytes);
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

/* A copy that involves pageable memory runs at the call, after the work it
 * is ordered after (the stream's, and for the legacy stream the blocking
 * streams'); any other is queued. */
static cudaError_t copy_on(CUstream_st *s, void *dst, const void *src, size_t bytes,
                           bool wait_for_it) {
  if (bytes == 0) return cudaSuccess;
  const bool pageable = where(dst) == space::pageable || where(src) == space::pageable;
  const uint64_t seq = enqueue(s, [dst, src, bytes] { memcpy(dst, src, bytes); });
  if (wait_for_it || pageable) drain(s, seq);
  HALO_EMU_STICKY();
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
  HALO_EMU_API;
  HALO_EMU_STICKY();
  cudaError_t e = check_copy(dst, src, bytes, kind, "cudaMemcpy");
  if (e != cudaSuccess) return e;
  /* Synchronous except device to device. */
  const bool d2d = where(dst) == space::device && where(src) == space::device;
  return copy_on(stream_of(nullptr), dst, src, bytes, !d2d);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  HALO_EMU_API;
  HALO_EMU_STICKY();
  cudaError_t e = check_copy(dst, src, bytes, kind, "cudaMemcpyAsync");
  if (e != cudaSuccess) return e;
  return copy_on(stream_of(stream), dst, src, bytes, false);
}

static cudaError_t memset_2d(void *ptr, size_t pitch, int value, size_t width, size_t height,
                             cudaStream_t stream, const char *call) {
  HALO_EMU_STICKY();
  if (width == 0 || height == 0) return cudaSuccess;
  if (width > pitch || !device_range(ptr, pitch * (height - 1) + width)) {
    report("%s(%p, pitch %zu, width %zu, height %zu): not inside one device allocation", call, ptr,
           pitch, width, height);
    return cudaErrorInvalidValue;
  }
  char *p = (char *)ptr;
  enqueue(stream_of(stream), [p, pitch, value, width, height] {
    for (size_t r = 0; r < height; r++) memset(p + r * pitch, value, width);
  });
  return cudaSuccess;
}

/* cudaMemset is asynchronous for device memory: it is queued on the legacy
 * stream like any other work. */
cudaError_t cudaMemset(void *ptr, int value, size_t bytes) {
  HALO_EMU_API;
  return memset_2d(ptr, bytes, value, bytes, 1, nullptr, "cudaMemset");
}

cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t stream) {
  HALO_EMU_API;
  return memset_2d(ptr, bytes, value, bytes, 1, stream, "cudaMemsetAsync");
}

cudaError_t cudaMemset2DAsync(void *ptr, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t stream) {
  HALO_EMU_API;
  return memset_2d(ptr, pitch, value, width, height, stream, "cudaMemset2DAsync");
}

/* ---- streams and events --------------------------------------------------- */

cudaError_t cudaStreamCreate(cudaStream_t *stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags) {
  HALO_EMU_API;
  HALO_EMU_STICKY();
  if (!stream) return cudaErrorInvalidValue;
  stream_of(nullptr); /* the legacy stream exists first */
  streams().emplace_back(new CUstream_st);
  streams().back()->blocking = !(flags & cudaStreamNonBlocking);
  *stream = streams().back().get();
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  HALO_EMU_API;
  if (!stream || stream->destroyed || stream->legacy) return cudaErrorInvalidResourceHandle;
  /* Work already queued still runs; the object stays for waits that name it. */
  drain_all(stream);
  stream->destroyed = true;
  HALO_EMU_STICKY();
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  HALO_EMU_API;
  if (stream && stream->destroyed) return cudaErrorInvalidResourceHandle;
  drain_all(stream_of(stream));
  HALO_EMU_STICKY();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags) {
  HALO_EMU_API;
  HALO_EMU_STICKY();
  if (!event || flags != 0) return cudaErrorInvalidValue;
  if (!event->stream) return cudaSuccess; /* never recorded: nothing to wait for */
  CUstream_st *other = event->stream;
  const uint64_t seq = event->seq;
  enqueue(stream_of(stream), [other, seq] { drain(other, seq); });
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags) {
  HALO_EMU_API;
  HALO_EMU_STICKY();
  if (!event) return cudaErrorInvalidValue;
  *event = new CUevent_st;
  (*event)->timing = !(flags & cudaEventDisableTiming);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  HALO_EMU_API;
  if (!event) return cudaErrorInvalidResourceHandle;
  /* A marker still queued refers to the event: let it run first. */
  if (event->stream) drain(event->stream, event->seq);
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  HALO_EMU_API;
  HALO_EMU_STICKY();
  if (!event) return cudaErrorInvalidResourceHandle;
  CUstream_st *s = stream_of(stream);
  event->stream = s;
  event->seq = enqueue(s, [event] {
    event->ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  });
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  HALO_EMU_API;
  if (!event) return cudaErrorInvalidResourceHandle;
  if (event->stream) drain(event->stream, event->seq);
  HALO_EMU_STICKY();
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  HALO_EMU_API;
  HALO_EMU_STICKY();
  if (!ms || !start || !end) return cudaErrorInvalidValue;
  if (!start->timing || !end->timing || !start->stream || !end->stream)
    return cudaErrorInvalidResourceHandle;
  if (start->stream->done < start->seq || end->stream->done < end->seq) return cudaErrorNotReady;
  *ms = (float)(end->ms - start->ms);
  return cudaSuccess;
}

}  // extern "C"
