#pragma once
/// \file
/// The one vocabulary for "where in a run a step is": the phases of a scope
/// (§10.1, §12), an action list's execution (§11), a refused preflight, setup
/// statements and the lifetimes and primitives of program bodies. Explain's
/// JSON and text, `fhr-plan run`, the interpreter's step records and the
/// runtime's ResidencyPlanExecutionError (whose `ExecutionPhase` is this
/// type) all speak it, so no layer maps one enum onto another.
///
/// The simulator's Phase (plan.hpp) is the scope-phase subset, numbered as
/// here: step_kind(phase) is a cast, not a table.

#include "fhr/model/plan.hpp"

#include <cstdint>
#include <string_view>

namespace fhr {

enum class StepKind : std::uint8_t {
  Reclaim,     ///< a scope's reclaim action (§12.2)
  Reserve,     ///< a scope's reservation (§12.2)
  Enter,       ///< a scope's enter action
  Exit,        ///< a scope's exit action (§12.3)
  Execute,     ///< an action of execute_actions (§11), an `actions` list of a program
  Preflight,   ///< a scope's or action list's preflight refused it: nothing ran (§10.2)
  Setup,       ///< a setup statement of a module (registration, action, lifetime, release)
  Acquire,     ///< a lease a program body opens until the body ends
  Hold,        ///< a hold a program body opens until the body ends
  BodyReserve, ///< a reservation a program body opens until the body ends
  Direct,      ///< a primitive a program calls directly (it fails with its own class)
};

/// The spelling in every output: "reclaim", "reserve", "enter", "exit",
/// "execute", "preflight", "setup", "acquire", "hold", "reserve", "direct".
constexpr std::string_view step_kind_name(StepKind kind) {
  switch (kind) {
  case StepKind::Reclaim: return "reclaim";
  case StepKind::Reserve: return "reserve";
  case StepKind::Enter: return "enter";
  case StepKind::Exit: return "exit";
  case StepKind::Execute: return "execute";
  case StepKind::Preflight: return "preflight";
  case StepKind::Setup: return "setup";
  case StepKind::Acquire: return "acquire";
  case StepKind::Hold: return "hold";
  case StepKind::BodyReserve: return "reserve";
  case StepKind::Direct: return "direct";
  }
  return "?";
}

static_assert(static_cast<int>(StepKind::Reclaim) == static_cast<int>(Phase::Reclaim) &&
              static_cast<int>(StepKind::Reserve) == static_cast<int>(Phase::Reserve) &&
              static_cast<int>(StepKind::Enter) == static_cast<int>(Phase::Enter) &&
              static_cast<int>(StepKind::Exit) == static_cast<int>(Phase::Exit));

/// The step kind of a simulated scope phase.
constexpr StepKind step_kind(Phase phase) { return static_cast<StepKind>(phase); }

/// Whether `kind` is one of a scope's phases (a simulated step can have it).
constexpr bool is_scope_phase(StepKind kind) { return kind <= StepKind::Exit; }

} // namespace fhr
