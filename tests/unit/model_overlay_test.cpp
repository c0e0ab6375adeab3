// The rule engine's two stores (runtime/model/src/rules.hpp): the
// copy-on-touch StateOverlay that explain and dry runs use never changes its
// base and resets to it; on random states and actions it runs exactly the
// State's rules (outcome, figures, hook calls, resulting books), differing
// only where docs/semantics.md §10.2 says explain differs; a dry run of an
// overlap window predicts what apply() then does; and explaining every
// example's plans agrees with executing them on the State.
#include "fhr/executor/interpreter.hpp"
#include "fhr/executor/model_target.hpp"
#include "fhr/model/overlay.hpp"
#include "fhr/model/simulator.hpp"
#include "fhr/model/step_transfer.hpp"
#include "fhr/model/transfer_recorder.hpp"
#include "random_program.hpp"
#include "test_support.hpp"

#include <random>
#include <set>

using namespace fhr;

namespace {

const Location pageable = Location::pageable();
const Location pinned = Location::pinned();
const Location gpu0 = Location::cuda(0);
const Location gpu1 = Location::cuda(1);
/// Random states use three devices; cuda:3 is unavailable.
constexpr unsigned kDevices = 3;
const Location kLocations[] = {pageable, pinned, gpu0, gpu1, Location::cuda(2), Location::cuda(3)};
constexpr std::uint64_t kUnit = 1 << 10;
constexpr ValueId kValues = 6;

/// Everything of a State that the rules read or change.
struct Books {
  std::uint64_t version = 0;
  std::vector<Location> registry;
  std::vector<std::tuple<Location, std::optional<std::uint64_t>, std::uint64_t, std::uint64_t, std::uint64_t,
                         std::uint64_t>>
      accounts;
  std::vector<std::tuple<ValueStatus, std::optional<Location>, LocationSet, LocationSet, std::size_t>> values;
  std::vector<LifetimeId> lifetimes;
  friend bool operator==(const Books &, const Books &) = default;
};

Books books(const State &state) {
  Books b;
  b.version = state.version();
  b.registry = state.registry();
  for (Location l : kLocations) {
    const LocationAccount &a = state.account(l);
    b.accounts.emplace_back(l, a.budget_bytes, a.used_bytes, a.reserved_bytes, a.peak_used_bytes,
                            a.peak_charged_bytes);
  }
  for (ValueId v = 0; v < state.value_count(); ++v) {
    const ValueRecord &r = state.value(v);
    b.values.emplace_back(r.status, r.source_location, r.resident, r.protected_at, r.protections.size());
  }
  b.lifetimes = state.live_lifetimes();
  return b;
}

Location any_location(std::mt19937 &rng, bool valid_only = false) {
  return kLocations[rng() % (valid_only ? std::size(kLocations) - 1 : std::size(kLocations))];
}

/// A random state: budgets, adopted and source-backed values with replicas
/// made by the rules themselves, holds, leases (some pending) and reservations.
State random_state(std::mt19937 &rng) {
  State state(DeviceConfig{true, kDevices});
  for (Location l : kLocations)
    if (l != pageable && l != Location::cuda(3) && rng() % 2) state.set_budget(l, (rng() % 24) * kUnit);
  for (ValueId v = 0; v < kValues; ++v) {
    const std::uint64_t size = (rng() % 5) * kUnit;
    const ReplicaMode mode = rng() % 2 ? ReplicaMode::Replicable : ReplicaMode::Exclusive;
    if (rng() % 3 == 0) {
      state.register_source(v, ValueSpec{size, size, mode, Recoverability::Reconstructible},
                            any_location(rng, true));
    } else {
      const ValueSpec spec{size, size, mode, Recoverability::MustPreserve};
      if (state.adopt(v, spec, any_location(rng, true)).failed())
        REQUIRE_FALSE(state.adopt(v, spec, pageable).failed()); // pageable has no budget
    }
  }
  for (int i = 0; i < 8; ++i) {
    const ActionKind kind = rng() % 2 ? ActionKind::Ensure : ActionKind::Move;
    state.apply(Action{kind, static_cast<ValueId>(rng() % kValues), any_location(rng, true), std::nullopt});
  }
  for (int i = 0; i < 3; ++i) {
    const ValueId value[] = {static_cast<ValueId>(rng() % kValues)};
    const Location at = any_location(rng, true);
    LifetimeId id = 0;
    const LifetimeKind kind = rng() % 2 ? LifetimeKind::Hold : LifetimeKind::Lease;
    if (!state.protect(kind, value, at, &id).failed() && kind == LifetimeKind::Lease && rng() % 2)
      state.release(id, /*events_pending=*/true);
  }
  if (rng() % 2) {
    LifetimeId id = 0;
    state.reserve(any_location(rng, true), (rng() % 4) * kUnit, "r", &id);
  }
  return state;
}

Action random_action(std::mt19937 &rng) {
  Action action;
  action.kind = static_cast<ActionKind>(rng() % 5);
  action.value = static_cast<ValueId>(rng() % (kValues + 1)); // kValues: an unknown handle
  action.location = any_location(rng);
  if (action.kind == ActionKind::Move && rng() % 3 == 0) action.from = any_location(rng);
  return action;
}

/// The overlay shows the books and replicas the State shows.
void check_same_books(const StateOverlay &overlay, const State &state) {
  for (Location l : kLocations) {
    CAPTURE(l.name());
    CHECK(overlay.account(l).used_bytes == state.account(l).used_bytes);
    CHECK(overlay.account(l).reserved_bytes == state.account(l).reserved_bytes);
    CHECK(overlay.account(l).peak_used_bytes == state.account(l).peak_used_bytes);
  }
  for (ValueId v = 0; v < state.value_count(); ++v) {
    CAPTURE(v);
    CHECK(overlay.resident(v) == state.value(v).resident);
  }
}

} // namespace

TEST_CASE("overlay: never changes its base; reset returns to the base") {
  State base(DeviceConfig{true, 2});
  base.set_budget(gpu0, 8 * kUnit);
  REQUIRE_FALSE(base.adopt(0, ValueSpec{4 * kUnit, 4 * kUnit, ReplicaMode::Replicable}, pinned).failed());
  REQUIRE_FALSE(base.adopt(1, ValueSpec{4 * kUnit, 4 * kUnit}, gpu0).failed());
  REQUIRE_FALSE(base.register_source(2,
                                     ValueSpec{2 * kUnit, 2 * kUnit, ReplicaMode::Exclusive,
                                               Recoverability::Reconstructible},
                                     pageable)
                    .failed());
  const ValueId held[] = {0};
  LifetimeId hold = 0, reservation = 0;
  REQUIRE_FALSE(base.protect(LifetimeKind::Hold, held, pinned, &hold).failed());
  REQUIRE_FALSE(base.reserve(gpu0, kUnit, "w", &reservation).failed());
  const Books before = books(base);

  StateOverlay overlay(base);
  CHECK(overlay.apply(Action{ActionKind::Ensure, 0, gpu1, {}}).verdict == Verdict::Ok);
  CHECK(overlay.apply(Action{ActionKind::Move, 1, pinned, {}}).verdict == Verdict::Ok);
  CHECK(overlay.apply(Action{ActionKind::Ensure, 2, gpu0, {}}).verdict == Verdict::Ok);
  CHECK(overlay.reserve(gpu1, kUnit).verdict == Verdict::Ok);
  CHECK(overlay.apply(Action{ActionKind::Drop, 0, pinned, {}}).reason == Reason::MaterializationProtected);
  CHECK(overlay.apply(Action{ActionKind::Discard, 1, {}, {}}).verdict == Verdict::Ok);
  CHECK(overlay.apply(Action{ActionKind::Ensure, 1, pinned, {}}).reason == Reason::ValueDiscardedInPlan);
  CHECK(overlay.reserve(gpu0, 8 * kUnit).reason == Reason::ReservationExceedsBudget);

  // The overlay saw every change...
  CHECK(overlay.resident(0).contains(gpu1));
  CHECK(overlay.resident(1).empty());
  CHECK(overlay.discarded(1));
  CHECK(overlay.resident(2) == LocationSet::of(gpu0));
  CHECK(overlay.account(gpu0).used_bytes == 2 * kUnit);
  CHECK(overlay.account(gpu0).peak_charged_bytes == 11 * kUnit); // 2 used + 1 reserved + 8 refused: > budget
  CHECK(overlay.account(gpu1).reserved_bytes == kUnit);
  CHECK(overlay.account(pageable).peak_charged_bytes == 2 * kUnit); // the temporary charge, released
  CHECK(overlay.account(pageable).reserved_bytes == 0);
  CHECK(overlay.first_referenced() == std::vector<Location>{gpu1});
  // ...the base none.
  CHECK(books(base) == before);

  overlay.reset();
  for (ValueId v = 0; v < 3; ++v) {
    CHECK(overlay.resident(v) == base.value(v).resident);
    CHECK(overlay.protected_at(v) == base.value(v).protected_at);
    CHECK_FALSE(overlay.discarded(v));
  }
  for (Location l : kLocations) {
    CAPTURE(l.name());
    const LocationAccount &live = base.account(l);
    CHECK(overlay.account(l).used_bytes == live.used_bytes);
    CHECK(overlay.account(l).reserved_bytes == live.reserved_bytes);
    CHECK(overlay.account(l).peak_charged_bytes == live.charged_bytes()); // peaks from the current charge
  }
  CHECK(overlay.first_referenced().empty());
  // After the reset the same plan gives the same results again.
  CHECK(overlay.apply(Action{ActionKind::Discard, 1, {}, {}}).verdict == Verdict::Ok);
  CHECK(overlay.apply(Action{ActionKind::Ensure, 0, gpu1, {}}).source == pinned);
  CHECK(books(base) == before);
}

TEST_CASE("overlay: reset takes the locations and charges its base gained since") {
  // The overlay keeps its own copy of every account (copied when it starts
  // and on reset): a base that changed between uses must be copied again.
  State base;
  REQUIRE_FALSE(base.adopt(0, ValueSpec{kUnit, kUnit, ReplicaMode::Replicable}, pinned).failed());
  StateOverlay overlay(base);
  CHECK(overlay.apply(Action{ActionKind::Ensure, 0, gpu0, {}}).verdict == Verdict::Ok);
  CHECK(overlay.account(gpu0).used_bytes == kUnit);
  CHECK(overlay.first_referenced() == std::vector<Location>{gpu0});

  base.set_budget(gpu1, 2 * kUnit);
  REQUIRE_FALSE(base.apply(Action{ActionKind::Ensure, 0, gpu0, {}}).failed());
  overlay.reset();
  CHECK(overlay.account(gpu1).budget_bytes == 2 * kUnit);
  CHECK(overlay.account(gpu0).used_bytes == kUnit); // the base's replica, counted once
  CHECK(overlay.first_referenced().empty());
  CHECK(overlay.apply(Action{ActionKind::Ensure, 0, gpu0, {}}).verdict == Verdict::NoOp);
  CHECK(overlay.apply(Action{ActionKind::Ensure, 0, gpu1, {}}).verdict == Verdict::Ok);
  CHECK(overlay.account(gpu1).used_bytes == kUnit);
  CHECK(overlay.account(gpu1).peak_charged_bytes == kUnit);
  // An unregistered location the overlay changed is zero again after a reset.
  const Location gpu2 = Location::cuda(2);
  CHECK(overlay.apply(Action{ActionKind::Ensure, 0, gpu2, {}}).verdict == Verdict::Ok);
  CHECK(overlay.account(gpu2).used_bytes == kUnit);
  overlay.reset();
  CHECK(overlay.account(gpu2).used_bytes == 0);
  CHECK(overlay.account(gpu2).peak_charged_bytes == 0);
  CHECK(overlay.account(gpu1).used_bytes == 0);
}

TEST_CASE("overlay: more values than a scan covers are indexed, and reset clears the index") {
  State base;
  for (ValueId v = 0; v < 40; ++v)
    REQUIRE_FALSE(base.adopt(v, ValueSpec{kUnit, kUnit, ReplicaMode::Replicable}, pinned).failed());
  StateOverlay overlay(base);
  for (int round = 0; round < 3; ++round) {
    for (ValueId v = 0; v < 40; v += 1 + round)
      CHECK(overlay.apply(Action{ActionKind::Ensure, v, gpu0, {}}).verdict == Verdict::Ok);
    for (ValueId v = 0; v < 40; ++v)
      CHECK(overlay.resident(v).contains(gpu0) == (v % (1 + round) == 0));
    CHECK(overlay.account(gpu0).used_bytes == (40 + round) / (1 + round) * kUnit);
    overlay.reset();
    for (ValueId v = 0; v < 40; ++v)
      CHECK_FALSE(overlay.resident(v).contains(gpu0));
  }
}

TEST_CASE("overlay: a completed pending lease protects nothing there, and only there") {
  State base;
  REQUIRE_FALSE(base.adopt(0, ValueSpec{kUnit, kUnit}, gpu0).failed());
  const ValueId one[] = {0};
  LifetimeId lease = 0;
  REQUIRE_FALSE(base.protect(LifetimeKind::Lease, one, gpu0, &lease).failed());
  base.release(lease, /*events_pending=*/true);
  const Action evict{ActionKind::Move, 0, pinned, {}};
  CHECK(StateOverlay(base).apply(evict).reason == Reason::SourceProtected);
  const LifetimeId completed[] = {lease};
  StateOverlay seeing_through(base, completed);
  CHECK(seeing_through.protected_at(0).empty());
  CHECK(seeing_through.apply(evict).verdict == Verdict::Ok);
  CHECK(base.is_protected(0, gpu0)); // the base still holds the pending token
}

TEST_CASE("overlay: on random states and actions it applies exactly the State's rules") {
  std::size_t compared = 0, failed = 0, copies = 0, loads = 0;
  for (std::uint32_t seed = 1; seed <= 1500; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    State executed = random_state(rng);
    executed.reset_peaks(); // the overlay measures peaks from the current charge
    State base = executed;
    StateOverlay overlay(base);
    std::vector<bool> discarded_here(kValues + 1, false);
    for (int step = 0; step < 12; ++step) {
      const Action action = random_action(rng);
      CAPTURE(step);
      CAPTURE(action_keyword(action.kind));
      CAPTURE(action.value);
      CAPTURE(action.location.name());
      FailureDetail dry_detail, live_detail;
      TransferRecorder dry_transfer, live_transfer;
      const Outcome dry = overlay.apply(action, &dry_detail, &dry_transfer);
      const Outcome live = executed.apply(action, &live_detail, &live_transfer);
      ++compared;
      CHECK(dry.verdict == live.verdict);
      CHECK(dry.error == live.error);
      CHECK(dry.where == live.where);
      // A value the sequence discarded is "discarded in the plan" to explain.
      if (discarded_here[action.value] && live.reason == Reason::HandleDiscarded)
        CHECK(dry.reason == Reason::ValueDiscardedInPlan);
      else
        CHECK(dry.reason == live.reason);
      CHECK(dry_transfer.record == live_transfer.record);
      if (live.failed()) {
        ++failed;
        CHECK_FALSE(live.source.has_value()); // execution reports no endpoints for a refusal
        CHECK_FALSE(live.destination.has_value());
        CHECK(dry_detail.budget_bytes == live_detail.budget_bytes);
        CHECK(dry_detail.used_bytes == live_detail.used_bytes);
        CHECK(dry_detail.reserved_bytes == live_detail.reserved_bytes);
        CHECK(dry_detail.requested_bytes == live_detail.requested_bytes);
        CHECK(dry_detail.protected_locations == live_detail.protected_locations);
      } else {
        CHECK(dry.source == live.source);
        CHECK(dry.destination == live.destination);
        copies += live_transfer.record.plain_copy();
        loads += live_transfer.record.loaded_at.has_value();
      }
      if (action.kind == ActionKind::Discard && !live.failed()) discarded_here[action.value] = true;
      check_same_books(overlay, executed);
      // Peaks agree, except that explain also counts the refused request.
      for (Location l : kLocations) {
        CAPTURE(l.name());
        std::uint64_t expected = executed.account(l).peak_charged_bytes;
        if (live.error == ErrorClass::Budget && l == live.where)
          expected = std::max(expected, live_detail.used_bytes + live_detail.reserved_bytes +
                                            live_detail.requested_bytes);
        CHECK(overlay.account(l).peak_charged_bytes == expected);
      }
      if (live.error == ErrorClass::Budget) {
        // Explain's peak now stays above the State's: both start again from
        // the State as it is.
        executed.reset_peaks();
        base = executed;
        overlay.reset();
        std::fill(discarded_here.begin(), discarded_here.end(), false);
      }
    }
  }
  // The random states reach every kind of outcome often.
  CHECK(failed > compared / 4);
  CHECK(copies > compared / 20);
  CHECK(loads > compared / 100);
}

TEST_CASE("overlay: a dry run of an overlap window's admission and source is what apply() then does") {
  std::size_t windows = 0, longest = 0, started = 0;
  for (std::uint32_t seed = 1; seed <= 1500; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    State state = random_state(rng);
    // The window of overlap.cpp: copies of distinct values, each admitted
    // with the bytes of the copies already in flight to its destination.
    struct Started {
      Action action;
      TransferRecord transfer;
    };
    std::vector<Started> window;
    std::array<std::uint64_t, Location::kCount> in_flight{};
    StateOverlay dry_run(state);
    for (int i = 0; i < 6; ++i) {
      const ActionKind kinds[] = {ActionKind::Ensure, ActionKind::Copy, ActionKind::Move};
      Action action{kinds[rng() % 3], static_cast<ValueId>(rng() % kValues), any_location(rng, true), {}};
      if (action.kind == ActionKind::Move && rng() % 3 == 0) action.from = any_location(rng, true);
      if (std::any_of(window.begin(), window.end(),
                      [&](const Started &s) { return s.action.value == action.value; }))
        break;
      dry_run.reset();
      TransferRecorder transfer;
      if (dry_run.reserve(action.location, in_flight[action.location.index()]).failed() ||
          dry_run.apply(action, nullptr, &transfer).failed() || !transfer.record.plain_copy())
        break;
      CHECK(transfer.record.copied_to == action.location);
      in_flight[action.location.index()] += state.value(action.value).spec.storage_nbytes;
      // The memory really in use while the copies run fits every budget:
      // the books as they are (sources still held) plus what is in flight.
      for (Location l : kLocations)
        if (const auto &budget = state.account(l).budget_bytes)
          CHECK(state.account(l).charged_bytes() + in_flight[l.index()] <= *budget);
      window.push_back(Started{action, transfer.record});
    }
    windows += !window.empty();
    longest = std::max(longest, window.size());
    started += window.size();
    // Committed in order, each action copies exactly what its dry run said.
    for (const Started &s : window) {
      TransferRecorder transfer;
      const Outcome outcome = state.apply(s.action, nullptr, &transfer);
      CHECK(outcome.verdict == Verdict::Ok);
      CHECK(outcome.source == s.transfer.copied_from);
      CHECK(transfer.record == s.transfer);
    }
  }
  CHECK(windows > 300);
  CHECK(longest >= 4);
  CHECK(started > windows + windows / 4); // many windows hold several copies
}

namespace {

/// Runs a plan on the State the way a scope runs it (reclaim, reservations,
/// enter, exit; stop at the first failure), for comparison with explain.
std::vector<SimulatedStep> execute(State &state, const PlanView &plan) {
  std::vector<SimulatedStep> steps;
  auto actions = [&](Phase phase, std::span<const Action> list) {
    for (std::uint32_t i = 0; i < list.size(); ++i) {
      steps.push_back(SimulatedStep{phase, i, state.apply(list[i])});
      if (steps.back().outcome.failed()) return false;
    }
    return true;
  };
  auto reservations = [&] {
    for (std::uint32_t i = 0; i < plan.reservations.size(); ++i) {
      LifetimeId id = 0;
      const Reservation &r = plan.reservations[i];
      steps.push_back(SimulatedStep{Phase::Reserve, i, state.reserve(r.location, r.nbytes, r.label, &id)});
      if (steps.back().outcome.failed()) return false;
    }
    return true;
  };
  (void)(actions(Phase::Reclaim, plan.reclaim) && reservations() && actions(Phase::Enter, plan.enter) &&
         actions(Phase::Exit, plan.exit));
  return steps;
}

/// Explain and execution of every plan of `text` agree step by step, and on
/// every peak but the one a refused request raises in explain.
std::size_t check_explain_matches_execution(const std::string &text) {
  const CompiledFile compiled = test::compile_ok(text);
  const bytecode::Module &module = *compiled.lowered->module;
  State state = initial_state(module);
  PlanTable table(module);
  {
    ModelTarget setup_target(state);
    if (!Interpreter(table, setup_target).run_setup().completed) return 0;
  }
  Simulator simulator(state);
  for (std::uint32_t index = 0; index < module.plans.size(); ++index) {
    const PlanSteps &plan = table.plan(index);
    CAPTURE(plan.name);
    const Explanation explained = simulator.explain(plan.view());
    State executed = state;
    executed.reset_peaks();
    const std::vector<SimulatedStep> steps = execute(executed, plan.view());
    REQUIRE(explained.steps.size() == steps.size());
    std::set<ValueId> discarded; // by this plan
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Outcome &predicted = explained.steps[i].outcome, &actual = steps[i].outcome;
      const Phase phase = steps[i].phase;
      CHECK(explained.steps[i].phase == phase);
      CHECK(explained.steps[i].index == steps[i].index);
      CHECK(predicted.verdict == actual.verdict);
      CHECK(predicted.error == actual.error);
      CHECK(predicted.where == actual.where);
      const Action *action = phase == Phase::Reserve   ? nullptr
                             : phase == Phase::Reclaim ? &plan.reclaim.actions[steps[i].index]
                             : phase == Phase::Enter   ? &plan.enter.actions[steps[i].index]
                                                       : &plan.exit.actions[steps[i].index];
      if (action && actual.reason == Reason::HandleDiscarded && discarded.count(action->value))
        CHECK(predicted.reason == Reason::ValueDiscardedInPlan);
      else
        CHECK(predicted.reason == actual.reason);
      if (action && action->kind == ActionKind::Discard && !actual.failed()) discarded.insert(action->value);
      if (!actual.failed()) {
        CHECK(predicted.source == actual.source);
        CHECK(predicted.destination == actual.destination);
      }
    }
    CHECK(explained.feasible == (steps.empty() || !steps.back().outcome.failed()));
    for (const LocationPrediction &p : explained.locations) {
      CAPTURE(p.location.name());
      const LocationAccount &after = executed.account(p.location);
      CHECK(p.used_before == state.account(p.location).used_bytes);
      CHECK(p.peak_used == after.peak_used_bytes);
      if (!explained.feasible && explained.first_failure()->outcome.error == ErrorClass::Budget &&
          explained.first_failure()->outcome.where == p.location) {
        const FailureDetail &d = explained.failure_detail;
        CHECK(p.peak_charged ==
              std::max(after.peak_charged_bytes, d.used_bytes + d.reserved_bytes + d.requested_bytes));
        CHECK(p.peak_charged > *p.budget_bytes);
      } else {
        CHECK(p.peak_charged == after.peak_charged_bytes);
      }
    }
  }
  return module.plans.size();
}

} // namespace

TEST_CASE("overlay: explaining every example's plans agrees with executing them on the State") {
  std::size_t plans = 0;
  for (const std::string &path : test::example_paths()) {
    CAPTURE(path);
    plans += check_explain_matches_execution(test::read_file(path));
  }
  CHECK(plans >= 10);
}

TEST_CASE("overlay: explaining random programs' plans agrees with executing them on the State") {
  std::size_t plans = 0;
  for (unsigned seed = 1; seed <= 1000; ++seed) {
    CAPTURE(seed);
    plans += check_explain_matches_execution(test::RandomProgram(seed).generate());
  }
  CHECK(plans > 400); // programs whose setup fails have no plan to compare
}

TEST_CASE(
    "StepTransferHooks: a step's transfer is what a TransferRecorder saw, on the State and the overlay") {
  std::size_t loads = 0, copies = 0, none = 0;
  for (std::uint32_t seed = 1; seed <= 800; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    const State start = random_state(rng);
    const Action action = random_action(rng);
    State recorded = start, flagged = start;
    TransferRecorder recorder;
    const Outcome outcome = recorded.apply(action, nullptr, &recorder);
    const StepTransfer expected = outcome.verdict != Verdict::Ok ? StepTransfer::None
                                  : recorder.record.loaded_at    ? StepTransfer::Load
                                  : recorder.record.plain_copy() ? StepTransfer::Copy
                                                                 : StepTransfer::None;
    StepTransfer executed = StepTransfer::None;
    CHECK(flagged.apply(action, nullptr, executed).verdict == outcome.verdict);
    CHECK(executed == expected);
    StateOverlay overlay(start);
    SimulatedStep explained;
    REQUIRE(overlay.apply_each(Phase::Enter, std::span(&action, 1), nullptr, &explained) == 1);
    CHECK(explained.outcome.verdict == outcome.verdict);
    CHECK(explained.transfer == expected);
    (expected == StepTransfer::Load ? loads : expected == StepTransfer::Copy ? copies : none) += 1;
  }
  // The random states reach every kind.
  CHECK(loads > 0);
  CHECK(copies > 0);
  CHECK(none > 0);
}
