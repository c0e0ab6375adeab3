#pragma once
/// \file
/// One atomic, storage-free view of a manager (docs/semantics.md §14), and its
/// JSON form (docs/runtime.md lists the keys).

#include "fhr/model/location.hpp"
#include "fhr/model/value_spec.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fhr {

struct SnapshotMaterialization {
  Location location;
  std::uint64_t logical_nbytes = 0;
  std::uint64_t storage_nbytes = 0; ///< bytes of backing storage this replica really has
  std::uint64_t charged_nbytes = 0; ///< what the location is charged (the spec's storage)
  std::uint32_t use_count = 0, hold_count = 0, pending_event_count = 0;
};

struct SnapshotValue {
  std::uint64_t handle_id = 0;
  ValueSpec spec;
  bool has_source = false;
  std::optional<Location> source_location;
  bool discarded = false;
  /// In installation order.
  std::vector<SnapshotMaterialization> materializations;
};

struct SnapshotLocation {
  Location location;
  std::optional<std::uint64_t> budget_bytes;
  std::uint64_t used_bytes = 0, reserved_bytes = 0;
  std::optional<std::uint64_t> remaining_budget_bytes;
  std::uint64_t peak_used_bytes = 0, peak_charged_bytes = 0;
  std::uint32_t value_count = 0, reservation_count = 0;
  std::uint32_t use_count = 0, hold_count = 0, pending_event_count = 0;
  /// The backend's side of the same location (Backend::pool_figures):
  /// bytes its pool has handed out, bytes it keeps idle for reuse, and what
  /// the driver reports free on a device. std::nullopt where it keeps no pool.
  std::optional<std::uint64_t> pool_in_use_bytes, pool_idle_bytes, driver_free_bytes;
};

struct SnapshotReservation {
  Location location;
  std::uint64_t nbytes = 0;
  std::string label;
};

struct Snapshot {
  std::uint64_t manager_id = 0;
  std::uint64_t state_version = 0;
  std::uint64_t captured_at_ns = 0;
  /// Every registered value, discarded ones included, in registration order.
  std::vector<SnapshotValue> values;
  /// Registry order.
  std::vector<SnapshotLocation> locations;
  /// Active named reservations in creation order.
  std::vector<SnapshotReservation> reservations;

  nlohmann::ordered_json to_json() const;
};

} // namespace fhr
