// A consumer of the installed package: links fhr::runtime only, adopts a
// buffer, checks a stage with explain and runs it.
#include "fhr/runtime/manager.hpp"

#include <cstdio>
#include <cstdlib>
#include <vector>

int main() {
  using namespace fhr;
  constexpr std::size_t kBytes = 64 * 1024;
  ManagerOptions options;
  options.budgets = {{Location::pinned(), kBytes}};
  Manager manager(std::move(options));

  auto *buffer = static_cast<std::byte *>(std::calloc(kBytes, 1));
  const Handle value =
      manager.adopt(buffer, kBytes, Location::pageable(), std::free, ReplicaMode::Replicable);
  const std::vector<ActionSpec> stage = {{ActionKind::Ensure, value, Location::pinned(), {}}};
  const Explanation preview = manager.explain(PlanSpec{"stage", {}, {}, stage, {}});
  const PlanReport report = manager.execute_actions(stage, "stage");
  std::printf("consumer: stage %s, %zu transition, pinned holds %llu bytes\n",
              preview.feasible ? "feasible" : "infeasible", report.transitions.size(),
              static_cast<unsigned long long>(manager.account(Location::pinned()).used_bytes));
  manager.discard(value);
  manager.close();
  return 0;
}
