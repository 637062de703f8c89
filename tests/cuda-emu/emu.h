/* halo-cuda-emu's internals, shared by the runtime (runtime.cc, fibers.cc)
 * and the libraries (libs.cc).  Everything runs on the calling thread:
 * queued work runs when the host waits for it, in the order the streams
 * and events allow, and as late as that order allows, so a missing wait
 * reads stale data instead of being hidden by eager execution.  With
 * HALO_CUDA_EMU_SCHEDULE=eager it runs at once instead, so work that must
 * wait for a later host or MPI write reads stale data. */
#ifndef HALO_CUDA_EMU_EMU_H
#define HALO_CUDA_EMU_EMU_H

#include <stdint.h>

#include <functional>
#include <mutex>

#include "cuda_runtime.h"

namespace halo_emu {

/* One lock around every entry point: the emulated device is one device. */
std::recursive_mutex &api_lock();
#define HALO_EMU_API std::lock_guard<std::recursive_mutex> halo_emu_guard(::halo_emu::api_lock())

/* ---- errors -------------------------------------------------------------- */

/* One line on stderr, prefixed "halo-cuda-emu: ". */
void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A fault inside queued work: reported once, then returned by every later
 * runtime call, as a real device's sticky error is. */
void fault(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
cudaError_t sticky();
/* A launch's configuration error, returned once by cudaGetLastError. */
void set_last(cudaError_t e);
/* For a bug no device reports (a barrier not every thread reaches): the
 * process stops, since a GPU would hang or corrupt silently. */
[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- memory -------------------------------------------------------------- */

enum class space { pageable, pinned, device };
/* Where p lies; for device and pinned memory also the bytes from p to the
 * end of its allocation. */
space where(const void *p, size_t *left = nullptr);
/* 1 when [p, p + bytes) lies inside one device allocation. */
bool device_range(const void *p, size_t bytes);

/* ---- streams ------------------------------------------------------------- */

CUstream_st *stream_of(cudaStream_t s);
/* Queues work; returns its sequence number on the stream. */
uint64_t enqueue(CUstream_st *s, std::function<void()> work);
/* Runs the stream's queued work up to and including `seq`. */
void drain(CUstream_st *s, uint64_t seq);
void drain_all(CUstream_st *s);
void drain_device();

}  // namespace halo_emu

#endif /* HALO_CUDA_EMU_EMU_H */
