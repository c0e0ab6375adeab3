#include "fhr/compiler/execution_check.hpp"

#include "fhr/compiler/report.hpp"
#include "fhr/runtime/simulated_backend.hpp"
#ifdef FHR_HAVE_CUDA
#include "fhr/cuda/cuda_backend.hpp"
#endif

#include <algorithm>
#include <atomic>
#include <map>
#include <sstream>
#include <unistd.h>

namespace fhr {

namespace {

StepKind step_kind(ProgramPart part) {
  switch (part) {
  case ProgramPart::Preflight: return StepKind::Preflight;
  case ProgramPart::Reclaim: return StepKind::Reclaim;
  case ProgramPart::Reserve: return StepKind::Reserve;
  case ProgramPart::Enter: return StepKind::Enter;
  case ProgramPart::Exit: return StepKind::Exit;
  case ProgramPart::Execute: return StepKind::Execute;
  case ProgramPart::Acquire: return StepKind::Acquire;
  case ProgramPart::Hold: return StepKind::Hold;
  case ProgramPart::BodyReserve: return StepKind::BodyReserve;
  case ProgramPart::Direct: return StepKind::Direct;
  }
  return StepKind::Direct;
}

StepKind step_kind(Phase phase) {
  switch (phase) {
  case Phase::Reclaim: return StepKind::Reclaim;
  case Phase::Reserve: return StepKind::Reserve;
  case Phase::Enter: return StepKind::Enter;
  case Phase::Exit: return StepKind::Exit;
  }
  return StepKind::Enter;
}

Verdict executed_verdict(const ExecutedStep &step) {
  if (step.failed) return Verdict::Failed;
  return step.transition && step.transition->no_op ? Verdict::NoOp : Verdict::Ok;
}

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
  case Verdict::Ok: return "done";
  case Verdict::NoOp: return "no-op";
  case Verdict::Failed: return "refused";
  }
  return "?";
}

std::string describe(const PredictedStep &p) {
  std::ostringstream out;
  out << step_kind_name(p.kind) << ' ' << p.index << ' ' << verdict_name(p.verdict);
  if (p.verdict == Verdict::Failed) out << " (" << error_class_id(p.raised) << ')';
  return out.str();
}

std::string describe(const ExecutedStep &e) {
  std::ostringstream out;
  out << step_kind_name(e.kind) << ' ' << e.index << ' ' << verdict_name(executed_verdict(e));
  if (e.failed) out << " (" << error_class_id(e.raised) << ": " << e.message << ')';
  return out.str();
}

std::uint64_t default_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::uint64_t{4} << 30;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 4 * 3;
}

/// A fresh manager for one run, on the chosen backend.
struct Runtime {
  Runtime() = default;
  Runtime(Runtime &&) = default;
  ~Runtime() {
    readers_done->store(true); // waiting readers of `pending` leases finish
    manager.reset();           // the manager's leases end before their streams
#ifdef FHR_HAVE_CUDA
    if (cuda)
      for (const auto &[device, stream] : streams)
        destroy_cuda_stream(stream);
#endif
  }
  bool cuda = false;
  std::shared_ptr<SimulatedBackend> simulated;
  std::unique_ptr<Manager> manager;
  std::map<unsigned, Stream> streams;
  std::shared_ptr<std::atomic<bool>> readers_done = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<std::vector<std::string>> warnings = std::make_shared<std::vector<std::string>>();
};

Runtime make_runtime(const bytecode::Module &module, const ExecutionOptions &options) {
  Runtime runtime;
  ManagerOptions manager_options;
  manager_options.budgets = ModuleRunner::budgets(module);
  for (const BudgetOverride &o : options.overrides) {
    bool replaced = false;
    for (auto &[location, budget] : manager_options.budgets)
      if (location == o.location) {
        budget = o.budget_bytes;
        replaced = true;
      }
    if (!replaced) manager_options.budgets.emplace_back(o.location, o.budget_bytes);
  }
  if (options.backend == BackendKind::Cuda) {
#ifdef FHR_HAVE_CUDA
    manager_options.backend = make_cuda_backend();
    runtime.cuda = true;
#else
    throw std::invalid_argument("this build of fhr has no CUDA backend (configure with -DFHR_WITH_CUDA=ON)");
#endif
  }
  if (options.backend == BackendKind::Simulated) {
    runtime.simulated = std::make_shared<SimulatedBackend>(
        module.device_count.value_or(options.default_devices), options.simulated_overlap);
    manager_options.backend = runtime.simulated;
  }
  manager_options.trace_capacity = 0;
  manager_options.warning_handler = [warnings = runtime.warnings](std::string_view message) {
    warnings->emplace_back(message);
  };
  runtime.manager = std::make_unique<Manager>(std::move(manager_options));
  return runtime;
}

template <typename Predict, typename Execute>
ExecutionCheck check(const ir::Module &ir_module, const bytecode::Module &module,
                     const ExecutionOptions &options, Predict predict, Execute execute) {
  ExecutionCheck result;
  Runtime runtime = make_runtime(module, options);
  Manager &manager = *runtime.manager;
  SyntheticBinder binder;
#ifdef FHR_HAVE_CUDA
  if (runtime.cuda)
    binder = SyntheticBinder([](Location device, std::span<const std::byte> bytes) {
      DeviceBuffer buffer = copy_to_device(device, bytes);
      return std::make_pair(buffer.data, std::move(buffer.release));
    });
#endif
  ModuleRunner *runner_ptr = nullptr;

  auto check_content = [&](const Handle &handle, Location at, const std::string &when) {
    const std::uint32_t value = *runner_ptr->value_of(handle);
    ++result.content_checks;
    if (manager.content_checksum(handle, at) != binder.expected_checksum(value))
      result.differences.push_back("content of " + runner_ptr->values()[value].display_name() + " at " +
                                   at.name() + " changed " + when);
  };
  RunnerOptions runner_options;
  if (runtime.simulated) {
    runner_options.consumer_stream = [&](Location device) {
      // No stream for a device the backend lacks: acquire then refuses the
      // location itself, as the model does.
      if (device.device() >= runtime.simulated->devices().device_count) return Stream{};
      auto [it, added] = runtime.streams.try_emplace(device.device());
      if (added) it->second = runtime.simulated->create_stream(device);
      return it->second;
    };
    runner_options.submit_reader = [&](Stream stream) { runtime.simulated->launch(stream); };
  }
#ifdef FHR_HAVE_CUDA
  if (runtime.cuda) {
    runner_options.consumer_stream = [&](Location device) {
      if (device.device() >= cuda_device_count()) return Stream{}; // acquire refuses the location
      auto [it, added] = runtime.streams.try_emplace(device.device());
      if (added) it->second = create_cuda_stream(device);
      return it->second;
    };
    runner_options.submit_reader = [&](Stream stream) {
      submit_waiting_reader(stream, runtime.readers_done.get());
    };
  }
#endif
  runner_options.after_transition = [&](const TransitionReport &report, const Handle &handle) {
    // Plan phases report their transitions once the phase ran: a later
    // action of the same phase may have removed the replica again.
    const std::vector<Location> resident = manager.replicas(handle);
    if (report.destination &&
        std::find(resident.begin(), resident.end(), *report.destination) != resident.end())
      check_content(handle, *report.destination, "by a transition");
  };
  ModuleRunner runner(manager, module, binder, std::move(runner_options));
  runner_ptr = &runner;

  // Setup: the compiler counts one step per registration, action and
  // lifetime statement, as the runner does.
  State state = initial_state(ir_module, options.overrides);
  const SetupReport predicted_setup = run_setup(ir_module, state);
  result.setup = runner.run_setup();
  result.values = runner.values();
  result.warnings = runtime.warnings;
  if (result.setup.steps.size() != predicted_setup.steps ||
      result.setup.completed != !predicted_setup.failed_step.has_value())
    result.differences.push_back("setup: predicted " + std::to_string(predicted_setup.steps) + " steps " +
                                 (predicted_setup.failed_step ? "ending in a failure" : "that all succeed") +
                                 ", ran " + std::to_string(result.setup.steps.size()) + " steps " +
                                 (result.setup.completed ? "that all succeeded" : "ending in a failure"));
  if (!result.setup.completed || predicted_setup.failed_step) return result;

  manager.reset_peaks();
  std::vector<LocationPrediction> predicted_locations;
  result.predicted = predict(state, predicted_locations);
  // Host memory holds every location on the host and simulated backends,
  // only the host locations on the CUDA backend.
  std::uint64_t needed = 0;
  for (const LocationPrediction &p : predicted_locations)
    if (options.backend != BackendKind::Cuda || !p.location.is_cuda()) needed += p.peak_charged;
  const std::uint64_t limit =
      options.memory_limit_bytes ? options.memory_limit_bytes : default_memory_limit();
  if (needed > limit)
    throw ExecutionTooLarge("the run's predicted peaks add up to " + format_size(needed) +
                            " of host memory, more than the " + format_size(limit) + " it may use here");
  result.run = execute(runner);
  for (std::string &difference : compare_steps(result.predicted, result.run))
    result.differences.push_back(std::move(difference));

  for (const LocationPrediction &p : predicted_locations) {
    const std::uint64_t measured = manager.account(p.location).peak_charged_bytes;
    result.peaks.push_back(ExecutionCheck::Peak{p.location, p.peak_charged, measured});
    if (result.run.completed && measured != p.peak_charged)
      result.differences.push_back("peak charge at " + p.location.name() + ": predicted " +
                                   std::to_string(p.peak_charged) + " bytes, measured " +
                                   std::to_string(measured));
  }
  for (const DeclaredValue &v : runner.values())
    for (Location at : manager.replicas(runner.handle_of(v.value_id)))
      check_content(runner.handle_of(v.value_id), at, "by the end of the run");
  if (runtime.simulated) result.max_copies_in_flight = runtime.simulated->max_copies_in_flight();
  return result;
}

} // namespace

bool cuda_backend_built() {
#ifdef FHR_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::vector<PredictedStep> predicted_steps(const ProgramReport &report) {
  std::vector<PredictedStep> steps;
  steps.reserve(report.rows.size());
  for (const ProgramRow &row : report.rows)
    steps.push_back(
        PredictedStep{step_kind(row.part), row.index, row.phase, row.outcome.verdict, row.raised});
  return steps;
}

std::vector<PredictedStep> predicted_steps(const Explanation &plan) {
  if (const SimulatedStep *failed = plan.first_failure())
    return {
        PredictedStep{StepKind::Preflight, failed->index, failed->phase, Verdict::Failed, ErrorClass::Plan}};
  std::vector<PredictedStep> steps;
  for (const SimulatedStep &step : plan.steps)
    steps.push_back(
        PredictedStep{step_kind(step.phase), step.index, step.phase, step.outcome.verdict, ErrorClass::None});
  return steps;
}

std::vector<std::string> compare_steps(const std::vector<PredictedStep> &predicted, const RunResult &run) {
  std::vector<std::string> differences;
  const std::size_t common = std::min(predicted.size(), run.steps.size());
  for (std::size_t i = 0; i < common; ++i) {
    const PredictedStep &p = predicted[i];
    const ExecutedStep &e = run.steps[i];
    const Verdict verdict = executed_verdict(e);
    bool same = p.kind == e.kind && p.index == e.index && p.verdict == verdict &&
                (verdict != Verdict::Failed || p.raised == e.raised);
    if (same && p.kind == StepKind::Preflight) same = p.phase == e.phase;
    if (!same) {
      differences.push_back("step " + std::to_string(i + 1) + " (line " + std::to_string(e.line) +
                            "): predicted " + describe(p) + ", ran " + describe(e));
      return differences; // later steps follow from a different state
    }
  }
  if (predicted.size() != run.steps.size())
    differences.push_back("predicted " + std::to_string(predicted.size()) + " steps, ran " +
                          std::to_string(run.steps.size()));
  return differences;
}

ExecutionCheck check_program(const ir::Module &ir_module, const bytecode::Module &module,
                             std::uint32_t program, const ExecutionOptions &options) {
  const ir::Program &p = ir_module.programs[program];
  ExecutionCheck result = check(
      ir_module, module, options,
      [&](State &state, std::vector<LocationPrediction> &locations) {
        const ProgramReport report = run_program(ir_module, p, state);
        locations = report.locations;
        return predicted_steps(report);
      },
      [&](ModuleRunner &runner) { return runner.run_program(program); });
  result.kind = "program";
  result.name = p.name;
  return result;
}

ExecutionCheck check_plan(const ir::Module &ir_module, const bytecode::Module &module, std::uint32_t plan,
                          const ExecutionOptions &options) {
  const ir::Plan &p = ir_module.plans[plan];
  ExecutionCheck result = check(
      ir_module, module, options,
      [&](State &state, std::vector<LocationPrediction> &locations) {
        const Explanation explanation = Simulator(state).explain(p.view());
        locations = explanation.locations;
        return predicted_steps(explanation);
      },
      [&](ModuleRunner &runner) { return runner.run_plan(plan); });
  result.kind = "plan";
  result.name = p.name;
  return result;
}

} // namespace fhr
