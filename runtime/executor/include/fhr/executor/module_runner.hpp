#pragma once
/// \file
/// Executes a verified bytecode module on a live manager: binds every
/// declared value to a handle (through a ValueBinder), runs the setup
/// section, and runs any plan as a scope or any program, item by item.
/// Every executed step is recorded with the instruction's `.fhr` line (the
/// module's source map), its transition report and, when it failed, the
/// error class and message, so that a run can be compared step for step
/// with the compiler's prediction (`fhr-plan run`, the differential test).
///
/// Residency failures are results, not exceptions: a run stops at the first
/// failing step, as a program does. Usage errors (an unknown plan name)
/// throw std::invalid_argument.

#include "fhr/bytecode/module.hpp"
#include "fhr/executor/value_binder.hpp"
#include "fhr/runtime/manager.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fhr {

/// Which part of a setup or program a step belongs to (the compiler's
/// ProgramPart, plus Setup).
enum class StepKind : std::uint8_t {
  Preflight, ///< a scope's or action list's preflight refused it
  Reclaim,
  Reserve,
  Enter,
  Exit,
  Execute, ///< an `actions` list
  Acquire,
  Hold,
  BodyReserve,
  Direct,
  Setup,
};
std::string_view step_kind_name(StepKind kind);

struct ExecutedStep {
  StepKind kind = StepKind::Direct;
  /// The action's index within its phase (or list), the reservation's
  /// index; for Preflight the failing simulated step's index.
  std::uint32_t index = 0;
  /// For Preflight: the phase of the failing simulated step.
  Phase phase = Phase::Enter;
  std::uint32_t line = 0; ///< `.fhr` line of the instruction
  bool failed = false;
  /// The class the caller caught (plan errors for preflights, plan-execution
  /// errors inside running plans, the primitive's own class otherwise).
  ErrorClass raised = ErrorClass::None;
  /// For failed steps inside plans: the underlying cause's class.
  ErrorClass cause = ErrorClass::None;
  std::string message;
  /// The committed transition of an action step.
  std::optional<TransitionReport> transition;
  /// The module value an action step concerned.
  std::optional<std::uint32_t> value;
};

struct RunResult {
  std::string name;
  bool completed = true; ///< false: stopped at the failed last step
  std::vector<ExecutedStep> steps;

  const ExecutedStep *failure() const { return completed || steps.empty() ? nullptr : &steps.back(); }
};

struct RunnerOptions {
  /// The consumer stream for a lease at a CUDA location. Needed only by
  /// modules that lease device values.
  std::function<Stream(Location)> consumer_stream;
  /// Submits work that reads the leased values to a consumer stream, so
  /// that a `lease ... pending` of the module stays pending as the model
  /// assumes (its events do not complete while the run lasts).
  std::function<void(Stream)> submit_reader;
  /// Called after every committed transition, with the handle it concerned:
  /// where content checks hook in.
  std::function<void(const TransitionReport &, const Handle &)> after_transition;
  /// Divides every size of the module (values, reservations; pass the same
  /// to budgets()) by this, rounding up: the same plans on values small
  /// enough to run thousands of times (the fault sweep). 1 runs the module
  /// as written.
  std::uint64_t scale_down = 1;
};

class ModuleRunner {
public:
  ModuleRunner(Manager &manager, const bytecode::Module &module, ValueBinder &binder,
               RunnerOptions options = {});
  ~ModuleRunner();
  ModuleRunner(const ModuleRunner &) = delete;
  ModuleRunner &operator=(const ModuleRunner &) = delete;

  /// The budgets a module declares, as ManagerOptions::budgets (divided by
  /// `scale_down`, rounding up).
  static std::vector<std::pair<Location, std::optional<std::uint64_t>>>
  budgets(const bytecode::Module &module, std::uint64_t scale_down = 1);

  /// Binds every declared value and runs the setup statements; stops at the
  /// first failing one. Lifetimes opened by setup stay until released by
  /// the module or until the runner is destroyed. Call once, first.
  RunResult run_setup();

  /// The handle bound to a value or family member; std::out_of_range for
  /// unknown names or indices, std::logic_error before run_setup bound it.
  Handle handle(std::string_view name, std::optional<std::uint32_t> index = std::nullopt) const;
  Handle handle_of(std::uint32_t value_id) const;
  /// The module value bound to `handle`, if any.
  std::optional<std::uint32_t> value_of(const Handle &handle) const;
  const std::vector<DeclaredValue> &values() const { return values_; }

  /// The PlanSpec of a module plan with the bound handles.
  PlanSpec plan(std::string_view name) const;
  /// Runs a plan as a scope with an empty body (enter, then close).
  RunResult run_plan(std::string_view name);
  RunResult run_plan(std::uint32_t index);
  /// Runs one program from the manager's current state (by name: the first
  /// of that name).
  RunResult run_program(std::string_view name);
  RunResult run_program(std::uint32_t index);

private:
  class Execution;
  /// A list of actions with the `.fhr` line of each (one per value of a range).
  struct PhaseActions {
    std::vector<ActionSpec> actions;
    std::vector<std::uint32_t> lines;
  };
  PlanSpec plan_spec(std::uint32_t plan_index) const;
  PhaseActions phase_actions(bytecode::InstructionRange range) const;
  std::vector<Handle> item_handles(std::uint32_t header) const;

  Manager &manager_;
  const bytecode::Module &module_;
  ValueBinder &binder_;
  RunnerOptions options_;
  std::vector<DeclaredValue> values_;
  std::vector<Handle> handles_;
  std::unordered_map<std::uint64_t, std::uint32_t> value_of_handle_;
  /// Lifetimes opened by setup, by instruction index, until released.
  std::vector<std::pair<std::uint32_t, std::unique_ptr<Lifetime>>> setup_lifetimes_;
};

} // namespace fhr
