// Controller::decide on 1,000 resident values under a full budget (issue
// #13): every decision must evict one of the 1,000 to admit the request,
// so the search ranks all of them. Beside it, in the same run, what the
// reference controller starts every decision with: a full snapshot of the
// manager (the seed's decide plans on one), and the manager's explain of
// the decided plan alone. Then the same with one more value ranked first
// that has no way out (adopted, so nothing rebuilds it, and the policy has
// no spill tier): every decision passes over it and evicts the next, the
// search's second victim.
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
#include <optional>
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

/// A manager of `values` reconstructible values of `kValueBytes` on a
/// full `cuda:0`, used once each in order, and one more value the
/// requests need; with `unmovable`, one more value on the device that the
/// policy ranks first and that cannot be reclaimed.
struct Fixture {
  static constexpr std::size_t kValueBytes = 4096;
  const Location gpu = Location::cuda(0);
  std::shared_ptr<SimulatedBackend> backend = std::make_shared<SimulatedBackend>(1);
  std::unique_ptr<Manager> manager;
  std::unique_ptr<Controller> controller;
  std::optional<Request> request;

  Fixture(std::size_t values, bool unmovable) {
    ManagerOptions options;
    options.backend = backend;
    options.budgets = {{gpu, (values + (unmovable ? 1 : 0)) * kValueBytes}};
    options.trace_capacity = 0;
    manager = std::make_unique<Manager>(std::move(options));
    const auto source = std::make_shared<ZeroSource>();
    const ValueSpec spec{kValueBytes, kValueBytes, ReplicaMode::Replicable, Recoverability::Reconstructible};
    std::vector<Handle> resident;
    for (std::size_t i = 0; i < values; ++i) {
      resident.push_back(manager->register_source(spec, source));
      manager->ensure(resident.back(), gpu);
    }
    const Handle incoming = manager->register_source(spec, source);
    controller = std::make_unique<Controller>(*manager);
    // Every value has been used once, in order, as a workload would leave them.
    for (std::size_t i = 0; i < values; ++i)
      controller->set_policy_metadata(resident[i], 0, "value-" + std::to_string(i));
    if (unmovable) {
      auto [data, release] = backend->allocate(gpu, kValueBytes).detach();
      const Handle kept = manager->adopt(data, kValueBytes, gpu, std::move(release), ReplicaMode::Exclusive);
      controller->set_policy_metadata(kept, -1);
    }
    request.emplace("next-step", std::vector<Requirement>{{incoming, gpu}});
  }
};

void run(std::size_t values, int rounds, bool unmovable) {
  Fixture f(values, unmovable);
  const Decision decision = f.controller->decide(*f.request);
  std::printf("\ncontroller decide on %zu resident values%s, budget full (%zu x %zu B at %s)\n", values,
              unmovable ? " and one ranked first that cannot be reclaimed" : "", values, Fixture::kValueBytes,
              f.gpu.name().c_str());
  std::printf("decision: %zu eviction(s), first %s rank %zu, %llu explored state(s)\n",
              decision.evictions.size(),
              decision.evictions.empty() ? "-" : decision.evictions[0].reason.c_str(),
              decision.evictions.empty() ? 0 : decision.evictions[0].rank,
              static_cast<unsigned long long>(decision.explored_states));
  if (decision.evictions.size() != 1 || decision.evictions[0].rank != (unmovable ? 1u : 0u)) std::abort();

  measure(unmovable ? "Controller::decide, the second victim" : "Controller::decide", rounds, 2000, [&] {
    const Decision d = f.controller->decide(*f.request);
    if (d.evictions.size() != 1) std::abort();
  });
  if (unmovable) return;
  measure("baseline: Manager::snapshot (seed's first step)", rounds, 200, [&] {
    if (f.manager->snapshot().values.size() != values + 1) std::abort();
  });
  measure("part: Manager::explain of the decided plan", rounds, 2000, [&] {
    if (!f.manager->explain(decision.plan, decision.expected_state_version).feasible) std::abort();
  });
}

} // namespace

int main(int argc, char **argv) {
  const std::size_t values = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  run(values, rounds, false);
  run(values, rounds, true);
}
