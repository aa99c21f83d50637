// Adjacent difference over a large array, both ways, as std::adjacent_difference does:
//   left:  out[0] = in[0],   out[i] = in[i] - in[i-1]
//   right: out[i] = in[i+1] - in[i],   out[n-1] = in[n-1]
// Integer data, so results are exact. Bandwidth-bound with overlapping reads.
#include "../common/bench.h"

__global__ void left_difference(const int* in, int* out, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = i == 0 ? in[0] : in[i] - in[i - 1];
}

__global__ void right_difference(const int* in, int* out, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = i + 1 == n ? in[i] : in[i + 1] - in[i];
}

struct Config {
  const char* name;
  size_t n;
  int repetitions;
};
const Config kConfigs[] = {{"small", size_t(1) << 22, 10}, {"medium", size_t(1) << 25, 10},
                           {"large", size_t(1) << 27, 5}};

int main(int argc, char** argv) {
  bench::Options opt;
  const Config cfg = bench::parse_config(argc, argv, "adjacent", kConfigs, opt);
  const size_t n = bench::scaled(cfg.n, opt.scale, 256);

  std::vector<int> in(n);
  bench::Rng rng(opt.seed);
  for (auto& x : in) x = static_cast<int>(rng.u32() % 2000001u) - 1000000;

  const double wall0 = bench::now_ms();
  int *d_in, *d_left, *d_right;
  CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&d_left, n * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&d_right, n * sizeof(int)));
  CUDA_CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  const int block = 256;
  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
  bench::GpuTimer timer;
  timer.start();
  for (int r = 0; r < cfg.repetitions; ++r) {
    left_difference<<<grid, block>>>(d_in, d_left, n);
    right_difference<<<grid, block>>>(d_in, d_right, n);
  }
  CUDA_CHECK(cudaGetLastError());
  const float kernel_ms = timer.stop_ms();
  std::vector<int> left(n), right(n);
  CUDA_CHECK(cudaMemcpy(left.data(), d_left, n * sizeof(int), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(right.data(), d_right, n * sizeof(int), cudaMemcpyDeviceToHost));
  const double wall_ms = bench::now_ms() - wall0;

  bench::Output out(opt.out);
  out.add("left", "i32", left.data(), n);
  out.add("right", "i32", right.data(), n);

  bool pass = true;
  if (opt.check) {
    long long bad = 0;
#pragma omp parallel for reduction(+ : bad)
    for (long long i = 0; i < static_cast<long long>(n); ++i) {
      const int l = i == 0 ? in[0] : in[i] - in[i - 1];
      const int r = i + 1 == static_cast<long long>(n) ? in[i] : in[i + 1] - in[i];
      bad += (left[i] != l) + (right[i] != r);
    }
    pass = bad == 0;
  }
  CUDA_CHECK(cudaFree(d_in));
  CUDA_CHECK(cudaFree(d_left));
  CUDA_CHECK(cudaFree(d_right));
  return bench::finish(opt, opt.check, pass, kernel_ms, wall_ms);
}
