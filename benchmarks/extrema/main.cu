// Extrema: minimum and maximum of a 1D array (block partials, then one final block), and of each
// row and each column of a 2D matrix. Min and max are exact, so results compare bit for bit.
#include <cfloat>

#include "../common/bench.h"

constexpr int kBlock = 256;

__global__ void minmax_partial(const float* x, size_t n, float* part_min, float* part_max) {
  __shared__ float smin[kBlock], smax[kBlock];
  float lo = FLT_MAX, hi = -FLT_MAX;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    lo = fminf(lo, x[i]);
    hi = fmaxf(hi, x[i]);
  }
  smin[threadIdx.x] = lo;
  smax[threadIdx.x] = hi;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      smin[threadIdx.x] = fminf(smin[threadIdx.x], smin[threadIdx.x + s]);
      smax[threadIdx.x] = fmaxf(smax[threadIdx.x], smax[threadIdx.x + s]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    part_min[blockIdx.x] = smin[0];
    part_max[blockIdx.x] = smax[0];
  }
}

__global__ void minmax_final(const float* part_min, const float* part_max, int count, float* result) {
  __shared__ float smin[kBlock], smax[kBlock];
  float lo = FLT_MAX, hi = -FLT_MAX;
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    lo = fminf(lo, part_min[i]);
    hi = fmaxf(hi, part_max[i]);
  }
  smin[threadIdx.x] = lo;
  smax[threadIdx.x] = hi;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      smin[threadIdx.x] = fminf(smin[threadIdx.x], smin[threadIdx.x + s]);
      smax[threadIdx.x] = fmaxf(smax[threadIdx.x], smax[threadIdx.x + s]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    result[0] = smin[0];
    result[1] = smax[0];
  }
}

// One block per row.
__global__ void row_minmax(const float* m, int rows, int cols, float* row_min, float* row_max) {
  __shared__ float smin[kBlock], smax[kBlock];
  const int r = blockIdx.x;
  float lo = FLT_MAX, hi = -FLT_MAX;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = m[static_cast<size_t>(r) * cols + c];
    lo = fminf(lo, v);
    hi = fmaxf(hi, v);
  }
  smin[threadIdx.x] = lo;
  smax[threadIdx.x] = hi;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      smin[threadIdx.x] = fminf(smin[threadIdx.x], smin[threadIdx.x + s]);
      smax[threadIdx.x] = fmaxf(smax[threadIdx.x], smax[threadIdx.x + s]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    row_min[r] = smin[0];
    row_max[r] = smax[0];
  }
}

// One thread per column, walking down the rows.
__global__ void col_minmax(const float* m, int rows, int cols, float* col_min, float* col_max) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float lo = FLT_MAX, hi = -FLT_MAX;
  for (int r = 0; r < rows; ++r) {
    const float v = m[static_cast<size_t>(r) * cols + c];
    lo = fminf(lo, v);
    hi = fmaxf(hi, v);
  }
  col_min[c] = lo;
  col_max[c] = hi;
}

struct Config {
  const char* name;
  size_t n;
  int rows, cols;
};
const Config kConfigs[] = {{"small", size_t(1) << 22, 2048, 2048},
                           {"medium", size_t(1) << 25, 8192, 4096},
                           {"large", size_t(1) << 27, 16384, 8192}};

int main(int argc, char** argv) {
  bench::Options opt;
  const Config cfg = bench::parse_config(argc, argv, "extrema", kConfigs, opt);
  const size_t n = bench::scaled(cfg.n, opt.scale, kBlock);
  const int rows = static_cast<int>(bench::scaled(cfg.rows, opt.scale, 8));
  const int cols = cfg.cols;
  const size_t cells = static_cast<size_t>(rows) * cols;

  std::vector<float> x(n), m(cells);
  bench::Rng rng(opt.seed);
  for (auto& v : x) v = (rng.uniform() - 0.5f) * 2000.0f;
  for (auto& v : m) v = (rng.uniform() - 0.5f) * 2000.0f;

  const double wall0 = bench::now_ms();
  const int partials = 1024;
  float *d_x, *d_m, *d_pmin, *d_pmax, *d_res, *d_rmin, *d_rmax, *d_cmin, *d_cmax;
  CUDA_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_m, cells * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_pmin, partials * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_pmax, partials * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_res, 2 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_rmin, rows * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_rmax, rows * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_cmin, cols * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_cmax, cols * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_m, m.data(), cells * sizeof(float), cudaMemcpyHostToDevice));
  bench::GpuTimer timer;
  timer.start();
  minmax_partial<<<partials, kBlock>>>(d_x, n, d_pmin, d_pmax);
  minmax_final<<<1, kBlock>>>(d_pmin, d_pmax, partials, d_res);
  row_minmax<<<rows, kBlock>>>(d_m, rows, cols, d_rmin, d_rmax);
  col_minmax<<<(cols + kBlock - 1) / kBlock, kBlock>>>(d_m, rows, cols, d_cmin, d_cmax);
  CUDA_CHECK(cudaGetLastError());
  const float kernel_ms = timer.stop_ms();
  float res[2];
  std::vector<float> rmin(rows), rmax(rows), cmin(cols), cmax(cols);
  CUDA_CHECK(cudaMemcpy(res, d_res, 2 * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(rmin.data(), d_rmin, rows * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(rmax.data(), d_rmax, rows * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(cmin.data(), d_cmin, cols * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(cmax.data(), d_cmax, cols * sizeof(float), cudaMemcpyDeviceToHost));
  const double wall_ms = bench::now_ms() - wall0;

  bench::Output out(opt.out);
  out.add("minmax_1d", "f32", res, 2);
  out.add("row_min", "f32", rmin.data(), rows);
  out.add("row_max", "f32", rmax.data(), rows);
  out.add("col_min", "f32", cmin.data(), cols);
  out.add("col_max", "f32", cmax.data(), cols);

  bool pass = true;
  if (opt.check) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (float v : x) {
      lo = std::fmin(lo, v);
      hi = std::fmax(hi, v);
    }
    pass = res[0] == lo && res[1] == hi;
    std::vector<float> wrmin(rows, FLT_MAX), wrmax(rows, -FLT_MAX), wcmin(cols, FLT_MAX), wcmax(cols, -FLT_MAX);
#pragma omp parallel for
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        wrmin[r] = std::fmin(wrmin[r], m[static_cast<size_t>(r) * cols + c]);
        wrmax[r] = std::fmax(wrmax[r], m[static_cast<size_t>(r) * cols + c]);
      }
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        wcmin[c] = std::fmin(wcmin[c], m[static_cast<size_t>(r) * cols + c]);
        wcmax[c] = std::fmax(wcmax[c], m[static_cast<size_t>(r) * cols + c]);
      }
    pass = pass && rmin == wrmin && rmax == wrmax && cmin == wcmin && cmax == wcmax;
  }
  for (float* p : {d_x, d_m, d_pmin, d_pmax, d_res, d_rmin, d_rmax, d_cmin, d_cmax}) CUDA_CHECK(cudaFree(p));
  return bench::finish(opt, opt.check, pass, kernel_ms, wall_ms);
}
