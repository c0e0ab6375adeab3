#include "fhr/planner/solve.hpp"

#include <chrono>
#include <optional>

namespace fhr::planner {

namespace {
double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
} // namespace

SolveResult solve_planner(const Workload &workload, const SolveOptions &options) {
  const LinkModel &links = options.links ? *options.links : LinkModel::h200();
  SolveResult result;
  result.policy = "planner";
  auto started = std::chrono::steady_clock::now();
  const GapModel model = build_gap_model(workload);
  result.gap_count = model.gaps.size();
  if (model.infeasible) {
    result.infeasible = model.infeasible;
    result.solve_seconds = since(started);
    return result;
  }
  Selection selection = solve_heuristic(model, options.heuristic, &result.heuristic);
  result.solve_seconds = since(started);
  if (options.exact) {
    ExactOptions exact = options.exact_options;
    exact.start = &selection;
    result.exact = solve_exact(model, exact);
    if (result.exact->selection && result.exact->selection->saving > selection.saving)
      selection = *result.exact->selection;
  }
  started = std::chrono::steady_clock::now();
  const auto realized = [&](SwapStop swap_stop) {
    Realized r = realize(workload, model, selection, swap_stop);
    if (options.prefetch) schedule_prefetch(workload, model, std::move(r.room_left), r.schedule, links);
    return r;
  };
  Realized chosen = realized(SwapStop::SpillTier);
  result.schedule = std::move(chosen.schedule);
  result.swap_stops_on_tiers = chosen.stops_on_tiers;
  // A swap's stop on pinned memory or a device saves the host's staging
  // for large values, but a small value's DMA back may wait longer than
  // the staged copies would take (the link model's extra after host
  // work): where swaps stopped on tiers, the schedule that sends them
  // through pageable memory is made too, and the clock keeps the faster.
  std::optional<Schedule> through_pageable;
  if (options.verify && chosen.stops_on_tiers > 0) through_pageable = realized(SwapStop::Pageable).schedule;
  result.solve_seconds += since(started);
  if (!options.verify) return result;

  started = std::chrono::steady_clock::now();
  // The bound is on the model without the room kept for loads from
  // budgeted sources (a relaxation), by the LP, or by the exact solver's
  // proven bound on it where that model is exact and the solver ran.
  bool keeps_load_room = false;
  for (std::uint64_t room : model.load_room)
    keeps_load_room = keeps_load_room || room > 0;
  const GapModel relaxed = keeps_load_room ? build_gap_model(workload, false) : GapModel{};
  const GapModel &bounded = keeps_load_room ? relaxed : model;
  result.bound = lower_bound(bounded);
  if (options.exact && model_is_exact(bounded)) {
    std::optional<ExactResult> on_relaxed;
    if (keeps_load_room) {
      ExactOptions exact = options.exact_options;
      exact.start = nullptr;
      on_relaxed = solve_exact(bounded, exact);
    }
    const ExactResult &bounding = keeps_load_room ? *on_relaxed : *result.exact;
    if (bounding.selection && bounding.bound_bytes > result.bound->bytes)
      result.bound = Bound{bounding.bound_bytes, "ilp", false};
  }
  result.bound_seconds = since(started);
  started = std::chrono::steady_clock::now();
  result.verification = verify_schedule(workload, result.schedule);
  result.check_seconds = since(started);
  if (!result.verification.feasible) {
    result.failure = "the planner's schedule does not verify: " + result.verification.failure;
    return result;
  }
  started = std::chrono::steady_clock::now();
  result.timeline = time_schedule(workload, result.verification, links);
  result.timing_seconds = since(started);
  if (through_pageable) {
    started = std::chrono::steady_clock::now();
    Verification verified = verify_schedule(workload, *through_pageable);
    result.check_seconds += since(started);
    started = std::chrono::steady_clock::now();
    if (verified.feasible) {
      Timeline timed = time_schedule(workload, verified, links);
      if (timed.total_seconds < result.timeline.total_seconds) {
        result.schedule = std::move(*through_pageable);
        result.verification = std::move(verified);
        result.timeline = timed;
        result.swap_stops_on_tiers = 0;
      }
    }
    result.timing_seconds += since(started);
  }
  result.bytes_moved = result.verification.bytes_moved;
  return result;
}

BoundOnly bound_workload(const Workload &workload) {
  return BoundOnly{build_gap_model(workload).infeasible, lower_bound(build_gap_model(workload, false))};
}

} // namespace fhr::planner
