#pragma once
/// \file
/// The planner's formulation (docs/planner.md, "Model"). Between two uses of
/// a value at a budgeted location there is a gap; keeping the value resident
/// across it occupies its bytes there for the gap's steps and saves the
/// transfers an eviction would cost later. Everything else a schedule does
/// is forced by the workload (first loads, moves between locations). So a
/// schedule is a choice of gaps to keep such that, at every step and
/// budgeted location, the kept gaps fit beside what the step itself needs:
///
///   maximise sum(saving_g * x_g)  subject to
///   sum over gaps g at L covering t of bytes_g * x_g  <=  capacity(L, t)
///   sum over the options g of one decision of x_g     <=  1
///
/// and bytes moved = baseline - sum(saving_g * x_g). Every optimiser (the
/// heuristic, the bound, the exact ILP) works on this model, and the
/// realiser turns a choice of gaps into actions.
///
/// Values fall in two classes:
///  - droppable (a reconstructible value, or a REPLICABLE one adopted in
///    unbudgeted memory, whose home replica stays): at each location it is
///    used at, a gap kept saves one reload (saving = its bytes);
///  - movable (an EXCLUSIVE adopted value, or any value adopted at a
///    budgeted location): one replica that is always somewhere. Between two
///    uses at the same location, staying saves the spill and the return
///    (2 x bytes); between uses at different locations it may stay at the
///    first or move early to the second (one of two options, saving bytes);
///    after its last use, staying saves the spill (bytes).

#include "fhr/planner/workload.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fhr::planner {

enum class GapKind : std::uint8_t {
  Reuse,      ///< droppable value kept between two uses at one location
  Stay,       ///< movable value kept between two uses at one location
  StayBefore, ///< movable value stays where it was, before a use elsewhere
  MoveEarly,  ///< movable value moves to its next location right after its last use here
  Trailing,   ///< movable value stays after its last use (or, never used, at home)
};

struct Gap {
  ValueId value = 0;
  /// Index into GapModel::locations.
  std::uint32_t location = 0;
  /// Occupies steps [begin, end) when kept.
  std::uint32_t begin = 0, end = 0;
  std::uint64_t bytes = 0;
  std::uint64_t saving = 0;
  /// Gaps of one decision share a group (at most one kept); otherwise unique.
  std::uint32_t group = 0;
  GapKind kind = GapKind::Reuse;
};

/// Why the workload cannot be met: the first step that does not fit, where, and by how much.
struct Infeasibility {
  std::uint32_t step = 0;
  Location at;
  std::uint64_t needed_bytes = 0;    ///< values the step needs there plus its workspace
  std::uint64_t load_room_bytes = 0; ///< room to load a value from a source there (§4.5)
  std::uint64_t budget_bytes = 0;
  std::uint64_t short_bytes() const { return needed_bytes + load_room_bytes - budget_bytes; }
  std::string text(const Workload &workload) const;
};

/// The stretch of steps [begin, end) between two uses of a value (or
/// before its first, or after its last), and what may happen there.
struct Stretch {
  static constexpr std::uint32_t kNoGap = 0xffffffffu;
  std::uint32_t begin = 0, end = 0;
  /// Where the value is at `begin` (its last use, or its home).
  Location where;
  /// Where it is needed next, if anywhere.
  std::optional<Location> next;
  /// The gaps of this stretch's decision (1, or 2 for stay-or-move-early),
  /// or none when nothing is to decide.
  std::uint32_t first_gap = kNoGap;
  std::uint8_t gap_count = 0;
  /// With no decision (or none of its gaps kept, for a droppable value):
  /// where the value spends the stretch. A droppable value is resident at
  /// the chain's location or absent (none); a movable one stays, or goes
  /// ahead to an unbudgeted next location.
  std::optional<Location> free_position;
};

/// One value's uses, in order, and the stretches between them. Droppable
/// values have one chain per location (an EXCLUSIVE reconstructible value
/// one chain over all), movable values one chain: stretches[i] comes
/// before use i, and for movable values stretches.back() follows the last use.
struct UseChain {
  ValueId value = 0;
  std::vector<std::uint32_t> steps; ///< ascending
  std::vector<Location> locations;  ///< the location of each use
  std::vector<Stretch> stretches;
};

struct GapModel {
  std::uint32_t step_count = 0;
  /// The budgeted locations, in the workload's budget order.
  std::vector<Location> locations;
  /// capacity[l][t]: what location l has for kept gaps at step t (its budget
  /// less the step's own needs and workspace there).
  std::vector<std::vector<std::int64_t>> capacity;
  std::vector<Gap> gaps;
  std::uint32_t group_count = 0;
  /// Bytes moved when no gap is kept.
  std::uint64_t baseline_bytes = 0;
  /// Bytes moved whatever is kept: first loads and moves between locations.
  std::uint64_t forced_bytes = 0;
  std::vector<UseChain> droppable, movable;
  /// Room kept per budgeted location for loads from sources there.
  std::vector<std::uint64_t> load_room;
  std::optional<Infeasibility> infeasible;

  /// Location index of `at` among the budgeted ones, if budgeted.
  std::optional<std::uint32_t> index_of(Location at) const;
};

/// Builds the model. `check_workload` must have accepted the workload.
/// With `load_room`, a budgeted location that holds sources keeps room for
/// the largest value loaded from there at every step (a load charges its
/// source location while it runs, §4.5); the bound builds the model
/// without it (a relaxation: every schedule meets the steps' capacities).
GapModel build_gap_model(const Workload &workload, bool load_room = true);

/// True for a value planned as one movable replica.
bool is_movable(const Workload &workload, const Value &value);

/// A choice of gaps: kept[g] for every gap of the model.
struct Selection {
  std::vector<bool> kept;
  std::uint64_t saving = 0;
};

/// Bytes moved by a selection: baseline - saving.
inline std::uint64_t bytes_moved(const GapModel &model, const Selection &selection) {
  return model.baseline_bytes - selection.saving;
}

/// Does the selection fit every capacity and every group? (Tests, and a
/// guard on every optimiser's result.)
bool selection_fits(const GapModel &model, const Selection &selection);

} // namespace fhr::planner
