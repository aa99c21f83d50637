// Streaming kernels in the style of STREAM/BabelStream: copy, add, triad and dot over float arrays.
// Bandwidth-bound. Each iteration: c = a; c = a + b; a = b + s*c; dot = sum(a*b).
#include "../common/bench.h"

constexpr int kBlock = 256;

__global__ void copy_kernel(const float* a, float* c, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i];
}

__global__ void add_kernel(const float* a, const float* b, float* c, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void triad_kernel(float* a, const float* b, const float* c, float scalar, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) a[i] = b[i] + scalar * c[i];
}

// One partial sum per block, reduced in shared memory.
__global__ void dot_partial_kernel(const float* a, const float* b, float* partial, size_t n) {
  __shared__ float cache[kBlock];
  float sum = 0.0f;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    sum += a[i] * b[i];
  }
  cache[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = cache[0];
}

// A single block sums the partials in a fixed order, so the result is the same on every run.
__global__ void dot_final_kernel(const float* partial, int count, float* result) {
  __shared__ float cache[kBlock];
  float sum = 0.0f;
  for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partial[i];
  cache[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *result = cache[0];
}

struct Config {
  const char* name;
  size_t n;
  int iterations;
};
const Config kConfigs[] = {{"small", size_t(1) << 22, 10}, {"medium", size_t(1) << 24, 10},
                           {"large", size_t(1) << 25, 10}};

int main(int argc, char** argv) {
  bench::Options opt;
  const Config cfg = bench::parse_config(argc, argv, "stream", kConfigs, opt);
  const size_t n = bench::scaled(cfg.n, opt.scale, kBlock);
  const float scalar = 0.4f;

  std::vector<float> a(n), b(n), c(n);
  bench::Rng rng(opt.seed);
  for (size_t i = 0; i < n; ++i) {
    a[i] = rng.uniform();
    b[i] = rng.uniform();
    c[i] = 0.0f;
  }

  const double wall0 = bench::now_ms();
  float *d_a, *d_b, *d_c, *d_partial, *d_dot;
  const int grid = static_cast<int>((n + kBlock - 1) / kBlock);
  const int dot_blocks = 1024;
  CUDA_CHECK(cudaMalloc(&d_a, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_b, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_c, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_partial, dot_blocks * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_dot, cfg.iterations * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_a, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_b, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_c, c.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  bench::GpuTimer timer;
  timer.start();
  for (int it = 0; it < cfg.iterations; ++it) {
    copy_kernel<<<grid, kBlock>>>(d_a, d_c, n);
    add_kernel<<<grid, kBlock>>>(d_a, d_b, d_c, n);
    triad_kernel<<<grid, kBlock>>>(d_a, d_b, d_c, scalar, n);
    dot_partial_kernel<<<dot_blocks, kBlock>>>(d_a, d_b, d_partial, n);
    dot_final_kernel<<<1, kBlock>>>(d_partial, dot_blocks, d_dot + it);
  }
  CUDA_CHECK(cudaGetLastError());
  const float kernel_ms = timer.stop_ms();

  std::vector<float> ga(n), gb(n), gc(n), gdot(cfg.iterations);
  CUDA_CHECK(cudaMemcpy(ga.data(), d_a, n * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(gb.data(), d_b, n * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(gc.data(), d_c, n * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(gdot.data(), d_dot, cfg.iterations * sizeof(float), cudaMemcpyDeviceToHost));
  const double wall_ms = bench::now_ms() - wall0;

  bench::Output out(opt.out);
  out.add("a", "f32", ga.data(), n);
  out.add("b", "f32", gb.data(), n);
  out.add("c", "f32", gc.data(), n);
  out.add("dot", "f32", gdot.data(), gdot.size());

  bool pass = true;
  if (opt.check) {
    std::vector<double> dots(cfg.iterations);
    for (int it = 0; it < cfg.iterations; ++it) {
      double sum = 0.0;
#pragma omp parallel for reduction(+ : sum)
      for (long long i = 0; i < static_cast<long long>(n); ++i) {
        c[i] = a[i];
        c[i] = a[i] + b[i];
        a[i] = std::fma(scalar, c[i], b[i]);
        sum += static_cast<double>(a[i]) * b[i];
      }
      dots[it] = sum;
    }
    for (size_t i = 0; i < n && pass; ++i)
      pass = bench::close(ga[i], a[i], 1e-6, 1e-7) && gc[i] == c[i] && gb[i] == b[i];
    for (int it = 0; it < cfg.iterations && pass; ++it) pass = bench::close<double>(gdot[it], dots[it], 1e-4, 1e-3);
  }
  CUDA_CHECK(cudaFree(d_a));
  CUDA_CHECK(cudaFree(d_b));
  CUDA_CHECK(cudaFree(d_c));
  CUDA_CHECK(cudaFree(d_partial));
  CUDA_CHECK(cudaFree(d_dot));
  return bench::finish(opt, opt.check, pass, kernel_ms, wall_ms);
}
