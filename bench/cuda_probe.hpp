#pragma once
// What the CUDA benchmarks and probes of bench/ (cuda_bench, cuda_phases,
// pinned_dma, pool_growth) share: a CUDA call that fails ends the process
// with its name, and samples are reported as their median and spread.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace fhr::bench {

/// Ends the process (exit 2) when `status` is an error, naming the call
/// (or only the error, where `what` is left out).
inline void check(cudaError_t status, const char *what = "CUDA") {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
  std::exit(2);
}

/// "median (p10–p90)" of `samples`, one decimal.
inline std::string summary(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const auto at = [&](double q) {
    return samples[static_cast<std::size_t>(q * static_cast<double>(samples.size() - 1))];
  };
  char text[96];
  std::snprintf(text, sizeof text, "%.1f (%.1f–%.1f)", at(0.5), at(0.1), at(0.9));
  return text;
}

} // namespace fhr::bench
