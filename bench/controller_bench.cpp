// Controller::decide on 1,000 resident values under a full budget (issue
// #13): every decision must evict one of the 1,000 to admit the request,
// so the search ranks all of them. Beside it, in the same run, what the
// reference controller starts every decision with: a full snapshot of the
// manager (the seed's decide plans on one), and the manager's explain of
// the decided plan alone.
//
//   build/bench/controller_bench [values] [rounds]
#include "fhr/controller/controller.hpp"
#include "fhr/runtime/simulated_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

using namespace fhr;

namespace {

class ZeroSource final : public Source {
public:
  void load(std::span<std::byte> destination) override {
    std::fill(destination.begin(), destination.end(), std::byte{0});
  }
};

double thread_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

/// Median and range of `rounds` timings of `iterations` calls each, in
/// microseconds per call: wall clock, and this thread's CPU time (what a
/// shared machine's other load does not inflate).
template <typename Call>
void measure(const char *what, int rounds, int iterations, Call call) {
  std::vector<double> wall, cpu;
  for (int r = 0; r < rounds; ++r) {
    const double cpu_start = thread_cpu_us();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i)
      call();
    const auto end = std::chrono::steady_clock::now();
    cpu.push_back((thread_cpu_us() - cpu_start) / iterations);
    wall.push_back(std::chrono::duration<double, std::micro>(end - start).count() / iterations);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  std::printf("%-48s wall median %8.2f us (%.2f-%.2f), cpu median %8.2f us (%.2f-%.2f)\n", what,
              wall[wall.size() / 2], wall.front(), wall.back(), cpu[cpu.size() / 2], cpu.front(), cpu.back());
}

} // namespace

int main(int argc, char **argv) {
  const std::size_t values = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  constexpr std::size_t kValueBytes = 4096;
  const Location gpu = Location::cuda(0);

  ManagerOptions options;
  options.backend = std::make_shared<SimulatedBackend>(1);
  options.budgets = {{gpu, values * kValueBytes}};
  options.trace_capacity = 0;
  Manager manager(std::move(options));
  const auto source = std::make_shared<ZeroSource>();
  const ValueSpec spec{kValueBytes, kValueBytes, ReplicaMode::Replicable, Recoverability::Reconstructible};
  std::vector<Handle> resident;
  for (std::size_t i = 0; i < values; ++i) {
    resident.push_back(manager.register_source(spec, source));
    manager.ensure(resident.back(), gpu);
  }
  const Handle incoming = manager.register_source(spec, source);

  Controller controller(manager);
  // Every value has been used once, in order, as a workload would leave them.
  for (std::size_t i = 0; i < values; ++i)
    controller.set_policy_metadata(resident[i], 0, "value-" + std::to_string(i));
  const Request request("next-step", {{incoming, gpu}});
  const Decision decision = controller.decide(request);
  std::printf("controller decide on %zu resident values, budget full (%zu x %zu B at %s)\n", values, values,
              kValueBytes, gpu.name().c_str());
  std::printf("decision: %zu eviction(s), first %s rank %zu, %llu explored state(s)\n",
              decision.evictions.size(),
              decision.evictions.empty() ? "-" : decision.evictions[0].reason.c_str(),
              decision.evictions.empty() ? 0 : decision.evictions[0].rank,
              static_cast<unsigned long long>(decision.explored_states));

  measure("Controller::decide", rounds, 2000, [&] {
    const Decision d = controller.decide(request);
    if (d.evictions.size() != 1) std::abort();
  });
  measure("baseline: Manager::snapshot (seed's first step)", rounds, 200, [&] {
    if (manager.snapshot().values.size() != values + 1) std::abort();
  });
  measure("part: Manager::explain of the decided plan", rounds, 2000, [&] {
    if (!manager.explain(decision.plan, decision.expected_state_version).feasible) std::abort();
  });
}
