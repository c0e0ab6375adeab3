#pragma once
/// \file
/// The explain pass over a checked module: runs setup on a model State,
/// explains every plan against the state setup reaches, and runs every
/// program from that state as one pipeline (scopes with their preflight,
/// reservations, bodies and exits). Results are compact; rendering them to
/// text or JSON is the reporters' job.

#include "fhr/compiler/ir.hpp"
#include "fhr/model/simulator.hpp"
#include "fhr/model/state.hpp"

#include <optional>
#include <vector>

namespace fhr {

/// `--budget LOC=SIZE`: replaces (or adds) a constructor budget.
struct BudgetOverride {
  Location location;
  std::uint64_t budget_bytes = 0;
};

struct SetupReport {
  std::size_t steps = 0;
  /// Index into Module::setup of the step that failed; setup stops there.
  std::optional<std::size_t> failed_step;
  Outcome failure;
  FailureDetail detail;
  ValueId failed_value = 0; ///< for lifetime failures naming one value
};

struct PlanExplanation {
  const ir::Plan *plan = nullptr;
  Explanation explanation;
};

/// Which part of a program a row comes from.
enum class ProgramPart : std::uint8_t {
  Preflight, ///< a scope's or action list's preflight refused it (the failing step)
  Reclaim,
  Reserve,
  Enter,
  Exit,    ///< a scope's plan, executed
  Execute, ///< an `actions` list, executed
  Acquire,
  Hold,
  BodyReserve, ///< lifetimes opened in a body
  Direct,      ///< a direct primitive
};

struct ProgramRow {
  ProgramPart part = ProgramPart::Direct;
  const ir::ProgramItem *item = nullptr;
  /// The step within the item: an action index (per phase for plans), a
  /// reservation index; for Preflight the simulated step.
  Phase phase = Phase::Enter;
  std::uint32_t index = 0;
  Outcome outcome;
  /// The class the caller would catch: the outcome's own for direct calls,
  /// plan for a refused preflight, plan-execution inside a running plan.
  ErrorClass raised = ErrorClass::None;
  ValueId failed_value = 0;
};

struct ProgramReport {
  const ir::Program *program = nullptr;
  bool feasible = true;
  std::vector<ProgramRow> rows;
  std::vector<LocationPrediction> locations;
  FailureDetail detail;
};

struct Analysis {
  SetupReport setup;
  std::vector<PlanExplanation> plans;
  std::vector<ProgramReport> programs;

  bool feasible() const;
};

/// The device configuration a module declares (`devices N`).
DeviceConfig device_config(const ir::Module &module);
/// The state a module's budgets describe, before any setup step.
State initial_state(const ir::Module &module, const std::vector<BudgetOverride> &overrides);

/// Runs the setup statements on `state` (stops at the first failure).
SetupReport run_setup(const ir::Module &module, State &state);

Analysis analyze_module(const ir::Module &module, const std::vector<BudgetOverride> &overrides = {});

/// Runs one program from `state` (which it changes).
ProgramReport run_program(const ir::Module &module, const ir::Program &program, State &state);

} // namespace fhr
