#pragma once
/// \file
/// One step of a dry run as the Simulator reports it (docs/semantics.md
/// §10.2): which phase, its position there, its outcome and what moved its
/// bytes.

#include "fhr/model/location_set.hpp"
#include "fhr/model/outcome.hpp"
#include "fhr/model/plan.hpp"

#include <cstdint>

namespace fhr {

enum class StepTransfer : std::uint8_t; // fhr/model/step_transfer.hpp

/// One simulated reservation or action. `index` is its position within its
/// phase's list.
struct SimulatedStep {
  Phase phase = Phase::Enter;
  std::uint32_t index = 0;
  Outcome outcome;
  /// What moved its bytes, as the rules' hooks were called.
  StepTransfer transfer{};
};

/// The replicas a discard removed (§6.4: every one its value had), kept
/// beside a run's steps for the reports that replay a unit's memory: a
/// replica resident before the unit is otherwise unknown to them.
struct DiscardedReplicas {
  std::uint32_t step = 0; ///< its position in the run's steps
  LocationSet at;
};

} // namespace fhr
