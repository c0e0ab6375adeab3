// A schedule run on the model State, step by step, as its printed program
// runs under `fhr-plan check`: the same simulator, the same rules.
#include "fhr/model/overlap_window.hpp"
#include "fhr/model/simulator.hpp"
#include "fhr/model/state.hpp"
#include "fhr/planner/schedule.hpp"

#include <algorithm>

namespace fhr::planner {

namespace {

std::string phase_text(Transfer::Phase phase) {
  switch (phase) {
  case Transfer::Phase::Reclaim: return "reclaim";
  case Transfer::Phase::Enter: return "enter";
  case Transfer::Phase::During: return "during";
  }
  return {};
}

/// The runtime's overlap windows over one phase's actions, as the manager
/// forms them (manager/src/overlap.cpp): the model's rule, asked with each
/// destination's account as the window found it (none of a window's
/// actions commits before the window is formed). The verifier applies the
/// actions one at a time, so the accounts each action is about to change
/// are remembered the first time the window meets them.
class Windows {
public:
  /// A new phase: its first action starts a window.
  void end_window() {
    rule_.clear();
    at_start_.clear();
  }
  /// Before `action` is applied: the accounts it may change, as they are.
  void before(const State &state, const Action &action) {
    before_.clear();
    const auto note = [&](Location l) {
      if (std::none_of(before_.begin(), before_.end(), [&](const auto &e) { return e.first == l; }))
        before_.emplace_back(l, state.account(l));
    };
    note(action.location);
    state.value(action.value).resident.for_each(note);
    if (const std::optional<Location> &source = state.value(action.value).source_location) note(*source);
  }
  /// After it was applied as `candidate` (no plain copy source: a load, a
  /// drop, a no-op, which runs alone): the window it joins or starts.
  std::uint32_t place(const OverlapCandidate &candidate) {
    if (!rule_.empty() && rule_.admits(candidate, start_account(candidate.destination))) {
      for (const auto &entry : before_)
        if (std::none_of(at_start_.begin(), at_start_.end(),
                         [&](const auto &e) { return e.first == entry.first; }))
          at_start_.push_back(entry);
      rule_.add(candidate);
      return id_;
    }
    ++id_;
    rule_.clear();
    at_start_ = before_;
    if (candidate.plain_copy_source)
      rule_.add(candidate);
    else
      at_start_.clear(); // runs alone: the next action starts a window
    return id_;
  }

private:
  LocationAccount start_account(Location l) const {
    for (const auto *list : {&at_start_, &before_})
      for (const auto &[at, account] : *list)
        if (at == l) return account;
    return {}; // not reached: before() noted every destination
  }

  OverlapWindow rule_;
  std::vector<std::pair<Location, LocationAccount>> at_start_, before_;
  std::uint32_t id_ = 0;
};

class Verifier {
public:
  Verifier(const Workload &w, Verification &out) : w_(w), out_(out), state_(devices(w)) {}

  static DeviceConfig devices(const Workload &w) {
    DeviceConfig config;
    if (w.devices) {
      config.cuda_available = *w.devices > 0;
      config.device_count = *w.devices;
    }
    return config;
  }

  void run(const Schedule &schedule) {
    for (const auto &[at, bytes] : w_.budgets)
      state_.set_budget(at, bytes);
    for (ValueId v = 0; v < w_.values.size(); ++v) {
      const Value &value = w_.values[v];
      const ValueSpec spec{value.logical_bytes, value.storage_bytes, value.mode,
                           value.adopted ? Recoverability::MustPreserve : Recoverability::Reconstructible};
      const Outcome o =
          value.adopted ? state_.adopt(v, spec, value.home) : state_.register_source(v, spec, value.home);
      if (o.failed()) return fail("setup of " + value.name + ": " + describe(o, {value.name, {}}));
    }
    if (schedule.steps.size() != w_.steps.size())
      return fail("the schedule has " + std::to_string(schedule.steps.size()) + " steps, the workload " +
                  std::to_string(w_.steps.size()));
    out_.charge.assign(w_.budgets.size(), std::vector<std::uint64_t>(w_.steps.size(), 0));
    for (std::uint32_t t = 0; t < schedule.steps.size() && out_.feasible; ++t)
      step(t, schedule.steps[t]);
    for (const auto &[at, bytes] : w_.budgets)
      out_.peaks.emplace_back(at, state_.account(at).peak_charged_bytes);
  }

private:
  void fail(std::string message) {
    if (!out_.feasible) return;
    out_.feasible = false;
    out_.failure = std::move(message);
  }
  std::string where(std::uint32_t t) const {
    return "step " + std::to_string(t) + " '" + w_.steps[t].name + "'";
  }

  /// The whole-plan preflight a scope entry or action list runs.
  bool preflight(std::uint32_t t, const PlanView &view, const char *what) {
    Simulator simulator(state_);
    const Explanation e = simulator.explain(view);
    if (e.feasible) return true;
    const SimulatedStep &failed = *e.first_failure();
    std::string name, label;
    if (failed.phase == Phase::Reserve) {
      label = view.reservations[failed.index].label;
    } else {
      const std::span<const Action> actions = failed.phase == Phase::Reclaim ? view.reclaim
                                              : failed.phase == Phase::Exit  ? view.exit
                                                                             : view.enter;
      name = w_.values[actions[failed.index].value].name;
    }
    fail(where(t) + ", " + what + " " + std::string(phase_name(failed.phase)) + " " +
         std::to_string(failed.index) + ": " + describe(failed.outcome, {name, label}, &e.failure_detail));
    return false;
  }

  bool apply(std::uint32_t t, Transfer::Phase phase, const Action &action, std::size_t index) {
    const bool was_there = state_.value(action.value).resident.contains(action.location);
    windows_.before(state_, action);
    FailureDetail detail;
    StepTransfer transfer = StepTransfer::None;
    const Outcome o = state_.apply(action, &detail, transfer);
    if (o.failed()) {
      fail(where(t) + ", " + phase_text(phase) + " action " + std::to_string(index) + ": " +
           describe(o, {w_.values[action.value].name, {}}, &detail));
      return false;
    }
    const bool copies = action.kind != ActionKind::Drop && action.kind != ActionKind::Discard;
    const bool transfers = copies && o.verdict == Verdict::Ok && !was_there && o.source;
    const bool load = transfer == StepTransfer::Load;
    const std::uint32_t window =
        windows_.place(OverlapCandidate{transfers && !load ? o.source : std::nullopt, action.value,
                                        action.location, w_.values[action.value].storage_bytes});
    if (transfers) {
      const std::uint64_t bytes = w_.values[action.value].storage_bytes;
      out_.transfers.push_back(Transfer{t, phase, action.value, *o.source, action.location, bytes,
                                        w_.values[action.value].logical_bytes, load, window});
      out_.bytes_moved += bytes;
      if (const std::optional<LinkKind> link = link_between(*o.source, action.location))
        out_.bytes_per_link[static_cast<std::size_t>(*link)] += bytes;
      else
        out_.bytes_loaded_in_place += bytes;
    }
    return true;
  }

  void step(std::uint32_t t, const StepPlan &plan) {
    if (!preflight(t, PlanView{plan.reclaim, plan.reservations, plan.enter, {}}, "plan")) return;
    windows_.end_window();
    for (std::size_t i = 0; i < plan.reclaim.size(); ++i)
      if (!apply(t, Transfer::Phase::Reclaim, plan.reclaim[i], i)) return;
    std::vector<LifetimeId> reservations;
    for (const Reservation &r : plan.reservations) {
      LifetimeId id = 0;
      FailureDetail detail;
      const Outcome o = state_.reserve(r.location, r.nbytes, r.label, &id, &detail);
      if (o.failed())
        return fail(where(t) + ", reservation '" + r.label + "': " + describe(o, {{}, r.label}, &detail));
      reservations.push_back(id);
    }
    windows_.end_window();
    for (std::size_t i = 0; i < plan.enter.size(); ++i)
      if (!apply(t, Transfer::Phase::Enter, plan.enter[i], i)) return;
    // The step's values must all be there now.
    for (const Need &n : w_.steps[t].needs)
      if (!state_.value(n.value).resident.contains(n.at))
        return fail(where(t) + ": " + w_.values[n.value].name + " is not resident at " + n.at.name());
    if (!plan.during.empty()) {
      if (!preflight(t, PlanView{{}, {}, plan.during, {}}, "prefetch")) return;
      windows_.end_window();
      for (std::size_t i = 0; i < plan.during.size(); ++i)
        if (!apply(t, Transfer::Phase::During, plan.during[i], i)) return;
    }
    for (std::size_t l = 0; l < w_.budgets.size(); ++l)
      out_.charge[l][t] = state_.account(w_.budgets[l].first).charged_bytes();
    for (auto it = reservations.rbegin(); it != reservations.rend(); ++it)
      state_.release(*it);
  }

  const Workload &w_;
  Verification &out_;
  State state_;
  Windows windows_;
};

} // namespace

Verification verify_schedule(const Workload &workload, const Schedule &schedule) {
  Verification out;
  Verifier(workload, out).run(schedule);
  return out;
}

} // namespace fhr::planner
