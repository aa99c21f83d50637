/* Written by Optimas; pre-included by its nvcc shim (runner/toolchain/nvcc_shim.py) into a .cu file
 * that calls the warp shuffles without a mask (__shfl, __shfl_up, __shfl_down, __shfl_xor), which
 * CUDA 13 no longer declares. Each becomes its *_sync form over the threads active at the call
 * (__activemask()), the threads the unmasked form exchanged values with on the GPUs it was written
 * for; code that also relied on a warp's threads running in lockstep may need __syncwarp().
 * The votes without a mask (__any, __all, __ballot) have a header of their own,
 * cuda_legacy_vote.h.
 */
#pragma once
#include <cuda_runtime.h>

#if defined(__CUDACC__) && defined(CUDART_VERSION) && CUDART_VERSION >= 13000
template <typename T>
static __device__ __forceinline__ T __shfl(T var, int src_lane, int width = warpSize) {
  return __shfl_sync(__activemask(), var, src_lane, width);
}
template <typename T>
static __device__ __forceinline__ T __shfl_up(T var, unsigned int delta, int width = warpSize) {
  return __shfl_up_sync(__activemask(), var, delta, width);
}
template <typename T>
static __device__ __forceinline__ T __shfl_down(T var, unsigned int delta, int width = warpSize) {
  return __shfl_down_sync(__activemask(), var, delta, width);
}
template <typename T>
static __device__ __forceinline__ T __shfl_xor(T var, int lane_mask, int width = warpSize) {
  return __shfl_xor_sync(__activemask(), var, lane_mask, width);
}
#endif
