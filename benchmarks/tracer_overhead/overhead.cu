// What the CUPTI tracer costs a program, measured from inside it: each kernel is timed with CUDA
// events around single launches (after warm-up) and per launch over a back-to-back batch, and the
// host time of the program's first launch is taken on its own. benchmarks/bench_tracer_overhead.py
// runs this binary untraced and traced, interleaved, and compares the figures.
//
// Kernels: a bandwidth-bound copy (256 MiB each way), a compute-bound FMA loop, a one-block kernel
// (launch-bound). Output: one "OVERHEAD key=value ..." line per figure.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));      \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

__global__ void fma_kernel(float* out, int iterations) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f;
  for (int k = 0; k < iterations; ++k) a = fmaf(a, b, c);
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

__global__ void tiny_kernel(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1);
}

namespace {

const int kWarmup = 5;
const int kTimed = 50;

double host_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Single launches bracketed by events, then one batch of kTimed launches between two events.
template <typename Launch>
void time_kernel(const char* name, Launch launch) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < kWarmup; ++i) launch();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> single;
  for (int i = 0; i < kTimed; ++i) {
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    single.push_back(ms);
  }
  CHECK(cudaEventRecord(start));
  for (int i = 0; i < kTimed; ++i) launch();
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float batch = 0;
  CHECK(cudaEventElapsedTime(&batch, start, stop));
  std::printf("OVERHEAD kernel=%s single_us=%.3f batch_per_launch_us=%.3f launches=%d\n", name,
              1e3 * median(single), 1e3 * batch / kTimed, kWarmup + 2 * kTimed);
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
}

}  // namespace

int main() {
  const size_t bytes = size_t(256) << 20;
  const size_t n4 = bytes / sizeof(float4);
  float4 *in = nullptr, *out = nullptr;
  float* fma_out = nullptr;
  int* counter = nullptr;
  CHECK(cudaMalloc(&in, bytes));
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMalloc(&fma_out, 132 * 4 * 256 * sizeof(float)));
  CHECK(cudaMalloc(&counter, sizeof(int)));
  CHECK(cudaMemset(in, 0, bytes));
  CHECK(cudaMemset(counter, 0, sizeof(int)));
  CHECK(cudaDeviceSynchronize());

  // The program's first launch: the host call, then until the kernel is done. Event timers that
  // start before a program's first launch include this.
  double t0 = host_ms();
  tiny_kernel<<<1, 32>>>(counter);
  double t1 = host_ms();
  CHECK(cudaDeviceSynchronize());
  double t2 = host_ms();
  std::printf("OVERHEAD first_launch_call_ms=%.3f first_launch_done_ms=%.3f\n", t1 - t0, t2 - t0);

  // The same for a second kernel's first launch (its module is loaded by now, its function not yet used).
  t0 = host_ms();
  fma_kernel<<<132, 256>>>(fma_out, 1);
  t1 = host_ms();
  CHECK(cudaDeviceSynchronize());
  std::printf("OVERHEAD second_kernel_first_call_ms=%.3f\n", t1 - t0);

  // Host cost of a launch call once warm.
  std::vector<float> calls;
  for (int i = 0; i < 200; ++i) {
    double a = host_ms();
    tiny_kernel<<<1, 32>>>(counter);
    calls.push_back(static_cast<float>(host_ms() - a));
    if (i % 20 == 19) CHECK(cudaDeviceSynchronize());
  }
  std::printf("OVERHEAD launch_call_us=%.3f\n", 1e3 * median(calls));

  time_kernel("copy", [&] { copy_kernel<<<132 * 8, 256>>>(in, out, n4); });
  time_kernel("fma", [&] { fma_kernel<<<132 * 4, 256>>>(fma_out, 20000); });
  time_kernel("tiny", [&] { tiny_kernel<<<1, 32>>>(counter); });
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int host_counter = 0;
  CHECK(cudaMemcpy(&host_counter, counter, sizeof(int), cudaMemcpyDeviceToHost));
  std::printf("OVERHEAD done counter=%d\n", host_counter);
  return 0;
}
