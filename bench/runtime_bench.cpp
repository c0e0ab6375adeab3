// Runtime overheads on the host backend with 4 KiB values (issue #4):
// a no-op ensure, a pageable -> pinned ensure beside the memcpy it performs,
// lease acquire + release of one value, and a snapshot of 1,000 values.
// Prints the median of `rounds` rounds of each measurement.
//
//   ./build-release/bench/runtime_bench [rounds]
//
// `runtime_bench ops noop|lease|pinned N` only performs one operation N
// times (a pinned ensure with the drop that undoes it), for counting
// instructions under valgrind, which a loaded machine does not disturb:
// the count for N minus the count for 0, divided by N.
#include "fhr/runtime/manager.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace fhr;

namespace {

constexpr std::size_t kValueBytes = 4096;

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

/// Nanoseconds per call of `body`, median over rounds of `iterations` calls.
double per_call_ns(int rounds, int iterations, const std::function<void()> &body) {
  std::vector<double> samples;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i)
      body();
    const auto end = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::nano>(end - start).count() / iterations);
  }
  return median(samples);
}

Handle adopt_value(Manager &manager, Location at = Location::pageable()) {
  auto *data = static_cast<std::byte *>(std::aligned_alloc(64, kValueBytes));
  std::memset(data, 0x5a, kValueBytes);
  return manager.adopt(data, kValueBytes, at, std::free, ReplicaMode::Replicable);
}

} // namespace

/// The `ops` mode: `n` times one operation on a fresh manager.
int count_operations(const std::string &operation, int n) {
  Manager manager;
  const Handle value = adopt_value(manager);
  const Handle handles[] = {value};
  manager.ensure(value, Location::pinned()); // warm the pinned pool and the trace
  manager.drop(value, Location::pinned());
  for (int i = 0; i < n; ++i) {
    if (operation == "noop") {
      manager.ensure(value, Location::pageable());
    } else if (operation == "lease") {
      Lease lease = manager.acquire(handles, Location::pageable());
      lease.release();
    } else if (operation == "pinned") {
      manager.ensure(value, Location::pinned());
      manager.drop(value, Location::pinned());
    } else {
      std::fprintf(stderr, "runtime_bench ops: unknown operation '%s'\n", operation.c_str());
      return 2;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && std::string(argv[1]) == "ops") return count_operations(argv[2], std::atoi(argv[3]));
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  Manager manager;
  const Handle value = adopt_value(manager);
  const Handle handles[] = {value};

  const double no_op = per_call_ns(rounds, 200000, [&] { manager.ensure(value, Location::pageable()); });
  ManagerOptions untraced;
  untraced.trace_capacity = 0;
  Manager quiet(std::move(untraced));
  const Handle quiet_value = adopt_value(quiet);
  const double no_op_untraced =
      per_call_ns(rounds, 200000, [&] { quiet.ensure(quiet_value, Location::pageable()); });
  const double clock_ns = per_call_ns(rounds, 200000, [&] {
    auto t = std::chrono::steady_clock::now();
    asm volatile("" : : "r"(&t) : "memory");
  });

  // pageable -> pinned: the ensure (allocate, copy, install) timed alone;
  // the drop that undoes it is outside the clock.
  std::vector<double> ensure_samples;
  for (int r = 0; r < rounds; ++r) {
    double total = 0;
    constexpr int kIterations = 20000;
    for (int i = 0; i < kIterations; ++i) {
      const auto start = std::chrono::steady_clock::now();
      manager.ensure(value, Location::pinned());
      total += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
      manager.drop(value, Location::pinned());
    }
    ensure_samples.push_back(total / kIterations);
  }
  const double ensure_pinned = median(ensure_samples);
  std::vector<std::byte> from(kValueBytes, std::byte{1}), to(kValueBytes);
  const double memcpy_ns = per_call_ns(rounds, 200000, [&] {
    std::memcpy(to.data(), from.data(), kValueBytes);
    asm volatile("" : : "r"(to.data()) : "memory"); // keep the copy
  });

  const double lease = per_call_ns(rounds, 200000, [&] {
    Lease l = manager.acquire(handles, Location::pageable());
    l.release();
  });

  Manager many;
  for (int i = 0; i < 1000; ++i)
    adopt_value(many);
  const double snapshot = per_call_ns(rounds, 2000, [&] { (void)many.snapshot(); });

  std::printf("rounds: %d (median)\n", rounds);
  std::printf("no-op ensure:                       %8.3f us  (target <= 0.1 us)\n", no_op / 1e3);
  std::printf("  without the trace:                 %8.3f us\n", no_op_untraced / 1e3);
  std::printf("  one steady_clock read:             %8.3f us\n", clock_ns / 1e3);
  std::printf("pageable -> pinned ensure, 4 KiB:    %8.3f us\n", ensure_pinned / 1e3);
  std::printf("  memcpy of 4 KiB:                   %8.3f us\n", memcpy_ns / 1e3);
  std::printf("  overhead above the memcpy:         %8.3f us  (target <= 2 us)\n",
              (ensure_pinned - memcpy_ns) / 1e3);
  std::printf("lease acquire + release, one value: %8.3f us  (target <= 0.5 us)\n", lease / 1e3);
  std::printf("snapshot of 1,000 values:           %8.3f us  (target <= 100 us)\n", snapshot / 1e3);
  return 0;
}
