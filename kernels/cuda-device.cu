/* Device selection, memory and streams for C callers (no CUDA types cross
 * the header).  Host code only: no kernels here. */
#include <stdio.h>
#include <string.h>

#include "halo-cuda-check.cuh"
#include "halo-kernels-cuda.h"

extern "C" halo_status halo_cuda_select_device(int local_rank, int *device) {
  halo_status st = HALO_OK;
  int count = 0, chosen = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    halo_log_error("no CUDA device: %s",
                   e != cudaSuccess ? cudaGetErrorString(e) : "the driver sees none");
    (void)cudaGetLastError();
    return HALO_ERR_CUDA;
  }
  chosen = (local_rank < 0 ? 0 : local_rank) % count;
  HALO_CUDA(cudaSetDevice(chosen));
  if (device) *device = chosen;
done:
  return st;
}

extern "C" halo_status halo_cuda_device_name(char *buf, size_t size) {
  halo_status st = HALO_OK;
  int device = 0;
  cudaDeviceProp prop;
  if (!buf || size == 0) return HALO_ERR_ARG;
  buf[0] = '\0';
  HALO_CUDA(cudaGetDevice(&device));
  HALO_CUDA(cudaGetDeviceProperties(&prop, device));
  snprintf(buf, size, "%s", prop.name);
done:
  return st;
}

extern "C" halo_status halo_cuda_device_location(int *location) {
  halo_status st = HALO_OK;
  int device = 0;
  cudaDeviceProp prop;
  HALO_CUDA(cudaGetDevice(&device));
  HALO_CUDA(cudaGetDeviceProperties(&prop, device));
  /* Domain 16 bits, bus 8, device 5: fits an int with room to spare. */
  *location =
      (prop.pciDomainID & 0xffff) << 13 | (prop.pciBusID & 0xff) << 5 | (prop.pciDeviceID & 0x1f);
done:
  return st;
}

extern "C" halo_status halo_cuda_mem_info(size_t *free_bytes, size_t *total_bytes) {
  halo_status st = HALO_OK;
  HALO_CUDA(cudaMemGetInfo(free_bytes, total_bytes));
done:
  return st;
}

extern "C" halo_status halo_cuda_malloc(void **ptr, size_t bytes, const char *what) {
  halo_status st = HALO_OK;
  cudaError_t e;
  if (!ptr) return HALO_ERR_ARG;
  *ptr = NULL;
  e = cudaMalloc(ptr, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    halo_log_error("out of device memory allocating %s (%zu bytes): %s", what ? what : "a buffer",
                   bytes, cudaGetErrorString(e));
    *ptr = NULL;
    return HALO_ERR_NOMEM;
  }
  /* cudaMemset on device memory is asynchronous: it is queued on the
   * default stream, which the backend's stream (cudaStreamNonBlocking) does
   * not wait for.  Without this wait, an upload or a kernel queued on that
   * stream right after the allocation could run before the zeros land, or
   * under them (csr_upload copies into fresh buffers at once; Adam reads
   * its zeroed moments).  Allocation is set-up work, so waiting costs
   * nothing that matters. */
  HALO_CUDA(cudaMemset(*ptr, 0, bytes));
  HALO_CUDA(cudaStreamSynchronize(0));
done:
  if (st < 0) halo_cuda_free(ptr);
  return st;
}

extern "C" void halo_cuda_free(void **ptr) {
  if (!ptr || !*ptr) return;
  cudaFree(*ptr);
  *ptr = NULL;
}

extern "C" halo_status halo_cuda_malloc_host(void **ptr, size_t bytes, const char *what) {
  cudaError_t e;
  if (!ptr) return HALO_ERR_ARG;
  *ptr = NULL;
  e = cudaMallocHost(ptr, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    halo_log_error("out of pinned host memory allocating %s (%zu bytes): %s",
                   what ? what : "a buffer", bytes, cudaGetErrorString(e));
    *ptr = NULL;
    return HALO_ERR_NOMEM;
  }
  memset(*ptr, 0, bytes);
  return HALO_OK;
}

extern "C" void halo_cuda_free_host(void **ptr) {
  if (!ptr || !*ptr) return;
  cudaFreeHost(*ptr);
  *ptr = NULL;
}

extern "C" halo_status halo_cuda_memcpy(void *dst, const void *src, size_t bytes, void *stream) {
  halo_status st = HALO_OK;
  if (bytes == 0) return HALO_OK;
  HALO_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream));
done:
  return st;
}

extern "C" halo_status halo_cuda_stream_create(void **stream) {
  halo_status st = HALO_OK;
  cudaStream_t s = NULL;
  if (!stream) return HALO_ERR_ARG;
  *stream = NULL;
  HALO_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  *stream = s;
done:
  return st;
}

extern "C" void halo_cuda_stream_destroy(void **stream) {
  if (!stream || !*stream) return;
  cudaStreamDestroy((cudaStream_t)*stream);
  *stream = NULL;
}

extern "C" halo_status halo_cuda_stream_synchronize(void *stream) {
  halo_status st = HALO_OK;
  HALO_CUDA(cudaStreamSynchronize((cudaStream_t)stream));
done:
  return st;
}

extern "C" halo_status halo_cuda_event_create(void **event) {
  halo_status st = HALO_OK;
  cudaEvent_t e = NULL;
  if (!event) return HALO_ERR_ARG;
  *event = NULL;
  HALO_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  *event = e;
done:
  return st;
}

extern "C" void halo_cuda_event_destroy(void **event) {
  if (!event || !*event) return;
  cudaEventDestroy((cudaEvent_t)*event);
  *event = NULL;
}

extern "C" halo_status halo_cuda_stream_wait(void *waiter, void *stream, void *event) {
  halo_status st = HALO_OK;
  HALO_CUDA(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream));
  HALO_CUDA(cudaStreamWaitEvent((cudaStream_t)waiter, (cudaEvent_t)event, 0));
done:
  return st;
}
