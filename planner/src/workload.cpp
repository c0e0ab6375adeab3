#include "fhr/planner/workload.hpp"

#include "fhr/model/location_set.hpp"
#include "fhr/model/state.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

namespace fhr::planner {

std::optional<std::uint64_t> Workload::budget(Location at) const {
  for (const auto &[location, bytes] : budgets)
    if (location == at) return bytes;
  return std::nullopt;
}

const std::vector<Location> &Workload::tiers_of(Location from) const {
  static const std::vector<Location> none;
  for (const Tier &tier : tiers)
    if (tier.from == from) return tier.to;
  return none;
}

namespace {

bool blank(const std::string &text) { return text.find_first_not_of(" \t\n\r") == std::string::npos; }

/// The printed program spells the workload's name (its program's), step
/// names and labels as .fhr strings, which have no escape for a carriage
/// return (docs/language.md).
std::optional<WorkloadError> check_printable(const std::string &text, const std::string &path) {
  if (text.find('\r') != std::string::npos)
    return WorkloadError{path, "must not contain a carriage return: a .fhr string cannot spell it"};
  return std::nullopt;
}

std::optional<WorkloadError> check_location(const Workload &w, Location at, const std::string &path) {
  if (at.is_cuda() && w.devices && at.device() >= *w.devices)
    return WorkloadError{path, at.name() + " does not exist on a machine of " + std::to_string(*w.devices) +
                                   " device" + (*w.devices == 1 ? "" : "s")};
  return std::nullopt;
}

/// A workload whose values (and a step's workspace) add up to more than
/// one location can account (§4.2 of docs/semantics.md).
WorkloadError too_large(const std::string &path, const std::string &what) {
  return WorkloadError{path, what + " add up to more than " + std::to_string(kMaxChargedBytes) +
                                 " bytes (4 EiB), the most one location can account"};
}

} // namespace

std::optional<WorkloadError> check_workload(const Workload &w) {
  if (auto e = check_printable(w.name, "name")) return e;
  if (w.steps.size() > kMaxWorkloadSteps)
    return WorkloadError{"steps[" + std::to_string(kMaxWorkloadSteps) + "]",
                         "a workload has at most " + std::to_string(kMaxWorkloadSteps) +
                             " steps (its printed program has a plan for each)"};
  LocationSet budgeted;
  for (std::size_t i = 0; i < w.budgets.size(); ++i) {
    const std::string path = "budgets[" + std::to_string(i) + "]";
    const Location at = w.budgets[i].first;
    if (auto e = check_location(w, at, path)) return e;
    if (budgeted.contains(at)) return WorkloadError{path, "a second budget for " + at.name()};
    budgeted.insert(at);
  }
  // Replicas that must leave a budgeted location can always go to pageable
  // host memory; the planner's model needs it unbudgeted (docs/planner.md).
  if (budgeted.contains(Location::pageable()))
    return WorkloadError{"budgets",
                         "pageable must stay unbudgeted: it is where evicted replicas can always go"};
  LocationSet tier_sources;
  for (std::size_t i = 0; i < w.tiers.size(); ++i) {
    const std::string path = "tiers[" + std::to_string(i) + "]";
    const Tier &tier = w.tiers[i];
    if (auto e = check_location(w, tier.from, path + ".from")) return e;
    if (tier_sources.contains(tier.from))
      return WorkloadError{path, "a second tier list for " + tier.from.name()};
    tier_sources.insert(tier.from);
    LocationSet seen;
    for (std::size_t j = 0; j < tier.to.size(); ++j) {
      const std::string to_path = path + ".to[" + std::to_string(j) + "]";
      if (auto e = check_location(w, tier.to[j], to_path)) return e;
      if (tier.to[j] == tier.from)
        return WorkloadError{to_path, "a tier of " + tier.from.name() + " cannot be itself"};
      if (seen.contains(tier.to[j])) return WorkloadError{to_path, tier.to[j].name() + " is listed twice"};
      seen.insert(tier.to[j]);
    }
  }
  std::unordered_map<std::string, std::size_t> names;
  std::vector<std::uint64_t> adopted_at(Location::kCount, 0);
  // What a location can be charged at most: every value and the largest
  // step's workspace. Within the model's limit of one location's account
  // (kMaxChargedBytes), no account and no step's room wraps; totals over a
  // whole schedule (bytes moved) are still plain 64-bit sums.
  std::uint64_t values_bytes = 0;
  for (std::size_t i = 0; i < w.values.size(); ++i) {
    const Value &v = w.values[i];
    const std::string path = "values[" + v.name + "]";
    if (!names.emplace(v.name, i).second) return WorkloadError{path, "a second value named '" + v.name + "'"};
    if (v.storage_bytes < v.logical_bytes)
      return WorkloadError{path, "storage_bytes must be at least the logical size"};
    if (auto e = check_location(w, v.home, path)) return e;
    if (v.storage_bytes > kMaxChargedBytes - values_bytes) return too_large(path, "the values");
    values_bytes += v.storage_bytes;
    if (v.adopted) adopted_at[v.home.index()] += v.storage_bytes;
  }
  for (const auto &[at, bytes] : w.budgets)
    if (adopted_at[at.index()] > bytes)
      return WorkloadError{"values", "the values adopted at " + at.name() + " need " +
                                         std::to_string(adopted_at[at.index()]) +
                                         " bytes, over its budget of " + std::to_string(bytes)};
  for (std::size_t s = 0; s < w.steps.size(); ++s) {
    const Step &step = w.steps[s];
    const std::string path = "steps[" + std::to_string(s) + "]";
    if (blank(step.name)) return WorkloadError{path + ".name", "a step needs a non-blank name"};
    if (auto e = check_printable(step.name, path + ".name")) return e;
    if (step.compute_seconds && (!std::isfinite(*step.compute_seconds) || *step.compute_seconds < 0))
      return WorkloadError{path + ".compute_seconds", "must be a finite number of seconds, at least 0"};
    // Every (value, location) needed and where each value was first
    // needed in the step: one pass, where comparing every pair took minutes on a step of
    // 10^5 needs (found by fuzz_workload).
    std::unordered_map<ValueId, Location> first_at;
    std::unordered_set<std::uint64_t> needed;
    for (std::size_t n = 0; n < step.needs.size(); ++n) {
      const Need &need = step.needs[n];
      const std::string need_path = path + ".needs[" + std::to_string(n) + "]";
      if (need.value >= w.values.size()) return WorkloadError{need_path, "no such value"};
      if (auto e = check_location(w, need.at, need_path)) return e;
      const Value &v = w.values[need.value];
      if (!needed.insert((std::uint64_t{need.value} << 8) | need.at.index()).second)
        return WorkloadError{need_path, "needs " + v.name + " at " + need.at.name() + " twice"};
      const auto [first, fresh] = first_at.emplace(need.value, need.at);
      if (fresh) continue;
      // The value's second location: an EXCLUSIVE or budgeted adopted value
      // has one replica, so this is as far as either gets.
      const Location other = first->second;
      if (v.mode == ReplicaMode::Exclusive)
        return WorkloadError{need_path, "needs EXCLUSIVE value " + v.name + " at " + other.name() + " and " +
                                            need.at.name() + " at once"};
      // Planned as one movable replica (docs/planner.md, "Model").
      if (v.adopted && budgeted.contains(v.home))
        return WorkloadError{need_path, v.name + " is adopted at budgeted " + v.home.name() +
                                            " and planned as one replica: it cannot be needed at " +
                                            other.name() + " and " + need.at.name() + " at once"};
    }
    std::uint64_t workspace_bytes = values_bytes;
    for (std::size_t k = 0; k < step.workspace.size(); ++k) {
      const Workspace &ws = step.workspace[k];
      const std::string ws_path = path + ".workspace[" + std::to_string(k) + "]";
      if (auto e = check_location(w, ws.at, ws_path)) return e;
      if (ws.bytes > kMaxChargedBytes - workspace_bytes)
        return too_large(ws_path, "the values and the step's workspace");
      workspace_bytes += ws.bytes;
      if (blank(ws.label)) return WorkloadError{ws_path, "a workspace needs a non-blank label"};
      if (auto e = check_printable(ws.label, ws_path + ".label")) return e;
    }
  }
  return std::nullopt;
}

} // namespace fhr::planner
