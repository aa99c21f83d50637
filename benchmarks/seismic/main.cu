// Seismic wave propagation in the style of SW4-like codes, simplified to the acoustic wave equation
// with variable velocity: 4th-order stencil in space, 2nd order in time, a damping layer near the
// sides and bottom, a free surface on top, point sources and receivers, and an energy monitor.
// Eight kernels per time step, of very different weights, so hot-kernel selection matters:
//   stencil_rhs (heavy), update_field, damp_boundary_layer, energy_partial + energy_final,
//   free_surface, add_sources, record_receivers (tiny).
#include "../common/bench.h"

constexpr int kHalo = 2;
constexpr int kBlock = 256;
constexpr int kDampWidth = 8;

struct Grid {
  int nx, ny, nz;
  __host__ __device__ size_t at(int x, int y, int z) const {
    return (static_cast<size_t>(z) * ny + y) * nx + x;
  }
  __host__ __device__ size_t size() const { return static_cast<size_t>(nx) * ny * nz; }
};

// Fourth-order Laplacian (times h^2) at interior points.
__host__ __device__ inline float laplacian4(const float* u, Grid g, int x, int y, int z) {
  const float c0 = -7.5f, c1 = 4.0f / 3.0f, c2 = -1.0f / 12.0f;
  const size_t sx = 1, sy = g.nx, sz = static_cast<size_t>(g.nx) * g.ny;
  const size_t i = g.at(x, y, z);
  return c0 * u[i] + c1 * (u[i - sx] + u[i + sx] + u[i - sy] + u[i + sy] + u[i - sz] + u[i + sz]) +
         c2 * (u[i - 2 * sx] + u[i + 2 * sx] + u[i - 2 * sy] + u[i + 2 * sy] + u[i - 2 * sz] + u[i + 2 * sz]);
}

__global__ void stencil_rhs(const float* u, Grid g, float* rhs) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z;
  if (x < kHalo || y < kHalo || z < kHalo || x >= g.nx - kHalo || y >= g.ny - kHalo || z >= g.nz - kHalo) return;
  rhs[g.at(x, y, z)] = laplacian4(u, g, x, y, z);
}

__global__ void update_field(const float* u, const float* u_prev, const float* rhs, const float* courant2, Grid g,
                             float* u_next) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < g.size()) u_next[i] = 2.0f * u[i] - u_prev[i] + courant2[i] * rhs[i];
}

// Absorbing layer: pull the new field toward the previous one near the sides and bottom.
__global__ void damp_boundary_layer(const float* u_prev, Grid g, float* u_next) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= g.size()) return;
  const int x = static_cast<int>(i % g.nx);
  const int y = static_cast<int>((i / g.nx) % g.ny);
  const int z = static_cast<int>(i / (static_cast<size_t>(g.nx) * g.ny));
  const int d = min(min(min(x, g.nx - 1 - x), min(y, g.ny - 1 - y)), g.nz - 1 - z);
  if (d >= kDampWidth) return;
  const float s = static_cast<float>(kDampWidth - d) / kDampWidth;
  u_next[i] -= 0.1f * s * s * (u_next[i] - u_prev[i]);
}

// Free surface on top (z = kHalo): mirror the field into the halo above.
__global__ void free_surface(Grid g, float* u) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y;
  if (x >= g.nx) return;
  for (int k = 1; k <= kHalo; ++k) u[g.at(x, y, kHalo - k)] = u[g.at(x, y, kHalo + k)];
}

__host__ __device__ inline float ricker(float t, float f0) {
  const float a = 3.14159265f * f0 * (t - 1.0f / f0);
  return (1.0f - 2.0f * a * a) * expf(-a * a);
}

__global__ void add_sources(const int* src_index, const float* src_amp, int n_src, float t, Grid g, float* u) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < n_src) u[src_index[s]] += src_amp[s] * ricker(t, 0.08f);
}

__global__ void record_receivers(const float* u, const int* rec_index, int n_rec, float* trace) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n_rec) trace[r] = u[rec_index[r]];
}

__global__ void energy_partial(const float* u, size_t n, float* partial) {
  __shared__ float cache[kBlock];
  float sum = 0.0f;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    sum += u[i] * u[i];
  cache[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = cache[0];
}

__global__ void energy_final(const float* partial, int count, float* energy) {
  __shared__ float cache[kBlock];
  float sum = 0.0f;
  for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partial[i];
  cache[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *energy = cache[0];
}

struct Config {
  const char* name;
  int n, steps;
};
const Config kConfigs[] = {{"small", 96, 40}, {"medium", 192, 40}, {"large", 256, 40}};

struct Model {
  Grid g;
  std::vector<float> courant2;
  std::vector<int> src_index, rec_index;
  std::vector<float> src_amp;
};

static Model make_model(int n, uint64_t seed) {
  Model m;
  m.g = Grid{n, n, n};
  bench::Rng rng(seed);
  m.courant2.resize(m.g.size());
  // Layered velocity with random perturbations; (c dt / h)^2 stays below the stability limit.
  for (int z = 0; z < n; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const float layer = 0.05f + 0.10f * static_cast<float>(z) / n;
        m.courant2[m.g.at(x, y, z)] = layer * (0.9f + 0.2f * rng.uniform());
      }
  for (int s = 0; s < 4; ++s) {
    const int x = kDampWidth + static_cast<int>(rng.u32() % (n - 2 * kDampWidth));
    const int y = kDampWidth + static_cast<int>(rng.u32() % (n - 2 * kDampWidth));
    const int z = kHalo + 1 + static_cast<int>(rng.u32() % (n / 4));
    m.src_index.push_back(static_cast<int>(m.g.at(x, y, z)));
    m.src_amp.push_back(0.5f + rng.uniform());
  }
  for (int r = 0; r < 64; ++r) {  // a line of receivers on the surface
    const int x = kDampWidth + r * (n - 2 * kDampWidth) / 64;
    m.rec_index.push_back(static_cast<int>(m.g.at(x, n / 2, kHalo)));
  }
  return m;
}

// The same time stepping on the host.
static void reference(const Model& m, int steps, std::vector<float>& u, std::vector<float>& energy,
                      std::vector<float>& traces) {
  const Grid g = m.g;
  std::vector<float> u_prev(g.size(), 0.0f), cur(g.size(), 0.0f), next(g.size(), 0.0f), rhs(g.size(), 0.0f);
  const int n_rec = static_cast<int>(m.rec_index.size());
  for (int step = 0; step < steps; ++step) {
#pragma omp parallel for
    for (int z = kHalo; z < g.nz - kHalo; ++z)
      for (int y = kHalo; y < g.ny - kHalo; ++y)
        for (int x = kHalo; x < g.nx - kHalo; ++x) rhs[g.at(x, y, z)] = laplacian4(cur.data(), g, x, y, z);
#pragma omp parallel for
    for (long long i = 0; i < static_cast<long long>(g.size()); ++i)
      next[i] = 2.0f * cur[i] - u_prev[i] + m.courant2[i] * rhs[i];
#pragma omp parallel for
    for (int z = 0; z < g.nz; ++z)
      for (int y = 0; y < g.ny; ++y)
        for (int x = 0; x < g.nx; ++x) {
          const int d = std::min(std::min(std::min(x, g.nx - 1 - x), std::min(y, g.ny - 1 - y)), g.nz - 1 - z);
          if (d >= kDampWidth) continue;
          const size_t i = g.at(x, y, z);
          const float s = static_cast<float>(kDampWidth - d) / kDampWidth;
          next[i] -= 0.1f * s * s * (next[i] - u_prev[i]);
        }
    for (int y = 0; y < g.ny; ++y)
      for (int x = 0; x < g.nx; ++x)
        for (int k = 1; k <= kHalo; ++k) next[g.at(x, y, kHalo - k)] = next[g.at(x, y, kHalo + k)];
    for (size_t s = 0; s < m.src_index.size(); ++s) next[m.src_index[s]] += m.src_amp[s] * ricker(step * 1.0f, 0.08f);
    for (int r = 0; r < n_rec; ++r) traces[static_cast<size_t>(step) * n_rec + r] = next[m.rec_index[r]];
    double e = 0.0;
#pragma omp parallel for reduction(+ : e)
    for (long long i = 0; i < static_cast<long long>(g.size()); ++i) e += static_cast<double>(next[i]) * next[i];
    energy[step] = static_cast<float>(e);
    std::swap(u_prev, cur);
    std::swap(cur, next);
  }
  u = cur;
}

int main(int argc, char** argv) {
  bench::Options opt;
  const Config cfg = bench::parse_config(argc, argv, "seismic", kConfigs, opt);
  const int n = static_cast<int>(bench::scaled(cfg.n, std::cbrt(opt.scale), 8));
  if (n < 4 * kDampWidth) {
    std::fprintf(stderr, "seismic: grid of %d points per side is too small (at least %d)\n", n, 4 * kDampWidth);
    return 2;
  }
  const Model m = make_model(n, opt.seed);
  const Grid g = m.g;
  const size_t cells = g.size();
  const int n_src = static_cast<int>(m.src_index.size()), n_rec = static_cast<int>(m.rec_index.size());
  const int partials = 512;

  const double wall0 = bench::now_ms();
  float *d_prev, *d_cur, *d_next, *d_rhs, *d_c2, *d_amp, *d_partial, *d_energy, *d_traces;
  int *d_src, *d_rec;
  CUDA_CHECK(cudaMalloc(&d_prev, cells * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_cur, cells * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_next, cells * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_rhs, cells * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_c2, cells * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_amp, n_src * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_partial, partials * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_energy, cfg.steps * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_traces, static_cast<size_t>(cfg.steps) * n_rec * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_src, n_src * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&d_rec, n_rec * sizeof(int)));
  CUDA_CHECK(cudaMemset(d_prev, 0, cells * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_cur, 0, cells * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_next, 0, cells * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_rhs, 0, cells * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_c2, m.courant2.data(), cells * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_amp, m.src_amp.data(), n_src * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_src, m.src_index.data(), n_src * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_rec, m.rec_index.data(), n_rec * sizeof(int), cudaMemcpyHostToDevice));

  const dim3 sblock(32, 8), sgrid((g.nx + 31) / 32, (g.ny + 7) / 8, g.nz);
  const unsigned lgrid = static_cast<unsigned>((cells + kBlock - 1) / kBlock);
  bench::GpuTimer timer;
  timer.start();
  for (int step = 0; step < cfg.steps; ++step) {
    stencil_rhs<<<sgrid, sblock>>>(d_cur, g, d_rhs);
    update_field<<<lgrid, kBlock>>>(d_cur, d_prev, d_rhs, d_c2, g, d_next);
    damp_boundary_layer<<<lgrid, kBlock>>>(d_prev, g, d_next);
    free_surface<<<dim3((g.nx + 127) / 128, g.ny), 128>>>(g, d_next);
    add_sources<<<1, 32>>>(d_src, d_amp, n_src, step * 1.0f, g, d_next);
    record_receivers<<<1, 64>>>(d_next, d_rec, n_rec, d_traces + static_cast<size_t>(step) * n_rec);
    energy_partial<<<partials, kBlock>>>(d_next, cells, d_partial);
    energy_final<<<1, kBlock>>>(d_partial, partials, d_energy + step);
    float* t = d_prev;
    d_prev = d_cur;
    d_cur = d_next;
    d_next = t;
  }
  CUDA_CHECK(cudaGetLastError());
  const float kernel_ms = timer.stop_ms();
  std::vector<float> u(cells), energy(cfg.steps), traces(static_cast<size_t>(cfg.steps) * n_rec);
  CUDA_CHECK(cudaMemcpy(u.data(), d_cur, cells * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(energy.data(), d_energy, energy.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(traces.data(), d_traces, traces.size() * sizeof(float), cudaMemcpyDeviceToHost));
  const double wall_ms = bench::now_ms() - wall0;

  bench::Output out(opt.out);
  out.add("u", "f32", u.data(), cells);
  out.add("energy", "f32", energy.data(), energy.size());
  out.add("traces", "f32", traces.data(), traces.size());

  bool pass = true;
  char detail[96] = "";
  if (opt.check) {
    std::vector<float> want_u, want_e(cfg.steps), want_t(traces.size());
    reference(m, cfg.steps, want_u, want_e, want_t);
    // Normwise: the host evaluates without FMA contraction, so values differ in the last bits.
    double peak = 0.0, err = 0.0;
    for (size_t i = 0; i < cells; ++i) {
      peak = std::max(peak, static_cast<double>(std::fabs(want_u[i])));
      err = std::max(err, static_cast<double>(std::fabs(u[i] - want_u[i])));
    }
    pass = peak > 0.0 && err <= 1e-4 * peak;
    for (int s = 0; s < cfg.steps && pass; ++s) pass = bench::close<double>(energy[s], want_e[s], 1e-3, 1e-6);
    std::snprintf(detail, sizeof(detail), "max_err=%.3g peak=%.3g", err, peak);
  }
  for (float* p : {d_prev, d_cur, d_next, d_rhs, d_c2, d_amp, d_partial, d_energy, d_traces}) CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaFree(d_src));
  CUDA_CHECK(cudaFree(d_rec));
  return bench::finish(opt, opt.check, pass, kernel_ms, wall_ms, detail);
}
