// Shared harness of the Optimas benchmark applications: command line, seeded inputs, timing,
// output files that compare bit for bit, and the PASS/FAIL verdict.
//
// Every application accepts:
//   --config NAME   one of its named problem configurations (--list prints them)
//   --seed N        seed of the inputs (default 1)
//   --scale S       multiply the problem size by S (default 1; used for counter sweeps)
//   --out FILE      write the outputs to FILE
//   --no-check      skip the CPU reference (timing runs); prints UNCHECKED instead of PASS
// and prints one line "RESULT app=... config=... kernel_ms=... wall_ms=... PASS|FAIL|UNCHECKED".
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CUDA_CHECK(call)                                                                       \
  do {                                                                                         \
    cudaError_t err_ = (call);                                                                 \
    if (err_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_), __FILE__,  \
                   __LINE__, cudaGetErrorString(err_));                                        \
      std::exit(2);                                                                            \
    }                                                                                          \
  } while (0)

namespace bench {

struct Options {
  std::string app;
  std::string config;
  uint64_t seed = 1;
  double scale = 1.0;
  std::string out;
  bool check = true;
};

inline void usage(const char* app, const std::vector<std::string>& configs) {
  std::fprintf(stderr, "usage: %s --config NAME [--seed N] [--scale S] [--out FILE] [--no-check]\n", app);
  std::fprintf(stderr, "configurations:");
  for (const auto& c : configs) std::fprintf(stderr, " %s", c.c_str());
  std::fprintf(stderr, "\n");
}

// Parses the common options; exits with status 2 on bad input.
inline Options parse(int argc, char** argv, const char* app, const std::vector<std::string>& configs) {
  Options o;
  o.app = app;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s needs a value\n", app, name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--config") {
      o.config = value("--config");
    } else if (a == "--seed") {
      o.seed = std::strtoull(value("--seed").c_str(), nullptr, 10);
    } else if (a == "--scale") {
      o.scale = std::atof(value("--scale").c_str());
      if (!(o.scale > 0.0)) {
        std::fprintf(stderr, "%s: --scale must be a positive number\n", app);
        std::exit(2);
      }
    } else if (a == "--out") {
      o.out = value("--out");
    } else if (a == "--no-check") {
      o.check = false;
    } else if (a == "--list") {
      for (const auto& c : configs) std::printf("%s\n", c.c_str());
      std::exit(0);
    } else {
      std::fprintf(stderr, "%s: unknown option %s\n", app, a.c_str());
      usage(app, configs);
      std::exit(2);
    }
  }
  bool known = false;
  for (const auto& c : configs) known = known || c == o.config;
  if (!known) {
    std::fprintf(stderr, "%s: unknown or missing --config '%s'\n", app, o.config.c_str());
    usage(app, configs);
    std::exit(2);
  }
  return o;
}

// Parses the common options and returns the entry of `configs` (structs with a `name`) they chose.
template <typename Config, size_t N>
Config parse_config(int argc, char** argv, const char* app, const Config (&configs)[N], Options& opt) {
  std::vector<std::string> names;
  for (const auto& c : configs) names.push_back(c.name);
  opt = parse(argc, argv, app, names);
  for (const auto& c : configs)
    if (opt.config == c.name) return c;
  return configs[0];  // not reached: parse() exits on a name it does not know
}

// Scales a problem dimension, keeping it a multiple of `multiple` and at least `multiple`.
inline size_t scaled(size_t n, double scale, size_t multiple = 1) {
  double v = std::floor(static_cast<double>(n) * scale / static_cast<double>(multiple));
  size_t k = v < 1.0 ? 1 : static_cast<size_t>(v);
  return k * multiple;
}

// SplitMix64: small, fast, and the same on every platform.
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t u32() { return static_cast<uint32_t>(next() >> 32); }
  // Uniform in [0, 1) with 24 random bits: exactly representable as float.
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  double uniform_double() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
};

// GPU time of a region, from CUDA events on the default stream.
class GpuTimer {
 public:
  GpuTimer() {
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~GpuTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start() { CUDA_CHECK(cudaEventRecord(start_)); }
  float stop_ms() {
    CUDA_CHECK(cudaEventRecord(stop_));
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

inline double now_ms() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(clock::now().time_since_epoch()).count();
}

// Output file: a header line, then for each buffer a line "name dtype count" and its raw bytes.
// Identical results give identical files.
class Output {
 public:
  explicit Output(const std::string& path) {
    if (path.empty()) return;
    f_ = std::fopen(path.c_str(), "wb");
    if (!f_) {
      std::fprintf(stderr, "cannot open output file %s\n", path.c_str());
      std::exit(2);
    }
    std::fputs("OPTIMAS-OUTPUT 1\n", f_);
  }
  ~Output() {
    if (f_) std::fclose(f_);
  }
  template <typename T>
  void add(const char* name, const char* dtype, const T* data, size_t count) {
    if (!f_) return;
    std::fprintf(f_, "%s %s %zu\n", name, dtype, count);
    if (count && std::fwrite(data, sizeof(T), count, f_) != count) {
      std::fprintf(stderr, "short write to output file\n");
      std::exit(2);
    }
  }

 private:
  FILE* f_ = nullptr;
};

// Relative comparison for float results computed in another order or without FMA contraction.
template <typename T>
inline bool close(T got, T want, double rtol, double atol) {
  double g = static_cast<double>(got), w = static_cast<double>(want);
  return std::fabs(g - w) <= atol + rtol * std::fabs(w);
}

// Prints the verdict line and returns the process exit status (0 PASS/UNCHECKED, 1 FAIL).
inline int finish(const Options& o, bool checked, bool pass, double kernel_ms, double wall_ms,
                  const char* detail = "") {
  const char* verdict = !checked ? "UNCHECKED" : (pass ? "PASS" : "FAIL");
  std::printf("RESULT app=%s config=%s seed=%llu scale=%g kernel_ms=%.4f wall_ms=%.4f %s%s%s\n",
              o.app.c_str(), o.config.c_str(), static_cast<unsigned long long>(o.seed), o.scale, kernel_ms,
              wall_ms, verdict, detail[0] ? " " : "", detail);
  return (checked && !pass) ? 1 : 0;
}

}  // namespace bench
