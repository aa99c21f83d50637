// Macroscopic cross-section lookups in the style of Monte Carlo neutron transport (XSBench's event
// model): each lookup draws an energy and a material, then for every nuclide of the material finds
// the energy interval by binary search in that nuclide's grid, interpolates five cross sections and
// accumulates them weighted by the nuclide's concentration. One long kernel with irregular gathers.
#include "../common/bench.h"

constexpr int kXs = 5;  // total, elastic, absorption, fission, nu-fission

struct Nuclide {  // a point of a nuclide's energy grid
  double energy;
  double xs[kXs];
};

// Per-lookup random numbers, computable anywhere from (seed, index): a SplitMix64 step.
__host__ __device__ inline unsigned long long mix(unsigned long long z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__host__ __device__ inline double unit(unsigned long long z) { return (z >> 11) * (1.0 / 9007199254740992.0); }

// Materials are picked with fixed probabilities, as in a reactor core (fuel is most likely).
__host__ __device__ inline int pick_material(double u, const double* cdf, int materials) {
  int m = 0;
  while (m < materials - 1 && u >= cdf[m]) ++m;
  return m;
}

__host__ __device__ inline void lookup(long long i, unsigned long long seed, const Nuclide* grids, int points,
                                       const int* mat_offsets, const int* mat_nuclides, const double* mat_conc,
                                       const double* cdf, int materials, double* macro) {
  const unsigned long long r = mix(seed ^ (static_cast<unsigned long long>(i) * 0xD1B54A32D192ED03ull));
  const double energy = unit(r);
  const int mat = pick_material(unit(mix(r)), cdf, materials);
  for (int k = 0; k < kXs; ++k) macro[k] = 0.0;
  for (int j = mat_offsets[mat]; j < mat_offsets[mat + 1]; ++j) {
    const Nuclide* grid = grids + static_cast<size_t>(mat_nuclides[j]) * points;
    int lo = 0, hi = points - 1;  // find lo with grid[lo].energy <= energy < grid[lo+1].energy
    if (energy <= grid[0].energy) {
      hi = 1;
    } else if (energy >= grid[points - 1].energy) {
      lo = points - 2;
      hi = points - 1;
    } else {
      while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (grid[mid].energy > energy) hi = mid; else lo = mid;
      }
    }
    const double f = (grid[hi].energy - energy) / (grid[hi].energy - grid[lo].energy);
    const double conc = mat_conc[j];
    for (int k = 0; k < kXs; ++k) macro[k] += conc * (grid[hi].xs[k] - f * (grid[hi].xs[k] - grid[lo].xs[k]));
  }
}

__global__ void xs_lookup_kernel(long long lookups, unsigned long long seed, const Nuclide* grids, int points,
                                 const int* mat_offsets, const int* mat_nuclides, const double* mat_conc,
                                 const double* cdf, int materials, double* results) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= lookups) return;
  double macro[kXs];
  lookup(i, seed, grids, points, mat_offsets, mat_nuclides, mat_conc, cdf, materials, macro);
  for (int k = 0; k < kXs; ++k) results[static_cast<size_t>(i) * kXs + k] = macro[k];
}

struct Config {
  const char* name;
  int nuclides, points;
  long long lookups;
};
const Config kConfigs[] = {{"small", 68, 4000, 1 << 20}, {"medium", 68, 11303, 1 << 22}, {"large", 355, 11303, 1 << 22}};

int main(int argc, char** argv) {
  bench::Options opt;
  const Config cfg = bench::parse_config(argc, argv, "xslookup", kConfigs, opt);
  const long long lookups = static_cast<long long>(bench::scaled(cfg.lookups, opt.scale, 256));
  const int nuclides = cfg.nuclides, points = cfg.points;

  // Grids: sorted random energies in (0, 1), random positive cross sections.
  bench::Rng rng(opt.seed);
  std::vector<Nuclide> grids(static_cast<size_t>(nuclides) * points);
  for (int n = 0; n < nuclides; ++n) {
    std::vector<double> e(points);
    for (auto& v : e) v = rng.uniform_double();
    std::sort(e.begin(), e.end());
    for (int p = 0; p < points; ++p) {
      Nuclide& g = grids[static_cast<size_t>(n) * points + p];
      g.energy = e[p];
      for (int k = 0; k < kXs; ++k) g.xs[k] = rng.uniform_double();
    }
  }
  // Materials: fuel holds a third of the nuclides, the others a handful each.
  const int materials = 12;
  std::vector<int> offsets(materials + 1, 0), members;
  std::vector<double> conc;
  for (int m = 0; m < materials; ++m) {
    const int count = m == 0 ? std::max(4, nuclides / 3) : 4 + static_cast<int>(rng.u32() % 12);
    for (int j = 0; j < count; ++j) {
      members.push_back(static_cast<int>(rng.u32() % nuclides));
      conc.push_back(rng.uniform_double());
    }
    offsets[m + 1] = static_cast<int>(members.size());
  }
  const double probability[materials] = {0.140, 0.052, 0.275, 0.134, 0.154, 0.064,
                                         0.066, 0.055, 0.008, 0.015, 0.025, 0.013};
  std::vector<double> cdf(materials);
  double acc = 0.0;
  for (int m = 0; m < materials; ++m) cdf[m] = (acc += probability[m]);

  const double wall0 = bench::now_ms();
  Nuclide* d_grids;
  int *d_offsets, *d_members;
  double *d_conc, *d_cdf, *d_results;
  CUDA_CHECK(cudaMalloc(&d_grids, grids.size() * sizeof(Nuclide)));
  CUDA_CHECK(cudaMalloc(&d_offsets, offsets.size() * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&d_members, members.size() * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&d_conc, conc.size() * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&d_cdf, cdf.size() * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&d_results, static_cast<size_t>(lookups) * kXs * sizeof(double)));
  CUDA_CHECK(cudaMemcpy(d_grids, grids.data(), grids.size() * sizeof(Nuclide), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_offsets, offsets.data(), offsets.size() * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_members, members.data(), members.size() * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_conc, conc.data(), conc.size() * sizeof(double), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_cdf, cdf.data(), cdf.size() * sizeof(double), cudaMemcpyHostToDevice));
  bench::GpuTimer timer;
  timer.start();
  const int block = 256;
  xs_lookup_kernel<<<static_cast<unsigned>((lookups + block - 1) / block), block>>>(
      lookups, opt.seed, d_grids, points, d_offsets, d_members, d_conc, d_cdf, materials, d_results);
  CUDA_CHECK(cudaGetLastError());
  const float kernel_ms = timer.stop_ms();
  std::vector<double> results(static_cast<size_t>(lookups) * kXs);
  CUDA_CHECK(cudaMemcpy(results.data(), d_results, results.size() * sizeof(double), cudaMemcpyDeviceToHost));
  const double wall_ms = bench::now_ms() - wall0;

  bench::Output out(opt.out);
  out.add("macro_xs", "f64", results.data(), results.size());

  bool pass = true;
  if (opt.check) {
    // Every 16th lookup against the same computation on the host (which may not contract to FMA).
    long long bad = 0;
#pragma omp parallel for reduction(+ : bad)
    for (long long i = 0; i < lookups; i += 16) {
      double want[kXs];
      lookup(i, opt.seed, grids.data(), points, offsets.data(), members.data(), conc.data(), cdf.data(), materials,
             want);
      for (int k = 0; k < kXs; ++k) bad += !bench::close(results[static_cast<size_t>(i) * kXs + k], want[k], 1e-12, 1e-14);
    }
    pass = bad == 0;
  }
  CUDA_CHECK(cudaFree(d_grids));
  CUDA_CHECK(cudaFree(d_offsets));
  CUDA_CHECK(cudaFree(d_members));
  CUDA_CHECK(cudaFree(d_conc));
  CUDA_CHECK(cudaFree(d_cdf));
  CUDA_CHECK(cudaFree(d_results));
  return bench::finish(opt, opt.check, pass, kernel_ms, wall_ms);
}
