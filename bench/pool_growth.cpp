// pool_growth: what a cold device block costs by what the device's memory
// pool grew by before it (issue #14: `bootstrapping`'s cold 10 MiB `ct`
// move took about 410 us where the model, calibrated on growth from an
// empty pool, predicted 230-300 us; the same move after a 2 MiB block
// took 216 us, after a 64 MiB one 323 us).
//
//   pool_growth [SAMPLES]      (default 7)
//
// For each pair of sizes (first, then second), on the device's default
// pool as the CUDA backend sets it up (release threshold: keep everything;
// started with a 2 MiB block allocated and freed): the pool trimmed to
// nothing, the first block allocated and copied into from pinned memory,
// then the second; the second's cost is its allocation and first copy
// less the same copy again. Prints a Markdown table: the second's cost
// (median, p10-p90) and the memory the pool reserved after each block
// (cudaMemPoolAttrReservedMemCurrent).
#include "cuda_probe.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMiB = std::size_t{1} << 20;

using fhr::bench::check;
using fhr::bench::summary;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Pool {
  cudaMemPool_t pool = nullptr;
  cudaStream_t stream = nullptr;
  void *source = nullptr; // pinned, as big as the largest block

  std::uint64_t reserved() const {
    std::uint64_t bytes = 0;
    check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &bytes),
          "cudaMemPoolGetAttribute");
    return bytes;
  }
  void copy_in(void *block, std::size_t bytes) const {
    check(cudaMemcpyAsync(block, source, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  /// A block allocated and copied into; returns the seconds that took
  /// beyond the same copy again.
  double cold_block(void *&block, std::size_t bytes) const {
    auto start = Clock::now();
    check(cudaMallocAsync(&block, bytes, stream), "cudaMallocAsync");
    copy_in(block, bytes);
    const double cold = seconds_since(start);
    start = Clock::now();
    copy_in(block, bytes);
    return cold - seconds_since(start);
  }
  /// Empty, then started as the backend starts it.
  void restart() const {
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
    void *first = nullptr;
    check(cudaMallocAsync(&first, 2 * kMiB, stream), "cudaMallocAsync");
    check(cudaFreeAsync(first, stream), "cudaFreeAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
};

} // namespace

int main(int argc, char **argv) {
  const int samples = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const std::size_t firsts[] = {0, 2 * kMiB, 10 * kMiB, 64 * kMiB, 124 * kMiB, 256 * kMiB};
  const std::size_t seconds[] = {10 * kMiB, 64 * kMiB, 124 * kMiB};
  Pool p;
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&p.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaDeviceGetDefaultMemPool(&p.pool, 0), "cudaDeviceGetDefaultMemPool");
  std::uint64_t keep_all = UINT64_MAX;
  check(cudaMemPoolSetAttribute(p.pool, cudaMemPoolAttrReleaseThreshold, &keep_all),
        "cudaMemPoolSetAttribute");
  check(cudaHostAlloc(&p.source, 256 * kMiB, cudaHostAllocDefault), "cudaHostAlloc");
  std::memset(p.source, 1, 256 * kMiB);

  std::printf(
      "| first block | second block | the second's cost, µs: median (p10–p90) | pool reserved after the "
      "first / the second, MiB |\n|---|---|---|---|\n");
  for (std::size_t second : seconds)
    for (std::size_t first : firsts) {
      std::vector<double> costs;
      std::uint64_t after_first = 0, after_second = 0;
      for (int s = 0; s < samples; ++s) {
        p.restart();
        void *a = nullptr, *b = nullptr;
        if (first) p.cold_block(a, first);
        after_first = p.reserved();
        costs.push_back(p.cold_block(b, second) * 1e6);
        after_second = p.reserved();
        if (a) check(cudaFreeAsync(a, p.stream), "cudaFreeAsync");
        check(cudaFreeAsync(b, p.stream), "cudaFreeAsync");
      }
      std::printf("| %zu MiB | %zu MiB | %s | %.1f / %.1f |\n", first / kMiB, second / kMiB,
                  summary(costs).c_str(), static_cast<double>(after_first) / kMiB,
                  static_cast<double>(after_second) / kMiB);
    }
  p.restart();
  check(cudaMemPoolTrimTo(p.pool, 0), "cudaMemPoolTrimTo");
  cudaFreeHost(p.source);
  return 0;
}
