// Optimas tracer: loaded into an unmodified CUDA program through CUDA_INJECTION64_PATH, it writes
// one record file per process (OPTIMAS_TRACE_DIR/trace-<pid>.tsv) holding
//   - every kernel execution (CUPTI concurrent-kernel activity records, CUDA graph kernels included),
//   - every device-to-host result: the size and a 64-bit hash of each copy into host memory, in the
//     order the program issued them, and the final contents of managed allocations,
//   - the first failures of the runtime calls it watches (copies, synchronizations, launches), so
//     that a program whose kernels fault, or fail to launch, but which never checks an error is
//     seen to have failed,
// and, with OPTIMAS_TRACE_KEEP_BYTES=N, the first N bytes of those results (trace-<pid>.bin) so that
// float tolerances can be applied; OPTIMAS_TRACE_KEEP_EACH=M keeps at most the first M bytes of each
// result, so that a late result is kept too after large early ones. The record format is read by runner/tracing/trace.py.
//
// Not covered (documented in the README): kernels launched from the device, copies that are nodes of
// CUDA graphs, cudaMemcpyBatchAsync, programs that use the driver API's copies directly, and host
// reads of mapped (zero-copy) memory.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>


#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 KernelRecord;
#elif CUPTI_API_VERSION >= 18
typedef CUpti_ActivityKernel9 KernelRecord;
#else
#error "the Optimas tracer needs CUPTI from CUDA 12 or newer"
#endif

namespace {

const int kFormatVersion = 1;
const size_t kBufferSize = 8u << 20;

// Driver entry points, looked up in the libcuda the program already loaded (the tracer does not
// link libcuda itself, so it also loads where no driver is installed, for its tests).
struct Driver {
  CUresult (*ctxSynchronize)() = nullptr;
  CUresult (*pointerGetAttribute)(void*, CUpointer_attribute, CUdeviceptr) = nullptr;
  CUresult (*streamGetFlags)(CUstream, unsigned int*) = nullptr;
  bool ok() const { return ctxSynchronize && pointerGetAttribute && streamGetFlags; }
} driver;

struct Pending {  // an asynchronous copy into pinned host memory, hashed once its stream is synchronized
  uint64_t seq;
  const char* api;
  cudaStream_t stream;
  std::vector<std::pair<const unsigned char*, size_t>> rows;  // 2D/3D copies land in pitched rows
};

struct EventMark {
  cudaStream_t stream;
  uint64_t seq;  // copies issued before the event was recorded
};

std::mutex lock;
FILE* out = nullptr;
FILE* bytes_out = nullptr;
uint64_t keep_budget = 0, keep_each = UINT64_MAX, kept_total = 0;
std::atomic<uint64_t> next_seq{0};
std::vector<Pending> pending;
std::unordered_map<const void*, EventMark> events;
std::map<const unsigned char*, size_t> managed;  // cudaMallocManaged allocations still alive
std::unordered_map<const char*, uint64_t> kernel_ids;  // CUPTI shares one name pointer per kernel
uint64_t kernels = 0, copies = 0, dropped = 0, failures = 0;
const uint64_t kMaxFailures = 16;  // a faulted context fails every later call: the first ones say why
bool finished = false;

#define CUPTI_OK(call)                                                                   \
  do {                                                                                   \
    CUptiResult status_ = (call);                                                        \
    if (status_ != CUPTI_SUCCESS) {                                                      \
      const char* what_ = nullptr;                                                       \
      cuptiGetResultString(status_, &what_);                                             \
      fprintf(stderr, "[optimas tracer] %s failed: %s\n", #call, what_ ? what_ : "?");  \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

// A 64-bit hash of a byte sequence fed in pieces (pitched rows): 8-byte words mixed by
// multiply-rotate rounds, then a final avalanche. Stable across runs and machines (little endian).
struct Hasher {
  uint64_t h = 0x6a09e667f3bcc909ull, n = 0;
  unsigned char tail[8];
  size_t tail_len = 0;
  static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  void word(uint64_t w) {
    w *= 0x9e3779b97f4a7c15ull;
    w = rotl(w, 31) * 0xbf58476d1ce4e5b9ull;
    h = rotl(h ^ w, 27) * 0x94d049bb133111ebull + 0x2545f4914f6cdd1dull;
  }
  void add(const unsigned char* p, size_t len) {
    n += len;
    while (len && tail_len) {
      tail[tail_len++] = *p++;
      --len;
      if (tail_len == 8) {
        uint64_t w;
        memcpy(&w, tail, 8);
        word(w);
        tail_len = 0;
      }
    }
    for (; len >= 8; p += 8, len -= 8) {
      uint64_t w;
      memcpy(&w, p, 8);
      word(w);
    }
    while (len--) tail[tail_len++] = *p++;
  }
  uint64_t done() {
    uint64_t w = 0;
    memcpy(&w, tail, tail_len);
    word(w ^ (static_cast<uint64_t>(tail_len) << 56));
    uint64_t x = h ^ n;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
  }
};

// Caller holds `lock`.
void write_result(char tag, uint64_t seq, const char* api, const std::vector<std::pair<const unsigned char*, size_t>>& rows) {
  if (!out) return;
  Hasher hasher;
  uint64_t total = 0, offset = kept_total, kept = 0;
  for (auto& r : rows) {
    hasher.add(r.first, r.second);
    total += r.second;
    if (bytes_out && kept_total < keep_budget && kept < keep_each) {
      uint64_t room = keep_budget - kept_total < keep_each - kept ? keep_budget - kept_total : keep_each - kept;
      size_t take = r.second < room ? r.second : static_cast<size_t>(room);
      fwrite(r.first, 1, take, bytes_out);
      kept_total += take;
      kept += take;
    }
  }
  fprintf(out, "%c\t%llu\t%s\t%llu\t%016llx\t%llu\t%llu\n", tag, (unsigned long long)seq, api,
          (unsigned long long)total, (unsigned long long)hasher.done(), (unsigned long long)offset,
          (unsigned long long)kept);
  ++copies;
}

bool is_blocking(cudaStream_t s) {
  if (s == nullptr) return true;
  unsigned int flags = 0;
  if (driver.streamGetFlags(reinterpret_cast<CUstream>(s), &flags) != CUDA_SUCCESS) return true;
  return (flags & CU_STREAM_NON_BLOCKING) == 0;
}

// Hash the pending copies that `done` says have completed. Caller holds `lock`.
template <class F>
void complete(F done) {
  std::vector<Pending> left;
  for (auto& p : pending) {
    if (done(p))
      write_result('D', p.seq, p.api, p.rows);
    else
      left.push_back(std::move(p));
  }
  pending.swap(left);
}

void complete_all() {
  complete([](const Pending&) { return true; });
}

void hash_managed(const unsigned char* ptr, size_t size) {
  write_result('M', next_seq++, "managed", {{ptr, size}});
}

void hash_all_managed() {  // caller holds `lock` and has synchronized the device
  for (auto& m : managed) hash_managed(m.first, m.second);
  managed.clear();
}

// Copies into host memory, by the runtime API function that issued them.
struct CopyInfo {
  bool d2h = false;
  cudaStream_t stream = nullptr;
  bool async = false;
  std::vector<std::pair<const unsigned char*, size_t>> rows;
};

bool host_destination(const void* dst, const void* src, cudaMemcpyKind kind) {
  if (kind == cudaMemcpyDeviceToHost) return true;
  if (kind != cudaMemcpyDefault) return false;
  unsigned int dst_type = 0, src_type = 0, dst_managed = 0;
  CUdeviceptr d = reinterpret_cast<CUdeviceptr>(dst), s = reinterpret_cast<CUdeviceptr>(src);
  bool dst_known = driver.pointerGetAttribute(&dst_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d) == CUDA_SUCCESS;
  if (dst_known) driver.pointerGetAttribute(&dst_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, d);
  bool dst_host = !dst_known || (dst_type == CU_MEMORYTYPE_HOST && !dst_managed);
  bool src_device = driver.pointerGetAttribute(&src_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, s) == CUDA_SUCCESS &&
                    src_type == CU_MEMORYTYPE_DEVICE;
  return dst_host && src_device;
}

bool pageable(const void* dst) {
  unsigned int type = 0;
  return driver.pointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(dst)) !=
         CUDA_SUCCESS;
}

// A copy from device memory (or a symbol, or an array) whatever the kind says.
bool from_device(cudaMemcpyKind kind) { return kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDefault; }

CopyInfo describe(CUpti_CallbackId cbid, const void* params) {
  CopyInfo c;
  switch (cbid) {
// One contiguous destination of p->count bytes; D2H: whether it lands in host memory.
#define LINEAR(ID, T, ASYNC, STREAM, D2H)                            \
  case CUPTI_RUNTIME_TRACE_CBID_##ID: {                              \
    auto p = static_cast<const T*>(params);                          \
    c = {D2H, STREAM, ASYNC, {{static_cast<const unsigned char*>(p->dst), p->count}}}; \
    break;                                                           \
  }
    LINEAR(cudaMemcpy_v3020, cudaMemcpy_v3020_params, false, nullptr, host_destination(p->dst, p->src, p->kind))
    LINEAR(cudaMemcpy_ptds_v7000, cudaMemcpy_ptds_v7000_params, false, cudaStreamPerThread,
           host_destination(p->dst, p->src, p->kind))
    LINEAR(cudaMemcpyAsync_v3020, cudaMemcpyAsync_v3020_params, true, p->stream,
           host_destination(p->dst, p->src, p->kind))
    LINEAR(cudaMemcpyAsync_ptsz_v7000, cudaMemcpyAsync_ptsz_v7000_params, true, p->stream,
           host_destination(p->dst, p->src, p->kind))
    LINEAR(cudaMemcpyFromSymbol_v3020, cudaMemcpyFromSymbol_v3020_params, false, nullptr, from_device(p->kind))
    LINEAR(cudaMemcpyFromSymbol_ptds_v7000, cudaMemcpyFromSymbol_ptds_v7000_params, false, cudaStreamPerThread,
           from_device(p->kind))
    LINEAR(cudaMemcpyFromSymbolAsync_v3020, cudaMemcpyFromSymbolAsync_v3020_params, true, p->stream,
           from_device(p->kind))
    LINEAR(cudaMemcpyFromSymbolAsync_ptsz_v7000, cudaMemcpyFromSymbolAsync_ptsz_v7000_params, true, p->stream,
           from_device(p->kind))
#undef LINEAR
// `height` rows of `width` bytes, `dpitch` apart.
#define PITCHED(ID, T, ASYNC, STREAM, D2H)                                                              \
  case CUPTI_RUNTIME_TRACE_CBID_##ID: {                                                                 \
    auto p = static_cast<const T*>(params);                                                             \
    c = {D2H, STREAM, ASYNC, {}};                                                                       \
    for (size_t y = 0; y < p->height; ++y)                                                              \
      c.rows.push_back({static_cast<const unsigned char*>(p->dst) + y * p->dpitch, p->width});         \
    break;                                                                                              \
  }
    PITCHED(cudaMemcpy2D_v3020, cudaMemcpy2D_v3020_params, false, nullptr, host_destination(p->dst, p->src, p->kind))
    PITCHED(cudaMemcpy2D_ptds_v7000, cudaMemcpy2D_ptds_v7000_params, false, cudaStreamPerThread,
            host_destination(p->dst, p->src, p->kind))
    PITCHED(cudaMemcpy2DAsync_v3020, cudaMemcpy2DAsync_v3020_params, true, p->stream,
            host_destination(p->dst, p->src, p->kind))
    PITCHED(cudaMemcpy2DAsync_ptsz_v7000, cudaMemcpy2DAsync_ptsz_v7000_params, true, p->stream,
            host_destination(p->dst, p->src, p->kind))
    PITCHED(cudaMemcpy2DFromArray_v3020, cudaMemcpy2DFromArray_v3020_params, false, nullptr, from_device(p->kind))
    PITCHED(cudaMemcpy2DFromArray_ptds_v7000, cudaMemcpy2DFromArray_ptds_v7000_params, false, cudaStreamPerThread,
            from_device(p->kind))
    PITCHED(cudaMemcpy2DFromArrayAsync_v3020, cudaMemcpy2DFromArrayAsync_v3020_params, true, p->stream,
            from_device(p->kind))
    PITCHED(cudaMemcpy2DFromArrayAsync_ptsz_v7000, cudaMemcpy2DFromArrayAsync_ptsz_v7000_params, true, p->stream,
            from_device(p->kind))
#undef PITCHED
#define COPY_3D(ID, T, ASYNC, STREAM)                                                                  \
  case CUPTI_RUNTIME_TRACE_CBID_##ID: {                                                                \
    auto p = static_cast<const T*>(params);                                                            \
    const cudaMemcpy3DParms* q = p->p;                                                                 \
    if (q && !q->dstArray && q->dstPtr.ptr) {                                                          \
      bool d2h = q->kind == cudaMemcpyDeviceToHost ||                                                  \
                 (q->kind == cudaMemcpyDefault && (q->srcArray || host_destination(q->dstPtr.ptr,      \
                                                                                   q->srcPtr.ptr,      \
                                                                                   q->kind)));         \
      const unsigned char* base = static_cast<const unsigned char*>(q->dstPtr.ptr);                    \
      size_t pitch = q->dstPtr.pitch, ysize = q->dstPtr.ysize;                                         \
      c.d2h = d2h;                                                                                     \
      for (size_t z = 0; z < q->extent.depth; ++z)                                                     \
        for (size_t y = 0; y < q->extent.height; ++y)                                                  \
          c.rows.push_back({base + ((q->dstPos.z + z) * ysize + q->dstPos.y + y) * pitch + q->dstPos.x, \
                            q->extent.width});                                                         \
      c.stream = STREAM;                                                                               \
      c.async = ASYNC;                                                                                 \
    }                                                                                                  \
    break;                                                                                             \
  }
    COPY_3D(cudaMemcpy3D_v3020, cudaMemcpy3D_v3020_params, false, nullptr)
    COPY_3D(cudaMemcpy3D_ptds_v7000, cudaMemcpy3D_ptds_v7000_params, false, cudaStreamPerThread)
    COPY_3D(cudaMemcpy3DAsync_v3020, cudaMemcpy3DAsync_v3020_params, true, p->stream)
    COPY_3D(cudaMemcpy3DAsync_ptsz_v7000, cudaMemcpy3DAsync_ptsz_v7000_params, true, p->stream)
#undef COPY_3D
    default:
      break;
  }
  return c;
}

const CUpti_CallbackId kCopies[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArray_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArray_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000,
};

const CUpti_CallbackId kOthers[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
};

// Launches: only their failures are noted (a launch that fails runs nothing, and a program that
// checks no error goes on: an execution configuration the GPU refuses, say). The hottest calls a
// program makes: a launch that succeeds takes no lock.
const CUpti_CallbackId kLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
#if CUPTI_API_VERSION >= 130000
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
#endif
};

bool succeeded(const CUpti_CallbackData* cb) {
  return cb->functionReturnValue && *static_cast<const cudaError_t*>(cb->functionReturnValue) == cudaSuccess;
}

// A watched call that returned an error, at its exit: an E record (cudaStreamQuery and
// cudaEventQuery answer cudaErrorNotReady while work runs, which is no failure). Caller holds `lock`.
void note_failure(const CUpti_CallbackData* cb) {
  if (cb->callbackSite != CUPTI_API_EXIT || !cb->functionReturnValue) return;
  cudaError_t code = *static_cast<const cudaError_t*>(cb->functionReturnValue);
  if (code == cudaSuccess || code == cudaErrorNotReady) return;
  if (!out || failures >= kMaxFailures) return;
  ++failures;
  fprintf(out, "E\t%llu\t%s\t%d\n", (unsigned long long)next_seq.load(), cb->functionName, (int)code);
}

void on_copy(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (cb->callbackSite != CUPTI_API_EXIT) return;
  if (!succeeded(cb)) {
    std::lock_guard<std::mutex> g(lock);
    return note_failure(cb);
  }
  CopyInfo c = describe(cbid, cb->functionParams);
  if (!c.d2h || c.rows.empty()) return;
  std::lock_guard<std::mutex> g(lock);
  uint64_t seq = next_seq++;
  if (c.async && !pageable(c.rows.front().first)) {
    pending.push_back({seq, cb->functionName, c.stream, std::move(c.rows)});
    return;
  }
  // Synchronous, or asynchronous into pageable memory (the runtime returns once the copy is done).
  // A synchronous copy also waits for earlier work on the legacy default stream and the blocking
  // streams: their copies are complete too.
  if (!c.async) complete([&](const Pending& p) { return p.stream == c.stream || (c.stream == nullptr && is_blocking(p.stream)); });
  write_result('D', seq, cb->functionName, c.rows);
}

void on_launch(const CUpti_CallbackData* cb) {
  if (cb->callbackSite != CUPTI_API_EXIT || succeeded(cb)) return;
  std::lock_guard<std::mutex> g(lock);
  note_failure(cb);
}

void on_other(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  const void* params = cb->functionParams;
  bool enter = cb->callbackSite == CUPTI_API_ENTER;
  std::lock_guard<std::mutex> g(lock);
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020:
      // The memory goes away: finish every copy into it first (these calls synchronize anyway),
      // and on a reset take the managed allocations' contents too.
      if (!enter || driver.ctxSynchronize() != CUDA_SUCCESS) return;
      complete_all();
      if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020) hash_all_managed();
      return;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020: {
      auto p = static_cast<const cudaFree_v3020_params*>(params);
      auto it = managed.find(static_cast<const unsigned char*>(p->devPtr));
      if (enter && it != managed.end() && driver.ctxSynchronize() == CUDA_SUCCESS) {
        hash_managed(it->first, it->second);
        managed.erase(it);
      }
      return;
    }
    default:
      break;
  }
  if (enter) return;
  if (!succeeded(cb)) return note_failure(cb);
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
      auto p = static_cast<const cudaMallocManaged_v6000_params*>(params);
      if (p->devPtr && *p->devPtr) managed[static_cast<const unsigned char*>(*p->devPtr)] = p->size;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000: {
      cudaStream_t s = static_cast<const cudaStreamSynchronize_v3020_params*>(params)->stream;
      complete([&](const Pending& p) { return p.stream == s || (s == nullptr && is_blocking(p.stream)); });
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
      complete_all();
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000: {
      auto p = static_cast<const cudaEventRecord_v3020_params*>(params);
      events[p->event] = {p->stream, next_seq.load()};
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010: {
      auto p = static_cast<const cudaEventRecordWithFlags_v11010_params*>(params);
      events[p->event] = {p->stream, next_seq.load()};
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020: {
      auto it = events.find(static_cast<const cudaEventSynchronize_v3020_params*>(params)->event);
      if (it == events.end()) break;
      EventMark m = it->second;
      complete([&](const Pending& p) {
        return p.seq < m.seq && (p.stream == m.stream || (m.stream == nullptr && is_blocking(p.stream)));
      });
      break;
    }
    default:
      break;
  }
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
      cuptiActivityFlushAll(0);
      std::lock_guard<std::mutex> g(lock);
      if (driver.ctxSynchronize() == CUDA_SUCCESS) {
        complete_all();
        hash_all_managed();
      }
    }
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  auto cb = static_cast<const CUpti_CallbackData*>(data);
  for (CUpti_CallbackId id : kLaunches)
    if (id == cbid) return on_launch(cb);
  for (CUpti_CallbackId id : kCopies)
    if (id == cbid) return on_copy(cbid, cb);
  on_other(cbid, cb);
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, kBufferSize));
  *size = *buffer ? kBufferSize : 0;
  *max_records = 0;
}

uint64_t kernel_id(const char* name) {  // caller holds `lock`
  auto it = kernel_ids.find(name);
  if (it != kernel_ids.end()) return it->second;
  uint64_t id = kernel_ids.size();
  kernel_ids[name] = id;
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  fprintf(out, "N\t%llu\t%s\t%s\n", (unsigned long long)id, name, status == 0 && demangled ? demangled : name);
  free(demangled);
  return id;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> g(lock);
  while (out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    auto k = reinterpret_cast<const KernelRecord*>(record);
    uint64_t id = kernel_id(k->name ? k->name : "?");
    fprintf(out, "K\t%llu\t%llu\t%llu\t%d,%d,%d\t%d,%d,%d\t%u\t%d\t%d\t%u\t%u\t%u\t%u\t%u\n", (unsigned long long)id,
            (unsigned long long)k->start, (unsigned long long)k->end, k->gridX, k->gridY, k->gridZ, k->blockX,
            k->blockY, k->blockZ, (unsigned)k->registersPerThread, k->staticSharedMemory, k->dynamicSharedMemory,
            k->streamId, k->deviceId, k->contextId, k->correlationId, k->graphId);
    ++kernels;
  }
  size_t lost = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &lost) == CUPTI_SUCCESS) dropped += lost;
  free(buffer);
}

void finish() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> g(lock);
  if (finished || !out) return;
  finished = true;
  // Copies never synchronized before exit were never read by the program either.
  for (auto& p : pending)
    fprintf(out, "U\t%llu\t%s\n", (unsigned long long)p.seq, p.api);
  pending.clear();
  fprintf(out, "X\t%llu\t%llu\t%llu\n", (unsigned long long)kernels, (unsigned long long)copies,
          (unsigned long long)dropped);
  fclose(out);
  out = nullptr;
  if (bytes_out) fclose(bytes_out);
  bytes_out = nullptr;
}

int start() {
  const char* dir = getenv("OPTIMAS_TRACE_DIR");
  if (!dir || !*dir) {
    fprintf(stderr, "[optimas tracer] OPTIMAS_TRACE_DIR is not set: tracing nothing\n");
    return 0;
  }
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda) {
    driver.ctxSynchronize = reinterpret_cast<CUresult (*)()>(dlsym(cuda, "cuCtxSynchronize"));
    driver.pointerGetAttribute =
        reinterpret_cast<CUresult (*)(void*, CUpointer_attribute, CUdeviceptr)>(dlsym(cuda, "cuPointerGetAttribute"));
    driver.streamGetFlags = reinterpret_cast<CUresult (*)(CUstream, unsigned int*)>(dlsym(cuda, "cuStreamGetFlags"));
  }
  if (!driver.ok()) {
    fprintf(stderr, "[optimas tracer] libcuda.so.1 is not loaded in this process: tracing nothing\n");
    return 1;
  }
  std::string path = std::string(dir) + "/trace-" + std::to_string(getpid());
  out = fopen((path + ".tsv").c_str(), "w");
  if (!out) {
    fprintf(stderr, "[optimas tracer] cannot write %s.tsv: tracing nothing\n", path.c_str());
    return 1;
  }
  if (const char* keep = getenv("OPTIMAS_TRACE_KEEP_BYTES")) {
    keep_budget = strtoull(keep, nullptr, 10);
    if (keep_budget) bytes_out = fopen((path + ".bin").c_str(), "w");
  }
  if (const char* each = getenv("OPTIMAS_TRACE_KEEP_EACH")) {
    if (uint64_t m = strtoull(each, nullptr, 10)) keep_each = m;
  }
  uint32_t version = 0;
  cuptiGetVersion(&version);
  fprintf(out, "# optimas-trace %d\nP\t%d\t%u\t%llu\n", kFormatVersion, (int)getpid(), version,
          (unsigned long long)keep_budget);
  CUPTI_OK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  CUpti_SubscriberHandle subscriber;
  CUPTI_OK(cuptiSubscribe(&subscriber, on_callback, nullptr));
  for (CUpti_CallbackId id : kCopies) CUPTI_OK(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id));
  for (CUpti_CallbackId id : kOthers) CUPTI_OK(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id));
  for (CUpti_CallbackId id : kLaunches) CUPTI_OK(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id));
  CUPTI_OK(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING));
  atexit(finish);
  return 0;
}

}  // namespace

// Called by the CUDA driver when it initializes, in every process that has CUDA_INJECTION64_PATH set.
extern "C" int InitializeInjection(void) {
  static std::once_flag once;
  static int result = 0;
  std::call_once(once, [] { result = start(); });
  return result == 0 ? 1 : 0;
}

// For tests: the hash the trace records, of `len` bytes given in two pieces.
extern "C" uint64_t optimas_tracer_hash(const unsigned char* a, size_t a_len, const unsigned char* b, size_t b_len) {
  Hasher h;
  h.add(a, a_len);
  h.add(b, b_len);
  return h.done();
}
