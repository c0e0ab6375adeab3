// Warm-up (docs/runtime.md): pool blocks reserved ahead of the transfers
// that need them, so that the first transfer of a plan does not pay for
// pinning host memory or growing a device pool inside its own time.
#include "fhr/runtime/manager.hpp"

#include "clock.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace fhr {

WarmUpReport Manager::warm_up(std::span<const PoolRequest> requests) {
  auto lock = open_lock();
  for (const PoolRequest &request : requests)
    validate(request.location);
  WarmUpReport report;
  const std::uint64_t start = now_ns();
  for (const PoolRequest &request : requests) {
    const std::uint64_t reserved = backend_.memory->prepare(request.location, request.block_bytes);
    report.pools.push_back(WarmUpReport::Pool{request.location, request.block_bytes.size(), reserved});
  }
  report.duration_ns = now_ns() - start;
  return report;
}

void request_block(std::vector<PoolRequest> &requests, Location location, std::size_t bytes) {
  auto it = std::find_if(requests.begin(), requests.end(),
                         [&](const PoolRequest &r) { return r.location == location; });
  if (it == requests.end()) it = requests.insert(requests.end(), PoolRequest{location, {}});
  it->block_bytes.push_back(bytes);
}

std::vector<PoolRequest> Manager::pool_requests(const PlanSpec &plan) {
  // The explanation says which actions transfer and where to, from the
  // state as it is now: exactly the allocations the plan will make.
  const ExplainedPlan explained = explain(plan);
  std::vector<PoolRequest> requests;
  // The rows are the steps less the reservations, in the same order.
  std::size_t next_row = 0;
  std::set<std::pair<Location, std::size_t>> loaded; // (source location, size) of the loads' temporaries
  for (const SimulatedStep &step : explained.steps) {
    if (step.phase == Phase::Reserve) continue;
    if (next_row == explained.actions.size()) break; // defensive: the rows end where the steps do
    const ExplainedAction &row = explained.actions[next_row++];
    const ActionKind kind = row.action.kind;
    if (!row.executable || row.no_op || !row.destination || row.logical_nbytes == 0) continue;
    if (kind != ActionKind::Ensure && kind != ActionKind::Copy && kind != ActionKind::Move) continue;
    const auto nbytes = static_cast<std::size_t>(row.logical_nbytes);
    request_block(requests, *row.destination, nbytes);
    // A reload fills storage at its source location first (§4.5), freed
    // once copied on: its pages are as cold as a destination's, and one
    // block of each size serves every load of that size in turn.
    if (step.transfer == StepTransfer::Load && row.source && row.source != row.destination &&
        loaded.emplace(*row.source, nbytes).second)
      request_block(requests, *row.source, nbytes);
  }
  return requests;
}

WarmUpReport Manager::warm_up(const PlanSpec &plan) { return warm_up(pool_requests(plan)); }

} // namespace fhr
