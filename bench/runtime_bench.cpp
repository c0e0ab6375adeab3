// Runtime overheads on the host, measured so that they do not flatter
// (issues #4 and #15): warm and cold pools, the undoing drop inside the
// clock as a second row, random sizes, leases of 1, 10 and 100 values on
// idle and busy consumer streams, and reaping under 1,000 pending leases.
// Every row is the median and the range over `rounds` rounds (at least 5),
// printed as the rows of a markdown table for docs/benchmarks.md.
//
//   ./build-release/bench/runtime_bench [rounds]
//
// Consumer-stream rows run at cuda:0 of the simulated backend with the
// bench's own streams (BenchStreams: an event is a mark on a counter, so
// recording and querying one costs a few instructions): they measure the
// manager's share of a CUDA lease; cuda_bench measures the whole on a GPU.
//
// `runtime_bench ops OPERATION N` only performs one operation N times, for
// counting instructions under valgrind (the count for N minus the count for
// 0, divided by N), which a loaded machine does not disturb. Operations:
// noop, lease, lease100, device and device100 (leases of 1 and 100 values
// at cuda:0 on an idle stream), pinned (a pinned ensure with the drop that
// undoes it), reap (a CUDA lease released on a busy stream, reaped in batches of
// 1,000 once the stream finishes), many (the ensure at cuda:0 and the drop
// of a value touched once in 10,000, sizes 2048 + k bytes: issue #15's
// unseen sizes, whose records are cold; under `valgrind --tool=cachegrind
// --cache-sim=yes` it counts the data-cache misses per function).
#include "fhr/runtime/manager.hpp"
#include "fhr/runtime/simulated_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <vector>

using namespace fhr;

namespace {

constexpr std::size_t kValueBytes = 4096;
using Clock = std::chrono::steady_clock;

double ns_since(Clock::time_point start) {
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

/// Median and range of a set of samples.
struct Figure {
  double median = 0, low = 0, high = 0;
};

Figure figure(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return Figure{samples[samples.size() / 2], samples.front(), samples.back()};
}

/// Nanoseconds per call of `body`, one sample per round of `iterations` calls.
std::vector<double> per_call_ns(int rounds, int iterations, const std::function<void()> &body) {
  std::vector<double> samples;
  for (int r = 0; r < rounds; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < iterations; ++i)
      body();
    samples.push_back(ns_since(start) / iterations);
  }
  return samples;
}

void row(const char *what, const Figure &f, const char *target = "", double scale = 1e-3,
         const char *unit = "µs") {
  std::printf("| %s | %.3f %s | %.3f–%.3f | %s |\n", what, f.median * scale, unit, f.low * scale,
              f.high * scale, target);
}

void header(const char *title) {
  std::printf("\n%s\n\n| measurement | median | range | target |\n|---|---|---|---|\n", title);
}

Handle adopt_value(Manager &manager, std::size_t nbytes = kValueBytes, Location at = Location::pageable()) {
  auto *data = static_cast<std::byte *>(std::aligned_alloc(64, (nbytes + 63) / 64 * 64));
  std::memset(data, 0x5a, nbytes);
  return manager.adopt(data, nbytes, at, std::free, ReplicaMode::Replicable);
}

/// Streams of cuda:0 whose events are marks on a counter: a stream is busy
/// while `busy` is set, and an event completes once the stream has been
/// idle since it was recorded. O(1) per call, so the rows that use it show
/// the manager's share of a CUDA lease.
class BenchStreams final : public StreamSupport {
public:
  static constexpr Stream kStream{1};

  void set_busy(bool busy) {
    if (!busy) completed_ = submitted_;
    busy_ = busy;
  }
  std::optional<Location> stream_location(Stream stream) const override {
    return stream == kStream ? std::optional(Location::cuda(0)) : std::nullopt;
  }
  Event record_event(Stream) override {
    if (busy_) ++submitted_;
    std::size_t slot = 0;
    if (free_.empty()) {
      slot = marks_.size();
      marks_.push_back(0);
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    marks_[slot] = submitted_;
    return Event{slot + 1};
  }
  bool event_complete(Event event) override {
    ++queries_;
    return completed_ >= marks_[event.native - 1];
  }
  void synchronize(Event) override { completed_ = submitted_; }
  void destroy_event(Event event) noexcept override { free_.push_back(event.native - 1); }
  void synchronize_stream(Stream) override { completed_ = submitted_; }
  void synchronize_device(Location) override { completed_ = submitted_; }
  std::uint64_t queries() const { return queries_; }

private:
  bool busy_ = false;
  std::uint64_t submitted_ = 0, completed_ = 0, queries_ = 0;
  std::vector<std::uint64_t> marks_;
  std::vector<std::size_t> free_;
};

/// A manager over the simulated device backend with BenchStreams, and
/// `count` 4 KiB values resident at cuda:0.
struct DeviceLeases {
  std::shared_ptr<SimulatedBackend> memory = std::make_shared<SimulatedBackend>(1);
  std::shared_ptr<BenchStreams> streams = std::make_shared<BenchStreams>();
  Manager manager;
  std::vector<Handle> values;

  explicit DeviceLeases(std::size_t count) : manager(options(memory, streams)) {
    for (std::size_t i = 0; i < count; ++i) {
      values.push_back(adopt_value(manager));
      manager.ensure(values.back(), Location::cuda(0));
    }
  }
  static ManagerOptions options(const std::shared_ptr<SimulatedBackend> &memory,
                                const std::shared_ptr<BenchStreams> &streams) {
    ManagerOptions options;
    options.backend = BackendInterfaces(memory, memory, streams);
    return options;
  }
  void lease(std::size_t n) {
    Lease l = manager.acquire(std::span(values).first(n), Location::cuda(0), BenchStreams::kStream);
    l.release();
  }
};

/// Reaping under 1,000 pending leases: per round, 1,000 leases of one value
/// released while the stream is busy (each timed), then the stream
/// finishes and one operation that reaps in full (state_version) reaps all
/// of them. Returns the per-lease figure, the longest single lease, and
/// the final reap.
struct ReapFigures {
  std::vector<double> per_lease, longest_lease, final_reap, queries_per_lease;
};

ReapFigures reap_rounds(int rounds) {
  constexpr int kPending = 1000;
  DeviceLeases f(1);
  ReapFigures out;
  for (int r = 0; r < rounds; ++r) {
    f.streams->set_busy(true);
    const std::uint64_t queries = f.streams->queries();
    double total = 0, longest = 0;
    for (int i = 0; i < kPending; ++i) {
      const auto start = Clock::now();
      f.lease(1);
      const double ns = ns_since(start);
      total += ns;
      longest = std::max(longest, ns);
    }
    f.streams->set_busy(false);
    const auto start = Clock::now();
    (void)f.manager.state_version(); // reaps every completed lease
    out.final_reap.push_back(ns_since(start));
    out.per_lease.push_back(total / kPending);
    out.longest_lease.push_back(longest);
    out.queries_per_lease.push_back(static_cast<double>(f.streams->queries() - queries) / kPending);
  }
  return out;
}

/// Log-uniform sizes from 2 KiB to 4 MiB (fixed seed): across the CUDA
/// backend's 1 MiB small-block boundary, few of them equal.
std::vector<std::size_t> random_sizes(std::size_t count) {
  std::mt19937_64 random(15);
  std::uniform_real_distribution<double> exponent(11.0, 22.0);
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < count; ++i)
    sizes.push_back(static_cast<std::size_t>(std::exp2(exponent(random))));
  return sizes;
}

/// The first pageable -> pinned ensure of a fresh manager (pools empty),
/// then the same value again (warm), for a value of `nbytes`; with
/// `warm_up`, the plan's warm-up runs first (outside the clock, reported).
struct ColdWarm {
  double cold_ns, warm_ns, warm_up_ns;
};

ColdWarm cold_and_warm(std::size_t nbytes, bool warm_up) {
  Manager manager;
  const Handle value = adopt_value(manager, nbytes);
  double warm_up_ns = 0;
#ifndef FHR_BENCH_WITHOUT_WARM_UP // for a before/after build against a tree without it
  if (warm_up) {
    const PlanSpec plan{"stage", {}, {}, {ActionSpec{ActionKind::Ensure, value, Location::pinned(), {}}}, {}};
    warm_up_ns = static_cast<double>(manager.warm_up(plan).duration_ns);
  }
#endif
  auto start = Clock::now();
  manager.ensure(value, Location::pinned());
  const double cold = ns_since(start);
  manager.drop(value, Location::pinned());
  start = Clock::now();
  manager.ensure(value, Location::pinned());
  const double warm = ns_since(start);
  return ColdWarm{cold, warm, warm_up_ns};
}

} // namespace

/// The `ops` mode: `n` times one operation on a fresh manager.
int count_operations(const std::string &operation, int n) {
  Manager manager;
  const Handle value = adopt_value(manager);
  const Handle handles[] = {value};
  std::vector<Handle> hundred;
  for (int i = 0; i < 100; ++i)
    hundred.push_back(adopt_value(manager));
  DeviceLeases device(1), device100(operation == "device100" ? 100 : 0);
  // "many": 10,000 values, each ensured once in 10,000 (its records cold).
  std::vector<Handle> many;
  if (operation == "many")
    for (std::size_t k = 0; k < 10000; ++k)
      many.push_back(adopt_value(device.manager, 2048 + k));
  manager.ensure(value, Location::pinned()); // warm the pinned pool and the trace
  manager.drop(value, Location::pinned());
  for (int i = 0; i < n; ++i) {
    if (operation == "noop") {
      manager.ensure(value, Location::pageable());
    } else if (operation == "lease") {
      Lease lease = manager.acquire(handles, Location::pageable());
      lease.release();
    } else if (operation == "lease100") {
      Lease lease = manager.acquire(hundred, Location::pageable());
      lease.release();
    } else if (operation == "device") {
      device.lease(1);
    } else if (operation == "device100") {
      device100.lease(100);
    } else if (operation == "pinned") {
      manager.ensure(value, Location::pinned());
      manager.drop(value, Location::pinned());
    } else if (operation == "many") {
      const Handle &next = many[static_cast<std::size_t>(i) % many.size()];
      device.manager.ensure(next, Location::cuda(0));
      device.manager.drop(next, Location::cuda(0));
    } else if (operation == "reap") {
      if (i % 1000 == 0) device.streams->set_busy(true);
      device.lease(1);
      if (i % 1000 == 999) {
        device.streams->set_busy(false);
        (void)device.manager.state_version();
      }
    } else {
      std::fprintf(stderr, "runtime_bench ops: unknown operation '%s'\n", operation.c_str());
      return 2;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && std::string(argv[1]) == "ops") return count_operations(argv[2], std::atoi(argv[3]));
  const int rounds = std::max(5, argc > 1 ? std::atoi(argv[1]) : 7);
  std::printf("runtime_bench: %d rounds, median and range (min–max) of the rounds\n", rounds);

  Manager manager;
  const Handle value = adopt_value(manager);
  const Handle handles[] = {value};

  header("Host backend, 4 KiB values, warm pools");
  row("no-op `ensure`",
      figure(per_call_ns(rounds, 200000, [&] { manager.ensure(value, Location::pageable()); })), "≤ 0.1 µs");
  {
    ManagerOptions untraced;
    untraced.trace_capacity = 0;
    Manager quiet(std::move(untraced));
    const Handle quiet_value = adopt_value(quiet);
    row("  the same without the trace",
        figure(per_call_ns(rounds, 200000, [&] { quiet.ensure(quiet_value, Location::pageable()); })));
  }
  row("  one `steady_clock` read", figure(per_call_ns(rounds, 200000, [&] {
        auto t = Clock::now();
        asm volatile("" : : "r"(&t) : "memory");
      })));

  // pageable -> pinned: the ensure timed alone (the drop that undoes it
  // outside the clock), then ensure + drop inside the clock.
  std::vector<double> ensure_alone, memcpy_ns, overhead;
  std::vector<std::byte> from(kValueBytes, std::byte{1}), to(kValueBytes);
  for (int r = 0; r < rounds; ++r) {
    double total = 0;
    constexpr int kIterations = 20000;
    for (int i = 0; i < kIterations; ++i) {
      const auto start = Clock::now();
      manager.ensure(value, Location::pinned());
      total += ns_since(start);
      manager.drop(value, Location::pinned());
    }
    ensure_alone.push_back(total / kIterations);
    memcpy_ns.push_back(per_call_ns(1, 200000, [&] {
                          std::memcpy(to.data(), from.data(), kValueBytes);
                          asm volatile("" : : "r"(to.data()) : "memory"); // keep the copy
                        }).front());
    overhead.push_back(ensure_alone.back() - memcpy_ns.back());
  }
  row("pageable → pinned `ensure` (the undoing drop outside the clock)", figure(ensure_alone));
  row("pageable → pinned `ensure` + the undoing `drop`, both in the clock",
      figure(per_call_ns(rounds, 20000, [&] {
        manager.ensure(value, Location::pinned());
        manager.drop(value, Location::pinned());
      })));
  row("  memcpy of 4 KiB alone", figure(memcpy_ns));
  row("  the ensure above its memcpy (per round)", figure(overhead), "≤ 2 µs");
  row("lease `acquire` + `release`, one value",
      figure(per_call_ns(rounds, 200000,
                         [&] {
                           Lease l = manager.acquire(handles, Location::pageable());
                           l.release();
                         })),
      "≤ 0.5 µs");
  {
    Manager many;
    std::vector<Handle> values;
    for (int i = 0; i < 1000; ++i)
      values.push_back(adopt_value(many));
    for (const std::size_t n : {10, 100}) {
      const std::string what = "lease `acquire` + `release`, " + std::to_string(n) + " values";
      row(what.c_str(), figure(per_call_ns(rounds, 20000, [&] {
            Lease l = many.acquire(std::span(values).first(n), Location::pageable());
            l.release();
          })));
    }
    row("`snapshot()` of 1,000 values", figure(per_call_ns(rounds, 500, [&] { (void)many.snapshot(); })),
        "≤ 100 µs");
  }

  header(
      "Random sizes, 2 KiB – 4 MiB log-uniform, mean 461 KiB (512 values, each ensure + drop once a round)");
  {
    const std::vector<std::size_t> sizes = random_sizes(512);
    Manager sized;
    std::vector<Handle> values;
    for (std::size_t n : sizes)
      values.push_back(adopt_value(sized, n));
    std::vector<double> transition, copy;
    std::vector<std::byte> source(std::size_t{4} << 20, std::byte{1}), sink(std::size_t{4} << 20);
    for (int r = 0; r < rounds; ++r) {
      auto start = Clock::now();
      for (const Handle &h : values) {
        sized.ensure(h, Location::pinned());
        sized.drop(h, Location::pinned());
      }
      transition.push_back(ns_since(start) / static_cast<double>(values.size()));
      start = Clock::now();
      for (std::size_t n : sizes) {
        std::memcpy(sink.data(), source.data(), n);
        asm volatile("" : : "r"(sink.data()) : "memory");
      }
      copy.push_back(ns_since(start) / static_cast<double>(sizes.size()));
    }
    row("pageable → pinned `ensure` + `drop`, per value (round 1 fills the pinned pool)", figure(transition));
    row("  memcpy of the same sizes, per value", figure(copy));
  }

  header("Cold pools: the first transition of a fresh manager (one sample per round)");
  for (const std::size_t n : {kValueBytes, std::size_t{64} << 20}) {
    std::vector<double> cold, warm, ratio, prepared, prepared_ratio, warm_up;
    for (int r = 0; r < rounds; ++r) {
      const ColdWarm plain = cold_and_warm(n, false);
      cold.push_back(plain.cold_ns);
      warm.push_back(plain.warm_ns);
      ratio.push_back(plain.warm_ns / plain.cold_ns);
      const ColdWarm with = cold_and_warm(n, true);
      prepared.push_back(with.cold_ns);
      prepared_ratio.push_back(with.warm_ns / with.cold_ns);
      warm_up.push_back(with.warm_up_ns);
    }
    const std::string size = n == kValueBytes ? "4 KiB" : "64 MiB";
    row(("first pageable → pinned `ensure`, " + size + ", cold").c_str(), figure(cold));
    row("  the second (warm)", figure(warm));
    row("  first after `warm_up(plan)`", figure(prepared));
    row("  the warm-up itself (reported by `WarmUpReport`)", figure(warm_up));
    row("  first transfer's rate / warm rate, cold", figure(ratio), "", 100, "%");
    row("  first transfer's rate / warm rate, after warm-up", figure(prepared_ratio), "≥ 90%", 100, "%");
  }

  header(
      "Leases at cuda:0 with a consumer stream (simulated device, O(1) bench events: the manager's share)");
  {
    DeviceLeases f(100);
    for (const std::size_t n : {1, 10, 100}) {
      const std::string idle =
          "lease of " + std::to_string(n) + " value" + (n > 1 ? "s" : "") + ", idle stream";
      row(idle.c_str(), figure(per_call_ns(rounds, n == 100 ? 20000 : 100000, [&] { f.lease(n); })),
          n == 100 ? "≤ 5 µs (with the driver's events)" : "");
      // Busy: the stream never finishes inside a round of 1,000 leases, so
      // every release stays pending; the stream finishes between rounds
      // (outside the clock) and the backlog is reaped there.
      std::vector<double> busy;
      for (int r = 0; r < rounds; ++r) {
        f.streams->set_busy(true);
        busy.push_back(per_call_ns(1, 1000, [&] { f.lease(n); }).front());
        f.streams->set_busy(false);
        (void)f.manager.state_version();
      }
      row(("  the same on a busy stream (1,000 leases pending at the end of a round)"), figure(busy));
    }
  }

  header("Reaping under 1,000 pending leases (busy consumer stream, then it finishes)");
  {
    const ReapFigures reaps = reap_rounds(rounds);
    row("lease released while the stream is busy, per lease", figure(reaps.per_lease), "≤ 1 µs");
    row("  the longest single lease (a backlog reap included)", figure(reaps.longest_lease), "≤ 50 µs");
    row("  event queries per lease", figure(reaps.queries_per_lease), "", 1, "");
    row("the reap of 1,000 completed leases (`state_version`)", figure(reaps.final_reap), "≤ 50 µs");
  }
  return 0;
}
