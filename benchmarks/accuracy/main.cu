// Top-k accuracy: a row of scores is correct when its label's score ranks within the top k
// (ties count against the label unless the tied column comes after it), as in a classifier's
// accuracy operator. Reduction plus comparisons; one block per row.
#include "../common/bench.h"

constexpr int kBlock = 256;

__global__ void accuracy_kernel(int rows, int cols, int top_k, const float* scores, const int* labels,
                                unsigned char* correct, int* total) {
  __shared__ int counts[kBlock];
  int block_correct = 0;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const int label = labels[row];
    const float label_score = scores[static_cast<size_t>(row) * cols + label];
    int ahead = 0;
    for (int col = threadIdx.x; col < cols; col += blockDim.x) {
      const float s = scores[static_cast<size_t>(row) * cols + col];
      if (s > label_score || (s == label_score && col <= label)) ++ahead;
    }
    counts[threadIdx.x] = ahead;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
      if (threadIdx.x < stride) counts[threadIdx.x] += counts[threadIdx.x + stride];
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      const bool ok = counts[0] <= top_k;
      correct[row] = ok ? 1 : 0;
      block_correct += ok ? 1 : 0;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, block_correct);
}

struct Config {
  const char* name;
  int rows, cols, top_k;
};
const Config kConfigs[] = {{"small", 8192, 1000, 5}, {"medium", 65536, 1000, 5}, {"large", 32768, 4096, 10}};

int main(int argc, char** argv) {
  bench::Options opt;
  const Config cfg = bench::parse_config(argc, argv, "accuracy", kConfigs, opt);
  const int rows = static_cast<int>(bench::scaled(cfg.rows, opt.scale, 32));
  const int cols = cfg.cols;
  const size_t count = static_cast<size_t>(rows) * cols;

  // Scores on a coarse grid (1/1024 steps) so that ties happen, as with quantized logits.
  std::vector<float> scores(count);
  std::vector<int> labels(rows);
  bench::Rng rng(opt.seed);
  for (size_t i = 0; i < count; ++i) scores[i] = static_cast<float>(rng.u32() % 1024) / 1024.0f;
  for (int r = 0; r < rows; ++r) labels[r] = static_cast<int>(rng.u32() % cols);
  // Make some rows easy: boost the label's score.
  for (int r = 0; r < rows; r += 3) scores[static_cast<size_t>(r) * cols + labels[r]] = 0.999f;

  const double wall0 = bench::now_ms();
  float* d_scores;
  int *d_labels, *d_total;
  unsigned char* d_correct;
  CUDA_CHECK(cudaMalloc(&d_scores, count * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_labels, rows * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&d_correct, rows));
  CUDA_CHECK(cudaMalloc(&d_total, sizeof(int)));
  CUDA_CHECK(cudaMemcpy(d_scores, scores.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_labels, labels.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_total, 0, sizeof(int)));

  const int grid = rows < 8192 ? rows : 8192;
  bench::GpuTimer timer;
  timer.start();
  accuracy_kernel<<<grid, kBlock>>>(rows, cols, cfg.top_k, d_scores, d_labels, d_correct, d_total);
  CUDA_CHECK(cudaGetLastError());
  const float kernel_ms = timer.stop_ms();

  std::vector<unsigned char> correct(rows);
  int total = 0;
  CUDA_CHECK(cudaMemcpy(correct.data(), d_correct, rows, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(&total, d_total, sizeof(int), cudaMemcpyDeviceToHost));
  const double wall_ms = bench::now_ms() - wall0;

  bench::Output out(opt.out);
  out.add("correct", "u8", correct.data(), correct.size());
  out.add("total", "i32", &total, 1);

  bool pass = true;
  if (opt.check) {
    int want_total = 0;
    std::vector<unsigned char> want(rows);
#pragma omp parallel for reduction(+ : want_total)
    for (int r = 0; r < rows; ++r) {
      const float* row = &scores[static_cast<size_t>(r) * cols];
      const float ls = row[labels[r]];
      int ahead = 0;
      for (int c = 0; c < cols; ++c) ahead += (row[c] > ls || (row[c] == ls && c <= labels[r])) ? 1 : 0;
      want[r] = ahead <= cfg.top_k ? 1 : 0;
      want_total += want[r];
    }
    pass = total == want_total && correct == want;
  }
  CUDA_CHECK(cudaFree(d_scores));
  CUDA_CHECK(cudaFree(d_labels));
  CUDA_CHECK(cudaFree(d_correct));
  CUDA_CHECK(cudaFree(d_total));
  char detail[64];
  std::snprintf(detail, sizeof(detail), "accuracy=%d/%d", total, rows);
  return bench::finish(opt, opt.check, pass, kernel_ms, wall_ms, detail);
}
