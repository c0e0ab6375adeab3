// libFuzzer target: any bytes as a workload (`fhr-workload/1`, the JSON a
// client's trace is written in) through the parser and its rules, the
// planner (gap model, heuristic, realisation, prefetch, verification, bound
// and the schedule clock) and the reference LRU controller; the programs
// they print then go back through the compiler and its checker. A finding
// is a crash, a sanitizer report, a hang, or a broken promise of `fhr-plan
// solve`: a schedule that does not verify, a printed program that does not
// compile, that `check` refuses or that explain puts over a budget
// (check_printed_program, docs/planner.md), or, where no step computes, a
// schedule whose time by the planner's clock is not what `explain
// --profile` predicts for its printed program (one engine, one rule:
// docs/planner.md, "Time").
#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/explain_time.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/output.hpp"
#include "fhr/compiler/printed_program.hpp"
#include "fhr/compiler/report.hpp"
#include "fhr/planner/lru_baseline.hpp"
#include "fhr/planner/schedule.hpp"
#include "fhr/planner/solve.hpp"
#include "fhr/planner/workload_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

namespace {

/// A workload of 4 KiB may declare a million values; solving one that large
/// under the sanitizers takes longer than the fuzzer's timeout without
/// telling anything the small ones do not (the planner's scale is
/// planner_bench's). Parsing it is still fuzzed.
constexpr std::size_t kMaxValues = 10'000, kMaxNeeds = 10'000;

[[noreturn]] void finding(const std::string &what, const std::string &detail) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), detail.c_str());
  std::abort();
}

/// The profile the schedules are made and explained with: the shipped one
/// with the figure it lacks for a staged copy after other host work, so
/// that the clock and explain are compared on every DMA rule a calibrated
/// profile has.
const fhr::LinkModel &fuzz_links() {
  static const fhr::LinkModel links = [] {
    fhr::LinkModel model = fhr::LinkModel::h200();
    model.staged_after_host_work_seconds = 110e-6;
    return model;
  }();
  return links;
}

/// explain --profile's total for the printed program (fuzz_links()), less
/// its loads' fills, and how many loads it has: each subtracts figures
/// rounded to the nanosecond.
std::pair<double, std::size_t> explained_us(const std::string &program) {
  fhr::CompiledFile compiled = fhr::compile_text(program, "fuzz.fhr");
  const fhr::Analysis analysis = fhr::analyze_module(*compiled.lowered);
  nlohmann::ordered_json document = fhr::explain_json({fhr::build_report(*compiled.lowered, analysis)});
  fhr::add_predicted_time(document, fuzz_links());
  for (const auto &unit : document["files"][0]["units"]) {
    if (unit["kind"] != "program") continue;
    const auto loads =
        static_cast<std::size_t>(std::count_if(unit["steps"].begin(), unit["steps"].end(),
                                               [](const auto &step) { return step["transfer"] == "load"; }));
    return {fhr::predicted_us_without_fills(unit), loads};
  }
  finding("the printed program", "has no program unit\n" + program);
}

/// Every schedule made must verify, and its printed program must be what
/// `fhr-plan solve` promises.
void check(const fhr::planner::Workload &workload, const fhr::planner::SolveResult &result) {
  if (!result.verification.feasible) finding(result.policy + "'s schedule", result.failure);
  if (!result.ok()) return; // infeasible, or the LRU controller gave up
  const std::string program = fhr::planner::emit_program(workload, result.schedule, "fuzz");
  const fhr::PrintedProgramCheck printed = fhr::check_printed_program(program, workload.budgets);
  if (!printed.accepted) finding(result.policy + "'s printed program", printed.detail + "\n" + program);
  // Where steps compute, prefetches stream beside the next step's reclaim,
  // which a program's explanation does not see.
  for (const fhr::planner::Step &step : workload.steps)
    if (step.compute_seconds.value_or(0.0) != 0.0) return;
  const auto [us, loads] = explained_us(program);
  const double clock_us = result.timeline.total_seconds * 1e6;
  // explain's JSON gives each figure to the nanosecond.
  const double tolerance = 0.01 + 0.002 * static_cast<double>(loads) + 1e-9 * std::abs(clock_us);
  if (!(std::abs(clock_us - us) <= tolerance))
    finding(result.policy + "'s time", "the clock says " + std::to_string(clock_us) + " us, explain " +
                                           std::to_string(us) + " us\n" + program);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  auto parsed = fhr::planner::parse_workload_json(text);
  const auto *workload = std::get_if<fhr::planner::Workload>(&parsed);
  if (!workload || workload->values.size() > kMaxValues) return 0;
  std::size_t needs = 0;
  for (const fhr::planner::Step &step : workload->steps)
    needs += step.needs.size() + 1;
  if (needs > kMaxNeeds) return 0;
  fhr::planner::SolveOptions options;
  options.links = &fuzz_links();
  fhr::planner::LruOptions lru_options;
  lru_options.links = &fuzz_links();
  check(*workload, fhr::planner::solve_planner(*workload, options));
  check(*workload, fhr::planner::solve_lru(*workload, lru_options));
  return 0;
}
