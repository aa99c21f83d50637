// Sobol quasi-random points: dimension d of point i is the XOR of the direction numbers v[d][k]
// selected by the bits of gray(i) = i ^ (i >> 1), scaled to [0, 1). Direction numbers come from
// primitive polynomials over GF(2), found on the host, with initial values drawn from the seed.
// Integer bit work; output is dimension-major.
#include "../common/bench.h"

constexpr int kBits = 32;

__global__ void sobol_kernel(int n, int dims, const unsigned int* directions, float* out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const unsigned int gray = static_cast<unsigned int>(i) ^ (static_cast<unsigned int>(i) >> 1);
    for (int d = 0; d < dims; ++d) {
      unsigned int x = 0;
      for (int k = 0; k < kBits; ++k) {
        if (gray & (1u << k)) x ^= directions[d * kBits + k];
      }
      out[static_cast<size_t>(d) * n + i] = static_cast<float>(x) * (1.0f / 4294967296.0f);
    }
  }
}

// Is the degree-`deg` polynomial with bit mask `p` (bits deg and 0 set) primitive over GF(2)?
// It is exactly when x has multiplicative order 2^deg - 1 modulo p: x^order = 1, and
// x^(order/q) != 1 for every prime q dividing order.
static bool is_primitive(uint32_t p, int deg) {
  const uint64_t order = (uint64_t(1) << deg) - 1;
  auto mulmod = [&](uint64_t a, uint64_t b) {
    uint64_t r = 0;
    while (b) {
      if (b & 1) r ^= a;
      b >>= 1;
      a <<= 1;
      if (a & (uint64_t(1) << deg)) a ^= p;
    }
    return r;
  };
  auto x_pow = [&](uint64_t e) {
    uint64_t result = 1, base = deg == 1 ? (2 ^ p) : 2;  // x reduced modulo p
    while (e) {
      if (e & 1) result = mulmod(result, base);
      base = mulmod(base, base);
      e >>= 1;
    }
    return result;
  };
  if (x_pow(order) != 1) return false;
  uint64_t rest = order;
  for (uint64_t q = 2; q * q <= rest; ++q) {
    if (rest % q) continue;
    while (rest % q == 0) rest /= q;
    if (x_pow(order / q) == 1) return false;
  }
  return rest == 1 || rest == order || x_pow(order / rest) != 1;
}

// Direction numbers (Bratley and Fox): dimension 0 is van der Corput; dimension d > 0 uses the d-th
// primitive polynomial in order of degree, with odd initial values m_k < 2^k from the seed.
static std::vector<unsigned int> direction_numbers(int dims, uint64_t seed) {
  std::vector<unsigned int> v(static_cast<size_t>(dims) * kBits);
  for (int k = 0; k < kBits; ++k) v[k] = 1u << (kBits - 1 - k);
  std::vector<std::pair<int, uint32_t>> polys;
  for (int deg = 1; static_cast<int>(polys.size()) < dims - 1 && deg < 20; ++deg)
    for (uint32_t mid = 0; mid < (1u << (deg > 1 ? deg - 1 : 0)) && static_cast<int>(polys.size()) < dims - 1; ++mid) {
      const uint32_t p = (1u << deg) | (mid << 1) | 1u;
      if (is_primitive(p, deg)) polys.push_back({deg, p});
    }
  bench::Rng rng(seed ^ 0x50B01ull);
  for (int d = 1; d < dims; ++d) {
    const int s = polys[d - 1].first;
    const uint32_t p = polys[d - 1].second;
    unsigned int* vd = &v[static_cast<size_t>(d) * kBits];
    for (int k = 0; k < s && k < kBits; ++k) {
      const uint32_t m = ((rng.u32() % (1u << k)) << 1) | 1u;  // odd, < 2^(k+1)
      vd[k] = m << (kBits - 1 - k);
    }
    for (int k = s; k < kBits; ++k) {
      unsigned int x = vd[k - s] ^ (vd[k - s] >> s);
      for (int j = 1; j < s; ++j)
        if ((p >> (s - j)) & 1u) x ^= vd[k - j];
      vd[k] = x;
    }
  }
  return v;
}

struct Config {
  const char* name;
  int n, dims;
};
const Config kConfigs[] = {{"small", 1 << 18, 8}, {"medium", 1 << 21, 16}, {"large", 1 << 22, 32}};

int main(int argc, char** argv) {
  bench::Options opt;
  const Config cfg = bench::parse_config(argc, argv, "sobol", kConfigs, opt);
  const int n = static_cast<int>(bench::scaled(cfg.n, opt.scale, 256));
  const int dims = cfg.dims;
  const std::vector<unsigned int> v = direction_numbers(dims, opt.seed);
  const size_t count = static_cast<size_t>(n) * dims;

  const double wall0 = bench::now_ms();
  unsigned int* d_v;
  float* d_out;
  CUDA_CHECK(cudaMalloc(&d_v, v.size() * sizeof(unsigned int)));
  CUDA_CHECK(cudaMalloc(&d_out, count * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_v, v.data(), v.size() * sizeof(unsigned int), cudaMemcpyHostToDevice));
  bench::GpuTimer timer;
  timer.start();
  sobol_kernel<<<(n + 255) / 256, 256>>>(n, dims, d_v, d_out);
  CUDA_CHECK(cudaGetLastError());
  const float kernel_ms = timer.stop_ms();
  std::vector<float> points(count);
  CUDA_CHECK(cudaMemcpy(points.data(), d_out, count * sizeof(float), cudaMemcpyDeviceToHost));
  const double wall_ms = bench::now_ms() - wall0;

  bench::Output out(opt.out);
  out.add("points", "f32", points.data(), count);

  bool pass = true;
  if (opt.check) {
    // Sequential Gray-code recurrence: x_i = x_{i-1} ^ v[c], c = lowest zero bit of i-1.
    long long bad = 0;
#pragma omp parallel for reduction(+ : bad)
    for (int d = 0; d < dims; ++d) {
      unsigned int x = 0;
      for (int i = 0; i < n; ++i) {
        if (i > 0) {
          int c = 0;
          while ((static_cast<unsigned int>(i - 1) >> c) & 1u) ++c;
          x ^= v[static_cast<size_t>(d) * kBits + c];
        }
        const float want = static_cast<float>(x) * (1.0f / 4294967296.0f);
        bad += points[static_cast<size_t>(d) * n + i] != want;
      }
    }
    pass = bad == 0;
  }
  CUDA_CHECK(cudaFree(d_v));
  CUDA_CHECK(cudaFree(d_out));
  return bench::finish(opt, opt.check, pass, kernel_ms, wall_ms);
}
