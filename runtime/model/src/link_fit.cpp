#include "fhr/model/link_fit.hpp"

#include <algorithm>

namespace fhr {

namespace {
/// "Does not grow with size": a bandwidth far above any link's.
constexpr double kFlat = 1e18;

SizeClass through(const LinkSample &lower, const LinkSample &upper, std::optional<std::uint64_t> max_bytes) {
  const double bytes = static_cast<double>(upper.bytes) - static_cast<double>(lower.bytes);
  const double slope = (upper.seconds - lower.seconds) / bytes;
  if (slope <= 0) return SizeClass{max_bytes, upper.seconds, kFlat};
  const double latency = lower.seconds - static_cast<double>(lower.bytes) * slope;
  if (latency < 0) return SizeClass{max_bytes, 0.0, static_cast<double>(upper.bytes) / upper.seconds};
  return SizeClass{max_bytes, latency, 1 / slope};
}
} // namespace

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

AllocationCost fit_allocation_cost(std::uint64_t small_bytes, double small_seconds, std::uint64_t large_bytes,
                                   double large_seconds) {
  const double rate = (large_seconds - small_seconds) / static_cast<double>(large_bytes - small_bytes),
               fixed = small_seconds - rate * static_cast<double>(small_bytes);
  if (rate > 0 && fixed >= 0) return {fixed, rate};
  return {0, std::max(0.0, large_seconds) / static_cast<double>(large_bytes)};
}

LinkCurve fit_link_curve(std::span<const LinkSample> samples) {
  LinkCurve curve;
  if (samples.size() == 1) {
    curve.classes.push_back(
        SizeClass{std::nullopt, 0.0, static_cast<double>(samples[0].bytes) / samples[0].seconds});
    return curve;
  }
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const bool last = i + 1 == samples.size();
    curve.classes.push_back(through(samples[i - 1], samples[i],
                                    last ? std::nullopt : std::optional<std::uint64_t>(samples[i].bytes)));
  }
  return curve;
}

} // namespace fhr
