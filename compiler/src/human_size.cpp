#include "fhr/compiler/human_size.hpp"

#include "fhr/compiler/report.hpp"

#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace fhr {

std::string human_size(std::uint64_t bytes) {
  const std::string exact = format_size(bytes);
  if (std::strtoull(exact.c_str(), nullptr, 10) < 1024) return exact;
  const ScaledSize scaled = scale_binary(bytes);
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", scaled.value, scaled.unit);
  return text;
}

ScaledSize scale_binary(std::uint64_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  return {value, units[unit]};
}

} // namespace fhr
