#include "fhr/harness/execution_check.hpp"

#include "fhr/compiler/report.hpp"
#include "fhr/executor/interpreter.hpp"
#include "fhr/executor/module_runner.hpp"
#include "fhr/harness/synthetic_binder.hpp"
#include "fhr/runtime/simulated_backend.hpp"
#ifdef FHR_HAVE_CUDA
#include "fhr/cuda/cuda_backend.hpp"
#include "fhr/harness/cuda_test_helpers.hpp"
#endif

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <sstream>
#include <unistd.h>

namespace fhr {

namespace {

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
  case Verdict::Ok: return "done";
  case Verdict::NoOp: return "no-op";
  case Verdict::Failed: return "refused";
  }
  return "?";
}

std::string describe(const StepRecord &step) {
  std::ostringstream out;
  out << step_kind_name(step.kind) << ' ' << step.index;
  if (step.kind == StepKind::Preflight) out << " (" << step_kind_name(step.phase) << ')';
  out << ' ' << verdict_name(step.outcome.verdict);
  if (step.failed())
    out << " (" << error_class_id(step.raised) << ", caused by " << error_class_id(step.outcome.error) << ')';
  return out.str();
}

/// Whether two records of the same step agree. A failed hold or lease names
/// the value that decided it only on the model (the runtime's error does
/// not carry one).
bool same_step(const StepRecord &p, const StepRecord &e) {
  if (p.kind != e.kind || p.index != e.index || p.instruction != e.instruction ||
      p.outcome.verdict != e.outcome.verdict || p.container != e.container)
    return false;
  if (p.kind == StepKind::Preflight && p.phase != e.phase) return false;
  if (p.failed() && (p.raised != e.raised || p.outcome.error != e.outcome.error)) return false;
  const bool names_failed_lifetime_value =
      p.failed() && (p.kind == StepKind::Acquire || p.kind == StepKind::Hold || p.kind == StepKind::Setup);
  return names_failed_lifetime_value || p.value == e.value;
}

/// Three quarters of the memory this machine has available now
/// (MemAvailable: free memory and what the kernel can reclaim), or of its
/// physical memory where /proc/meminfo does not say.
std::uint64_t default_memory_limit() {
  if (std::FILE *meminfo = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, meminfo))
      found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    std::fclose(meminfo);
    if (found) return static_cast<std::uint64_t>(kib) * 1024 / 4 * 3;
  }
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

} // namespace

DeviceConfig backend_devices(const bytecode::Module &module, const ExecutionOptions &options) {
  unsigned count = 0;
  switch (options.backend) {
  case BackendKind::Simulated: count = module.device_count.value_or(options.default_devices); break;
  case BackendKind::Cuda: count = cuda_devices_present(); break;
  case BackendKind::Host: break; // host memory only
  }
  return DeviceConfig{count > 0, count};
}

namespace {

Runtime make_runtime(const bytecode::Module &module, const ExecutionOptions &options) {
  Runtime runtime;
  ManagerOptions manager_options;
  manager_options.budgets = module.budgets;
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
        module.device_count.value_or(options.default_devices), options.simulated_overlap,
        options.simulated_memory.value_or(SimulatedMemory::Bytes));
    manager_options.backend = runtime.simulated;
  }
  manager_options.trace_capacity = 0;
  manager_options.warning_handler = [warnings = runtime.warnings](std::string_view message) {
    warnings->emplace_back(message);
  };
  runtime.manager = std::make_unique<Manager>(std::move(manager_options));
  return runtime;
}

/// `run(interpreter)` runs the program or plan under test.
template <typename Run>
ExecutionCheck check(const bytecode::Module &module, const ExecutionOptions &options, Run run) {
  ExecutionCheck result;
  result.content_checked = options.content_checks;
  PlanTable plans(module);

  // The prediction: the model from the state the module's budgets give.
  // On the devices the manager will have (a file that declares none and
  // uses cuda:8 fails where eight simulated devices make it fail).
  State state = initial_state(module, options.overrides, backend_devices(module, options));
  ModelTarget model(state);
  Interpreter predict(plans, model);
  result.predicted_setup = predict.run_setup();
  // Setup's peaks (its window is the state's whole history), before the
  // run's window resets them.
  std::map<Location, std::uint64_t> peaks;
  for (Location location : state.registry())
    peaks[location] = state.account(location).peak_charged_bytes;
  std::vector<LocationPrediction> predicted_locations;
  if (result.predicted_setup.completed) {
    const ChargeWindow window(state);
    result.predicted = run(predict);
    predicted_locations = window.predictions(state);
  }
  // The memory guard, before anything is allocated: the predicted peaks of
  // setup and run. Host memory holds every location on the host and
  // simulated backends, only the host locations on the CUDA backend.
  for (const LocationPrediction &p : predicted_locations)
    peaks[p.location] = std::max(peaks[p.location], p.peak_charged);
  std::uint64_t needed = 0; // each peak at most 4 EiB and a few of them: saturated, never wrapped
  for (const auto &[location, peak] : peaks)
    if (options.backend != BackendKind::Cuda || !location.is_cuda())
      needed = peak > ~std::uint64_t{0} - needed ? ~std::uint64_t{0} : needed + peak;
  const std::uint64_t limit =
      options.memory_limit_bytes ? options.memory_limit_bytes : default_memory_limit();
  ExecutionOptions effective = options;
  if (options.backend == BackendKind::Simulated && !effective.simulated_memory)
    effective.simulated_memory = needed > limit ? SimulatedMemory::SizesOnly : SimulatedMemory::Bytes;
  const bool sizes_only =
      effective.simulated_memory == SimulatedMemory::SizesOnly && options.backend == BackendKind::Simulated;
  if (needed > limit && !sizes_only)
    throw ExecutionTooLarge(
        "the run's predicted peaks add up to " + format_size(needed) + " of host memory, more than the " +
        format_size(limit) + " it may use here" +
        (options.backend == BackendKind::Simulated ? "" : " (--backend sim keeps sizes only)"));
  if (sizes_only && needed > SimulatedBackend::kMaxSizesOnlyBytes)
    throw ExecutionTooLarge("the run's predicted peaks add up to " + format_size(needed) +
                            ", more than the simulated backend can reserve as address space even keeping "
                            "sizes only (" +
                            format_size(SimulatedBackend::kMaxSizesOnlyBytes) + ")");
  result.sizes_only = sizes_only;

  // The execution: the same interpreter on a live manager.
  Runtime runtime = make_runtime(module, effective);
  Manager &manager = *runtime.manager;
  // A device's predicted peak must fit in what its driver reports free.
  for (const auto &[location, peak] : peaks)
    if (runtime.cuda && location.is_cuda())
      if (const std::optional<PoolFigures> figures = manager.backend().memory->pool_figures(location);
          figures && figures->driver_free_bytes && peak > *figures->driver_free_bytes)
        throw ExecutionTooLarge("the run's predicted peak at " + location.name() + " is " +
                                format_size(peak) + ", more than the " +
                                format_size(*figures->driver_free_bytes) + " free on the device");
  SyntheticBinder binder;
  if (sizes_only) binder.keep_fingerprints(SimulatedBackend::kFingerprintBytes);
#ifdef FHR_HAVE_CUDA
  if (runtime.cuda)
    binder = SyntheticBinder([](Location device, std::span<const std::byte> bytes) {
      DeviceBuffer buffer = copy_to_device(device, bytes);
      return std::make_pair(buffer.data, std::move(buffer.release));
    });
#endif
  const ManagerTarget *target_ptr = nullptr;
  auto check_content = [&](const Handle &handle, Location at, const std::string &when) {
    const ValueId value = *target_ptr->value_of(handle);
    ++result.content_checks;
    if (manager.content_checksum(handle, at) != binder.expected_checksum(value))
      result.differences.push_back("content of " + target_ptr->values()[value].display_name() + " at " +
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
  std::size_t transitions = 0;
  bool in_run = false;
  runner_options.after_transition = [&](const TransitionReport &report, const Handle &handle) {
    if (in_run && options.progress) options.progress(++transitions, result.predicted.steps.size());
    // Plan phases report their transitions once the phase ran: a later
    // action of the same phase may have removed the replica again.
    if (options.content_checks != ContentChecks::EachTransition) return;
    const std::vector<Location> resident = manager.replicas(handle);
    if (report.destination &&
        std::find(resident.begin(), resident.end(), *report.destination) != resident.end())
      check_content(handle, *report.destination, "by a transition");
  };
  ManagerTarget target(manager, module, binder, std::move(runner_options));
  target_ptr = &target;
  Interpreter execute(plans, target);

  result.setup = execute.run_setup();
  result.values = target.values();
  result.warnings = runtime.warnings;
  for (std::string &difference : compare_runs(module, result.predicted_setup, result.setup))
    result.differences.push_back("setup: " + difference);
  auto check_every_replica = [&](const std::string &when) {
    for (const DeclaredValue &v : target.values())
      for (Location at : manager.replicas(target.handle_of(v.value_id)))
        check_content(target.handle_of(v.value_id), at, when);
  };
  if (!result.setup.completed || !result.predicted_setup.completed) {
    // Checked as each was installed otherwise.
    if (options.content_checks == ContentChecks::AtEnd) check_every_replica("by the end of setup");
    return result;
  }

  if (!options.warm_up.empty()) result.warm_up = manager.warm_up(options.warm_up);
  manager.reset_peaks();
  in_run = true;
  result.run = run(execute);
  for (std::string &difference : compare_runs(module, result.predicted, result.run))
    result.differences.push_back(std::move(difference));

  for (const LocationPrediction &p : predicted_locations) {
    const std::uint64_t measured = manager.account(p.location).peak_charged_bytes;
    result.peaks.push_back(ExecutionCheck::Peak{p.location, p.peak_charged, measured});
    if (result.run.completed && measured != p.peak_charged)
      result.differences.push_back("peak charge at " + p.location.name() + ": predicted " +
                                   std::to_string(p.peak_charged) + " bytes, measured " +
                                   std::to_string(measured));
  }
  check_every_replica("by the end of the run");
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

unsigned cuda_devices_present() {
#ifdef FHR_HAVE_CUDA
  return cuda_device_count();
#else
  return 0;
#endif
}

std::vector<std::string> compare_runs(const bytecode::Module &module, const RunResult &predicted,
                                      const RunResult &run) {
  std::vector<std::string> differences;
  const std::size_t common = std::min(predicted.steps.size(), run.steps.size());
  for (std::size_t i = 0; i < common; ++i) {
    const StepRecord &p = predicted.steps[i];
    const StepRecord &e = run.steps[i];
    if (!same_step(p, e)) {
      std::string ran = describe(e);
      if (e.failed() && !run.failure_message.empty()) ran += ": " + run.failure_message;
      differences.push_back("step " + std::to_string(i + 1) + " (line " +
                            std::to_string(module.code[e.instruction].line) + "): predicted " + describe(p) +
                            ", ran " + ran);
      return differences;
    }
  }
  if (predicted.steps.size() != run.steps.size() || predicted.completed != run.completed)
    differences.push_back("predicted " + std::to_string(predicted.steps.size()) + " steps " +
                          (predicted.completed ? "that all succeed" : "ending in a failure") + ", ran " +
                          std::to_string(run.steps.size()) + " steps " +
                          (run.completed ? "that all succeeded" : "ending in a failure"));
  return differences;
}

std::vector<WindowDifference> window_differences(const Timeline &timeline, const RunResult &run) {
  std::vector<WindowDifference> differences;
  const std::size_t common = std::min({timeline.steps.size(), run.steps.size(), run.timings.size()});
  for (std::size_t k = 0; k < common; ++k) {
    const WindowPlace predicted = predicted_step_place(timeline, k);
    const WindowPlace ran = ran_step_place(run, k);
    if (predicted != ran) differences.push_back(WindowDifference{k, predicted, ran});
  }
  return differences;
}

std::string window_difference_text(const WindowDifference &difference) {
  return "step " + std::to_string(difference.step + 1) + ": predicted " +
         window_place_name(difference.predicted) + ", ran " + window_place_name(difference.ran);
}

WindowPlace predicted_step_place(const Timeline &timeline, std::size_t k) {
  const auto window = [&](std::size_t n) {
    return n < timeline.steps.size() ? timeline.steps[n].window : std::nullopt;
  };
  return predicted_window_place(k > 0 ? window(k - 1) : std::nullopt, window(k), window(k + 1));
}

WindowPlace ran_step_place(const RunResult &run, std::size_t k) {
  const auto position = [&](std::size_t n) {
    return n < run.timings.size() ? run.timings[n].window_position : std::nullopt;
  };
  return ran_window_place(position(k), position(k + 1));
}

ExecutionCheck check_program(const bytecode::Module &module, std::uint32_t program,
                             const ExecutionOptions &options) {
  ExecutionCheck result =
      check(module, options, [&](Interpreter &interpreter) { return interpreter.run_program(program); });
  result.kind = "program";
  result.name = module.strings[module.programs.at(program).name];
  return result;
}

ExecutionCheck check_plan(const bytecode::Module &module, std::uint32_t plan,
                          const ExecutionOptions &options) {
  ExecutionCheck result =
      check(module, options, [&](Interpreter &interpreter) { return interpreter.run_plan(plan); });
  result.kind = "plan";
  result.name = module.strings[module.plans.at(plan).name];
  return result;
}

} // namespace fhr
