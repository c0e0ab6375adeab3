// Warm-up (docs/runtime.md): pool blocks reserved ahead of the transfers
// that need them, so that the first transfer of a plan does not pay for
// pinning host memory or growing a device pool inside its own time.
#include "fhr/runtime/manager.hpp"

#include "clock.hpp"

#include <algorithm>

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

std::vector<PoolRequest> Manager::pool_requests(const PlanSpec &plan) {
  // The explanation says which actions transfer and where to, from the
  // state as it is now: exactly the allocations the plan will make.
  const ExplainedPlan explained = explain(plan);
  std::vector<PoolRequest> requests;
  for (const ExplainedAction &row : explained.actions) {
    const ActionKind kind = row.action.kind;
    if (!row.executable || row.no_op || !row.destination || row.logical_nbytes == 0) continue;
    if (kind != ActionKind::Ensure && kind != ActionKind::Copy && kind != ActionKind::Move) continue;
    auto it = std::find_if(requests.begin(), requests.end(),
                           [&](const PoolRequest &r) { return r.location == *row.destination; });
    if (it == requests.end()) it = requests.insert(requests.end(), PoolRequest{*row.destination, {}});
    it->block_bytes.push_back(static_cast<std::size_t>(row.logical_nbytes));
  }
  return requests;
}

WarmUpReport Manager::warm_up(const PlanSpec &plan) { return warm_up(pool_requests(plan)); }

} // namespace fhr
