/* Written by Optimas; pre-included by its nvcc shim (runner/toolchain/nvcc_shim.py) into a .cu file
 * that calls cudaMemPrefetchAsync or cudaMemAdvise with a device ordinal, as before CUDA 13: CUDA
 * 13 takes a cudaMemLocation there (and a flags word before the stream). Each overload here makes
 * the location the call meant, the device of that ordinal, or the host for cudaCpuDeviceId (-1),
 * and calls CUDA 13's form with no flags. */
#pragma once
#include <cuda_runtime.h>

#if defined(__cplusplus) && defined(CUDART_VERSION) && CUDART_VERSION >= 13000
static inline struct cudaMemLocation optimas_location_of(int device) {
  struct cudaMemLocation location;
  location.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  location.id = device == cudaCpuDeviceId ? 0 : device;
  return location;
}

static inline cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, int dstDevice,
                                               cudaStream_t stream = 0) {
  return cudaMemPrefetchAsync(devPtr, count, optimas_location_of(dstDevice), 0u, stream);
}

static inline cudaError_t cudaMemAdvise(const void *devPtr, size_t count, enum cudaMemoryAdvise advice, int device) {
  return cudaMemAdvise(devPtr, count, advice, optimas_location_of(device));
}
#endif
