#pragma once
/// \file
/// What the interpreter runs a module on. A target performs one step at a
/// time (a registration, a primitive, a lifetime) or one part of a scope
/// (its entry, its exit, an action list), appends what it did to the run's
/// record and says whether the run may go on. The interpreter decides which
/// step comes next; inside a scope the order is the shared sequence of
/// fhr/model/scope_sequence.hpp, which both targets run.
///
/// Targets: ModelTarget (the semantic model: explain, check, the
/// prediction of `fhr-plan run`) and ManagerTarget (a live fhr::Manager).

#include "fhr/bytecode/module.hpp"
#include "fhr/executor/plan_table.hpp"
#include "fhr/executor/step_record.hpp"
#include "fhr/model/state.hpp"

#include <cstdint>
#include <span>

namespace fhr {

class Target {
public:
  /// A lifetime the target opened (a hold, a lease, a reservation).
  using Token = std::uint64_t;

  virtual ~Target() = default;

  /// Where the target appends its steps; the interpreter sets it per run.
  void record_into(RunResult *run) { run_ = run; }

  /// Each of these performs one step described by `step` (kind, index,
  /// instruction, value filled in), records it with its outcome and returns
  /// false when it failed.

  /// Registers one value of declaration `declaration` (adopt or register_source).
  virtual bool declare(const bytecode::Declaration &declaration, ValueId value, StepRecord step) = 0;
  /// A primitive called directly (setup, program bodies).
  virtual bool apply(const Action &action, StepRecord step) = 0;
  /// A hold, or a lease (LifetimeKind::Lease: acquire in bodies, lease in
  /// setup; `pending`: released at once with its events still pending).
  virtual bool protect(LifetimeKind kind, std::span<const ValueId> values, Location at, bool pending,
                       StepRecord step, Token &token) = 0;
  virtual bool reserve(const Reservation &reservation, StepRecord step, Token &token) = 0;
  /// Setup's `release` of a named lifetime.
  virtual bool release(Token token, StepRecord step) = 0;

  /// Ends a lifetime a body opened, when the body ends (not a step).
  virtual void end_lifetime(Token token) = 0;

  /// The entry of `plan`'s scope (enter_scope of scope_sequence.hpp):
  /// records the steps it ran and, at a failure, the failing one.
  virtual bool enter_scope(const PlanSteps &plan) = 0;
  /// The exit of the innermost entered scope, which is `plan`'s.
  virtual bool exit_scope(const PlanSteps &plan) = 0;
  /// Leaves the innermost entered scope without its exit, because its
  /// body failed: its reservations go, its exit actions do not run.
  virtual void abandon_scope() = 0;
  /// An action list (execute_action_list of scope_sequence.hpp).
  virtual bool execute_actions(const ActionListSteps &list) = 0;

protected:
  RunResult &run() { return *run_; }

private:
  RunResult *run_ = nullptr;
};

} // namespace fhr
