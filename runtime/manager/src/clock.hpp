#pragma once
/// \file
/// The runtime's timestamps (reports, snapshots): steady-clock nanoseconds.

#include <chrono>
#include <cstdint>

namespace fhr {

inline std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

} // namespace fhr
