#pragma once
/// \file
/// The runtime's timestamps (reports, snapshots): steady-clock nanoseconds.

#include <chrono>
#include <cstdint>
#include <ctime>

namespace fhr {

inline std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

/// The same clock at the resolution of the kernel's tick (1–4 ms), always
/// at or behind now_ns(): a read costs a few nanoseconds where a fine read
/// costs 40 ns on a virtual machine's clock (kvm-clock on the H200's host),
/// as much as the rest of a no-op transition.
inline std::uint64_t coarse_now_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(now.tv_nsec);
}

} // namespace fhr
