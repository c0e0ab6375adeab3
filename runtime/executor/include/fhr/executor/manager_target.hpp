#pragma once
/// \file
/// The manager target: runs a module's steps on a live fhr::Manager. Values
/// are bound through a ValueBinder when their declaration runs; primitives
/// and lifetimes call the manager's API; a scope is a real Scope (enter,
/// the body, close) and an action list a real execute_actions, whose
/// sequence is the one the model target runs (scope_sequence.hpp). Every
/// committed transition is recorded with its times; failures are recorded
/// with the class the manager raised, its cause and its message.

#include "fhr/executor/target.hpp"
#include "fhr/executor/value_binder.hpp"
#include "fhr/runtime/manager.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace fhr {

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
};

class ManagerTarget final : public Target {
public:
  ManagerTarget(Manager &manager, const bytecode::Module &module, ValueBinder &binder,
                RunnerOptions options = {});
  /// Ends the lifetimes still open (setup's), the last opened first.
  ~ManagerTarget() override;
  ManagerTarget(const ManagerTarget &) = delete;
  ManagerTarget &operator=(const ManagerTarget &) = delete;

  /// The handle bound to a value; std::out_of_range for an unknown id,
  /// std::logic_error before its declaration ran.
  Handle handle_of(ValueId value) const;
  /// The module value bound to `handle`, if any.
  std::optional<ValueId> value_of(const Handle &handle) const;
  const std::vector<DeclaredValue> &values() const { return values_; }
  /// A plan with the bound handles.
  PlanSpec plan_spec(const PlanSteps &plan) const;

  bool declare(const bytecode::Declaration &declaration, ValueId value, StepRecord step) override;
  bool apply(const Action &action, StepRecord step) override;
  bool protect(LifetimeKind kind, std::span<const ValueId> values, Location at, bool pending, StepRecord step,
               Token &token) override;
  bool reserve(const Reservation &reservation, StepRecord step, Token &token) override;
  bool release(Token token, StepRecord step) override;
  void end_lifetime(Token token) override;
  bool enter_scope(const PlanSteps &plan) override;
  bool exit_scope(const PlanSteps &plan) override;
  void abandon_scope() override;
  bool execute_actions(const ActionListSteps &list) override;

private:
  std::vector<ActionSpec> action_specs(const PhaseActions &phase) const;
  void succeeded(StepRecord step);
  void committed(StepRecord step, const TransitionReport &report);
  /// Records a failed step: `error` is what the manager threw, `cause` the
  /// class of what went wrong (the error's own unless it wraps a cause).
  bool failed(StepRecord step, const std::exception &error, ErrorClass cause);
  /// Records the committed transitions `report` holds from `from` on as
  /// steps of `phase` (at most its actions).
  void record_phase(StepKind kind, const PlanReport &report, std::size_t from, const PhaseActions &phase);
  /// The manager refused before running anything; its explain (the same
  /// simulator on the same state) names the refused step.
  bool preflight_failed(const PlanSpec &spec, const ResidencyPlanError &error,
                        const std::function<void(StepRecord &)> &where);
  Token keep(std::unique_ptr<Lifetime> lifetime);

  Manager &manager_;
  const bytecode::Module &module_;
  ValueBinder &binder_;
  RunnerOptions options_;
  std::vector<DeclaredValue> values_;
  std::vector<Handle> handles_;
  std::unordered_map<std::uint64_t, ValueId> value_of_handle_;
  /// Open lifetimes; a token is its index + 1 (slots of ended ones are empty).
  std::vector<std::unique_ptr<Lifetime>> lifetimes_;
  /// Entered scopes, innermost last.
  std::vector<std::unique_ptr<Scope>> scopes_;
};

} // namespace fhr
