// Overlap inside a plan (issue #5): the copies of consecutive independent
// actions of one phase run at the same time on the backend's copy engines
// (an eviction to host beside a prefetch to a device, keys to several
// devices), while the state still changes one action at a time in plan
// order. Each action is applied only once its copy has finished, so a
// failure leaves exactly the report of the actions before it, and the
// copies started for the actions after it are waited for and freed without
// a trace in the state.
#include "fhr/runtime/manager.hpp"

#include "clock.hpp"
#include "fhr/model/overlap_window.hpp"
#include "fhr/model/overlay.hpp"
#include "fhr/model/transfer_recorder.hpp"

#include <algorithm>

namespace fhr {

std::size_t Manager::run_overlapped(const std::string &plan_name, ExecutionPhase phase,
                                    std::span<const ActionSpec> actions, std::size_t first,
                                    const TransferStreams &streams, PlanReport &report) {
  struct WindowEntry {
    std::size_t index = 0; ///< in the phase
    Action action;
    Stream stream;
    PreparedCopy copy;
  };
  // The caller has just reaped; reaping later only lifts protections, so
  // what is a plain copy now stays one.
  std::vector<WindowEntry> window;
  // Which actions join the window is the model's rule (the time predictor
  // forms the same windows); the source of each is a dry run of the rules
  // against the state as it is, since none of the window has committed.
  OverlapWindow rule;
  StateOverlay dry_run(state_);
  std::exception_ptr start_failure;
  std::size_t next = first;
  for (; next < actions.size(); ++next) {
    const ActionSpec &spec = actions[next];
    if (spec.kind == ActionKind::Drop || spec.kind == ActionKind::Discard) break;
    const Action action{spec.kind, resolve_for_plan(spec.handle), spec.location, spec.from};
    dry_run.reset();
    TransferRecorder transfer;
    const bool plain_copy =
        !dry_run.apply(action, nullptr, transfer).failed() && transfer.record.plain_copy();
    const ValueSpec &spec_of_value = state_.value(action.value).spec;
    const OverlapCandidate candidate{plain_copy ? transfer.record.copied_from : std::nullopt, action.value,
                                     action.location, spec_of_value.storage_nbytes};
    if (!rule.admits(candidate, state_.account(action.location)))
      break; // a no-op, a load, a failure, a dependency or no room yet: runs alone, in order
    const Location source = *candidate.plain_copy_source;

    WindowEntry entry{next, action, stream_for(streams, action.location), PreparedCopy{}};
    PreparedCopy &copy = entry.copy;
    copy.from = source;
    copy.to = action.location;
    copy.started_at_ns = now_ns();
    try {
      copy.storage =
          backend_.memory->allocate(action.location, static_cast<std::size_t>(spec_of_value.logical_nbytes));
    } catch (...) {
      // Memory may be held by the copies in flight: they commit first and
      // this action is tried again on its own. Alone, the failure is its own.
      if (window.empty()) start_failure = std::current_exception();
      break;
    }
    copy.issued_at_ns = now_ns();
    try {
      copy.copy = backend_.copies->begin_copy(*replica(action.value, source), copy.storage, entry.stream);
    } catch (...) {
      start_failure = std::current_exception();
      break;
    }
    rule.add(candidate);
    window.push_back(std::move(entry));
  }
  if (window.empty() && !start_failure) return first;

  for (std::size_t k = 0; k < window.size(); ++k) {
    WindowEntry &entry = window[k];
    try {
      if (k > 0) reap(); // §7.4: before every executed action (the caller reaped for the first)
      backend_.copies->finish_copy(std::exchange(entry.copy.copy, CopyInFlight{}));
      report.transitions.push_back(run_transition(entry.action, entry.stream, &entry.copy));
      report.transitions.back().window_position = static_cast<std::uint32_t>(k);
    } catch (...) {
      const std::exception_ptr error = std::current_exception();
      // Undo what did not commit: wait for the later copies, then free
      // their storage (window's destructor) before reporting.
      for (std::size_t later = k + 1; later < window.size(); ++later) {
        try {
          backend_.copies->finish_copy(window[later].copy.copy);
        } catch (...) { // their failures are not this plan's: it stopped at `k`
        }
      }
      window.clear();
      fail_phase(plan_name, phase, entry.index, error, report);
    }
  }
  if (start_failure) fail_phase(plan_name, phase, next, start_failure, report);
  return next;
}

} // namespace fhr
