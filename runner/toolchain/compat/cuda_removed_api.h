/* Written by Optimas; pre-included by its nvcc shim (runner/toolchain/nvcc_shim.py) into a .cu file
 * that calls the thread-management functions CUDA 13 removed from the runtime API. Each was an
 * older name of the cudaDevice* function it calls here, with the same arguments and result. */
#pragma once
#include <cuda_runtime_api.h>

#if defined(CUDART_VERSION) && CUDART_VERSION >= 13000
static inline cudaError_t cudaThreadSynchronize(void) { return cudaDeviceSynchronize(); }
static inline cudaError_t cudaThreadExit(void) { return cudaDeviceReset(); }
static inline cudaError_t cudaThreadSetLimit(enum cudaLimit limit, size_t value) {
  return cudaDeviceSetLimit(limit, value);
}
static inline cudaError_t cudaThreadGetLimit(size_t *value, enum cudaLimit limit) {
  return cudaDeviceGetLimit(value, limit);
}
static inline cudaError_t cudaThreadSetCacheConfig(enum cudaFuncCache config) {
  return cudaDeviceSetCacheConfig(config);
}
static inline cudaError_t cudaThreadGetCacheConfig(enum cudaFuncCache *config) {
  return cudaDeviceGetCacheConfig(config);
}
#endif
