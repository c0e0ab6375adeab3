#pragma once
/// \file
/// A residency plan as the simulator and the runtime see it (docs/semantics.md
/// §10.1): reclaim, reservations, enter and exit. Views, so that the caller
/// keeps its actions wherever they already are.

#include "fhr/model/action.hpp"

#include <cstdint>
#include <span>
#include <string>

namespace fhr {

struct Reservation {
  Location location;
  std::uint64_t nbytes = 0;
  std::string label;
};

struct PlanView {
  std::span<const Action> reclaim;
  std::span<const Reservation> reservations;
  std::span<const Action> enter;
  std::span<const Action> exit;
};

/// The phases of a scope, in the order they run.
enum class Phase : std::uint8_t { Reclaim, Reserve, Enter, Exit };

std::string_view phase_name(Phase phase);

} // namespace fhr
