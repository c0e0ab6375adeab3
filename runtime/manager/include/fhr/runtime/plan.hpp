#pragma once
/// \file
/// Plans as a manager takes them (§10.1, §11): actions on handles, the copy
/// streams of their destinations, and the explanation of a plan (§10.3).

#include "fhr/model/plan.hpp"
#include "fhr/model/simulator.hpp"
#include "fhr/runtime/handle.hpp"
#include "fhr/runtime/stream_support.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fhr {

/// One action of a plan or action list.
struct ActionSpec {
  ActionKind kind = ActionKind::Ensure;
  Handle handle;
  Location location;
  std::optional<Location> from;
};

/// Copy streams per CUDA destination for the actions of a plan (the seed's
/// transfer_streams); destinations not listed use the backend's default
/// stream of their device.
using TransferStreams = std::vector<std::pair<Location, Stream>>;

/// The stream listed for `destination`, or the empty stream.
inline Stream stream_for(const TransferStreams &streams, Location destination) {
  for (const auto &[location, stream] : streams)
    if (location == destination) return stream;
  return {};
}

struct PlanSpec {
  std::string name;
  std::vector<ActionSpec> reclaim;
  std::vector<Reservation> reservations;
  std::vector<ActionSpec> enter;
  std::vector<ActionSpec> exit;
};

/// One simulated action of an explanation, as §10.3 lists it.
struct ExplainedAction {
  Phase phase = Phase::Enter;
  std::uint32_t index = 0; ///< within its phase
  ActionSpec action;
  /// No failure (a no-op is executable).
  bool executable = true;
  bool no_op = false;
  std::optional<Location> source;
  std::optional<Location> destination;
  /// The value's spec; 0 and 0 when its handle did not resolve or the value
  /// was discarded earlier in the plan.
  std::uint64_t logical_nbytes = 0;
  std::uint64_t storage_nbytes = 0;
  /// The failure's message (a handle error as the call would raise it:
  /// foreign, unknown or discarded), the no-op's reason, or empty.
  std::string reason;
};

/// Manager::explain's result: the simulator's prediction (steps, the
/// predicted peak per location, the failing step's figures) and the
/// reference's view of it: the plan's name, one row per simulated action,
/// the reservations and the first failure's message.
struct ExplainedPlan : Explanation {
  std::string plan_name;
  /// Up to and including the first failing action (a failing reservation
  /// ends the list after the reclaim actions).
  std::vector<ExplainedAction> actions;
  std::vector<Reservation> reservations;
  /// The first failure's message; empty when feasible.
  std::string reason;
};

} // namespace fhr
