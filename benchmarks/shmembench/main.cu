// Shared-memory bandwidth microbenchmark: each block stages a tile in shared memory, then every
// thread sums many tile elements along a strided walk, for 4-, 8- and 16-byte element types.
// The sums are written out so the work cannot be optimized away and can be checked.
#include "../common/bench.h"

constexpr int kBlock = 256;
constexpr int kTile = 4 * kBlock;  // elements per block's tile
constexpr int kStride = 33;        // walk step between a thread's reads

__global__ void shmem_float(const float* in, float* out, int iterations) {
  __shared__ float tile[kTile];
  const float* src = in + static_cast<size_t>(blockIdx.x) * kTile;
  for (int i = threadIdx.x; i < kTile; i += blockDim.x) tile[i] = src[i];
  __syncthreads();
  float sum = 0.0f;
  for (int it = 0; it < iterations; ++it) {
    const int idx = (threadIdx.x * 4 + it * kStride) % kTile;
    sum += tile[idx];
  }
  out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}

__global__ void shmem_float2(const float2* in, float* out, int iterations) {
  __shared__ float2 tile[kTile];
  const float2* src = in + static_cast<size_t>(blockIdx.x) * kTile;
  for (int i = threadIdx.x; i < kTile; i += blockDim.x) tile[i] = src[i];
  __syncthreads();
  float sum = 0.0f;
  for (int it = 0; it < iterations; ++it) {
    const int idx = (threadIdx.x * 4 + it * kStride) % kTile;
    const float2 v = tile[idx];
    sum += v.x + v.y;
  }
  out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}

__global__ void shmem_float4(const float4* in, float* out, int iterations) {
  __shared__ float4 tile[kTile];
  const float4* src = in + static_cast<size_t>(blockIdx.x) * kTile;
  for (int i = threadIdx.x; i < kTile; i += blockDim.x) tile[i] = src[i];
  __syncthreads();
  float sum = 0.0f;
  for (int it = 0; it < iterations; ++it) {
    const int idx = (threadIdx.x * 4 + it * kStride) % kTile;
    const float4 v = tile[idx];
    sum += (v.x + v.y) + (v.z + v.w);
  }
  out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}

struct Config {
  const char* name;
  int blocks, iterations;
};
const Config kConfigs[] = {{"small", 1056, 1024}, {"medium", 2112, 4096}, {"large", 4224, 8192}};

// CPU model of one block of one kernel: the same sums in the same order.
static void reference_block(const float* tile, int width, int iterations, float* sums) {
  for (int t = 0; t < kBlock; ++t) {
    float sum = 0.0f;
    for (int it = 0; it < iterations; ++it) {
      const float* v = tile + static_cast<size_t>((t * 4 + it * kStride) % kTile) * width;
      if (width == 1) sum += v[0];
      if (width == 2) sum += v[0] + v[1];
      if (width == 4) sum += (v[0] + v[1]) + (v[2] + v[3]);
    }
    sums[t] = sum;
  }
}

int main(int argc, char** argv) {
  bench::Options opt;
  const Config cfg = bench::parse_config(argc, argv, "shmembench", kConfigs, opt);
  const int blocks = static_cast<int>(bench::scaled(cfg.blocks, opt.scale, 132));
  const size_t tiles = static_cast<size_t>(blocks) * kTile;
  const size_t n_out = static_cast<size_t>(blocks) * kBlock;

  // Inputs are multiples of 1/256 in [0, 1): sums of up to 2^15 of them stay exact in float.
  std::vector<float> in(tiles * 4);
  bench::Rng rng(opt.seed);
  for (auto& x : in) x = static_cast<float>(rng.u32() % 256) / 256.0f;

  const double wall0 = bench::now_ms();
  float *d_in, *d_out;
  CUDA_CHECK(cudaMalloc(&d_in, in.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_out, 3 * n_out * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_in, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice));
  bench::GpuTimer timer;
  timer.start();
  shmem_float<<<blocks, kBlock>>>(d_in, d_out, cfg.iterations);
  shmem_float2<<<blocks, kBlock>>>(reinterpret_cast<const float2*>(d_in), d_out + n_out, cfg.iterations);
  shmem_float4<<<blocks, kBlock>>>(reinterpret_cast<const float4*>(d_in), d_out + 2 * n_out, cfg.iterations);
  CUDA_CHECK(cudaGetLastError());
  const float kernel_ms = timer.stop_ms();
  std::vector<float> sums(3 * n_out);
  CUDA_CHECK(cudaMemcpy(sums.data(), d_out, sums.size() * sizeof(float), cudaMemcpyDeviceToHost));
  const double wall_ms = bench::now_ms() - wall0;

  bench::Output out(opt.out);
  out.add("sum_float", "f32", sums.data(), n_out);
  out.add("sum_float2", "f32", sums.data() + n_out, n_out);
  out.add("sum_float4", "f32", sums.data() + 2 * n_out, n_out);

  bool pass = true;
  if (opt.check) {
    // Every block is checked for the first kernel; a spread of 64 blocks for the wider types.
    long long bad = 0;
    const int widths[3] = {1, 2, 4};
#pragma omp parallel for reduction(+ : bad) schedule(dynamic)
    for (int b = 0; b < blocks; ++b) {
      float want[kBlock];
      for (int k = 0; k < 3; ++k) {
        if (k > 0 && b % (blocks / 64 > 0 ? blocks / 64 : 1) != 0) continue;
        const int w = widths[k];
        reference_block(in.data() + static_cast<size_t>(b) * kTile * w, w, cfg.iterations, want);
        for (int t = 0; t < kBlock; ++t) bad += sums[k * n_out + static_cast<size_t>(b) * kBlock + t] != want[t];
      }
    }
    pass = bad == 0;
  }
  CUDA_CHECK(cudaFree(d_in));
  CUDA_CHECK(cudaFree(d_out));
  return bench::finish(opt, opt.check, pass, kernel_ms, wall_ms);
}
