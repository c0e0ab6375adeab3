// The CUDA backend against raw CUDA in the same process (issues #5 and
// #15): every row beside its raw baseline, measured in rounds that
// alternate the manager and the baseline, medians and ranges over at
// least 5 rounds, printed as the rows of markdown tables for
// docs/benchmarks.md. Cold rows come first, before anything has warmed
// the driver's pools. Run on a GPU machine:
//
//   ./build-release/bench/cuda_bench [rounds] [cold|bandwidth|small|leases|staged ...]
//
// (the sections named, default all but staged: cold; bandwidth, with the
// eviction beside a prefetch; small; leases, with the driver calls; staged,
// the spread of single staged pageable copies under copier settings. A
// process that times only leases, say, to compare processes.)
#include "cuda_probe.hpp"
#include "fhr/cuda/cuda_backend.hpp"
#include "fhr/runtime/manager.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <thread>
#include <vector>

using namespace fhr;

namespace {

using fhr::bench::check;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
double time_of(const std::function<void()> &body) {
  const auto start = Clock::now();
  body();
  return seconds_since(start);
}

struct Figure {
  double median = 0, low = 0, high = 0;
};
Figure figure(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return Figure{samples[samples.size() / 2], samples.front(), samples.back()};
}

void header(const char *title) {
  std::printf("\n%s\n\n| measurement | median | range | target |\n|---|---|---|---|\n", title);
  std::fflush(stdout);
}
/// A row of microseconds (samples in seconds).
void us_row(const std::string &what, const std::vector<double> &samples, const char *target = "") {
  const Figure f = figure(samples);
  std::printf("| %s | %.3f µs | %.3f–%.3f | %s |\n", what.c_str(), f.median * 1e6, f.low * 1e6, f.high * 1e6,
              target);
  std::fflush(stdout);
}
/// A row of GB/s for `bytes` moved in each sample's seconds (every run shown).
void rate_row(const std::string &what, std::size_t bytes, const std::vector<double> &samples,
              const char *target = "") {
  std::vector<double> rates;
  for (double s : samples)
    rates.push_back(static_cast<double>(bytes) / s / 1e9);
  const Figure f = figure(rates);
  std::string runs;
  for (double r : rates) {
    char text[32];
    std::snprintf(text, sizeof text, "%s%.1f", runs.empty() ? "" : ", ", r);
    runs += text;
  }
  std::printf("| %s | %.1f GB/s | %.1f–%.1f (runs: %s) | %s |\n", what.c_str(), f.median, f.low, f.high,
              runs.c_str(), target);
  std::fflush(stdout);
}
void percent_row(const std::string &what, const std::vector<double> &samples, const char *target = "") {
  const Figure f = figure(samples);
  std::printf("| %s | %.1f%% | %.1f–%.1f | %s |\n", what.c_str(), f.median * 100, f.low * 100, f.high * 100,
              target);
  std::fflush(stdout);
}

const Location kPinned = Location::pinned(), kPageable = Location::pageable(), kGpu = Location::cuda(0);

std::byte *pinned_block(std::size_t bytes, int fill) {
  std::byte *data = nullptr;
  check(cudaHostAlloc(reinterpret_cast<void **>(&data), bytes, cudaHostAllocPortable));
  std::memset(data, fill, bytes);
  return data;
}
Handle adopt_pinned(Manager &m, std::size_t bytes, int fill = 1) {
  return m.adopt(
      pinned_block(bytes, fill), bytes, kPinned, [](std::byte *p) { cudaFreeHost(p); },
      ReplicaMode::Replicable);
}
ManagerOptions cuda_manager_options(CudaBackendOptions backend = {}, bool overlap = true) {
  ManagerOptions options;
  options.backend = make_cuda_backend(backend);
  options.overlap_transfers = overlap;
  return options;
}
Manager cuda_manager(CudaBackendOptions backend = {}, bool overlap = true) {
  return Manager(cuda_manager_options(backend, overlap));
}

// ---- cold pools ----------------------------------------------------------

/// The first transfers of a fresh manager: 256 MiB pinned -> cuda:0 (the
/// device pool empty), back to pinned after the pinned replica went (the
/// pinned pool empty) and to pageable memory (fresh pages), then the same
/// again warm; with `warm_up`, the plan's warm-up runs first (the device
/// pool, a pinned and a pageable block) and its duration is the cold cost
/// reported.
void cold_rows(int rounds) {
  constexpr std::size_t kBytes = std::size_t{256} << 20;
  header("Cold pools: the first transfers of a fresh manager, 256 MiB (one sample per round)");
  std::vector<double> in_cold, in_warm, in_ready, out_cold, out_warm, out_ready, warm_up, in_ratio, out_ratio,
      in_ready_ratio, out_ready_ratio, page_cold, page_warm, page_ready, page_ratio, page_ready_ratio;
  for (int r = 0; r < rounds; ++r)
    for (const bool prepared : {false, true}) {
      // The device's pool outlives a backend (it is the device's default
      // pool): give its memory back, so that every round starts cold.
      cudaMemPool_t pool = nullptr;
      check(cudaDeviceGetDefaultMemPool(&pool, 0));
      check(cudaDeviceSynchronize());
      check(cudaMemPoolTrimTo(pool, 0));
      Manager m = cuda_manager();
      const Handle h = adopt_pinned(m, kBytes);
      const PlanSpec in_plan{"prefetch", {}, {}, {ActionSpec{ActionKind::Ensure, h, kGpu, {}}}, {}};
      if (prepared) {
        // The device pool for the prefetch and a pinned block for the
        // eviction back (what a plan with an evicting exit would ask).
        WarmUpReport report = m.warm_up(in_plan);
        const PoolRequest host[] = {{kPinned, {kBytes}}, {kPageable, {kBytes}}};
        report.duration_ns += m.warm_up(host).duration_ns;
        warm_up.push_back(static_cast<double>(report.duration_ns) * 1e-9);
      }
      const double in_first = time_of([&] { m.ensure(h, kGpu); });
      m.drop(h, kPinned);
      const double out_first = time_of([&] { m.ensure(h, kPinned); });
      m.drop(h, kGpu);
      const double in_again = time_of([&] { m.ensure(h, kGpu); });
      m.drop(h, kPinned);
      const double out_again = time_of([&] { m.ensure(h, kPinned); });
      // Back to pageable memory from cuda:0 alone: into fresh pages (cold),
      // into pages the warm-up faulted in, then into the block the pageable
      // pool kept from the first.
      m.drop(h, kPinned);
      const double page_first = time_of([&] { m.ensure(h, kPageable); });
      m.drop(h, kPageable);
      const double page_again = time_of([&] { m.ensure(h, kPageable); });
      (prepared ? page_ready : page_cold).push_back(page_first);
      page_warm.push_back(page_again);
      (prepared ? page_ready_ratio : page_ratio).push_back(page_again / page_first);
      (prepared ? in_ready : in_cold).push_back(in_first);
      (prepared ? out_ready : out_cold).push_back(out_first);
      in_warm.push_back(in_again);
      out_warm.push_back(out_again);
      (prepared ? in_ready_ratio : in_ratio).push_back(in_again / in_first);
      (prepared ? out_ready_ratio : out_ratio).push_back(out_again / out_first);
      m.close(true, true);
    }
  rate_row("first pinned → cuda:0, cold", kBytes, in_cold);
  rate_row("first pinned → cuda:0 after `warm_up(plan)`", kBytes, in_ready);
  rate_row("pinned → cuda:0, warm (the second)", kBytes, in_warm);
  percent_row("  first / warm rate, cold", in_ratio);
  percent_row("  first / warm rate, after warm-up", in_ready_ratio, "≥ 90%");
  rate_row("first cuda:0 → pinned (pinned pool empty), cold", kBytes, out_cold);
  rate_row("first cuda:0 → pinned after the warm-up", kBytes, out_ready);
  rate_row("cuda:0 → pinned, warm (the second)", kBytes, out_warm);
  percent_row("  first / warm rate, cold", out_ratio);
  percent_row("  first / warm rate, after warm-up", out_ready_ratio, "≥ 90%");
  rate_row("first cuda:0 → pageable (fresh pages), cold", kBytes, page_cold);
  rate_row("first cuda:0 → pageable after the warm-up", kBytes, page_ready);
  rate_row("cuda:0 → pageable, warm (the second)", kBytes, page_warm);
  percent_row("  first / warm rate, cold", page_ratio);
  percent_row("  first / warm rate, after warm-up", page_ready_ratio, "≥ 90%");
  us_row("the warm-up itself (`WarmUpReport::duration_ns`: the cold cost, paid before the plan)", warm_up);
}

// ---- bandwidth -------------------------------------------------------------

/// pinned or pageable <-> cuda:0 for one value of `bytes`: the manager's
/// ensure in each direction beside a raw cudaMemcpyAsync + synchronise on
/// the same buffers, alternating.
void transfer(Manager &m, Location host, std::size_t bytes, int rounds, const char *target_in,
              const char *target_out) {
  std::byte *data = nullptr;
  Storage::Release release;
  if (host == kPinned) {
    data = pinned_block(bytes, 1);
    release = [](std::byte *p) { cudaFreeHost(p); };
  } else {
    data = static_cast<std::byte *>(std::aligned_alloc(4096, bytes));
    std::memset(data, 1, bytes);
    release = [](std::byte *p) { std::free(p); };
  }
  const Handle h = m.adopt(data, bytes, host, release, ReplicaMode::Replicable);
  // The raw copies use a buffer of their own: the manager frees the adopted
  // one when the move below takes its replica away.
  std::byte *raw_host =
      host == kPinned ? pinned_block(bytes, 1) : static_cast<std::byte *>(std::aligned_alloc(4096, bytes));
  if (host != kPinned) std::memset(raw_host, 1, bytes);
  void *device = nullptr;
  check(cudaMalloc(&device, bytes));
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<double> raw_in, raw_out, in, out;
  // The pools warm in both directions: the device pool, and the host pool
  // the copies back draw from (into fresh pageable pages, the first copy
  // back is bound by page faults: the cold table above reports that case,
  // and warm_up() the way to pay it before a plan).
  m.ensure(h, kGpu);
  m.move(h, kGpu, host);
  m.ensure(h, host);
  m.drop(h, kGpu);
  for (int r = 0; r < rounds; ++r) {
    raw_in.push_back(time_of([&] {
      check(cudaMemcpyAsync(device, raw_host, bytes, cudaMemcpyDefault, stream));
      check(cudaStreamSynchronize(stream));
    }));
    in.push_back(time_of([&] { m.ensure(h, kGpu); }));
    // The host replica goes first so that ensure copies back into host
    // storage taken from the backend's pool (warmed above: the pageable
    // block keeps its pages faulted in; the cold table has the first copy).
    m.move(h, kGpu, host);
    out.push_back(time_of([&] { m.ensure(h, host); }));
    m.drop(h, kGpu);
    raw_out.push_back(time_of([&] {
      check(cudaMemcpyAsync(raw_host, device, bytes, cudaMemcpyDefault, stream));
      check(cudaStreamSynchronize(stream));
    }));
  }
  const std::string size = bytes >= (std::size_t{1} << 30) ? std::to_string(bytes >> 30) + " GiB"
                                                           : std::to_string(bytes >> 20) + " MiB";
  rate_row(host.name() + " → cuda:0, " + size, bytes, in, target_in);
  rate_row("  raw `cudaMemcpyAsync` + synchronise", bytes, raw_in);
  rate_row("cuda:0 → " + host.name() + ", " + size, bytes, out, target_out);
  rate_row("  raw `cudaMemcpyAsync` + synchronise", bytes, raw_out);
  check(cudaFree(device));
  check(cudaStreamDestroy(stream));
  if (host == kPinned)
    cudaFreeHost(raw_host);
  else
    std::free(raw_host);
  m.discard(h);
}

/// Staged pageable transfers, one at a time, many samples: how far single
/// copies spread around their median (issue #14's per-step prediction)
/// with the copier's stores and worker threads varied
/// (CudaBackendOptions::host_copy_streaming_stores, host_copy_threads;
/// the eighth wave varied the staging chunk too, 32 MiB won). Per
/// sample, 124 MiB pageable -> cuda:0 as it is, again right after
/// rewriting the host bytes (a load's fill leaves the caches full of
/// them), and cuda:0 -> pageable into a pooled block.
void staged_spread(int rounds) {
  constexpr std::size_t kBytes = std::size_t{124} << 20;
  const int samples = 6 * rounds;
  std::printf("\nStaged pageable transfers of 124 MiB, %d samples per configuration, the configurations' "
              "samples interleaved\n\n"
              "| threads | chunk | host stores | direction | median | p10–p90 | min–max | max / median |\n"
              "|---|---|---|---|---|---|---|---|\n",
              samples);
  auto row = [](const CudaBackendOptions &used, const char *what, std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    const auto at = [&](double q) {
      return ms[static_cast<std::size_t>(q * static_cast<double>(ms.size() - 1))];
    };
    std::printf("| %u | %zu MiB | %s | %s | %.3f ms | %.3f–%.3f | %.3f–%.3f | %.2f |\n",
                used.host_copy_threads, used.staging_chunk_bytes >> 20,
                used.host_copy_streaming_stores ? "streaming" : "memcpy", what, at(0.5), at(0.1), at(0.9),
                ms.front(), ms.back(), ms.back() / at(0.5));
    std::fflush(stdout);
  };
  // The default, the same with memcpy's stores, and half the threads, one
  // sample of each in turn: the host's memory bandwidth drifts over
  // seconds on these machines, and turns spread the drift over all three.
  struct Configuration {
    CudaBackendOptions options;
    std::unique_ptr<Manager> manager;
    std::byte *data = nullptr;
    Handle value, back;
    std::vector<double> in, in_after_fill, out;
  };
  std::vector<Configuration> configurations(3);
  configurations[1].options.host_copy_streaming_stores = false;
  configurations[2].options.host_copy_threads = 8;
  for (Configuration &c : configurations) {
    c.manager = std::make_unique<Manager>(cuda_manager_options(c.options));
    Manager &m = *c.manager;
    c.data = static_cast<std::byte *>(std::aligned_alloc(4096, kBytes));
    std::memset(c.data, 1, kBytes);
    c.value = m.adopt(
        c.data, kBytes, kPageable, [](std::byte *p) { std::free(p); }, ReplicaMode::Replicable);
    c.back = adopt_pinned(m, kBytes); // the copy out: a second value, moved to and fro
    m.move(c.back, kGpu);
    m.ensure(c.value, kGpu); // warm: the device pool, the staging buffers, the pageable pool
    m.drop(c.value, kGpu);
    m.move(c.back, kPageable);
    m.move(c.back, kGpu);
  }
  for (int k = 0; k < samples; ++k)
    for (Configuration &c : configurations) {
      Manager &m = *c.manager;
      c.in.push_back(time_of([&] { m.ensure(c.value, kGpu); }) * 1e3);
      m.drop(c.value, kGpu);
      std::memset(c.data, k & 0xff, kBytes);
      c.in_after_fill.push_back(time_of([&] { m.ensure(c.value, kGpu); }) * 1e3);
      m.drop(c.value, kGpu);
      c.out.push_back(time_of([&] { m.move(c.back, kPageable); }) * 1e3);
      m.move(c.back, kGpu);
    }
  for (Configuration &c : configurations) {
    // What the backend used: the environment overrides the options.
    const CudaBackendOptions used = resolved(c.options);
    row(used, "pageable → cuda:0", c.in);
    row(used, "  the same right after a fill", c.in_after_fill);
    row(used, "cuda:0 → pageable (pooled block)", c.out);
    c.manager->close(true, true);
  }
}

/// The limit of a device -> pageable transfer: 8 threads copying 256 MiB
/// into fresh pages (page faults included), per round a new allocation.
void fresh_page_memcpy(int rounds) {
  constexpr std::size_t kBytes = std::size_t{256} << 20;
  constexpr unsigned kThreads = 8;
  std::byte *source = pinned_block(kBytes, 3);
  std::vector<double> samples;
  for (int r = 0; r < rounds; ++r) {
    auto *sink = static_cast<std::byte *>(std::malloc(kBytes));
    samples.push_back(time_of([&] {
      std::vector<std::thread> threads;
      const std::size_t piece = kBytes / kThreads;
      for (unsigned t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] { std::memcpy(sink + t * piece, source + t * piece, piece); });
      for (std::thread &t : threads)
        t.join();
    }));
    std::free(sink);
  }
  rate_row("  the limit: 8-thread memcpy of 256 MiB into fresh pages", kBytes, samples);
  check(cudaFreeHost(source));
}

/// Evict 1 GiB from cuda:0 to pinned while prefetching 1 GiB to cuda:0 in
/// one plan phase, with and without overlap, beside raw copies of the same
/// sizes on two streams at once.
void evict_while_prefetch(int rounds) {
  constexpr std::size_t kBytes = std::size_t{1} << 30;
  std::vector<double> samples[2], raw;
  Manager managers[2] = {cuda_manager({}, false), cuda_manager({}, true)};
  std::vector<ActionSpec> phases[2];
  for (int k = 0; k < 2; ++k) {
    const Handle evicted = adopt_pinned(managers[k], kBytes, 1),
                 prefetched = adopt_pinned(managers[k], kBytes, 2);
    managers[k].move(evicted, kGpu);
    phases[k] = {ActionSpec{ActionKind::Move, evicted, kPinned, std::nullopt},
                 ActionSpec{ActionKind::Ensure, prefetched, kGpu, std::nullopt}};
  }
  void *device[2] = {nullptr, nullptr};
  std::byte *host[2] = {nullptr, nullptr};
  cudaStream_t streams[2] = {nullptr, nullptr};
  for (int i = 0; i < 2; ++i) {
    check(cudaMalloc(&device[i], kBytes));
    host[i] = pinned_block(kBytes, 0);
    check(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
  }
  for (int r = 0; r < rounds + 1; ++r) { // round 0 fills the pools
    for (int k = 0; k < 2; ++k) {
      const double s = time_of([&] { managers[k].execute_actions(phases[k], "evict-while-prefetch"); });
      if (r > 0) samples[k].push_back(s);
      managers[k].drop(phases[k][1].handle, kGpu);
      managers[k].move(phases[k][0].handle, kGpu);
    }
    const double s = time_of([&] {
      check(cudaMemcpyAsync(host[0], device[0], kBytes, cudaMemcpyDefault, streams[0]));
      check(cudaMemcpyAsync(device[1], host[1], kBytes, cudaMemcpyDefault, streams[1]));
      check(cudaStreamSynchronize(streams[0]));
      check(cudaStreamSynchronize(streams[1]));
    });
    if (r > 0) raw.push_back(s);
  }
  rate_row("evict 1 GiB cuda:0 → pinned while prefetching 1 GiB pinned → cuda:0, aggregate", 2 * kBytes,
           samples[1], "≥ 90 GB/s");
  rate_row("  the same with `overlap_transfers = false`", 2 * kBytes, samples[0]);
  rate_row("  raw copies on two streams at once", 2 * kBytes, raw);
  for (int i = 0; i < 2; ++i) {
    check(cudaFree(device[i]));
    check(cudaFreeHost(host[i]));
    check(cudaStreamDestroy(streams[i]));
  }
  for (Manager &m : managers)
    m.close(true, true);
}

// ---- small transfers -------------------------------------------------------

/// What the host does around a small transfer, on this machine, per call
/// (20,000 calls a round): the pieces of an ensure that a raw copy does not
/// have. The manager's own path is timed as an ensure + drop pinned ->
/// pageable of 4 KiB (a host memcpy of 4 KiB, about 0.1 µs, instead of the
/// DMA), beside that memcpy alone.
void host_costs(Manager &m, int rounds) {
  constexpr int kCalls = 20000;
  auto per_call = [&](const std::function<void()> &body) {
    std::vector<double> samples;
    for (int r = 0; r < rounds; ++r)
      samples.push_back(time_of([&] {
                          for (int i = 0; i < kCalls; ++i)
                            body();
                        }) /
                        kCalls);
    return samples;
  };
  header("The host's side of a small transfer (per call)");
  std::atomic<std::int64_t> sink{0};
  us_row("`steady_clock::now()` (the runtime's fine clock)", per_call([&] {
           sink.fetch_add(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
         }));
  int device = -1;
  us_row("`cudaGetDevice` (DeviceGuard)", per_call([&] { check(cudaGetDevice(&device)); }));
  std::mutex mutex;
  us_row("`std::mutex` lock + unlock", per_call([&] {
           mutex.lock();
           mutex.unlock();
         }));
  std::byte *host = pinned_block(4096, 1);
  auto *page = static_cast<std::byte *>(std::aligned_alloc(4096, 4096));
  us_row("`memcpy` of 4 KiB, pinned → pageable", per_call([&] { std::memcpy(page, host, 4096); }));
  std::free(page);
  const Handle h = m.adopt(
      host, 4096, kPinned, [](std::byte *p) { cudaFreeHost(p); }, ReplicaMode::Replicable);
  us_row("`ensure` + `drop` pinned → pageable, 4 KiB (the manager's bookkeeping and the memcpy)",
         per_call([&] {
           m.ensure(h, kPageable);
           m.drop(h, kPageable);
         }));
  us_row("`drop` at cuda:0 after an `ensure` (the drop alone; the ensure outside the clock)", [&] {
    std::vector<double> samples;
    for (int r = 0; r < rounds; ++r) {
      double total = 0;
      for (int i = 0; i < kCalls / 10; ++i) {
        m.ensure(h, kGpu);
        const auto start = Clock::now();
        m.drop(h, kGpu);
        total += seconds_since(start);
      }
      samples.push_back(total / (kCalls / 10));
    }
    return samples;
  }());
  m.discard(h);
}

/// A manager under test in small_ensures, and what its rows are called.
struct Contender {
  std::string label;
  Manager *manager;
  const char *target;
};

double median_of(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

/// Per round: `sizes.size()` samples; each sample is a raw copy +
/// synchronise of one size from the host buffer of that size and an
/// `ensure` pinned -> cuda:0 of a value of that size in every contender
/// (its undoing drop outside the clock), each timed alone (two clock
/// reads), in an order that turns from sample to sample. Interleaved
/// sample by sample, so that every copy is issued with the host as busy
/// before it as the others, and summarised by medians: a mean over 2,000
/// samples moved by 0.5 µs with a single millisecond the host was
/// preempted (ranges of −0.4 to +5.7 µs a round), a median does not. Rows
/// per contender: the ensure's median sample; above raw, the median of
/// the sample-by-sample differences (the target), the difference of the
/// round's medians and of its means; ensure + drop.
///
/// `warm_records`: each contender reads its value's records (the replica
/// list and a no-op ensure at pinned) outside the clock just before the
/// timed ensure, so that a value touched once a round is cold in the block
/// cache but not in the processor's caches: the unseen sizes' rows without
/// the records' misses, which the raw copy has no counterpart of.
void small_ensures(const std::vector<Contender> &contenders,
                   const std::function<std::vector<std::size_t>(int)> &sizes_of_round, int rounds,
                   const std::string &title, bool warm_records = false) {
  std::vector<std::vector<std::size_t>> round_sizes;
  std::vector<std::size_t> distinct;
  for (int r = 0; r < rounds; ++r) {
    round_sizes.push_back(sizes_of_round(r));
    distinct.insert(distinct.end(), round_sizes.back().begin(), round_sizes.back().end());
  }
  const std::size_t largest = *std::max_element(distinct.begin(), distinct.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  auto index_of = [&](std::size_t n) {
    return static_cast<std::size_t>(std::lower_bound(distinct.begin(), distinct.end(), n) - distinct.begin());
  };
  // Each contender's values, a pinned buffer of their own per size, and the
  // raw copies' buffers, one per size too: every copy of a sample reads host
  // memory that no other copy of the sample read (with one size, all of them
  // read memory they read the sample before). Sharing the raw copies' buffers
  // with a contender made its copies of sizes touched once a round 0.3 µs
  // faster than raw and the other contender's 1.2 µs slower.
  std::vector<std::vector<Handle>> values(contenders.size());
  std::vector<std::byte *> sources;
  for (std::size_t n : distinct)
    sources.push_back(pinned_block(n, 1));
  for (std::size_t c = 0; c < contenders.size(); ++c)
    for (std::size_t n : distinct)
      values[c].push_back(contenders[c].manager->adopt(
          pinned_block(n, 1), n, kPinned, [](std::byte *p) { cudaFreeHost(p); }, ReplicaMode::Replicable));
  void *device = nullptr;
  check(cudaMalloc(&device, largest));
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<double> raw_medians;
  std::vector<std::vector<double>> medians(contenders.size()), above(contenders.size()),
      above_medians(contenders.size()), above_means(contenders.size()), with_drop(contenders.size());
  for (int r = 0; r < rounds; ++r) {
    const std::vector<std::size_t> &sizes = round_sizes[static_cast<std::size_t>(r)];
    std::vector<double> raw;
    std::vector<std::vector<double>> ensured(contenders.size()), ensured_and_dropped(contenders.size()),
        paired(contenders.size());
    for (std::size_t sample = 0; sample < sizes.size(); ++sample) {
      const std::size_t n = sizes[sample], k = index_of(n);
      double raw_sample = 0;
      std::vector<double> ensure_sample(contenders.size());
      // Who goes first turns with every sample (0 is the raw copy): each
      // takes every place after the others equally often.
      for (std::size_t turn = 0; turn <= contenders.size(); ++turn) {
        const std::size_t who = (sample + turn) % (contenders.size() + 1);
        if (who == 0) {
          const auto start = Clock::now();
          check(cudaMemcpyAsync(device, sources[k], n, cudaMemcpyDefault, stream));
          check(cudaStreamSynchronize(stream));
          raw_sample = seconds_since(start);
          continue;
        }
        const std::size_t c = who - 1;
        Manager &m = *contenders[c].manager;
        if (warm_records) {
          (void)m.replicas(values[c][k]);
          m.ensure(values[c][k], kPinned);
        }
        const auto begin = Clock::now();
        m.ensure(values[c][k], kGpu);
        const auto ensured_at = Clock::now();
        m.drop(values[c][k], kGpu);
        ensure_sample[c] = std::chrono::duration<double>(ensured_at - begin).count();
        ensured_and_dropped[c].push_back(seconds_since(begin));
      }
      raw.push_back(raw_sample);
      for (std::size_t c = 0; c < contenders.size(); ++c) {
        ensured[c].push_back(ensure_sample[c]);
        paired[c].push_back(ensure_sample[c] - raw_sample);
      }
    }
    const double raw_median = median_of(raw);
    raw_medians.push_back(raw_median);
    auto mean = [](const std::vector<double> &v) {
      double total = 0;
      for (double x : v)
        total += x;
      return total / static_cast<double>(v.size());
    };
    for (std::size_t c = 0; c < contenders.size(); ++c) {
      medians[c].push_back(median_of(ensured[c]));
      above[c].push_back(median_of(paired[c]));
      above_medians[c].push_back(medians[c].back() - raw_median);
      above_means[c].push_back(mean(ensured[c]) - mean(raw));
      with_drop[c].push_back(median_of(ensured_and_dropped[c]));
    }
  }
  std::printf("\n%s (%zu samples a round)\n\n| measurement | median | range | target |\n|---|---|---|---|\n",
              title.c_str(), round_sizes.front().size());
  us_row("raw `cudaMemcpyAsync` + synchronise, the same sizes from the same host buffers (the round's median "
         "sample)",
         raw_medians);
  for (std::size_t c = 0; c < contenders.size(); ++c) {
    const Contender &contender = contenders[c];
    us_row(contender.label + ": `ensure` pinned → cuda:0 (the round's median sample)", medians[c]);
    us_row("  above raw (the median of the round's differences, sample by sample)", above[c],
           contender.target);
    us_row("  above raw (the round's medians' difference)", above_medians[c]);
    us_row("  above raw (the round's means' difference)", above_means[c]);
    us_row("  `ensure` + the undoing `drop` (the round's median sample)", with_drop[c]);
  }
  check(cudaFree(device));
  check(cudaStreamDestroy(stream));
  for (std::size_t c = 0; c < contenders.size(); ++c)
    for (const Handle &h : values[c])
      contenders[c].manager->discard(h); // frees their buffers
  for (std::byte *source : sources)
    cudaFreeHost(source);
}

/// 2,000 sizes of 2–16 KiB a round, each one a size no ensure before had.
std::vector<std::size_t> unseen_sizes(int round) {
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < 2000; ++i)
    sizes.push_back(2048 + static_cast<std::size_t>(round) * 2000 + i);
  return sizes;
}

/// Log-uniform sizes from 2^low_log2 to 2^high_log2 (fixed seed per round).
std::vector<std::size_t> random_sizes(std::size_t count, double low_log2, double high_log2, unsigned seed) {
  std::mt19937_64 random(15 + seed);
  std::uniform_real_distribution<double> exponent(low_log2, high_log2);
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < count; ++i)
    sizes.push_back(static_cast<std::size_t>(std::exp2(exponent(random))));
  return sizes;
}

// ---- leases ------------------------------------------------------------------

/// Blocks a stream until `release` is set: a stand-in for a kernel that is
/// still reading the leased values.
struct BusyStream {
  std::atomic<bool> release{false};
  void block(cudaStream_t stream) {
    release = false;
    check(cudaLaunchHostFunc(
        stream,
        [](void *flag) {
          while (!static_cast<std::atomic<bool> *>(flag)->load())
            std::this_thread::yield();
        },
        &release));
  }
  void unblock(cudaStream_t stream) {
    release = true;
    check(cudaStreamSynchronize(stream));
  }
};

void lease_rows(int rounds) {
  header("Leases at cuda:0 with a consumer stream (acquire + release)");
  Manager m = cuda_manager();
  std::vector<Handle> values;
  for (int i = 0; i < 100; ++i) {
    values.push_back(adopt_pinned(m, 4096));
    m.ensure(values.back(), kGpu);
  }
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const Stream consumer{reinterpret_cast<std::uintptr_t>(stream)};
  BusyStream busy;
  for (const std::size_t n : {1, 10, 100}) {
    const std::span<const Handle> leased = std::span(values).first(n);
    const int iterations = n == 100 ? 2000 : 20000;
    std::vector<double> idle, on_busy, host;
    for (int r = 0; r < rounds; ++r) {
      idle.push_back(time_of([&] {
                       for (int i = 0; i < iterations; ++i) {
                         Lease l = m.acquire(leased, kGpu, consumer);
                         l.release();
                       }
                     }) /
                     iterations);
      // The same lease at pinned: the manager's share, no CUDA call.
      host.push_back(time_of([&] {
                       for (int i = 0; i < iterations; ++i) {
                         Lease l = m.acquire(leased, kPinned);
                         l.release();
                       }
                     }) /
                     iterations);
      busy.block(stream);
      on_busy.push_back(time_of([&] {
                          for (int i = 0; i < 1000; ++i) {
                            Lease l = m.acquire(leased, kGpu, consumer);
                            l.release();
                          }
                        }) /
                        1000);
      busy.unblock(stream);
      (void)m.state_version(); // reaps the round's leases
    }
    const std::string what = std::to_string(n) + " value" + (n > 1 ? "s" : "");
    us_row("lease of " + what + ", idle stream", idle, n == 100 ? "≤ 5 µs" : n == 1 ? "≤ 1 µs" : "");
    us_row("  the same on a busy stream (1,000 leases pending at the end of a round)", on_busy);
    us_row("  the same lease at pinned (no CUDA call)", host);
  }

  header("Reaping under 1,000 pending leases (busy consumer stream, then it finishes)");
  std::vector<double> per_lease, longest, final_reap;
  const std::span<const Handle> one = std::span(values).first(1);
  for (int r = 0; r < rounds; ++r) {
    busy.block(stream);
    double total = 0, worst = 0;
    for (int i = 0; i < 1000; ++i) {
      const double s = time_of([&] {
        Lease l = m.acquire(one, kGpu, consumer);
        l.release();
      });
      total += s;
      worst = std::max(worst, s);
    }
    busy.unblock(stream);
    per_lease.push_back(total / 1000);
    longest.push_back(worst);
    final_reap.push_back(time_of([&] { (void)m.state_version(); }));
  }
  us_row("lease released while the stream is busy, per lease", per_lease, "≤ 1 µs");
  us_row("  the longest single lease (a backlog reap included)", longest, "≤ 50 µs");
  us_row("the reap of 1,000 completed leases (`state_version`)", final_reap, "≤ 50 µs");

  header("Driver calls on the small-transfer and lease paths (per call)");
  constexpr int kCalls = 20000;
  auto per_call = [&](const std::function<void()> &body) {
    std::vector<double> samples;
    for (int r = 0; r < rounds; ++r)
      samples.push_back(time_of(body) / kCalls);
    return samples;
  };
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  us_row("`cudaEventRecord`", per_call([&] {
           for (int i = 0; i < kCalls; ++i)
             check(cudaEventRecord(event, stream));
         }));
  check(cudaStreamSynchronize(stream));
  us_row("`cudaEventQuery`", per_call([&] {
           for (int i = 0; i < kCalls; ++i)
             check(cudaEventQuery(event));
         }));
  int device = -1;
  us_row("`cudaStreamGetDevice`", per_call([&] {
           for (int i = 0; i < kCalls; ++i)
             check(cudaStreamGetDevice(stream, &device));
         }));
  us_row("`cudaMallocAsync` + `cudaFreeAsync`, 4 KiB", per_call([&] {
           for (int i = 0; i < kCalls; ++i) {
             void *p = nullptr;
             check(cudaMallocAsync(&p, 4096, stream));
             check(cudaFreeAsync(p, stream));
           }
         }));
  check(cudaStreamSynchronize(stream));
  check(cudaEventDestroy(event));
  us_row("no-op `ensure` at cuda:0", per_call([&] {
           for (int i = 0; i < kCalls; ++i)
             m.ensure(values[0], kGpu);
         }),
         "≤ 0.1 µs");
  m.close(true, true);
  check(cudaStreamDestroy(stream));
}

} // namespace

int main(int argc, char **argv) {
  // [rounds] [section ...]: a first argument that is not a number is a section.
  const bool rounds_given = argc > 1 && std::isdigit(static_cast<unsigned char>(argv[1][0]));
  const int rounds = std::max(5, rounds_given ? std::atoi(argv[1]) : 7);
  const int first_section = rounds_given ? 2 : 1;
  for (int k = first_section; k < argc; ++k)
    if (std::string_view section = argv[k]; section != "cold" && section != "bandwidth" &&
                                            section != "small" && section != "leases" &&
                                            section != "staged") {
      std::fprintf(stderr, "usage: cuda_bench [rounds] [cold|bandwidth|small|leases|staged ...]\n");
      return 2;
    }
  if (cuda_device_count() == 0) {
    std::printf("no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0));
  std::printf("cuda_bench: device 0: %s, %d devices; %d rounds, median and range (min–max)\n", prop.name,
              static_cast<int>(cuda_device_count()), rounds);
  // Sections after the rounds (default: all): cold, bandwidth, small, leases.
  auto wanted = [&](std::string_view section) {
    if (argc <= first_section) return true;
    for (int k = first_section; k < argc; ++k)
      if (section == argv[k]) return true;
    return false;
  };
  if (wanted("cold")) cold_rows(rounds); // first: nothing has warmed the driver's pools yet

  if (wanted("bandwidth")) {
    header("Bandwidth, warm pools (manager and raw rounds alternate)");
    Manager m = cuda_manager();
    transfer(m, kPinned, std::size_t{256} << 20, rounds, "≥ 98% of raw", "≥ 98% of raw");
    transfer(m, kPinned, std::size_t{1} << 30, rounds, "≥ 98% of raw", "≥ 98% of raw");
    transfer(m, kPageable, std::size_t{256} << 20, rounds, "≥ 25 GB/s", "≥ 32 GB/s every run");
    fresh_page_memcpy(rounds);
    m.close(true, true);
    evict_while_prefetch(rounds);
  }

  if (wanted("small")) {
    std::printf("\nSmall transfers pinned → cuda:0\n");
    Manager m = cuda_manager();
    // Without overlap the manager waits for each copy before it books the
    // replica (the order before the lone copies of docs/runtime.md).
    Manager booked_after = cuda_manager({}, /*overlap=*/false);
    CudaBackendOptions no_cache;
    no_cache.device_small_block_cache_bytes = 0;
    Manager plain = cuda_manager(no_cache);
    // The cache's blocks from the device's stream-ordered pool instead of
    // cudaMalloc slabs (the backend before the tenth wave).
    CudaBackendOptions pooled_blocks;
    pooled_blocks.device_small_blocks_in_slabs = false;
    Manager pooled = cuda_manager(pooled_blocks);
    const auto four_kib = [](int) { return std::vector<std::size_t>(2000, 4096); };
    small_ensures({{"the cache on (the default)", &m, "≤ +0.5 µs"},
                   {"the booking after the copy (overlap_transfers off)", &booked_after, ""},
                   {"the cache off", &plain, ""},
                   {"the cache's blocks from the stream-ordered pool", &pooled, ""}},
                  four_kib, rounds, "4 KiB");
    small_ensures({{"the default", &m, "≤ +0.5 µs"},
                   {"the booking after the copy", &booked_after, ""},
                   {"the cache's blocks from the stream-ordered pool", &pooled, ""}},
                  unseen_sizes, rounds, "2–16 KiB, every size one the caches have not seen");
    // The default alone beside raw: no other manager's work (the cache-off
    // one allocates from the driver's pool every sample) between its samples.
    small_ensures({{"the default alone", &m, "≤ +0.5 µs"}}, four_kib, rounds,
                  "4 KiB, the default alone beside raw");
    small_ensures(
        {{"the default alone", &m, "≤ +0.5 µs"}}, [&](int r) { return unseen_sizes(rounds + r); }, rounds,
        "unseen sizes (the next 2,000 a round, from 2 KiB + 2,000 × rounds), the default alone beside raw");
    small_ensures(
        {{"the default alone, its records warm", &m, "≤ +0.5 µs"}},
        [&](int r) { return unseen_sizes(2 * rounds + r); }, rounds,
        "unseen sizes (the next 2,000 a round), each value's records read just before its ensure, outside "
        "the clock",
        /*warm_records=*/true);
    small_ensures(
        {{"the default", &m, ""}}, [](int) { return random_sizes(200, 18, 22, 0); }, rounds,
        "random 256 KiB – 4 MiB (across the 1 MiB small-block boundary)");
    host_costs(m, rounds);
    for (Manager *manager : {&m, &booked_after, &plain, &pooled})
      manager->close(true, true);
  }
  if (wanted("leases")) lease_rows(rounds);
  if (argc > first_section && wanted("staged")) staged_spread(rounds); // only when named
  return 0;
}
