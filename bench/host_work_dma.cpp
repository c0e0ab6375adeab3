// host_work_dma: what the first DMA into a device pays after the processor
// worked on host memory, by what the work was (issue #14). The model charges
// one figure, `dma_after_host_work_us`, whatever the work; on the H200 the
// first move of a plan after its setup came out 10-27 µs under that figure
// and moves after a 120 MiB fill 1-27 µs over it (twenty-fifth wave). Does
// the extra grow with the bytes written, does it need the written lines
// dirty in the cache (streaming stores, a flush), or only the cache
// disturbed (a read), or only time away from the device (a spin, a sleep)?
//
//   host_work_dma [SAMPLES]      (default 21)
//
// Each sample, for each kind of work in turn (so that a machine's drift
// reaches them all alike): the probe's 16 MiB value goes into cuda:0 and
// back from pinned memory (the calibration's state: its own round trip),
// then the work runs on the host thread, then, timed on the host and by
// events on the stream: the value's move in (the DMA after host work), its
// move out straight after (the follow-on), and another 16 MiB value's move
// in (a cold value, unless the work left its lines alone). Prints a
// Markdown table: per kind of work, the medians (p10-p90) in µs and each
// median's difference from the row without work.
#include "cuda_probe.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kValue = 16 * kMiB;
constexpr std::size_t kHostBuffer = 512 * kMiB;

using fhr::bench::check;
using fhr::bench::summary;

/// Keeps the compiler from dropping reads whose result nothing uses.
volatile std::uint64_t g_sink = 0;

void write_plain(std::byte *to, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    const std::uint64_t word = seed ^ (i * 0xff51afd7ed558ccdull);
    std::memcpy(to + i, &word, 8);
  }
}

void write_streaming(std::byte *to, std::size_t n, std::uint64_t seed) {
#if defined(__x86_64__)
  for (std::size_t i = 0; i + 16 <= n; i += 16) {
    const auto word = static_cast<long long>(seed ^ (i * 0xff51afd7ed558ccdull));
    _mm_stream_si128(reinterpret_cast<__m128i *>(to + i), _mm_set_epi64x(word, ~word));
  }
  _mm_sfence();
#else
  write_plain(to, n, seed);
#endif
}

void read_all(const std::byte *from, std::size_t n) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, from + i, 8);
    sum += word;
  }
  g_sink = sum;
}

/// Writes the lines back and drops them from every cache.
void flush_lines(const std::byte *from, std::size_t n) {
#if defined(__x86_64__)
  for (std::size_t i = 0; i < n; i += 64)
    _mm_clflush(from + i);
  _mm_mfence();
#else
  (void)from;
  (void)n;
#endif
}

void spin_for(int us) {
  const auto until = Clock::now() + std::chrono::microseconds(us);
  while (Clock::now() < until) {
  }
}

struct Timing {
  double host_us = 0, event_us = 0;
};

class Probe {
public:
  Probe() {
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    for (cudaEvent_t *event : {&begin_, &end_})
      check(cudaEventCreate(event), "cudaEventCreate");
    for (int v = 0; v < 2; ++v) {
      check(cudaHostAlloc(&pinned_[v], kValue, cudaHostAllocDefault), "cudaHostAlloc");
      std::memset(pinned_[v], v + 1, kValue);
      check(cudaMalloc(&device_[v], kValue), "cudaMalloc");
    }
    check(cudaHostAlloc(&big_pinned_, 120 * kMiB, cudaHostAllocDefault), "cudaHostAlloc");
    std::memset(big_pinned_, 3, 120 * kMiB);
    check(cudaMalloc(&big_device_, 120 * kMiB), "cudaMalloc");
    host_ = static_cast<std::byte *>(std::aligned_alloc(2 * kMiB, kHostBuffer));
    if (!host_) {
      std::fprintf(stderr, "out of memory\n");
      std::exit(2);
    }
    std::memset(host_, 0, kHostBuffer); // backed before any sample
  }

  std::byte *host() const { return host_; }

  /// A copy of `n` bytes on the probe's stream, timed on the host (from
  /// before its issue to its stream's synchronize, as `run` times a step)
  /// and by a pair of events around it.
  Timing copy(void *to, const void *from, std::size_t n, cudaMemcpyKind kind) {
    const auto start = Clock::now();
    check(cudaEventRecord(begin_, stream_), "cudaEventRecord");
    check(cudaMemcpyAsync(to, from, n, kind, stream_), "cudaMemcpyAsync");
    check(cudaEventRecord(end_, stream_), "cudaEventRecord");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    Timing timing;
    timing.host_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    float ms = 0;
    check(cudaEventElapsedTime(&ms, begin_, end_), "cudaEventElapsedTime");
    timing.event_us = 1000.0 * ms;
    return timing;
  }
  Timing move_in(int v) { return copy(device_[v], pinned_[v], kValue, cudaMemcpyHostToDevice); }
  Timing move_out(int v) { return copy(pinned_[v], device_[v], kValue, cudaMemcpyDeviceToHost); }
  void big_round_trip() {
    copy(big_device_, big_pinned_, 120 * kMiB, cudaMemcpyHostToDevice);
    copy(big_pinned_, big_device_, 120 * kMiB, cudaMemcpyDeviceToHost);
  }

private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t begin_ = nullptr, end_ = nullptr;
  void *pinned_[2] = {}, *device_[2] = {};
  void *big_pinned_ = nullptr, *big_device_ = nullptr;
  std::byte *host_ = nullptr;
};

struct Work {
  const char *name;
  std::function<void(Probe &)> run;
};

struct Samples {
  std::vector<double> in_host, in_event, out_host, other_host, other_event;
};

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  const int samples = argc > 1 ? std::max(1, std::atoi(argv[1])) : 21;
  Probe probe;
  std::uint64_t seed = 1;
  const auto plain = [&seed](std::size_t mib) {
    return [mib, &seed](Probe &p) { write_plain(p.host(), mib * kMiB, ++seed); };
  };
  const std::vector<Work> works = {
      {"nothing (the value's own round trip)", [](Probe &) {}},
      {"another value's 120 MiB round trip", [](Probe &p) { p.big_round_trip(); }},
      {"a spin of 5 ms", [](Probe &) { spin_for(5000); }},
      {"a sleep of 5 ms", [](Probe &) { std::this_thread::sleep_for(std::chrono::microseconds(5000)); }},
      {"1 MiB written", plain(1)},
      {"8 MiB written", plain(8)},
      {"32 MiB written", plain(32)},
      {"128 MiB written", plain(128)},
      {"512 MiB written", plain(512)},
      {"128 MiB written by streaming stores",
       [&seed](Probe &p) { write_streaming(p.host(), 128 * kMiB, ++seed); }},
      {"128 MiB read", [](Probe &p) { read_all(p.host(), 128 * kMiB); }},
      {"128 MiB written, its lines flushed",
       [&seed](Probe &p) {
         write_plain(p.host(), 128 * kMiB, ++seed);
         flush_lines(p.host(), 128 * kMiB);
       }},
      {"128 MiB written, then a spin of 5 ms",
       [&seed](Probe &p) {
         write_plain(p.host(), 128 * kMiB, ++seed);
         spin_for(5000);
       }},
      {"128 MiB written, then a spin of 50 ms",
       [&seed](Probe &p) {
         write_plain(p.host(), 128 * kMiB, ++seed);
         spin_for(50000);
       }},
  };
  std::vector<Samples> results(works.size());
  // One untimed round: the first DMAs of a process pay for their setup.
  for (int round = -1; round < samples; ++round) {
    for (std::size_t w = 0; w < works.size(); ++w) {
      probe.move_in(0);
      probe.move_out(0);
      probe.move_in(1);
      probe.move_out(1);
      works[w].run(probe);
      const Timing in = probe.move_in(0), out = probe.move_out(0), other = probe.move_in(1);
      probe.move_out(1);
      if (round < 0) continue;
      Samples &s = results[w];
      s.in_host.push_back(in.host_us);
      s.in_event.push_back(in.event_us);
      s.out_host.push_back(out.host_us);
      s.other_host.push_back(other.host_us);
      s.other_event.push_back(other.event_us);
    }
  }
  const Samples &base = results[0];
  std::printf("%d samples of each; µs, median (p10–p90) [median − the row without work]\n\n", samples);
  std::printf("| work before the move in | move in, host | move in, events | the move out after it, host | "
              "another value's move in, host | its events |\n|---|---|---|---|---|---|\n");
  const auto cell = [](const std::vector<double> &mine, const std::vector<double> &base_samples) {
    char delta[32];
    std::snprintf(delta, sizeof delta, " [%+.1f]", median(mine) - median(base_samples));
    return summary(mine) + delta;
  };
  for (std::size_t w = 0; w < works.size(); ++w) {
    const Samples &s = results[w];
    std::printf("| %s | %s | %s | %s | %s | %s |\n", works[w].name, cell(s.in_host, base.in_host).c_str(),
                cell(s.in_event, base.in_event).c_str(), cell(s.out_host, base.out_host).c_str(),
                cell(s.other_host, base.other_host).c_str(), cell(s.other_event, base.other_event).c_str());
  }
  return 0;
}
