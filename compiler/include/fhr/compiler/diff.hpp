#pragma once
/// \file
/// What a change does to its plans (`fhr-plan diff`, `check --baseline`):
/// per plan and program, the change in verdict, peak per location,
/// headroom and predicted time between two explain documents (`fhr-explain/1` or `/2`), as
/// text, JSON (schema `fhr-diff/1`) and a Markdown pull-request comment
/// (docs/ci.md).
///
/// Units are matched by kind and name. An old unit whose name is gone and a
/// new one with exactly the same steps (phases and step texts) are one unit
/// renamed; what remains is removed or added.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fhr {

inline constexpr const char *kDiffSchema = "fhr-diff/1";

struct LocationChange {
  std::string location;
  std::optional<std::uint64_t> old_peak_bytes, new_peak_bytes;        ///< peak charged; absent: not touched
  std::optional<std::int64_t> old_headroom_bytes, new_headroom_bytes; ///< absent: unbudgeted or not touched
  /// (new − old) / old peak in percent; std::nullopt when either is absent
  /// or the old peak was 0.
  std::optional<double> peak_change_percent() const;
};

struct UnitChange {
  enum class Kind : std::uint8_t { Unchanged, Changed, Renamed, Added, Removed } kind = Kind::Unchanged;
  std::string unit_kind; ///< "plan", "program", "setup"
  std::string old_name, new_name;
  std::optional<bool> old_feasible, new_feasible;
  /// Locations whose peak or headroom differ (all of a unit's locations for
  /// added and removed units).
  std::vector<LocationChange> locations;
  std::optional<double> old_predicted_us, new_predicted_us;

  bool became_infeasible() const { return new_feasible == false && old_feasible != false; }
};

struct PlanDiff {
  std::vector<UnitChange> units; ///< new order, then removed units in old order
  std::size_t compared = 0;      ///< units in either document
  std::size_t changed() const;
  std::size_t became_infeasible() const;
};

/// Compares two explain documents (all their files' units).
PlanDiff diff_explanations(const nlohmann::ordered_json &old_document,
                           const nlohmann::ordered_json &new_document);

struct DiffGates {
  /// Fail when a unit's peak at a location grows by more than this percentage
  /// (a location charged for the first time counts as growing without bound).
  std::optional<double> max_peak_increase_percent;
};

struct GateVerdict {
  bool failed = false;
  std::vector<std::string> reasons; ///< one line per unit that became infeasible or gate that fired
};

/// A plan or program that becomes (or is added) infeasible always fails.
GateVerdict apply_gates(const PlanDiff &diff, const DiffGates &gates);

std::string diff_text(const PlanDiff &diff, const GateVerdict &verdict);
nlohmann::ordered_json diff_json(const PlanDiff &diff, const GateVerdict &verdict);
/// A headline and one table of what changed.
std::string diff_markdown(const PlanDiff &diff, const GateVerdict &verdict);

} // namespace fhr
