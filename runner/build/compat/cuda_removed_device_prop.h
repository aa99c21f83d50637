/* Written by Optimas; pre-included by its nvcc shim (runner/build/nvcc_shim.py) into a .cu file
 * that reads the cudaDeviceProp fields CUDA 13 removed (clockRate, memoryClockRate, computeMode,
 * kernelExecTimeoutEnabled, deviceOverlap, maxTexture1DLinear, singleToDoublePrecisionPerfRatio,
 * cooperativeMultiDeviceLaunch). cudaDeviceProp names a struct that adds them to the runtime's,
 * and cudaGetDeviceProperties fills them from the device attributes that still hold each value
 * (cudaDevAttrClockRate, ...); cooperativeMultiDeviceLaunch is 0, as CUDA 13 removed multi-device
 * cooperative launches. The struct is the runtime's otherwise, so a pointer to it goes wherever a
 * cudaDeviceProp pointer went. */
#pragma once
#include <cuda_runtime.h>

#if defined(__cplusplus) && defined(CUDART_VERSION) && CUDART_VERSION >= 13000
struct optimas_cudaDeviceProp : public cudaDeviceProp {
  int clockRate;
  int memoryClockRate;
  int computeMode;
  int kernelExecTimeoutEnabled;
  int deviceOverlap;
  int maxTexture1DLinear;
  int singleToDoublePrecisionPerfRatio;
  int cooperativeMultiDeviceLaunch;
};

static inline int optimas_device_attribute(enum cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    (void)cudaGetLastError(); /* the query's own error, not the program's */
    value = 0;
  }
  return value;
}

static inline cudaError_t cudaGetDeviceProperties(optimas_cudaDeviceProp *prop, int device) {
  cudaError_t status = cudaGetDeviceProperties(static_cast<cudaDeviceProp *>(prop), device);
  if (status != cudaSuccess) return status;
  prop->clockRate = optimas_device_attribute(cudaDevAttrClockRate, device);
  prop->memoryClockRate = optimas_device_attribute(cudaDevAttrMemoryClockRate, device);
  prop->computeMode = optimas_device_attribute(cudaDevAttrComputeMode, device);
  prop->kernelExecTimeoutEnabled = optimas_device_attribute(cudaDevAttrKernelExecTimeout, device);
  prop->deviceOverlap = optimas_device_attribute(cudaDevAttrGpuOverlap, device);
  prop->maxTexture1DLinear = optimas_device_attribute(cudaDevAttrMaxTexture1DLinearWidth, device);
  prop->singleToDoublePrecisionPerfRatio =
      optimas_device_attribute(cudaDevAttrSingleToDoublePrecisionPerfRatio, device);
  prop->cooperativeMultiDeviceLaunch = 0;
  return status;
}

#define cudaDeviceProp optimas_cudaDeviceProp
#endif
