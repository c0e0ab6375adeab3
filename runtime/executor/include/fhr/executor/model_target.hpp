#pragma once
/// \file
/// The model target: runs a module's steps on the semantic model (a State
/// and the Simulator) exactly as a manager would apply them, recording each
/// step's outcome. This is what `fhr-plan explain` and `check` report and
/// what `fhr-plan run` and the differential test predict a live manager to
/// do. Standard library only: no runtime, no storage.

#include "fhr/executor/target.hpp"
#include "fhr/model/simulator.hpp"
#include "fhr/model/state.hpp"

#include <array>
#include <span>
#include <unordered_map>
#include <vector>

namespace fhr {

/// `--budget LOC=SIZE`: replaces (or adds) a constructor budget.
struct BudgetOverride {
  Location location;
  std::uint64_t budget_bytes = 0;
};

/// The devices a module declares (`devices N`); every device when it declares none.
DeviceConfig device_config(const bytecode::Module &module);
/// The state a module's budgets (with `overrides`) describe, before any
/// setup step: on `devices`, the machine a run of it has (`fhr-plan run`'s
/// backend), or else on device_config(module) (explain, which assumes no
/// machine).
State initial_state(const bytecode::Module &module, std::span<const BudgetOverride> overrides = {},
                    std::optional<DeviceConfig> devices = std::nullopt);

/// The charge of every location when a window starts, and the peaks since:
/// the per-location table of a program's explanation, the peaks a run is
/// compared on.
class ChargeWindow {
public:
  /// Starts the window on `state`: every peak becomes the current charge.
  explicit ChargeWindow(State &state);
  /// Every registered location (those the run registered too), in registry order.
  std::vector<LocationPrediction> predictions(const State &state) const;

private:
  struct Charge {
    std::uint64_t used = 0, reserved = 0, resident_logical = 0;
  };
  std::array<Charge, Location::kCount> before_{};
};

/// The instruction that opened each hold and lease of a State, by lifetime.
using LifetimeOrigins = std::unordered_map<LifetimeId, std::uint32_t>;

class ModelTarget final : public Target {
public:
  /// `origins`: where the lifetimes `state` already has were opened (a
  /// program runs on a copy of the setup's state: the setup target's origins).
  explicit ModelTarget(State &state, LifetimeOrigins origins = {})
      : state_(state), explainer_(state), origins_(std::move(origins)) {}

  /// §10.2: the dry run of `plan` against the current state (a plan unit of
  /// explain); changes nothing.
  Explanation explain(const PlanSteps &plan) { return explainer_.explain(plan.view()); }
  const State &state() const { return state_; }
  const LifetimeOrigins &lifetime_origins() const { return origins_; }
  /// §7.1: the instructions that opened the live holds and leases (pending
  /// ones included) protecting `value`'s replicas at `at`, oldest first: what
  /// a protection failure names (`at`: its FailureDetail::protected_locations).
  std::vector<std::uint32_t> protecting_instructions(ValueId value, LocationSet at) const;

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
  struct ScopeSteps;
  struct ListSteps;

  /// Records `step` with `outcome`; a failure raises `raised` (None: the
  /// outcome's own class). Returns whether it succeeded.
  bool record(const StepRecord &step, const Outcome &outcome, ErrorClass raised);
  /// Applies `action`; a discard that succeeds leaves the replicas it
  /// removed in `discarded` (for RunResult::discarded, once its row is in).
  Outcome apply_action(const Action &action, StepTransfer &transfer, std::optional<LocationSet> &discarded);
  /// After the step was recorded: its discard's replicas, if any.
  void note_discard(const std::optional<LocationSet> &discarded);
  /// The same for a step already appended to the run.
  bool finish(StepRecord &step, const Outcome &outcome, ErrorClass raised);
  /// The preflight of `view`: true when feasible, else records the refused
  /// step (`where` gives the instruction and value of a simulated step).
  template <typename Where>
  bool preflight(const PlanView &view, Where &&where);
  bool run_phase(StepKind kind, const PhaseActions &phase);

  State &state_;
  Simulator explainer_;
  FailureDetail detail_;
  /// The reservations of every entered scope, innermost last.
  std::vector<std::vector<LifetimeId>> scope_reservations_;
  LifetimeOrigins origins_;
};

} // namespace fhr
