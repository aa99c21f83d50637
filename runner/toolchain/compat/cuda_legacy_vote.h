/* Written by Optimas; pre-included by its nvcc shim (runner/toolchain/nvcc_shim.py) into a .cu file
 * that calls the warp votes without a mask (__any, __all, __ballot). CUDA 13 still declares them,
 * and ptxas rejects them for sm_70 and later ("Instruction 'vote' without '.sync' is not
 * supported"). Each becomes its *_sync form over the threads active at the call (__activemask()),
 * the threads the unmasked vote counted on the GPUs it was written for.
 *
 * The names are renamed by object-like macros, not function-like ones: the toolkit's C++ library
 * (libcu++) has a struct __any with a constructor `__any(...)` and an alias template __all, which a
 * function-like macro would break; a plain rename applies to every later use of the name alike, so
 * those stay consistent with themselves. */
#pragma once
#include <cuda_runtime.h>

#if defined(__CUDACC__) && defined(CUDART_VERSION) && CUDART_VERSION >= 13000
static __device__ __forceinline__ int optimas_legacy_any(int predicate) {
  return __any_sync(__activemask(), predicate);
}
static __device__ __forceinline__ int optimas_legacy_all(int predicate) {
  return __all_sync(__activemask(), predicate);
}
static __device__ __forceinline__ unsigned int optimas_legacy_ballot(int predicate) {
  return __ballot_sync(__activemask(), predicate);
}
#define __any optimas_legacy_any
#define __all optimas_legacy_all
#define __ballot optimas_legacy_ballot
#endif
