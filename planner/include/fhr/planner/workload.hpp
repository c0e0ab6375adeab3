#pragma once
/// \file
/// A workload: what a computation needs, step by step, instead of how to
/// move things (docs/planner.md). Values with their sizes, replica mode and
/// origin (adopted at a location, or rebuilt from a source at a location);
/// steps that each need values at locations, hold workspace reservations
/// and optionally take a known compute time; budgets per location; and the
/// spill tiers a replica may be moved to when it must leave a location.
///
/// The JSON form (schema `fhr-workload/1`, workload_json.hpp) is also the
/// format of traces recorded from a real client.

#include "fhr/model/action.hpp"
#include "fhr/model/location.hpp"
#include "fhr/model/value_spec.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fhr::planner {

struct Value {
  /// "rk[3]" for a family member, as .fhr spells it.
  std::string name;
  std::uint64_t logical_bytes = 0;
  /// The fixed charge of every replica (>= logical_bytes).
  std::uint64_t storage_bytes = 0;
  ReplicaMode mode = ReplicaMode::Exclusive;
  /// Adopted (must preserve, starts with one replica at `home`) or
  /// reconstructible (no replica; loaded from its source at `home`).
  bool adopted = true;
  Location home;
  /// The family it belongs to (index into Workload::families), if any.
  std::optional<std::uint32_t> family;
};

/// Values declared together as NAME[COUNT] (kept for printing).
struct Family {
  std::string name;
  std::uint32_t first = 0; ///< ValueId of NAME[0]
  std::uint32_t count = 0;
};

struct Need {
  ValueId value = 0;
  Location at;
  friend bool operator==(const Need &, const Need &) = default;
};

struct Workspace {
  Location at;
  std::uint64_t bytes = 0;
  std::string label;
};

struct Step {
  std::string name;
  /// Distinct (value, location) pairs, in the order written.
  std::vector<Need> needs;
  std::vector<Workspace> workspace;
  std::optional<double> compute_seconds;
};

/// Where a replica that must leave `from` may go, in order of preference.
struct Tier {
  Location from;
  std::vector<Location> to;
};

/// Steps a workload may have: its printed program has a plan per step and
/// one program, and a .fhr file declares at most 100,000 plans and programs
/// together (fhr/bytecode/limits.hpp, kMaxPlansAndPrograms).
inline constexpr std::size_t kMaxWorkloadSteps = 99'999;

struct Workload {
  std::string name;
  /// `devices N`: cuda:M with M >= N does not exist; none: every cuda:N exists.
  std::optional<unsigned> devices;
  /// Strict budgets, in the order the manager registers them.
  std::vector<std::pair<Location, std::uint64_t>> budgets;
  std::vector<Tier> tiers;
  std::vector<Value> values;
  std::vector<Family> families;
  std::vector<Step> steps;

  std::optional<std::uint64_t> budget(Location at) const;
  /// The tiers listed for `from` (empty if none).
  const std::vector<Location> &tiers_of(Location from) const;
};

/// A workload the planner cannot take, with where: "steps[3].needs[1]: ...".
struct WorkloadError {
  std::string path;
  std::string message;
  std::string text() const { return path.empty() ? message : path + ": " + message; }
};

/// The rules every workload must follow (docs/planner.md, "Model"); the
/// first broken one, or nothing.
std::optional<WorkloadError> check_workload(const Workload &workload);

} // namespace fhr::planner
