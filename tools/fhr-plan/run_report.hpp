#pragma once
/// \file
/// EXPLAIN ANALYZE for `fhr-plan run`: one run's steps with what the
/// simulator predicted beside what the runtime did, and each step's
/// predicted time (the link model's timeline, fhr/model/timeline.hpp, over
/// the same explanation `explain --profile` times) beside its measured
/// duration; the totals per run and per link. Rendered as text, as JSON
/// (schema fhr-run/1, docs/run.md) and as a Perfetto trace.

#include "fhr/bytecode/module.hpp"
#include "fhr/compiler/trace.hpp"
#include "fhr/harness/execution_check.hpp"
#include "fhr/model/link_model.hpp"
#include "fhr/model/timeline.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fhr::cli {

/// One step of a run.
struct AnalyzedStep {
  std::uint32_t line = 0;
  std::string phase; ///< the step kind ("enter")
  std::uint32_t index = 0;
  std::string action; ///< "ensure rotkey from pageable to cuda:0", "drop rotkey at cuda:0", "reserve"
  std::string value;  ///< the value it acts on, "" for steps without one
  std::optional<Location> source, destination;
  std::uint64_t bytes = 0;                       ///< the value's storage bytes (the reservation's size)
  std::string predicted_result, measured_result; ///< "done", "no-op", "refused (budget)"
  StepTransfer transfer = StepTransfer::None;    ///< what moved its bytes (as explained)
  std::string link; ///< the link its bytes took ("pageable-device", "load pageable-device"), "" for none
  /// The link model's timeline, when the explanation lines up with the run.
  std::optional<StepTime> predicted;
  /// Microseconds from the run's first measured step; none when not measured.
  std::optional<double> measured_start_us, measured_end_us;
  /// Of the measured span, the time in the value's source (a load).
  double measured_source_load_us = 0;
  /// Of the measured span, the host's work before the copy into the
  /// destination was issued (allocations, a load's fill); none when the
  /// runtime did not stamp it (no such copy, or a small tick-stamped one).
  std::optional<double> measured_before_copy_us;
  /// --repeat: the step's measured span and its source's fill in each
  /// repetition, in run order (empty for a single run). The measured
  /// duration, transfer and source fill (measured_source_load_us) are then
  /// medians over the repetitions, each on its own; the start and end stay
  /// those of the representative repetition.
  std::vector<double> repeated_durations_us, repeated_source_loads_us;
  std::vector<double> repeated_before_copy_us; ///< the repetitions that stamped it
  /// Its place among the overlap windows, predicted and as the manager ran
  /// it, when the run's windows are compared (AnalyzedRun::windows_compared).
  std::optional<WindowPlace> predicted_window, ran_window;

  /// What the prediction has the host do before it issues the copy
  /// (StepTime::copy_issue_seconds less its start), the counterpart of
  /// measured_before_copy_us.
  std::optional<double> predicted_before_copy_us() const;

  std::optional<double> predicted_duration_us() const;
  std::optional<double> measured_duration_us() const;
  /// The durations less the source's fill: what the runtime's allocation
  /// and copy took, which the link model predicts (a source's speed is
  /// the loader's, docs/run.md).
  std::optional<double> predicted_transfer_us() const;
  std::optional<double> measured_transfer_us() const;
};

/// Bytes and time per link of one run (or of every run).
struct LinkTotal {
  std::string link;
  std::uint64_t copies = 0, bytes = 0;
  double measured_us = 0, predicted_us = 0;
};

struct AnalyzedRun {
  std::string file, kind, name;
  const ExecutionCheck *check = nullptr;
  std::vector<AnalyzedStep> steps;
  /// Whether each step has a prediction (the explanation had the run's steps).
  bool timed = false;
  double predicted_us = 0; ///< when the last predicted step committed
  /// The time some step of the run was in flight (the union of the measured
  /// step spans): the work the prediction times, which runs its steps back
  /// to back. What the runtime does between steps (the interpreter, scope
  /// bookkeeping, a plan's preflight) is in `span_us` only.
  double measured_us = 0;
  double span_us = 0; ///< first measured start to last completion
  std::uint64_t bytes_moved = 0;
  /// --warm-up: what the cold pools would have cost the steps (predicted,
  /// set by the caller, which planned the warm-up) and what reserving those
  /// blocks before the run took (measured).
  std::optional<double> warm_up_predicted_us, warm_up_measured_us;
  std::vector<LinkTotal> links;
  /// Whether the windows the manager formed are compared with the
  /// predicted ones: a timed run with overlap (the CUDA backend), where
  /// each plain copy ran in a window. The steps (0-based) whose place
  /// differs, and how many windows of several copies each side formed.
  bool windows_compared = false;
  std::vector<std::size_t> window_differences;
  std::size_t windows_predicted = 0, windows_ran = 0;
  std::optional<std::uint32_t> stopped_line;
  /// --repeat: each repetition's `measured_us`, in run order (empty for a
  /// single run), and the one that stands for them (its check, spans and
  /// totals are the run's): the median of those totals, or the last one
  /// when it differs from the prediction (`differing_repetition`: the run
  /// is that repetition alone, no medians).
  std::vector<double> repeated_measured_us;
  std::size_t representative = 0;
  bool differing_repetition = false;
};

/// A run's loads' sources filling host memory, measured beside what the
/// profile predicts (LinkModel::source_load_bytes_per_second). A fill is
/// the processor writing host memory on one thread: how far it ran from
/// the profile says how fast the host's memory was against the
/// calibration's, which the staged copies beside it follow (on the H200
/// machine the fills of one call ran 21% under the calibration in one
/// stretch and 13-17% over it in the next: docs/benchmarks.md, thirtieth
/// wave).
struct SourceFills {
  std::uint64_t loads = 0, bytes = 0;
  double measured_us = 0, predicted_us = 0;
  /// Measured over predicted, less one, in percent; none without a prediction.
  std::optional<double> error_percent() const {
    if (!(predicted_us > 0)) return std::nullopt;
    return (measured_us - predicted_us) / predicted_us * 100;
  }
};

/// The fills of the run's loads that were predicted and measured; none
/// when it has none (with --repeat, each step's median).
std::optional<SourceFills> source_fills(const AnalyzedRun &run);

/// "source fills: 1 load, 120.0 MiB in 18.9 ms measured, 17.3 ms predicted
/// (+9.2%): the host's memory against the profile's".
std::string source_fills_text(const SourceFills &fills);

/// Analyses one checked run: `explanation` is the unit of the explain
/// document (fhr-explain/1) of the same module with the same name and kind,
/// or null; `links` and `timeline` predict its time.
AnalyzedRun analyze_run(const std::string &file, const bytecode::Module &module, const ExecutionCheck &check,
                        const nlohmann::ordered_json *explanation, const LinkModel &links,
                        const TimelineOptions &timeline);

/// Repetitions of one unit as one run: when they all agree with the
/// prediction, the repetition whose measured total is the median (the
/// lower one of an even count) with, per step, the durations of every
/// repetition (AnalyzedStep::repeated_durations_us) and the per-link totals
/// of their medians (repetitions that agree run the same steps; a step
/// another repetition lacks keeps the representative's time alone). When
/// the last one differs (the runner stops there), that one as it ran.
/// \pre !repetitions.empty()
AnalyzedRun combine_repetitions(std::vector<AnalyzedRun> repetitions);

/// Per link, over several runs.
std::vector<LinkTotal> merge_links(const std::vector<AnalyzedRun> &runs);

/// "259.0 MiB", "4.0 KiB", "17 B": a human size.
std::string human_bytes(double bytes);
/// "12.3 ms", "830.0 us", "1.25 s".
std::string human_time(double microseconds);
/// "pageable-device 139.0 MiB in 10.2 ms (14.3 GB/s)".
std::string link_text(const LinkTotal &link);

/// The fhr-run/1 document of every run (docs/run.md).
nlohmann::ordered_json run_document(const std::vector<AnalyzedRun> &runs, const std::string &backend,
                                    const LinkModel &links, double wall_us, int exit_code);

/// Predicted and measured spans of every run side by side (runs follow
/// each other in time): steps, copies on their engines, commit waits,
/// leases and holds.
TraceDocument run_trace(const std::vector<AnalyzedRun> &runs);

} // namespace fhr::cli
