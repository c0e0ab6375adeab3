#pragma once
/// \file
/// A schedule: for every step, the plan that makes it resident (reclaim,
/// the step's workspace reservations, enter) and the actions issued while
/// it computes (prefetches for later steps). Both the planner and the
/// reference LRU baseline produce one; it is checked on the model State
/// exactly as `fhr-plan check` checks the program it prints, timed with a
/// link model, and printed as a `.fhr` program.

#include "fhr/model/link_model.hpp"
#include "fhr/model/plan.hpp"
#include "fhr/planner/gap_model.hpp"
#include "fhr/planner/workload.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fhr::planner {

struct StepPlan {
  std::vector<Action> reclaim;
  std::vector<Reservation> reservations;
  std::vector<Action> enter;
  /// Issued once the step is entered, while it computes: loads for later
  /// steps on the copy engines (a program's `actions` in the scope body).
  std::vector<Action> during;
};

struct Schedule {
  std::vector<StepPlan> steps;
};

/// Where a move that waits for another's room (two values swapping
/// devices, neither with room for both) stops on its way.
enum class SwapStop : std::uint8_t {
  SpillTier, ///< the first of its spill tiers with room through the step, else pageable memory
  Pageable,  ///< always pageable memory
};

struct Realized {
  Schedule schedule;
  /// What each budgeted location has left at every step under the schedule
  /// (its capacity less the kept gaps and the spills it placed there,
  /// counted from the step before they arrive).
  std::vector<std::vector<std::int64_t>> room_left;
  /// How many swaps stopped somewhere other than pageable memory.
  std::size_t stops_on_tiers = 0;
};

/// Turns a choice of gaps into a schedule: evictions right after a value's
/// last use before a gap it does not keep (a drop if it can be rebuilt,
/// else a move to the first spill tier with room, pageable last), loads
/// right before the use, in an order every budget admits.
Realized realize(const Workload &workload, const GapModel &model, const Selection &selection,
                 SwapStop swap_stop = SwapStop::SpillTier);

/// One copy the schedule makes, as the manager would: from the replica it
/// copies (or the source it loads), to where.
struct Transfer {
  std::uint32_t step = 0;
  enum class Phase : std::uint8_t { Reclaim, Enter, During } phase = Phase::Enter;
  ValueId value = 0;
  Location from, to;
  std::uint64_t bytes = 0; ///< charged: the value's storage bytes
  /// What the copy moves, and so what it takes time for: the runtime
  /// allocates and copies a value's logical bytes.
  std::uint64_t logical_bytes = 0;
  /// A reconstruction: the value's source fills storage at `from` first
  /// (the model's StepTransfer::Load), where `from` may be `to`.
  bool load = false;
  /// The runtime's overlap window that starts the copy (overlap_window.hpp),
  /// numbered across the schedule: the copies of one window start together,
  /// a window starts once the one before it in its phase is done, and a
  /// load is a window of its own.
  std::uint32_t window = 0;
};

struct Verification {
  bool feasible = true;
  /// The first failure: "step 3 'name', enter action 2: Transition exceeds budget at cuda:0".
  std::string failure;
  std::vector<Transfer> transfers;
  /// Highest used + reserved seen per budgeted location (workload order).
  std::vector<std::pair<Location, std::uint64_t>> peaks;
  std::uint64_t bytes_moved = 0;
  std::array<std::uint64_t, kLinkKindCount> bytes_per_link{};
  /// Loads from a source into the source's own location (no link).
  std::uint64_t bytes_loaded_in_place = 0;
  /// charge[l][t]: used + reserved at budgeted location l while step t runs.
  std::vector<std::vector<std::uint64_t>> charge;
};

/// Runs the schedule on the model State as the printed program runs: per
/// step, the scope's preflight over the whole plan, reclaim, reservations,
/// enter, then the `during` actions (preflighted as an action list), then
/// the reservations released.
Verification verify_schedule(const Workload &workload, const Schedule &schedule);

struct Timeline {
  double total_seconds = 0;
  double compute_seconds = 0;
  /// Time steps wait for their values (the sum of the gaps between steps).
  double stall_seconds = 0;
  /// Time copies run, alone or together.
  double transfer_seconds = 0;
  /// Copy time that runs while a step computes.
  double overlapped_seconds = 0;
  double overlap_fraction() const {
    return transfer_seconds > 0 ? overlapped_seconds / transfer_seconds : 1.0;
  }
};

/// Times a verified schedule with a link model (docs/planner.md, "Time")
/// on the copy engines of the time predictor of `explain --profile`
/// (fhr/model/copy_flows.hpp), each copy priced as the predictor prices it
/// (a load at its load curve, its source's fill left out; what a DMA pays
/// for the state it meets). A phase runs window by window
/// (Transfer::window), a load alone; a step's reclaim runs before its
/// enter, and a step starts once the previous one ended and every value it
/// needs has arrived; copies issued `during` a step are issued when it
/// starts and stream while it computes.
Timeline time_schedule(const Workload &workload, const Verification &verification, const LinkModel &links);

/// Moves loads into the `during` list of an earlier step where the room
/// left at every step in between admits them and the copy engine has time
/// while those steps compute (docs/planner.md, "Prefetch"). Changes no
/// byte moved.
/// `room_left` is realize's: what every budgeted location has left per step.
void schedule_prefetch(const Workload &workload, const GapModel &model,
                       std::vector<std::vector<std::int64_t>> room_left, Schedule &schedule,
                       const LinkModel &links);

/// The schedule as a complete `.fhr` program: budgets, devices, values, one
/// plan per step and one program that runs them in order (prefetches in
/// each scope's body).
std::string emit_program(const Workload &workload, const Schedule &schedule, const std::string &header);

/// "256 MiB", "30 MiB", "4097 B": exact, in the largest binary unit that divides.
std::string size_text(std::uint64_t bytes);

} // namespace fhr::planner
