#pragma once
/// \file
/// Executes a verified bytecode module on a live manager: the interpreter
/// over the manager target. Binds every declared value to a handle (through
/// a ValueBinder) when setup declares it, runs setup, and runs any plan as a
/// scope or any program. Every step is recorded (StepRecord: its kind,
/// index, instruction, outcome and the class a caller caught; the line of
/// its instruction is the module's source map), so that a run can be
/// compared step for step with the model's (`fhr-plan run`, the
/// differential test).
///
/// Residency failures are results, not exceptions: a run stops at the first
/// failing step, as a program does. Usage errors (an unknown plan name)
/// throw std::invalid_argument.

#include "fhr/bytecode/module.hpp"
#include "fhr/executor/interpreter.hpp"
#include "fhr/executor/manager_target.hpp"
#include "fhr/executor/plan_table.hpp"
#include "fhr/executor/value_binder.hpp"
#include "fhr/runtime/manager.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace fhr {

class ModuleRunner {
public:
  /// `module` (sizes as they are run: see scaled_module.hpp) outlives the runner.
  ModuleRunner(Manager &manager, const bytecode::Module &module, ValueBinder &binder,
               RunnerOptions options = {});

  /// Binds every declared value and runs the setup statements; stops at the
  /// first failing one. Lifetimes opened by setup stay until released by
  /// the module or until the runner is destroyed. Call once, first.
  RunResult run_setup() { return interpreter_.run_setup(); }

  /// The handle bound to a value or family member; std::out_of_range for
  /// unknown names or indices, std::logic_error before run_setup bound it.
  Handle handle(std::string_view name, std::optional<std::uint32_t> index = std::nullopt) const;
  Handle handle_of(std::uint32_t value_id) const { return target_.handle_of(value_id); }
  /// The module value bound to `handle`, if any.
  std::optional<std::uint32_t> value_of(const Handle &handle) const { return target_.value_of(handle); }
  const std::vector<DeclaredValue> &values() const { return target_.values(); }
  /// The `.fhr` line of a step's instruction.
  std::uint32_t line(const StepRecord &step) const { return module_.code[step.instruction].line; }

  /// The PlanSpec of a module plan with the bound handles.
  PlanSpec plan(std::string_view name) const;
  /// Runs a plan as a scope with an empty body (enter, then close).
  RunResult run_plan(std::string_view name);
  RunResult run_plan(std::uint32_t index) { return interpreter_.run_plan(index); }
  /// Runs one program from the manager's current state (by name: the first
  /// of that name).
  RunResult run_program(std::string_view name);
  RunResult run_program(std::uint32_t index) { return interpreter_.run_program(index); }
  /// A program a statement at a time (Interpreter::begin_program and after).
  void begin_program(std::string_view name);
  bool enter_next_statement() { return interpreter_.enter_next_statement(); }
  bool run_current_body() { return interpreter_.run_current_body(); }
  RunResult finish_program() { return interpreter_.finish_program(); }
  void abandon_program() { interpreter_.abandon_program(); }
  bool current_body_pending() const { return interpreter_.current_body_pending(); }
  /// The name of the entered statement's plan; none outside a statement.
  std::optional<std::string_view> current_plan() const;

private:
  std::uint32_t plan_index(std::string_view name) const;
  std::uint32_t program_index(std::string_view name) const;

  const bytecode::Module &module_;
  mutable PlanTable plans_;
  ManagerTarget target_;
  Interpreter interpreter_;
};

} // namespace fhr
