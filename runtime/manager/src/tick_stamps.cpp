#include "tick_stamps.hpp"

#include <optional>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace fhr {

namespace {

#if defined(__x86_64__)
bool invariant_counter() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) < 0x80000007u) return false;
  __get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx);
  return (edx & (1u << 8)) != 0;
}
#else
bool invariant_counter() { return false; }
#endif

/// A steady-clock reading and a counter reading taken together: the counter
/// between two fine reads, kept once they are less than 500 ns apart (a
/// preemption between them would skew the rate); nothing when 16 tries
/// found no such pair (the counter is then not used).
struct ReadingPair {
  std::uint64_t ns = 0, ticks = 0;
};
std::optional<ReadingPair> read_together() {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::uint64_t before = now_ns();
    const std::uint64_t ticks = read_ticks();
    const std::uint64_t after = now_ns();
    if (after - before < 500) return ReadingPair{before + (after - before) / 2, ticks};
  }
  return std::nullopt;
}

/// Nanoseconds per tick, against the steady clock over 200 µs: each end is
/// off by at most half its pair's spread (20–25 ns here), 0.02% of the
/// span. 0 where the counter cannot be used.
double measure_ns_per_tick() {
  if (!invariant_counter()) return 0;
  const std::optional<ReadingPair> first = read_together();
  if (!first) return 0;
  while (now_ns() - first->ns < 200'000) {
  }
  const std::optional<ReadingPair> last = read_together();
  if (!last || last->ticks <= first->ticks || last->ns <= first->ns) return 0;
  return static_cast<double>(last->ns - first->ns) / static_cast<double>(last->ticks - first->ticks);
}

double ns_per_tick() {
  static const double rate = measure_ns_per_tick();
  return rate;
}

/// Ticks to nanoseconds; a counter read out of order (another core's
/// counter a few ticks behind) counts as no time.
std::uint64_t ticks_to_ns(std::uint64_t from, std::uint64_t to) {
  return to > from ? static_cast<std::uint64_t>(static_cast<double>(to - from) * ns_per_tick()) : 0;
}

constexpr std::uint64_t kLongestConvertedNs = 50'000;

} // namespace

bool TickStamps::available() { return ns_per_tick() > 0; }

std::uint64_t TickStamps::anchor() {
  // The fine read between two counter reads, the pair kept once they are
  // close: a pause between the two reads would shift both ends by its length.
  for (int attempt = 0; attempt < 4; ++attempt) {
    const std::uint64_t before = read_ticks();
    anchor_ns_ = now_ns();
    const std::uint64_t after = read_ticks();
    anchor_ticks_ = before + (after - before) / 2;
    if (ticks_to_ns(before, after) < 500) break;
  }
  const std::uint64_t since_start = ticks_to_ns(start_ticks_, anchor_ticks_);
  return anchor_ns_ > since_start ? anchor_ns_ - since_start : 0;
}

std::uint64_t TickStamps::end_ns() const {
  const std::uint64_t since_anchor = ticks_to_ns(anchor_ticks_, read_ticks());
  return since_anchor > kLongestConvertedNs ? now_ns() : anchor_ns_ + since_anchor;
}

} // namespace fhr
