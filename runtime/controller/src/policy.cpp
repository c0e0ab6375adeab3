#include "fhr/controller/policy.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace fhr {

bool tiered_lru_less(const EvictionCandidate &a, const EvictionCandidate &b) {
  const auto epoch = [](const EvictionCandidate &c) {
    return c.last_access_epoch ? static_cast<std::int64_t>(*c.last_access_epoch) : std::int64_t{-1};
  };
  if (a.metadata.priority != b.metadata.priority) return a.metadata.priority < b.metadata.priority;
  if (epoch(a) != epoch(b)) return epoch(a) < epoch(b);
  const bool a_keyless = !a.metadata.stable_key, b_keyless = !b.metadata.stable_key;
  if (a_keyless != b_keyless) return !a_keyless;
  if (!a_keyless && *a.metadata.stable_key != *b.metadata.stable_key)
    return *a.metadata.stable_key < *b.metadata.stable_key;
  return a.registration_index < b.registration_index;
}

DeterministicTieredLRU::DeterministicTieredLRU(Tiers fallback_tiers) : tiers_(std::move(fallback_tiers)) {
  for (std::size_t i = 0; i < tiers_.size(); ++i) {
    const auto &[source, destinations] = tiers_[i];
    for (std::size_t j = 0; j < i; ++j)
      if (tiers_[j].first == source)
        throw std::invalid_argument("fallback tiers list " + source.name() + " twice");
    for (std::size_t d = 0; d < destinations.size(); ++d) {
      if (destinations[d] == source)
        throw std::invalid_argument("the fallback tiers of " + source.name() + " cannot include " +
                                    source.name());
      if (std::find(destinations.begin(), destinations.begin() + static_cast<std::ptrdiff_t>(d),
                    destinations[d]) != destinations.begin() + static_cast<std::ptrdiff_t>(d))
        throw std::invalid_argument("the fallback tiers of " + source.name() + " list " +
                                    destinations[d].name() + " twice");
    }
  }
}

nlohmann::ordered_json DeterministicTieredLRU::config_identity() const {
  nlohmann::ordered_json tiers = nlohmann::ordered_json::array();
  for (const auto &[source, destinations] : tiers_) {
    nlohmann::ordered_json names = nlohmann::ordered_json::array();
    for (Location d : destinations)
      names.push_back(d.name());
    tiers.push_back(nlohmann::ordered_json::array({source.name(), std::move(names)}));
  }
  return nlohmann::ordered_json::array({nlohmann::ordered_json::array({"fallback_tiers", std::move(tiers)})});
}

std::vector<Location> DeterministicTieredLRU::fallback_locations(Location location) const {
  for (const auto &[source, destinations] : tiers_)
    if (source == location) return destinations;
  return {};
}

std::vector<EvictionCandidate>
DeterministicTieredLRU::order_candidates(std::vector<EvictionCandidate> candidates) const {
  std::sort(candidates.begin(), candidates.end(), tiered_lru_less);
  return candidates;
}

} // namespace fhr
