#pragma once
/// \file
/// TransitionHooks that do no work and only write down what a transition
/// asked for: run apply() on a StateOverlay with one to learn, before doing
/// anything, whether an action would copy a resident replica (and from where
/// to where), reload its value from a source, or only free replicas.

#include "fhr/model/state.hpp"

#include <optional>

namespace fhr {

/// The physical work of one transition, as its hooks were called.
struct TransferRecord {
  std::optional<Location> loaded_at; ///< load(): reconstruction at the source location
  std::optional<Location> copied_from;
  std::optional<Location> copied_to;
  std::optional<Location> installed_at;
  LocationSet removed;

  /// A copy of a resident replica, not a reload from the value's source.
  bool plain_copy() const { return copied_from.has_value() && !loaded_at; }
  friend bool operator==(const TransferRecord &, const TransferRecord &) = default;
};

class TransferRecorder final : public TransitionHooks {
public:
  void load(ValueId, Location location) override { record.loaded_at = location; }
  void copy(ValueId, Location from, Location to) override {
    record.copied_from = from;
    record.copied_to = to;
  }
  void install(ValueId, Location location) override { record.installed_at = location; }
  void remove(ValueId, Location location) override { record.removed.insert(location); }

  TransferRecord record;
};

} // namespace fhr
