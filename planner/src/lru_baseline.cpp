#include "fhr/planner/lru_baseline.hpp"

#include "fhr/controller/search.hpp"
#include "fhr/runtime/errors.hpp"

#include <chrono>

namespace fhr::planner {

SolveResult solve_lru(const Workload &workload, const LruOptions &options) {
  const LinkModel &links = options.links ? *options.links : LinkModel::h200();
  SolveResult result;
  result.policy = "lru";
  const auto started = std::chrono::steady_clock::now();
  DeviceConfig devices;
  if (workload.devices) {
    devices.cuda_available = *workload.devices > 0;
    devices.device_count = *workload.devices;
  }
  State state(devices);
  for (const auto &[at, bytes] : workload.budgets)
    state.set_budget(at, bytes);
  for (ValueId v = 0; v < workload.values.size(); ++v) {
    const Value &value = workload.values[v];
    const ValueSpec spec{value.logical_bytes, value.storage_bytes, value.mode,
                         value.adopted ? Recoverability::MustPreserve : Recoverability::Reconstructible};
    const Outcome o =
        value.adopted ? state.adopt(v, spec, value.home) : state.register_source(v, spec, value.home);
    if (o.failed()) {
      result.failure = "setup of " + value.name + ": " + describe(o, {value.name, {}});
      return result;
    }
  }
  DeterministicTieredLRU::Tiers tiers;
  for (const Tier &tier : workload.tiers)
    tiers.emplace_back(tier.from, tier.to);
  const DeterministicTieredLRU policy(tiers);
  std::vector<std::uint64_t> last_access(workload.values.size(), 0);
  std::uint64_t epoch = 0;
  result.schedule.steps.resize(workload.steps.size());
  std::vector<std::pair<ValueId, Location>> requirements;
  for (std::uint32_t t = 0; t < workload.steps.size(); ++t) {
    const Step &step = workload.steps[t];
    StepPlan &plan = result.schedule.steps[t];
    for (const Workspace &ws : step.workspace)
      plan.reservations.push_back(Reservation{ws.at, ws.bytes, ws.label});
    requirements.clear();
    for (const Need &n : step.needs)
      requirements.emplace_back(n.value, n.at);
    if (!requirements.empty()) {
      try {
        const SearchResult decided =
            search_request(state, SearchRequest{step.name, requirements, plan.reservations}, policy,
                           PolicyInputs{0, {}, last_access, {}}, options.search_state_limit);
        plan.reclaim = decided.reclaim;
        plan.enter = decided.enter;
      } catch (const ResidencyError &e) {
        result.failure = "step " + std::to_string(t) + " '" + step.name + "': " + e.what();
        result.schedule.steps.resize(t);
        return result;
      }
    }
    // Commit as the decision's scope would, then record the use.
    for (const Action &a : plan.reclaim)
      state.apply(a);
    std::vector<LifetimeId> reserved;
    for (const Reservation &r : plan.reservations) {
      LifetimeId id = 0;
      FailureDetail detail;
      if (const Outcome o = state.reserve(r.location, r.nbytes, r.label, &id, &detail); o.failed()) {
        // A Controller takes no request without a requirement, so nothing
        // makes room for the workspace of a step that needs no value.
        result.failure = "step " + std::to_string(t) + " '" + step.name + "': " +
                         (requirements.empty() ? "the reference controller takes no request without a value, "
                                                 "and the workspace does not fit: "
                                               : "the workspace does not fit after the decision: ") +
                         describe(o, {{}, r.label}, &detail);
        result.schedule.steps.resize(t);
        return result;
      }
      reserved.push_back(id);
    }
    for (const Action &a : plan.enter)
      state.apply(a);
    ++epoch;
    for (const Need &n : step.needs)
      last_access[n.value] = epoch;
    for (LifetimeId id : reserved)
      state.release(id);
  }
  result.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto checked = std::chrono::steady_clock::now();
  result.verification = verify_schedule(workload, result.schedule);
  result.check_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - checked).count();
  if (!result.verification.feasible) {
    result.failure = "the reference policy's schedule does not verify: " + result.verification.failure;
    return result;
  }
  result.bytes_moved = result.verification.bytes_moved;
  const auto timed = std::chrono::steady_clock::now();
  result.timeline = time_schedule(workload, result.verification, links);
  result.timing_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - timed).count();
  return result;
}

} // namespace fhr::planner
