#pragma once
// Helpers of the planner tests: workloads from JSON text, small random
// workloads, a brute-force optimum independent of the planner's model, the
// compiler's verdict on a printed program and explain's time for it.
#include "test_support.hpp"

#include "fhr/compiler/explain_time.hpp"
#include "fhr/compiler/output.hpp"
#include "fhr/compiler/printed_program.hpp"
#include "fhr/planner/solve.hpp"
#include "fhr/planner/workload_json.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <variant>

namespace fhr::test {

inline planner::Workload workload(const std::string &json) {
  auto parsed = planner::parse_workload_json(json);
  if (auto *error = std::get_if<planner::WorkloadError>(&parsed))
    FAIL("workload does not parse: " << error->text());
  return std::get<planner::Workload>(parsed);
}

inline std::string parse_error(const std::string &json) {
  auto parsed = planner::parse_workload_json(json);
  if (auto *error = std::get_if<planner::WorkloadError>(&parsed)) return error->text();
  return "parsed";
}

/// A small workload on one budgeted device: droppable keys (sources in
/// pinned host memory) and, when `movable`, EXCLUSIVE adopted ciphertexts;
/// every step needs one to three of them and some workspace.
inline planner::Workload random_workload(unsigned seed, std::size_t values, std::size_t steps, bool movable) {
  std::mt19937 rng(seed);
  planner::Workload w;
  w.name = "random-" + std::to_string(seed);
  w.devices = 1;
  std::uint64_t largest = 0;
  for (std::size_t v = 0; v < values; ++v) {
    planner::Value value;
    value.name = "v" + std::to_string(v);
    value.logical_bytes = value.storage_bytes = 100 * (1 + rng() % 3);
    const bool ciphertext = movable && v % 3 == 2;
    value.mode = ciphertext ? ReplicaMode::Exclusive : ReplicaMode::Replicable;
    value.adopted = ciphertext;
    value.home = ciphertext ? Location::pageable() : Location::pinned();
    largest = std::max(largest, value.storage_bytes);
    w.values.push_back(value);
  }
  const std::uint64_t budget = 100 * (3 + rng() % 4);
  w.budgets = {{Location::cuda(0), budget}};
  w.tiers = {{Location::cuda(0), {Location::pinned(), Location::pageable()}}};
  for (std::size_t t = 0; t < steps; ++t) {
    planner::Step step;
    step.name = "s" + std::to_string(t);
    std::uint64_t used = 0;
    const std::size_t needs = 1 + rng() % 3;
    for (std::size_t n = 0; n < needs; ++n) {
      const auto v = static_cast<ValueId>(rng() % values);
      const planner::Need need{v, Location::cuda(0)};
      if (std::find(step.needs.begin(), step.needs.end(), need) != step.needs.end()) continue;
      if (used + w.values[v].storage_bytes > budget) continue;
      used += w.values[v].storage_bytes;
      step.needs.push_back(need);
    }
    if (rng() % 3 == 0 && used + 50 <= budget) step.workspace.push_back({Location::cuda(0), 50, "tmp"});
    step.compute_seconds = 1e-3;
    w.steps.push_back(step);
  }
  return w;
}

/// A workload on two budgeted devices, of ciphertexts (EXCLUSIVE, adopted
/// in pinned or pageable memory) and keys (rebuilt from a source) of 1 to
/// 150 MiB: each step needs up to three values on each device within its
/// budget, sometimes one in pinned memory, and workspace on a device; spill
/// tiers from each device to pinned and pageable memory, some through the
/// other device first; in some, pinned memory budgeted for its ciphertexts
/// with a tier to pageable. No step computes. The shapes that had the
/// planner's schedules fail to verify: values swapping devices, moves out
/// whose room a workspace needs.
inline planner::Workload random_two_device_workload(unsigned seed) {
  std::mt19937 rng(seed);
  const auto pick = [&](std::uint64_t low, std::uint64_t high) { return low + rng() % (high - low + 1); };
  constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
  planner::Workload w;
  w.name = "two-devices-" + std::to_string(seed);
  w.devices = 2;
  const bool pinned_budget = rng() % 3 == 0;
  std::uint64_t largest = 0, in_pinned = 0;
  const std::size_t values = pick(3, 9);
  for (std::size_t v = 0; v < values; ++v) {
    planner::Value value;
    const bool ciphertext = rng() % 2 == 0;
    value.name = (ciphertext ? "c" : "k") + std::to_string(v);
    value.logical_bytes = value.storage_bytes = pick(1, 150) * kMiB;
    value.mode = ciphertext ? ReplicaMode::Exclusive : ReplicaMode::Replicable;
    value.adopted = ciphertext;
    // A source in budgeted pinned memory would keep load room at every step.
    value.home = ciphertext && rng() % 3 == 0                      ? Location::pinned()
                 : !ciphertext && !pinned_budget && rng() % 2 == 0 ? Location::pinned()
                                                                   : Location::pageable();
    if (value.adopted && value.home == Location::pinned()) in_pinned += value.storage_bytes;
    largest = std::max(largest, value.storage_bytes);
    w.values.push_back(value);
  }
  for (unsigned d = 0; d < 2; ++d) {
    w.budgets.push_back({Location::cuda(d), largest * pick(1, 3) + pick(0, 50) * kMiB});
    std::vector<Location> tiers{Location::pinned(), Location::pageable()};
    if (rng() % 2 == 0) tiers.insert(tiers.begin(), Location::cuda(1 - d));
    w.tiers.push_back({Location::cuda(d), tiers});
  }
  if (pinned_budget) {
    w.budgets.push_back({Location::pinned(), in_pinned + pick(0, 2) * largest});
    w.tiers.push_back({Location::pinned(), {Location::pageable()}});
  }
  const std::size_t steps = pick(4, 14);
  for (std::size_t t = 0; t < steps; ++t) {
    planner::Step step;
    step.name = std::to_string(t);
    step.compute_seconds = 0.0;
    const auto needed = [&](ValueId v) {
      return std::any_of(step.needs.begin(), step.needs.end(),
                         [&](const planner::Need &n) { return n.value == v; });
    };
    for (unsigned d = 0; d < 2; ++d) {
      std::uint64_t used = 0;
      for (std::size_t n = pick(1, 3); n > 0; --n) {
        const auto v = static_cast<ValueId>(rng() % values);
        if (needed(v) || used + w.values[v].storage_bytes > w.budgets[d].second) continue;
        used += w.values[v].storage_bytes;
        step.needs.push_back({v, Location::cuda(d)});
      }
      const std::uint64_t room = w.budgets[d].second - used;
      if (rng() % 2 == 0 && room > kMiB)
        step.workspace.push_back({Location::cuda(d), pick(1, room / kMiB) * kMiB, "tmp"});
    }
    if (!pinned_budget && rng() % 5 == 0) {
      const auto v = static_cast<ValueId>(rng() % values);
      if (!needed(v)) step.needs.push_back({v, Location::pinned()});
    }
    w.steps.push_back(step);
  }
  return w;
}

/// The fewest bytes any schedule of a one-device workload moves, by
/// dynamic programming over the set of values resident on the device at
/// each step (every other place is unbudgeted: a droppable value leaves for
/// free, a movable one by a move). Independent of the planner's model.
inline std::uint64_t brute_force_optimum(const planner::Workload &w) {
  const Location device = Location::cuda(0);
  const std::uint64_t budget = *w.budget(device);
  const std::size_t n = w.values.size();
  REQUIRE(n <= 12);
  const std::uint32_t states = 1u << n;
  const std::uint64_t none = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::uint64_t> size_of(states, 0);
  for (std::uint32_t s = 1; s < states; ++s) {
    const int low = __builtin_ctz(s);
    size_of[s] = size_of[s & (s - 1)] + w.values[static_cast<std::size_t>(low)].storage_bytes;
  }
  std::uint32_t movable = 0, initial = 0;
  for (std::size_t v = 0; v < n; ++v) {
    const planner::Value &value = w.values[v];
    if (value.adopted && value.mode == ReplicaMode::Exclusive) movable |= 1u << v;
    if (value.adopted && value.home == device) initial |= 1u << v;
  }
  const auto cost = [&](std::uint32_t from, std::uint32_t to) {
    // Arrivals are copies; movable values leaving are moves out.
    return size_of[to & ~from] + size_of[from & ~to & movable];
  };
  std::vector<std::uint64_t> best(states, none), next(states);
  best[initial] = 0;
  for (const planner::Step &step : w.steps) {
    std::uint32_t needed = 0;
    std::uint64_t workspace = 0;
    for (const planner::Need &need : step.needs)
      needed |= 1u << need.value;
    for (const planner::Workspace &ws : step.workspace)
      workspace += ws.bytes;
    std::fill(next.begin(), next.end(), none);
    for (std::uint32_t to = 0; to < states; ++to) {
      if ((to & needed) != needed || size_of[to] + workspace > budget) continue;
      for (std::uint32_t from = 0; from < states; ++from)
        if (best[from] != none) next[to] = std::min(next[to], best[from] + cost(from, to));
    }
    best.swap(next);
  }
  return *std::min_element(best.begin(), best.end());
}

/// "ok", or why `fhr-plan solve` would refuse to print the program (it
/// does not compile, `check` refuses it, or a predicted peak is over its
/// budget).
inline std::string check_printed(const std::string &program, const planner::Workload &w) {
  const PrintedProgramCheck check = check_printed_program(program, w.budgets);
  return check.accepted ? "ok" : check.detail;
}

/// The schedule printed as a program, which the compiler accepts.
inline std::string printed_program(const planner::Workload &w, const planner::SolveResult &r) {
  std::string program = planner::emit_program(w, r.schedule, w.name);
  REQUIRE(check_printed(program, w) == "ok");
  return program;
}

/// explain's JSON gives each figure to the nanosecond: agreement within 10 ns.
constexpr double kAgreementUs = 0.01;

/// What `explain --profile` predicts for a printed program: its total less
/// its loads' fills (the planner's clock times a load from its copy), how
/// many DMAs met each state, and how many windows of two copies or more it
/// formed.
struct ProgramTime {
  double us = 0;
  std::map<std::string, int> dma_states;
  int shared_windows = 0;
  /// Staged copies from pageable memory that met the state after host work.
  int staged_after_host_work = 0;
};
inline ProgramTime predicted_time(const std::string &program, const LinkModel &links) {
  nlohmann::ordered_json document = explain_json({explain(program).report});
  add_predicted_time(document, links);
  for (const auto &unit : document["files"][0]["units"]) {
    if (unit["kind"] != "program") continue;
    ProgramTime out;
    out.us = predicted_us_without_fills(unit);
    std::map<std::int64_t, int> per_window;
    for (const auto &step : unit["steps"]) {
      const auto &time = step["time"];
      ++out.dma_states[time["dma_state"].get<std::string>()];
      if (time["dma_state"] == "after-host-work" && step["link"] == "pageable-device")
        ++out.staged_after_host_work;
      if (time["window"].is_number()) ++per_window[time["window"].get<std::int64_t>()];
    }
    for (const auto &[window, copies] : per_window)
      out.shared_windows += copies >= 2;
    return out;
  }
  FAIL("no program unit");
  return {};
}

} // namespace fhr::test
