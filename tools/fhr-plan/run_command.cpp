// fhr-plan run: executes programs (or plans) of a file on a fresh manager
// with synthetic payloads of the declared sizes and prints, step by step,
// the simulator's prediction beside what the runtime did, the link model's
// predicted time beside the measured one (EXPLAIN ANALYZE), and the totals.
#include "commands.hpp"
#include "run_report.hpp"
#include "time_commands.hpp"

#include "fhr/bytecode/module.hpp"
#include "fhr/compiler/explain_time.hpp"
#include "fhr/compiler/output.hpp"
#include "fhr/executor/scaled_module.hpp"
#include "fhr/harness/execution_check.hpp"
#ifdef FHR_HAVE_CUDA
#include "fhr/cuda/cuda_backend.hpp"
#include "fhr/cuda/host_blocks.hpp"
#endif

#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/WithColor.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unistd.h>

namespace fhr::cli {

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr const char *kRow = "  {0,5}  {1,-12} {2,-44} {3,-18} {4,-18} {5,11} {6,11} {7,8}\n";

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Progress of long runs on a terminal: one line on stderr, rewritten at
/// most ten times a second, once a run has taken a second; nothing when
/// stderr is not a terminal.
class Progress {
public:
  explicit Progress(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO)) {}
  ~Progress() { clear(); }
  void start(std::string what) {
    what_ = std::move(what);
    started_ = Clock::now();
  }
  void update(std::size_t transitions, std::size_t predicted_steps) {
    if (!enabled_) return;
    const double elapsed = seconds_since(started_);
    if (elapsed < 1.0 || elapsed - last_ < 0.1) return;
    last_ = elapsed;
    std::fprintf(stderr, "\r\033[Kfhr-plan run: %s: %zu of %zu steps, %.1f s", what_.c_str(), transitions,
                 predicted_steps, elapsed);
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (!shown_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    shown_ = false;
    last_ = 0;
  }

private:
  bool enabled_;
  bool shown_ = false;
  std::string what_;
  Clock::time_point started_;
  double last_ = 0;
};

std::string time_cell(const std::optional<double> &us) {
  if (!us) return "-";
  return human_time(*us);
}

std::string error_cell(const AnalyzedStep &step) {
  const std::optional<double> p = step.predicted_duration_us(), m = step.measured_duration_us();
  if (!p || !m || step.transfer == StepTransfer::None) return "-";
  if (*p <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", (*m - *p) / *p * 100);
  return text;
}

void print_run(llvm::raw_ostream &os, const AnalyzedRun &run, const char *backend) {
  const ExecutionCheck &check = *run.check;
  os << run.file << ": " << check.kind << " " << string_literal(check.name) << " on the " << backend
     << " backend" << (check.sizes_only ? " (sizes only: the run does not fit in memory)" : "") << "\n";
  if (!check.setup.completed) os << "  setup stopped: " << check.setup.failure_message << "\n";
  if (!run.steps.empty()) {
    os << llvm::formatv(kRow, "line", "step", "action", "predicted", "measured", "predicted", "measured",
                        "error");
    for (const AnalyzedStep &step : run.steps)
      // Strings only: LLVM 14's integer formatter trips GCC's
      // -Wmaybe-uninitialized at -O2.
      os << llvm::formatv(kRow, std::to_string(step.line), step.phase + " " + std::to_string(step.index),
                          step.action, step.predicted_result.empty() ? "-" : step.predicted_result,
                          step.measured_result, time_cell(step.predicted_duration_us()),
                          time_cell(step.measured_duration_us()), error_cell(step));
  }
  for (const ExecutionCheck::Peak &peak : check.peaks)
    os << "  peak charged at " << peak.location.name() << ": predicted " << format_size(peak.predicted)
       << ", measured " << format_size(peak.measured) << "\n";
  if (check.warnings)
    for (const std::string &warning : *check.warnings)
      os << "  runtime warning: " << warning << "\n";
  if (run.stopped_line)
    os << "  stopped at line " << *run.stopped_line << ": " << check.run.failure_message << "\n";
  // Measured: the time steps were in flight, which is what the prediction
  // times; the run's whole span (with the work between steps) follows.
  std::string time = "  time: " + human_time(run.measured_us) + " measured";
  if (run.timed) {
    time += ", " + human_time(run.predicted_us) + " predicted";
    if (run.predicted_us > 0) {
      char text[32];
      std::snprintf(text, sizeof text, " (%+.1f%%)",
                    (run.measured_us - run.predicted_us) / run.predicted_us * 100);
      time += text;
    }
  }
  time += ", " + human_time(run.span_us) + " from first start to last end";
  os << time << "; " << human_bytes(static_cast<double>(run.bytes_moved)) << " moved";
  for (std::size_t l = 0; l < run.links.size(); ++l)
    os << (l == 0 ? ": " : ", ") << link_text(run.links[l]);
  os << "\n";
  if (run.timed)
    if (const std::optional<SourceFills> fills = source_fills(run))
      os << "  " << source_fills_text(*fills) << "\n";
  if (run.differing_repetition) {
    os << "  repetition " << run.representative + 1
       << " differs from the prediction (those before it agreed); shown as it ran\n";
  } else if (!run.repeated_measured_us.empty()) {
    const auto [fastest, slowest] =
        std::minmax_element(run.repeated_measured_us.begin(), run.repeated_measured_us.end());
    os << "  repeated " << run.repeated_measured_us.size()
       << " times: step times are medians, the rest is repetition " << run.representative + 1
       << " (its total the median); totals " << human_time(*fastest) << " to " << human_time(*slowest)
       << "\n";
  }
  if (run.windows_compared) {
    os << "  overlap windows: " << run.windows_predicted << " predicted, " << run.windows_ran << " formed";
    if (run.window_differences.empty()) {
      os << ", every step in its predicted place\n";
    } else {
      os << "; " << run.window_differences.size() << " steps elsewhere:";
      for (std::size_t k : run.window_differences) {
        const AnalyzedStep &step = run.steps[k];
        os << " step " << k + 1 << " (line " << step.line << ", predicted "
           << window_place_name(step.predicted_window.value_or(WindowPlace::Alone)) << ", ran "
           << window_place_name(step.ran_window.value_or(WindowPlace::Alone)) << ")";
      }
      os << "\n";
    }
  }
  if (check.warm_up)
    os << "  warm-up before the run: " << human_bytes(static_cast<double>(check.warm_up->reserved_bytes()))
       << " reserved in " << human_time(run.warm_up_measured_us.value_or(0))
       << (run.warm_up_predicted_us ? ", " + human_time(*run.warm_up_predicted_us) + " predicted cold" : "")
       << "\n";
  if (check.agrees())
    os << "  result: " << (check.run.completed && check.setup.completed ? "completed" : "stopped")
       << " as predicted; " << check.content_checks
       << (check.sizes_only ? " content checks (fingerprints) passed" : " content checks passed")
       << (check.content_checked == ContentChecks::AtEnd ? " (at the end)\n" : "\n");
  else
    for (const std::string &difference : check.differences)
      os << "  DIFFERS: " << difference << "\n";
}

/// The pools the run's CUDA backend will have: its options as the
/// backend resolves them (the environment's overrides included), so that
/// the cold-pool prediction charges the bounce buffers it will make.
PoolOptions backend_pools() {
  PoolOptions pools;
#ifdef FHR_HAVE_CUDA
  const CudaBackendOptions backend = resolved({});
  pools.pinned_pool_bytes = backend.pinned_pool_bytes;
  pools.pageable_pool_bytes = backend.pageable_pool_bytes;
  pools.staging_chunk_bytes = backend.staging_chunk_bytes;
  pools.pinned_huge_pages = pinned_on_huge_pages(backend.pinned_huge_pages);
#endif
  return pools;
}

/// --warm-up for one unit: the pool blocks its steps would allocate from
/// cold pools (the cold timeline's misses, fhr/model/runtime_pools.hpp) as
/// the manager's warm-up requests, the bounce buffers of staged transfers
/// as a pageable block of the smallest staged size (which makes them), and
/// what those allocations would have cost the steps. A device pool gets
/// one block of the most the steps held there (fhr/model/runtime_pools.hpp,
/// warm_up_blocks).
struct UnitWarmUp {
  std::vector<PoolRequest> requests;
  std::optional<double> predicted_us;
};
UnitWarmUp unit_warm_up(const json *unit, const LinkModel &links) {
  UnitWarmUp warm_up;
  if (!unit) return warm_up;
  TimelineOptions cold;
  cold.pools = backend_pools();
  const UnitMemory memory = unit_memory(*unit, MemorySeries::Totals);
  cold = unit_timeline_options(memory, cold);
  const Timeline timeline = unit_timeline(*unit, memory, links, cold);
  for (const WarmUpBlock &block : warm_up_blocks(timeline.cold_allocations, cold.resident_before,
                                                 timeline.device_peaks, cold.staged_min_bytes))
    request_block(warm_up.requests, block.location, static_cast<std::size_t>(block.bytes));
  warm_up.predicted_us = timeline.allocation_seconds * 1e6;
  return warm_up;
}

/// The run's default: the GPUs when the CUDA runtime reports one, else
/// simulated devices.
std::string default_backend() { return cuda_devices_present() > 0 ? "cuda" : "sim"; }

} // namespace

int run_run(const CommonOptions &options, const RunOptions &run) {
  const Clock::time_point started = Clock::now();
  LoadedFiles loaded = load_files(options);
  if (!loaded.ok) return kBadInput;
  if (run.scale == 0) {
    llvm::WithColor::error(llvm::errs(), "fhr-plan") << "--scale must be at least 1\n";
    return kBadInput;
  }
  if (run.repeat == 0 || run.repeat > kMaxRepeat) {
    llvm::WithColor::error(llvm::errs(), "fhr-plan") << "--repeat must be from 1 to " << kMaxRepeat << "\n";
    return kBadInput;
  }
  std::optional<LinkModel> links = load_profile(run.profile);
  if (!links) return kBadInput;
  const std::string backend_id = run.backend.empty() ? default_backend() : run.backend;
  ExecutionOptions execution;
  execution.backend = backend_id == "sim"    ? BackendKind::Simulated
                      : backend_id == "cuda" ? BackendKind::Cuda
                                             : BackendKind::Host;
  if (run.overlap && execution.backend != BackendKind::Simulated) {
    llvm::WithColor::error(llvm::errs(), "fhr-plan")
        << "--overlap gives the simulated devices copy engines: it needs --backend sim"
        << (execution.backend == BackendKind::Cuda ? " (the CUDA backend's copies overlap without it)" : "")
        << "\n";
    return kBadInput;
  }
  execution.simulated_overlap = run.overlap;
  execution.memory_limit_bytes = run.memory_limit_bytes;
  // The CUDA backend's steps are timed: checks between them would be
  // traffic of their own (ContentChecks::AtEnd).
  const bool check_at_end =
      run.check_content == "end" || (run.check_content.empty() && execution.backend == BackendKind::Cuda);
  execution.content_checks = check_at_end ? ContentChecks::AtEnd : ContentChecks::EachTransition;
  for (BudgetOverride o : loaded.overrides) {
    o.budget_bytes = (o.budget_bytes + run.scale - 1) / run.scale; // as scaled_module divides
    execution.overrides.push_back(o);
  }
  Progress progress(true);
  execution.progress = [&](std::size_t transitions, std::size_t predicted) {
    progress.update(transitions, predicted);
  };
  const char *backend = backend_id == "sim" ? "simulated device" : backend_id == "cuda" ? "CUDA" : "host";
  // Only the CUDA backend has copy engines that overlap (docs/links.md),
  // and the simulated one when --overlap gives it some.
  TimelineOptions timeline;
  timeline.overlap = execution.backend == BackendKind::Cuda || run.overlap;
  // Every run has a fresh CUDA backend: its pools are cold at the first
  // step, and the prediction charges what they cost (docs/run.md), unless
  // --warm-up reserves those blocks before the run.
  if (execution.backend == BackendKind::Cuda && !run.warm_up) timeline.pools = backend_pools();

  int status = kFeasible;
  // Kept whole: the analyses point into them.
  std::vector<std::unique_ptr<bytecode::Module>> modules;
  std::vector<std::vector<ExecutionCheck>> checks_per_file;
  std::vector<AnalyzedRun> runs;
  for (std::size_t f = 0; f < loaded.files.size(); ++f) {
    const VerifiedModule &lowered = *loaded.files[f].lowered;
    modules.push_back(std::make_unique<bytecode::Module>(
        run.scale == 1 ? *lowered.module : scaled_module(*lowered.module, run.scale)));
    const bytecode::Module &module = *modules.back();
    // The explanation of the module as it runs: the link model times its steps.
    const VerifiedModule scaled{
        std::shared_ptr<const bytecode::Module>(lowered.module, &module), {}, lowered.spans};
    json explanation = explain_json({build_report(
        scaled, analyze_module(scaled, execution.overrides, backend_devices(module, execution)))});
    auto unit_of = [&](const std::string &kind, const std::string &name) -> const json * {
      for (const json &file : explanation.at("files"))
        for (const json &unit : file.at("units"))
          if (unit.at("kind") == kind && unit.at("name") == name) return &unit;
      return nullptr;
    };
    auto name_of = [&](std::uint32_t string) -> const std::string & { return module.strings[string]; };
    std::vector<ExecutionCheck> &checks = checks_per_file.emplace_back();
    // Per unit run, its repetitions' checks: [first, first + count).
    struct UnitRuns {
      std::size_t first = 0, count = 0;
      std::optional<double> warm_up_predicted_us;
    };
    std::vector<UnitRuns> unit_runs;
    bool selected = false;
    auto run_unit = [&](const std::string &kind, const std::string &name, auto check_unit) {
      UnitWarmUp warm_up;
      if (run.warm_up) warm_up = unit_warm_up(unit_of(kind, name), *links);
      execution.warm_up = std::move(warm_up.requests);
      UnitRuns &unit = unit_runs.emplace_back(UnitRuns{checks.size(), 0, warm_up.predicted_us});
      for (unsigned r = 0; r < run.repeat; ++r) {
        progress.start(kind + " " + string_literal(name) +
                       (run.repeat > 1
                            ? " (" + std::to_string(r + 1) + " of " + std::to_string(run.repeat) + ")"
                            : std::string()));
        checks.push_back(check_unit());
        ++unit.count;
        progress.clear();
        // A repetition that differs from the prediction ends them and is
        // the one reported (combine_repetitions): medians would hide it.
        if (!checks.back().agrees()) break;
      }
      selected = true;
    };
    try {
      for (std::uint32_t p = 0; p < module.programs.size(); ++p)
        if ((run.program.empty() && run.plan.empty()) || name_of(module.programs[p].name) == run.program)
          run_unit("program", name_of(module.programs[p].name),
                   [&] { return check_program(module, p, execution); });
      for (std::uint32_t p = 0; p < module.plans.size(); ++p)
        if ((run.program.empty() && run.plan.empty() && module.programs.empty()) ||
            name_of(module.plans[p].name) == run.plan)
          run_unit("plan", name_of(module.plans[p].name), [&] { return check_plan(module, p, execution); });
    } catch (const std::exception &error) {
      progress.clear();
      // The manager itself could not be built (a budget at a location this
      // backend does not have, say), or the run would not fit in memory.
      llvm::WithColor::error(llvm::errs(), "fhr-plan")
          << options.files[f] << ": cannot run on the " << backend << " backend: " << error.what()
          << (execution.backend == BackendKind::Host ? " (--backend sim stands in for CUDA devices)" : "")
          << '\n';
      return kBadInput;
    }
    if (!selected) {
      llvm::WithColor::error(llvm::errs(), "fhr-plan")
          << options.files[f] << ": no "
          << (!run.program.empty() ? "program " + string_literal(run.program)
              : !run.plan.empty()  ? "plan " + string_literal(run.plan)
                                   : std::string("program or plan"))
          << " to run\n";
      return kBadInput;
    }
    for (const UnitRuns &unit : unit_runs) {
      std::vector<AnalyzedRun> repetitions;
      for (std::size_t c = unit.first; c < unit.first + unit.count; ++c) {
        const ExecutionCheck &check = checks[c];
        repetitions.push_back(
            analyze_run(options.files[f], module, check, unit_of(check.kind, check.name), *links, timeline));
        if (check.warm_up) repetitions.back().warm_up_predicted_us = unit.warm_up_predicted_us;
      }
      runs.push_back(combine_repetitions(std::move(repetitions)));
      const ExecutionCheck &check = *runs.back().check;
      if (!check.agrees())
        status = kBadInput;
      else if (status == kFeasible && (!check.run.completed || !check.setup.completed))
        status = kInfeasible;
    }
  }
  const double wall_us = seconds_since(started) * 1e6;
  if (!run.trace.empty() && !write_output(run.trace, json_text(trace_json(run_trace(runs))) + "\n"))
    return kBadInput;
  if (run.format == "json") {
    llvm::outs() << json_text(run_document(runs, backend_id, *links, wall_us, status)) << '\n';
  } else {
    bool first = true;
    for (const AnalyzedRun &analyzed : runs) {
      if (!first) llvm::outs() << '\n';
      first = false;
      print_run(llvm::outs(), analyzed, backend);
    }
    std::uint64_t bytes = 0;
    for (const AnalyzedRun &analyzed : runs)
      bytes += analyzed.bytes_moved;
    const std::vector<LinkTotal> all_links = merge_links(runs);
    llvm::outs() << "\ntotal: " << runs.size() << (runs.size() == 1 ? " run" : " runs") << " in "
                 << human_time(wall_us) << " wall; " << human_bytes(static_cast<double>(bytes)) << " moved";
    for (std::size_t l = 0; l < all_links.size(); ++l)
      llvm::outs() << (l == 0 ? ": " : ", ") << link_text(all_links[l]);
    llvm::outs() << "\n";
  }
  llvm::outs().flush();
  return status;
}

} // namespace fhr::cli
