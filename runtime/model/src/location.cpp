#include "fhr/model/location.hpp"

#include <charconv>

namespace fhr {

std::string Location::name() const {
  switch (kind()) {
  case LocationKind::Pageable: return "pageable";
  case LocationKind::Pinned: return "pinned";
  case LocationKind::Cuda: return "cuda:" + std::to_string(device());
  }
  return {};
}

namespace {
std::optional<Location> fail(LocationParseError *error, LocationParseError::Kind kind, std::string message) {
  if (error) *error = LocationParseError{kind, std::move(message)};
  return std::nullopt;
}
} // namespace

std::optional<Location> parse_location(std::string_view text, LocationParseError *error) {
  using Kind = LocationParseError::Kind;
  if (text == "pageable" || text == "pageable-host") return Location::pageable();
  if (text == "pinned" || text == "pinned-host") return Location::pinned();
  if (text == "cuda")
    return fail(error, Kind::MissingIndex, "location 'cuda' needs a device index, as in cuda:0");
  if (!text.starts_with("cuda:"))
    return fail(error, Kind::Unknown,
                "unknown location '" + std::string(text) + "' (expected pageable, pinned or cuda:N)");
  std::string_view digits = text.substr(5);
  bool all_digits = !digits.empty();
  for (char c : digits)
    all_digits = all_digits && c >= '0' && c <= '9';
  if (!all_digits || (digits.size() > 1 && digits.front() == '0'))
    return fail(error, Kind::NotCanonical,
                "location '" + std::string(text) + "' is not a canonical cuda:N spelling");
  unsigned device = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), device);
  if (ec != std::errc() || end != digits.data() + digits.size() || device >= Location::kMaxCudaDevices)
    return fail(error, Kind::OutOfRange,
                "location '" + std::string(text) + "' is out of range (cuda:0 to cuda:127)");
  return Location::cuda(device);
}

} // namespace fhr
