#pragma once
/// \file
/// The start and end of a lone copy (an ensure's 4 KiB copy: about 8 µs)
/// in steady-clock nanoseconds, at the cost of two reads of the processor's
/// time-stamp counter (about 10 ns each on the H200's host) on the path
/// before the copy is issued and after it is waited for, where two fine
/// reads of the steady clock cost 40–45 ns each: together 0.07 µs of the
/// 0.5–0.7 µs an ensure spent beyond a raw copy (docs/benchmarks.md,
/// "Tenth wave"). One fine read is still taken, while the copy runs and
/// the host has time to spare (bench/cuda_phases.cpp: up to 2 µs of host
/// work there costs nothing); the counter's intervals on either side of it
/// are turned into nanoseconds with a rate measured once per process.
///
/// Only where the counter ticks at one rate in every processor state and
/// on every core (an invariant TSC: CPUID 0x80000007, EDX bit 8; Linux's
/// `nonstop_tsc`); elsewhere `available()` is false and the caller reads
/// the steady clock as before.

#include "clock.hpp"

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace fhr {

/// The largest lone copy stamped on the counter: up to 1 MiB a copy takes
/// 5–30 µs on the H200, where two fine reads are a share worth saving;
/// longer ones read the steady clock at both ends (no conversion over long
/// intervals, where the rate's error would add up).
inline constexpr std::size_t kTickStampedMaxBytes = std::size_t{1} << 20;

/// The time-stamp counter (0 where there is none).
inline std::uint64_t read_ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

class TickStamps {
public:
  /// Whether the counter can stand in for the steady clock here.
  static bool available();

  /// The interval's start: one counter read.
  void start() { start_ticks_ = read_ticks(); }
  bool started() const { return start_ticks_ != 0; }

  /// The fine read between start() and the end (call it once, while the
  /// work runs); returns the start in steady-clock nanoseconds, off by the
  /// rate's error over the interval since start() (a few ns for the copies
  /// of up to kTickStampedMaxBytes that use it).
  std::uint64_t anchor();

  /// The interval's end in steady-clock nanoseconds: a counter read, or a
  /// fine read where the interval since the anchor was long enough for the
  /// rate's error to count (beyond 50 µs; the rate is good to about 0.02%).
  std::uint64_t end_ns() const;

private:
  std::uint64_t start_ticks_ = 0;
  std::uint64_t anchor_ticks_ = 0;
  std::uint64_t anchor_ns_ = 0;
};

} // namespace fhr
