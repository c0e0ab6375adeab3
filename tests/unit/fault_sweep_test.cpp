// Fault injection over every example: each program (each plan where a file
// has none) runs once cleanly on the simulated backend, then once per
// backend operation it performed, with exactly that allocation, copy or
// source load failing. Each faulty run must stop at the failing step after
// exactly the steps the clean run had before it; afterwards the books
// balance, no must-preserve value is lost, every replica holds its bytes,
// and closing returns every byte (LeakSanitizer checks the rest in CI).
// Sizes are divided by 1024 so that the hundreds of runs stay fast.
#include "test_support.hpp"

#include "fhr/compiler/frontend.hpp"
#include "fhr/executor/module_runner.hpp"
#include "fhr/executor/scaled_module.hpp"
#include "fhr/harness/synthetic_binder.hpp"
#include "fhr/runtime/fault_injection.hpp"
#include "fhr/runtime/simulated_backend.hpp"

#include <doctest/doctest.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

using namespace fhr;
using namespace fhr::test;

namespace {

using Op = BackendOperation;
constexpr std::uint64_t kScaleDown = 1024;

/// Synthetic values whose sources count and fail their loads through
/// `faults` (FaultInjectingSource in front of each).
class FaultySourceBinder final : public ValueBinder {
public:
  explicit FaultySourceBinder(std::shared_ptr<FaultPlan> faults) : faults_(std::move(faults)) {}
  Handle bind(Manager &manager, const DeclaredValue &value) override {
    if (value.spec.recoverability != Recoverability::Reconstructible) return synthetic_.bind(manager, value);
    return manager.register_source(
        value.spec,
        std::make_shared<FaultInjectingSource>(std::make_shared<PatternSource>(value.value_id), faults_),
        value.location);
  }
  /// What every replica of the value must hold.
  std::uint64_t expected_checksum(const DeclaredValue &value) {
    if (value.spec.recoverability != Recoverability::Reconstructible)
      return synthetic_.expected_checksum(value.value_id);
    std::vector<std::byte> bytes(value.spec.logical_nbytes);
    fill_synthetic(bytes, value.value_id, 0);
    return XXH64(bytes.data(), bytes.size(), 0);
  }

private:
  class PatternSource final : public Source {
  public:
    explicit PatternSource(std::uint32_t value_id) : value_id_(value_id) {}
    void load(std::span<std::byte> destination) override { fill_synthetic(destination, value_id_, 0); }

  private:
    std::uint32_t value_id_;
  };
  SyntheticBinder synthetic_;
  std::shared_ptr<FaultPlan> faults_;
};

struct Run {
  std::shared_ptr<SimulatedBackend> backend;
  std::shared_ptr<FaultPlan> faults = std::make_shared<FaultPlan>();
  std::unique_ptr<Manager> manager;
  FaultySourceBinder binder{faults};
  std::unique_ptr<ModuleRunner> runner;
  RunResult setup, result;
};

/// A fresh manager and runner; `fail` arms one fault after setup.
std::unique_ptr<Run> execute(const bytecode::Module &module, std::uint32_t index, bool program,
                             std::optional<std::pair<Op, std::uint64_t>> fail) {
  auto run = std::make_unique<Run>();
  run->backend = std::make_shared<SimulatedBackend>(module.device_count.value_or(8));
  ManagerOptions options;
  options.budgets = module.budgets;
  options.backend = inject_faults(run->backend, run->faults);
  options.warning_handler = [](std::string_view) {}; // scopes left by a failure release with a warning
  run->manager = std::make_unique<Manager>(std::move(options));
  RunnerOptions runner_options;
  runner_options.consumer_stream = [backend = run->backend](Location device) {
    return backend->create_stream(device);
  };
  run->runner = std::make_unique<ModuleRunner>(*run->manager, module, run->binder, std::move(runner_options));
  run->setup = run->runner->run_setup();
  REQUIRE(run->setup.completed);
  if (fail) run->faults->fail_on(fail->first, fail->second);
  run->result = program ? run->runner->run_program(index) : run->runner->run_plan(index);
  return run;
}

/// Books, content and ownership after a run, then close and count bytes.
void check_consistent(Run &run) {
  Manager &m = *run.manager;
  const Snapshot s = m.snapshot();
  for (const SnapshotLocation &l : s.locations) {
    CAPTURE(l.location.name());
    std::uint64_t charged = 0, reserved = 0;
    for (const SnapshotValue &v : s.values)
      for (const SnapshotMaterialization &mat : v.materializations)
        if (mat.location == l.location) charged += mat.charged_nbytes;
    for (const SnapshotReservation &r : s.reservations)
      if (r.location == l.location) reserved += r.nbytes;
    CHECK(l.used_bytes == charged);
    CHECK(l.reserved_bytes == reserved);
  }
  for (const DeclaredValue &value : run.runner->values()) {
    CAPTURE(value.display_name());
    const Handle h = run.runner->handle_of(value.value_id);
    const std::vector<Location> at = m.replicas(h);
    const bool discarded = s.values[h.handle_id - 1].discarded;
    if (value.spec.recoverability == Recoverability::MustPreserve && !discarded) CHECK_FALSE(at.empty());
    for (Location l : at)
      CHECK(m.content_checksum(h, l) == run.binder.expected_checksum(value));
  }
  m.close(/*wait=*/true, /*force=*/true);
  for (unsigned i = 0; i < Location::kCount; ++i)
    CHECK(run.backend->allocated_bytes(Location::from_index(i)) == 0);
  CHECK(run.backend->live_events() == 0);
}

bool same_step(const StepRecord &a, const StepRecord &b) {
  return a.kind == b.kind && a.index == b.index && a.instruction == b.instruction && a.value == b.value &&
         a.outcome.verdict == b.outcome.verdict;
}

} // namespace

TEST_CASE("fault sweep: every allocation, copy and load of every example fails in turn") {
  std::size_t faulty_runs = 0;
  for (const std::string &path : example_paths()) {
    CAPTURE(path);
    CompiledFile compiled = compile_text(read_file(path), path);
    REQUIRE(compiled.ok());
    const bytecode::Module module = scaled_module(*compiled.lowered->module, kScaleDown);
    const bool programs = !module.programs.empty();
    const std::size_t count = programs ? module.programs.size() : module.plans.size();
    for (std::uint32_t index = 0; index < count; ++index) {
      CAPTURE(index);
      // The clean run, and how many operations of each kind it performed.
      std::unique_ptr<Run> clean = execute(module, index, programs, std::nullopt);
      const std::uint64_t before[3] = {clean->faults->count(Op::Allocate), clean->faults->count(Op::Copy),
                                       clean->faults->count(Op::Load)};
      // Faults are armed after setup, so the k-th operation is the run's
      // own; the totals (setup included) bound how far k can go.
      for (Op op : {Op::Allocate, Op::Copy, Op::Load}) {
        const auto kind = static_cast<unsigned>(op);
        for (std::uint64_t k = 1; k <= before[kind]; ++k) {
          CAPTURE(kind);
          CAPTURE(k);
          std::unique_ptr<Run> faulty = execute(module, index, programs, std::make_pair(op, k));
          if (faulty->result.completed) {
            // k lies beyond the run's own operations (the rest were setup's).
            check_consistent(*faulty);
            break;
          }
          ++faulty_runs;
          const bool injected = faulty->result.failure_message.find("injected failure") != std::string::npos;
          if (!clean->result.completed && !injected) { // the predicted failure came first
            check_consistent(*faulty);
            break;
          }
          CHECK_MESSAGE(injected, faulty->result.failure_message);
          const std::size_t prefix = faulty->result.steps.size() - 1;
          REQUIRE(prefix <= clean->result.steps.size());
          for (std::size_t i = 0; i < prefix; ++i)
            CHECK(same_step(faulty->result.steps[i], clean->result.steps[i]));
          check_consistent(*faulty);
        }
      }
      check_consistent(*clean);
    }
  }
  MESSAGE(faulty_runs << " runs with an injected failure");
  CHECK(faulty_runs > 100);
}
