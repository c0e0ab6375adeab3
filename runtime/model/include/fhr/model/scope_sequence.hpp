#pragma once
/// \file
/// The order in which a scope and an action list run, written once for
/// every target: the runtime's Scope::enter/close and execute_actions, and
/// the model the compiler explains with. A target supplies the steps; this
/// file decides their order, which phase a failure belongs to, and what is
/// released when (docs/semantics.md §11, §12.2, §12.3):
///
///   entry:  preflight -> reclaim -> reservations, in order -> enter
///   exit:   exit actions -> the reservations, released last first (always)
///   list:   preflight -> the actions (phase execute)
///
/// A failure after the first reservation releases the reservations admitted
/// so far before the failure is reported; completed transitions stay.
///
/// A Steps type has these members (each may return false at a failure it
/// has recorded, or throw; the sequence unwinds with the same cleanup):
///
///   bool preflight();                        // checks before anything runs
///   bool run_phase(StepKind phase);          // Reclaim, Enter, Exit, Execute
///   std::size_t reservation_count() const;
///   bool reserve(std::size_t index);         // admits reservation `index`
///   void release_reservations() noexcept;    // ends what reserve admitted

#include "fhr/model/step_kind.hpp"

#include <cstddef>
#include <utility>
#include <vector>

namespace fhr {

/// Ends `lifetimes` in reverse order of opening (reservations stack, §12.3;
/// a body's lifetimes end together with it) and empties the list.
template <typename Token, typename Release>
void release_last_first(std::vector<Token> &lifetimes, Release &&release) {
  while (!lifetimes.empty()) {
    Token token = std::move(lifetimes.back());
    lifetimes.pop_back();
    release(token);
  }
}

namespace detail {
/// Releases a scope's reservations when it goes out of scope, unless kept.
template <typename Steps>
class ReservationRelease {
public:
  explicit ReservationRelease(Steps &steps) : steps_(steps) {}
  ReservationRelease(const ReservationRelease &) = delete;
  ReservationRelease &operator=(const ReservationRelease &) = delete;
  ~ReservationRelease() {
    if (!kept_) steps_.release_reservations();
  }
  void keep() { kept_ = true; }

private:
  Steps &steps_;
  bool kept_ = false;
};
} // namespace detail

/// §12.2: the whole-plan preflight, reclaim, the reservations, enter. True
/// when the scope is entered (its reservations are then held until
/// exit_scope); false at a failure, with nothing of the scope held.
template <typename Steps>
bool enter_scope(Steps &steps) {
  if (!steps.preflight()) return false;
  if (!steps.run_phase(StepKind::Reclaim)) return false;
  detail::ReservationRelease<Steps> release(steps);
  for (std::size_t i = 0; i < steps.reservation_count(); ++i)
    if (!steps.reserve(i)) return false;
  if (!steps.run_phase(StepKind::Enter)) return false;
  release.keep();
  return true;
}

/// §12.3: the exit actions without a new preflight, then the reservations
/// are released whether or not an exit action failed.
template <typename Steps>
bool exit_scope(Steps &steps) {
  detail::ReservationRelease<Steps> release(steps);
  return steps.run_phase(StepKind::Exit);
}

/// §11: the preflight of the actions alone, then the actions in order.
template <typename Steps>
bool execute_action_list(Steps &steps) {
  return steps.preflight() && steps.run_phase(StepKind::Execute);
}

} // namespace fhr
