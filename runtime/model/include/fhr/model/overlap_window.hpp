#pragma once
/// \file
/// The overlap window rule (docs/runtime.md, "Overlap inside a plan"), once:
/// which consecutive actions of one plan phase start their copies together.
/// The runtime's Manager forms its windows with it, and the time predictor
/// (fhr/model/timeline.hpp) forms the same windows to predict when each
/// copy runs.
///
/// A window is the longest run of consecutive actions, from the current
/// one, that are each a plain copy of a resident replica, of values
/// distinct from the rest of the window, at most kMaxOverlapWindow, whose
/// destinations still fit their budgets with the window's earlier
/// destinations charged and their sources not yet freed (the memory really
/// in use while the copies run never exceeds a budget).

#include "fhr/model/action.hpp"
#include "fhr/model/state.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace fhr {

/// Copies a window starts ahead at most: bounds the storage that waits for
/// its commit.
inline constexpr std::size_t kMaxOverlapWindow = 32;

/// The next action of a phase as the window rule sees it.
struct OverlapCandidate {
  /// The replica a plain copy would read (State::plain_copy_source);
  /// std::nullopt for anything else (a drop, a discard, a no-op, a load from
  /// a source, a refusal), which runs alone and ends the window.
  std::optional<Location> plain_copy_source;
  ValueId value = 0;
  Location destination;
  /// The value's storage bytes, charged at the destination.
  std::uint64_t storage_bytes = 0;
};

/// One window being formed: ask admits() for the next action, start its
/// copy, then add() it; a refusal ends the window.
class OverlapWindow {
public:
  /// Whether `candidate` joins the window. `destination_account` is the
  /// account of its destination with none of the window's actions applied
  /// (they commit only once the window is formed).
  bool admits(const OverlapCandidate &candidate, const LocationAccount &destination_account) const;
  /// Records a candidate that admits() accepted and whose copy has started.
  void add(const OverlapCandidate &candidate);

  std::size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  /// Forgets every action, to form the next window.
  void clear();

private:
  std::vector<ValueId> values_;
  std::vector<Location> destinations_; ///< where `starting_` is non-zero
  /// Bytes the started copies will charge, per destination.
  std::array<std::uint64_t, Location::kCount> starting_{};
};

/// Where a step ran with respect to the windows: on its own (a load, a
/// no-op, a removal, a direct call, or a copy whose window holds it
/// alone: the same in time), opening a window of several copies, or
/// joining the window of the step before it. The time predictor
/// (StepTime::window) and the manager (TransitionReport::window_position)
/// each say it, so `fhr-plan run` and the differential test compare the
/// windows explain predicts with the windows the runtime formed.
enum class WindowPlace : std::uint8_t { Alone, Opens, Joins };

/// The place of a step the manager ran at `position` in its window, before
/// a step at `next` (none at the end).
inline WindowPlace ran_window_place(std::optional<std::uint32_t> position,
                                    std::optional<std::uint32_t> next) {
  if (!position) return WindowPlace::Alone;
  if (*position > 0) return WindowPlace::Joins;
  return next == 1u ? WindowPlace::Opens : WindowPlace::Alone;
}

/// The place of a step the predictor put in window `window`, between steps
/// in windows `previous` and `next` (none at the ends, or for steps in none).
inline WindowPlace predicted_window_place(std::optional<std::uint32_t> previous,
                                          std::optional<std::uint32_t> window,
                                          std::optional<std::uint32_t> next) {
  if (!window) return WindowPlace::Alone;
  if (previous == window) return WindowPlace::Joins;
  return next == window ? WindowPlace::Opens : WindowPlace::Alone;
}

/// "alone", "opens" (a window), "joins" (the window before).
const char *window_place_name(WindowPlace place);

} // namespace fhr
