// Plans on a live manager: explain (§10), execute_actions (§11) and scopes
// (§12). Every preflight is the shared Simulator over the live state; the
// order of a scope's and an action list's steps, and what a failure
// releases, is the shared sequence of fhr/model/scope_sequence.hpp, which
// the model the compiler explains with runs too.
#include "fhr/model/scope_sequence.hpp"
#include "fhr/runtime/manager.hpp"

#include "clock.hpp"

namespace fhr {

namespace {

void require_name(const std::string &name, const char *what) {
  if (name.find_first_not_of(" \t\n") == std::string::npos)
    throw std::invalid_argument(std::string(what) + " needs a non-blank name");
}

void check_expected_version(std::optional<std::uint64_t> expected, std::uint64_t actual) {
  if (expected && *expected != actual) throw ResidencyStaleStateError(*expected, actual);
}

/// The actions of one of a plan's action phases.
std::span<const ActionSpec> phase_actions(const PlanSpec &plan, StepKind phase) {
  return phase == StepKind::Reclaim ? plan.reclaim : phase == StepKind::Exit ? plan.exit : plan.enter;
}

} // namespace

std::vector<Action> Manager::to_actions(std::span<const ActionSpec> specs) const {
  std::vector<Action> actions;
  actions.reserve(specs.size());
  for (const ActionSpec &spec : specs)
    actions.push_back(Action{spec.kind, resolve_for_plan(spec.handle), spec.location, spec.from});
  return actions;
}

void Manager::validate_transfer_streams(const TransferStreams &streams) const {
  for (const auto &[location, stream] : streams) {
    validate(location);
    if (!stream) throw std::invalid_argument("transfer stream for " + location.name() + " is empty");
    validate_stream(stream, location);
  }
}

ExplainedPlan Manager::explain(const PlanSpec &plan, std::optional<std::uint64_t> expected_state_version) {
  require_name(plan.name, "a plan");
  auto lock = open_lock();
  // §7.4: explain does not reap, but completed pending leases protect nothing.
  check_expected_version(expected_state_version, state_.version());
  const std::vector<Action> reclaim = to_actions(plan.reclaim), enter = to_actions(plan.enter),
                            exit = to_actions(plan.exit);
  Simulator simulator(state_, completed_pending());
  return explained(plan, simulator.explain(PlanView{reclaim, plan.reservations, enter, exit}));
}

void Manager::preflight(const std::string &plan_name, const PlanSpec *plan,
                        std::span<const Action> actions) const {
  std::vector<Action> reclaim, exit;
  PlanView view{{}, {}, actions, {}};
  if (plan) {
    reclaim = to_actions(plan->reclaim);
    exit = to_actions(plan->exit);
    view = PlanView{reclaim, plan->reservations, actions, exit};
  }
  Simulator simulator(state_);
  const Explanation result = simulator.explain(view);
  if (result.feasible) return;
  const SimulatedStep &failed = *result.first_failure();
  std::string where = " at action " + std::to_string(failed.index);
  MessageContext context;
  std::string value;
  if (plan) {
    where = " in phase " + std::string(phase_name(failed.phase)) + " at step " + std::to_string(failed.index);
    if (failed.phase == Phase::Reserve) context.label = plan->reservations[failed.index].label;
  }
  const std::span<const Action> phase_actions = failed.phase == Phase::Reclaim
                                                    ? std::span<const Action>(reclaim)
                                                : failed.phase == Phase::Exit ? std::span<const Action>(exit)
                                                                              : actions;
  if (failed.phase != Phase::Reserve) {
    value = value_name(phase_actions[failed.index].value);
    context.value_name = value;
  }
  throw ResidencyPlanError("plan '" + plan_name + "' is infeasible" + where + ": " +
                           describe(failed.outcome, context, &result.failure_detail));
}

PlanReport Manager::execute_actions(std::span<const ActionSpec> specs, const std::string &name,
                                    std::optional<std::uint64_t> expected_state_version,
                                    const TransferStreams &transfer_streams) {
  require_name(name, "an action list");
  auto lock = open_lock();
  PlanReport report;
  // The steps of execute_action_list; a failure throws (nothing to release).
  struct Steps {
    Manager &m;
    const std::string &name;
    std::span<const ActionSpec> specs;
    std::optional<std::uint64_t> expected_state_version;
    const TransferStreams &transfer_streams;
    PlanReport &report;

    bool preflight() {
      m.reap();
      check_expected_version(expected_state_version, m.state_.version());
      m.validate_transfer_streams(transfer_streams);
      m.preflight(name, nullptr, m.to_actions(specs));
      report.plan_name = name;
      report.started_at_ns = now_ns();
      return true;
    }
    bool run_phase(StepKind phase) {
      m.run_phase(name, phase, specs, transfer_streams, report);
      return true;
    }
  } steps{*this, name, specs, expected_state_version, transfer_streams, report};
  execute_action_list(steps);
  report.completed_at_ns = now_ns();
  return report;
}

void Manager::run_phase(const std::string &plan_name, ExecutionPhase phase,
                        std::span<const ActionSpec> actions, const TransferStreams &streams,
                        PlanReport &report) {
  std::size_t i = 0;
  while (i < actions.size()) {
    try {
      reap(); // §7.4: before every executed action (a window reaps before each of its later ones)
    } catch (...) {
      fail_phase(plan_name, phase, i, std::current_exception(), report);
    }
    if (overlap_transfers_) {
      if (const std::size_t next = run_overlapped(plan_name, phase, actions, i, streams, report); next > i) {
        i = next;
        continue;
      }
    }
    try {
      // Resolved now: exit actions run without a new preflight, so a handle
      // discarded by the body must fail here as a handle error.
      const Action action{actions[i].kind, resolve(actions[i].handle), actions[i].location, actions[i].from};
      const bool copies_to_destination =
          action.kind != ActionKind::Drop && action.kind != ActionKind::Discard;
      report.transitions.push_back(
          run_transition(action, copies_to_destination ? stream_for(streams, action.location) : Stream{}));
    } catch (...) {
      fail_phase(plan_name, phase, i, std::current_exception(), report);
    }
    ++i;
  }
}

void Manager::fail_phase(const std::string &plan_name, ExecutionPhase phase, std::size_t index,
                         std::exception_ptr error, PlanReport &report) {
  ResidencyPlanExecutionError::Details details;
  try {
    std::rethrow_exception(error);
  } catch (const ResidencyError &e) {
    details.detail = e.what();
    details.cause = e.error_class();
  } catch (const std::exception &e) {
    details.detail = e.what();
  }
  details.plan_name = plan_name;
  details.phase = phase;
  details.failed_action_index = index;
  report.completed_at_ns = now_ns();
  details.partial_report = report;
  throw ResidencyPlanExecutionError(std::move(details));
}

Scope Manager::scope(PlanSpec plan, std::optional<std::uint64_t> expected_state_version,
                     TransferStreams transfer_streams) {
  require_name(plan.name, "a plan");
  for (const Reservation &r : plan.reservations)
    if (r.label.find_first_not_of(" \t\n") == std::string::npos)
      throw std::invalid_argument("a reservation needs a non-blank label");
  return Scope(*this, std::move(plan), expected_state_version, std::move(transfer_streams));
}

Scope::Scope(Scope &&other) noexcept
    : manager_(other.manager_), plan_(std::move(other.plan_)),
      expected_state_version_(other.expected_state_version_),
      transfer_streams_(std::move(other.transfer_streams_)), stage_(other.stage_),
      entered_(std::move(other.entered_)), reservations_(std::move(other.reservations_)),
      report_(std::move(other.report_)), exit_error_(std::move(other.exit_error_)) {
  other.stage_ = Stage::Closed;
  other.reservations_.clear();
}

Scope::~Scope() {
  if (stage_ != Stage::Entered) return;
  for (LifetimeId id : reservations_)
    manager_->abandon(id);
}

void Scope::enter() {
  if (stage_ != Stage::Created) throw std::logic_error("scope '" + plan_.name + "' entered twice");
  stage_ = Stage::Closed; // any failure below consumes the scope
  Manager &m = *manager_;
  auto lock = m.open_lock();
  // The steps of enter_scope; failures throw, after the sequence released
  // the reservations admitted so far.
  struct Steps {
    Scope &scope;
    Manager &m;

    bool preflight() {
      m.reap();
      check_expected_version(scope.expected_state_version_, m.state_.version());
      m.validate_transfer_streams(scope.transfer_streams_);
      m.preflight(scope.plan_.name, &scope.plan_, m.to_actions(scope.plan_.enter));
      scope.entered_.plan_name = scope.plan_.name;
      scope.entered_.started_at_ns = now_ns();
      return true;
    }
    bool run_phase(StepKind phase) {
      m.run_phase(scope.plan_.name, phase, phase_actions(scope.plan_, phase), scope.transfer_streams_,
                  scope.entered_);
      return true;
    }
    std::size_t reservation_count() const { return scope.plan_.reservations.size(); }
    bool reserve(std::size_t index) {
      const Reservation &r = scope.plan_.reservations[index];
      LifetimeId id = 0;
      FailureDetail detail;
      if (Outcome outcome = m.state_.reserve(r.location, r.nbytes, r.label, &id, &detail); outcome.failed()) {
        ResidencyPlanExecutionError::Details details;
        details.plan_name = scope.plan_.name;
        details.phase = ExecutionPhase::Reserve;
        details.failed_reservation_index = index;
        details.partial_report = scope.entered_;
        details.detail = describe(outcome, {{}, r.label}, &detail);
        details.cause = outcome.error;
        throw ResidencyPlanExecutionError(std::move(details));
      }
      scope.reservations_.push_back(id);
      return true;
    }
    void release_reservations() noexcept { m.release_all(scope.reservations_); }
  } steps{*this, m};
  enter_scope(steps);
  stage_ = Stage::Entered;
}

void Scope::close() {
  if (stage_ == Stage::Created) throw std::logic_error("scope '" + plan_.name + "' closed before entry");
  if (stage_ == Stage::Closed) return;
  stage_ = Stage::Closed; // whatever happens next, the scope is spent
  Manager &m = *manager_;
  std::optional<Manager::StateLock> lock;
  try {
    lock.emplace(m.open_lock());
  } catch (const ResidencyReentrancyError &) {
    // No exit now (a source callback runs); the reservations must still go.
    for (LifetimeId id : reservations_)
      m.defer_release(id);
    reservations_.clear();
    throw;
  }
  // The steps of exit_scope: an exit failure throws after the sequence
  // released the reservations.
  struct Steps {
    Scope &scope;
    Manager &m;

    bool run_phase(StepKind phase) {
      m.run_phase(scope.plan_.name, phase, phase_actions(scope.plan_, phase), scope.transfer_streams_,
                  scope.entered_);
      return true;
    }
    void release_reservations() noexcept { m.release_all(scope.reservations_); }
  } steps{*this, m};
  try {
    exit_scope(steps);
  } catch (const ResidencyPlanExecutionError &error) {
    exit_error_ = error; // §12.3: kept however close() was reached
    throw;
  }
  entered_.completed_at_ns = now_ns();
  report_ = std::move(entered_);
}

} // namespace fhr
