#pragma once
/// \file
/// Eviction policies of the controller (docs/semantics.md §18.2): a policy
/// ranks the candidates the controller found legal to evict and names the
/// spill tiers of each location. It sees no bytes and changes nothing; the
/// controller alone checks the rules of the manager.

#include "fhr/model/location.hpp"
#include "fhr/runtime/manager.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fhr {

/// Eviction hints a controller keeps per handle: a higher priority is kept
/// longer; the stable key is an application's tie breaker and name.
struct PolicyMetadata {
  std::int64_t priority = 0;
  std::optional<std::string> stable_key;
  friend bool operator==(const PolicyMetadata &, const PolicyMetadata &) = default;
};

/// One replica the controller may evict: unprotected, at the location that
/// is short of room, not excluded by the search (§18.3 step 3).
struct EvictionCandidate {
  Handle handle;
  Location location;
  std::uint64_t charged_nbytes = 0;
  /// The value's position in the manager's registration order.
  std::uint64_t registration_index = 0;
  /// The controller's access epoch of the value's last use; none if never used.
  std::optional<std::uint64_t> last_access_epoch;
  PolicyMetadata metadata;
};

/// What a user implements to plug a policy into a controller. Every member
/// must be deterministic and must not call the manager (the controller
/// ranks candidates while it holds the manager's lock).
class Policy {
public:
  virtual ~Policy() = default;
  /// A stable name, recorded in decisions.
  virtual std::string name() const = 0;
  /// The configuration that decisions are bound to (JSON for the bindings:
  /// an array of [key, value] pairs).
  virtual nlohmann::ordered_json config_identity() const = 0;
  /// Where a replica evicted from `location` may go, in order of preference.
  virtual std::vector<Location> fallback_locations(Location location) const = 0;
  /// Every candidate exactly once, first-evicted first.
  virtual std::vector<EvictionCandidate>
  order_candidates(std::vector<EvictionCandidate> candidates) const = 0;
  /// True when order_candidates is exactly an ascending sort by
  /// tiered_lru_less: the controller then ranks lazily instead of ordering
  /// every candidate of a location it only needs the first few of.
  virtual bool orders_by_tiered_lru_key() const { return false; }
};

/// The reference order (§18.2): lower priority first, then older access
/// (never accessed counts as -1), then candidates with a stable key before
/// those without, then stable key text, then registration order.
bool tiered_lru_less(const EvictionCandidate &a, const EvictionCandidate &b);

/// The seed's DeterministicTieredLRU: the order of tiered_lru_less and the
/// spill tiers it is given (never inferred; a location not listed has none).
class DeterministicTieredLRU final : public Policy {
public:
  using Tiers = std::vector<std::pair<Location, std::vector<Location>>>;
  /// std::invalid_argument for a source listed twice, a source among its own
  /// destinations or a destination listed twice.
  explicit DeterministicTieredLRU(Tiers fallback_tiers = {});

  std::string name() const override { return "deterministic-tiered-lru"; }
  /// [["fallback_tiers", [[source, [destination, ...]], ...]]], by location name.
  nlohmann::ordered_json config_identity() const override;
  std::vector<Location> fallback_locations(Location location) const override;
  std::vector<EvictionCandidate> order_candidates(std::vector<EvictionCandidate> candidates) const override;
  bool orders_by_tiered_lru_key() const override { return true; }
  const Tiers &fallback_tiers() const { return tiers_; }

private:
  Tiers tiers_;
};

} // namespace fhr
