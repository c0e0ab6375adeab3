// Where the time of a small ensure goes beside a raw copy (issue #15), on a
// GPU machine:
//
//   ./build-release/bench/cuda_phases [rounds]
//
// The executable is linked with --wrap for cudaMemcpyAsync and
// cudaStreamSynchronize, so every call of them, the runtime's included, is
// stamped on entry and on return (the time-stamp counter, about 10 ns a
// read). Each sample (a raw 4 KiB copy + synchronise, then a 4 KiB ensure
// pinned -> cuda:0 and its undoing drop, outside the clock) splits into:
// before the copy is issued, the issue, between the issue and the wait, the
// wait, and after it. Medians per phase over each round's 2,000 samples.
//
// A second table asks whether host work between the issue and the wait
// (what a lone copy books there) hides behind the copy: raw copies with a
// spin of a set length between the two, with and without a
// cudaStreamQuery right after the issue (which makes the driver submit
// work it may still hold).
//
// A third asks whether the memory at a copy's ends, or the state of the
// host's caches before the issue, makes a raw copy cost what the ensure's
// copy costs beyond it: raw copies into a cudaMalloc block and into a block
// of the device's stream-ordered pool (where the manager's small blocks come
// from), and the former after reading 64 KiB of unrelated memory.
#include "cuda_probe.hpp"
#include "fhr/cuda/cuda_backend.hpp"
#include "fhr/runtime/manager.hpp"

#include <cuda_runtime.h>
#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace fhr;

namespace {

/// The stamps of one sample, by phase boundary (0 = none yet).
struct Stamps {
  std::uint64_t issue_begin = 0, issue_end = 0, wait_begin = 0, wait_end = 0;
};
thread_local Stamps stamps;

} // namespace

extern "C" {
cudaError_t __real_cudaMemcpyAsync(void *, const void *, size_t, cudaMemcpyKind, cudaStream_t);
cudaError_t __real_cudaStreamSynchronize(cudaStream_t);

cudaError_t __wrap_cudaMemcpyAsync(void *to, const void *from, size_t n, cudaMemcpyKind kind,
                                   cudaStream_t s) {
  stamps.issue_begin = __rdtsc();
  const cudaError_t error = __real_cudaMemcpyAsync(to, from, n, kind, s);
  stamps.issue_end = __rdtsc();
  return error;
}

cudaError_t __wrap_cudaStreamSynchronize(cudaStream_t s) {
  stamps.wait_begin = __rdtsc();
  const cudaError_t error = __real_cudaStreamSynchronize(s);
  stamps.wait_end = __rdtsc();
  return error;
}
}

namespace {

using fhr::bench::check;

/// Time-stamp counter ticks per nanosecond, measured against the steady clock.
double ticks_per_ns() {
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t first = __rdtsc();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::uint64_t last = __rdtsc();
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(last - first) / ns;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Phases {
  std::vector<double> before, issue, between, wait, after, total;
  void add(std::uint64_t start, std::uint64_t end, double per_ns) {
    auto us = [&](std::uint64_t a, std::uint64_t b) { return static_cast<double>(b - a) / per_ns / 1e3; };
    before.push_back(us(start, stamps.issue_begin));
    issue.push_back(us(stamps.issue_begin, stamps.issue_end));
    between.push_back(us(stamps.issue_end, stamps.wait_begin));
    wait.push_back(us(stamps.wait_begin, stamps.wait_end));
    after.push_back(us(stamps.wait_end, end));
    total.push_back(us(start, end));
  }
  /// Appends each phase's median of `round` (a table of rounds' medians).
  void add_medians(const Phases &round) {
    before.push_back(median(round.before));
    issue.push_back(median(round.issue));
    between.push_back(median(round.between));
    wait.push_back(median(round.wait));
    after.push_back(median(round.after));
    total.push_back(median(round.total));
  }
  void print(const char *what) const {
    std::printf("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", what, median(before), median(issue),
                median(between), median(wait), median(after), median(total));
  }
};

std::byte *pinned(std::size_t n) {
  void *p = nullptr;
  check(cudaHostAlloc(&p, n, cudaHostAllocPortable));
  std::fill_n(static_cast<unsigned char *>(p), n, 1);
  return static_cast<std::byte *>(p);
}

/// Busy-waits for `ns` nanoseconds on the time-stamp counter.
void spin(double ns, double per_ns) {
  const std::uint64_t until = __rdtsc() + static_cast<std::uint64_t>(ns * per_ns);
  while (__rdtsc() < until) {
  }
}

/// Raw copies with `spin_ns` of host work between the issue and the wait.
void spun_copies(void *device, const std::byte *source, std::size_t bytes, cudaStream_t stream, double per_ns,
                 int rounds) {
  std::printf("\nRaw 4 KiB copies with host work between the issue and the wait (median of the rounds' "
              "medians, 2,000 samples a round, µs)\n\n"
              "| host work | query after the issue | issue to wait | wait | total | total minus the work |\n"
              "|---|---|---|---|---|---|\n");
  for (const bool query : {false, true})
    for (const double spin_ns : {0.0, 250.0, 500.0, 1000.0, 2000.0, 4000.0}) {
      std::vector<double> between, wait, total;
      for (int r = 0; r < rounds; ++r) {
        Phases phases;
        for (int k = 0; k < 2000; ++k) {
          const std::uint64_t start = __rdtsc();
          check(cudaMemcpyAsync(device, source, bytes, cudaMemcpyDefault, stream));
          if (query) (void)cudaStreamQuery(stream);
          spin(spin_ns, per_ns);
          check(cudaStreamSynchronize(stream));
          phases.add(start, __rdtsc(), per_ns);
        }
        between.push_back(median(phases.between));
        wait.push_back(median(phases.wait));
        total.push_back(median(phases.total));
      }
      std::printf("| %.0f ns | %s | %.3f | %.3f | %.3f | %.3f |\n", spin_ns, query ? "yes" : "no",
                  median(between), median(wait), median(total), median(total) - spin_ns / 1e3);
    }
}

/// Raw copies by the kind of the destination and the host's caches before
/// the issue, interleaved sample by sample (each variant issued as often
/// first as last).
void raw_variants(void *device, const std::byte *source, std::size_t bytes, cudaStream_t stream,
                  double per_ns, int rounds) {
  void *pooled = nullptr;
  check(cudaMallocAsync(&pooled, bytes, stream));
  check(cudaStreamSynchronize(stream));
  std::vector<unsigned char> unrelated(64 << 10, 1);
  struct Variant {
    const char *what;
    void *to;
    bool read_first;
  };
  const Variant variants[] = {{"into a cudaMalloc block", device, false},
                              {"into a block of the stream-ordered pool", pooled, false},
                              {"into a cudaMalloc block, 64 KiB read before the issue", device, true}};
  constexpr std::size_t kCount = std::size(variants);
  std::vector<Phases> medians(kCount);
  unsigned sink = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<Phases> phases(kCount);
    for (std::size_t k = 0; k < 2000; ++k)
      for (std::size_t turn = 0; turn < kCount; ++turn) {
        const std::size_t v = (k + turn) % kCount;
        const std::uint64_t start = __rdtsc();
        if (variants[v].read_first)
          for (std::size_t i = 0; i < unrelated.size(); i += 64)
            sink += unrelated[i];
        check(cudaMemcpyAsync(variants[v].to, source, bytes, cudaMemcpyDefault, stream));
        check(cudaStreamSynchronize(stream));
        phases[v].add(start, __rdtsc(), per_ns);
      }
    for (std::size_t v = 0; v < kCount; ++v)
      medians[v].add_medians(phases[v]);
  }
  std::printf("\nRaw 4 KiB copies by destination and cache state (median of the rounds' medians, 2,000 "
              "samples a round, µs)\n\n"
              "| copy | before the issue | issue | issue to wait | wait | after the wait | total |\n"
              "|---|---|---|---|---|---|---|\n");
  for (std::size_t v = 0; v < kCount; ++v)
    medians[v].print(variants[v].what);
  if (sink == 42) std::printf(" ");
  check(cudaFreeAsync(pooled, stream));
  check(cudaStreamSynchronize(stream));
}

} // namespace

int main(int argc, char **argv) {
  const int rounds = std::max(3, argc > 1 ? std::atoi(argv[1]) : 5);
  if (cuda_device_count() == 0) {
    std::printf("no CUDA device\n");
    return 1;
  }
  constexpr std::size_t kBytes = 4096;
  const double per_ns = ticks_per_ns();
  ManagerOptions options;
  options.backend = make_cuda_backend();
  Manager m(std::move(options));
  const Handle h = m.adopt(
      pinned(kBytes), kBytes, Location::pinned(), [](std::byte *p) { cudaFreeHost(p); },
      ReplicaMode::Replicable);
  std::byte *source = pinned(kBytes);
  void *device = nullptr;
  check(cudaMalloc(&device, kBytes));
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::printf("cuda_phases: %.3f ticks/ns; medians of 2,000 samples a round, µs\n\n"
              "| round, what | before the issue | issue | issue to wait | wait | after the wait | total |\n"
              "|---|---|---|---|---|---|---|\n",
              per_ns);
  for (int r = 0; r < rounds; ++r) {
    Phases raw, ensure;
    for (int k = 0; k < 2000; ++k) {
      std::uint64_t start = __rdtsc();
      check(cudaMemcpyAsync(device, source, kBytes, cudaMemcpyDefault, stream));
      check(cudaStreamSynchronize(stream));
      raw.add(start, __rdtsc(), per_ns);
      start = __rdtsc();
      m.ensure(h, Location::cuda(0));
      ensure.add(start, __rdtsc(), per_ns);
      m.drop(h, Location::cuda(0));
    }
    raw.print(("round " + std::to_string(r) + ", raw").c_str());
    ensure.print(("round " + std::to_string(r) + ", ensure").c_str());
  }
  spun_copies(device, source, kBytes, stream, per_ns, rounds);
  raw_variants(device, source, kBytes, stream, per_ns, rounds);
  m.close(true, true);
  return 0;
}
