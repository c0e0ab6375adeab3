#pragma once
/// \file
/// One step of a dry run as the Simulator reports it (docs/semantics.md
/// §10.2): which phase, its position there, its outcome and what moved its
/// bytes.

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

} // namespace fhr
