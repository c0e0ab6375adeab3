#pragma once
/// \file
/// Sizes for people, as the text tables of explain print them.

#include <cstdint>
#include <string>

namespace fhr {

/// format_size where that is short (under 1024 of its unit: "40 GiB",
/// "500 MB", "0 B"), else one decimal in the largest binary unit
/// ("255.8 GiB" for 261904 MiB). Step texts keep format_size, since they
/// read back as .fhr sizes; JSON keeps exact bytes.
std::string human_size(std::uint64_t bytes);

/// `bytes` in the largest binary unit (B, KiB, ... EiB) it reaches at
/// least 1 of: the value in that unit and the unit's name.
struct ScaledSize {
  double value;
  const char *unit;
};
ScaledSize scale_binary(std::uint64_t bytes);

} // namespace fhr
