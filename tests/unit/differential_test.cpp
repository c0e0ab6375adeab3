// The one interpreter's two targets against each other: every program of
// a module run on the model target (what explain predicts) and on a live
// manager (simulated devices, synthetic payloads whose content is checked
// after every transition) must agree step for step on kind, index,
// instruction, value, verdict and error classes, and on the peak charge of
// every location. 10,000 seeded random programs, half with overlap windows.
// A disagreement prints the program as .fhr text: the reproducer.
#include "random_program.hpp"
#include "test_support.hpp"

#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/explain_time.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/output.hpp"
#include "fhr/harness/execution_check.hpp"

#include <doctest/doctest.h>

using namespace fhr;
using namespace fhr::test;

namespace {

struct Tally {
  std::size_t programs = 0, plans = 0, steps = 0, failures_predicted = 0, content_checks = 0;
  /// Runs in which copies of several actions were in flight at once.
  std::size_t overlapped = 0;
  /// Steps that joined a window the manager formed, each where explain's
  /// time predictor put it.
  std::size_t joined_windows = 0;
  /// Feasible units whose memory explain's replay reproduced to the peak.
  std::size_t replayed_units = 0;
  /// Modules that budget a location their `devices` do not provide: the
  /// manager refuses such budgets at construction (§1.2), so nothing runs.
  std::size_t unconstructible = 0;
};

/// Runs every program of `text` (every plan when it has none) and checks
/// that execution agrees with the prediction.
void check_agreement(const std::string &text, Tally &tally, bool overlap = false) {
  CompiledFile compiled = compile_text(text, "random.fhr");
  REQUIRE_MESSAGE(compiled.ok(), text);
  const bytecode::Module &module = *compiled.lowered->module;
  ExecutionOptions options;
  options.backend = BackendKind::Simulated;
  options.simulated_overlap = overlap;
  // Explain's report comes from the same model run that the check compares.
  const Analysis explained = analyze_module(*compiled.lowered, {}, backend_devices(module, options));
  auto same_as_explained = [&](const ExecutionCheck &check, const RunResult *reported) {
    if (!reported) return;
    CHECK_MESSAGE(reported->steps.size() == check.predicted.steps.size(), text);
    for (std::size_t i = 0; i < std::min(reported->steps.size(), check.predicted.steps.size()); ++i) {
      const StepRecord &a = reported->steps[i], &b = check.predicted.steps[i];
      CHECK_MESSAGE((a.kind == b.kind && a.instruction == b.instruction && a.value == b.value &&
                     a.outcome.verdict == b.outcome.verdict && a.raised == b.raised),
                    "step " << i + 1 << " of " << check.name << "\n"
                            << text);
    }
  };
  auto account = [&](const ExecutionCheck &check) {
    for (const std::string &difference : check.differences)
      FAIL_CHECK(check.kind << " '" << check.name << "': " << difference << "\nreproducer:\n" << text);
    tally.steps += check.setup.steps.size() + check.run.steps.size();
    tally.failures_predicted += !check.run.completed || !check.setup.completed;
    tally.content_checks += check.content_checks;
    tally.overlapped += check.max_copies_in_flight > 1;
  };
  // Explain's document: its replay of each feasible unit's memory (the
  // pictures' stacks, the time predictor's accounts) reaches exactly the
  // model's peak at every location; with overlap, the windows the manager
  // formed are the ones its time predictor forms (the program's unit).
  const nlohmann::ordered_json document = explain_json({build_report(*compiled.lowered, explained)});
  for (const auto &unit : document["files"][0]["units"]) {
    if (!unit["feasible"].get<bool>()) continue;
    for (const LocationMemory &location : unit_memory(unit).locations)
      CHECK_MESSAGE(location.derived_peak_bytes() == location.peak_charged_bytes,
                    unit["name"].get<std::string>() << " at " << location.location << "\n"
                                                    << text);
    ++tally.replayed_units;
  }
  auto same_windows = [&](const ExecutionCheck &check) {
    if (!overlap || !check.agrees() || !check.predicted_setup.completed) return;
    for (const auto &unit : document["files"][0]["units"]) {
      if (unit["kind"] != "program" || unit["name"] != check.name) continue;
      const Timeline timeline =
          unit_timeline(unit, unit_memory(unit, MemorySeries::Totals), LinkModel::h200());
      for (const WindowDifference &d : window_differences(timeline, check.run))
        FAIL_CHECK(check.name << ": " << window_difference_text(d) << "\n" << text);
      for (std::size_t k = 0; k < check.run.steps.size(); ++k)
        tally.joined_windows += ran_step_place(check.run, k) == WindowPlace::Joins;
    }
  };
  try {
    for (std::uint32_t p = 0; p < module.programs.size(); ++p, ++tally.programs) {
      const ExecutionCheck check = check_program(module, p, options);
      account(check);
      if (check.predicted_setup.completed) same_as_explained(check, &explained.programs[p].run);
      same_windows(check);
    }
    if (module.programs.empty())
      for (std::uint32_t p = 0; p < module.plans.size(); ++p, ++tally.plans)
        account(check_plan(module, p, options));
  } catch (const std::invalid_argument &error) {
    const bool unavailable_budget = std::string(error.what()).find("is not available") != std::string::npos;
    CHECK_MESSAGE(unavailable_budget, error.what() << "\nreproducer:\n" << text);
    ++tally.unconstructible;
  }
}

} // namespace

TEST_CASE("differential: a file that declares no devices is predicted on the backend's") {
  // Found by fuzz_run: cuda:8 is no device of the eight simulated ones, so
  // the acquire fails with invalid-argument; predicted on every device (as
  // explain assumes no machine) it failed as not resident.
  Tally tally;
  check_agreement(R"(
    value w 1 MiB replicable at pinned
    program "p" { acquire w at cuda:8 }
    program "q" { ensure w at cuda:7 }
  )",
                  tally, true);
  CHECK(tally.programs == 2);
  CHECK(tally.failures_predicted == 1);
}

TEST_CASE(
    "differential: 10,000 random programs run on the manager as on the model, half with overlap windows") {
  Tally tally;
  for (unsigned seed = 1; seed <= 10000; ++seed) {
    CAPTURE(seed);
    // Odd seeds run with overlap windows (copies started ahead, applied in
    // plan order): the prediction must hold either way.
    check_agreement(RandomProgram(seed, /*small=*/true).generate(), tally, seed % 2 == 1);
  }
  MESSAGE(tally.programs << " programs and " << tally.plans << " plans, " << tally.steps << " steps, "
                         << tally.failures_predicted << " stopped at a predicted failure, "
                         << tally.content_checks << " content checks; " << tally.overlapped
                         << " runs overlapped copies, " << tally.joined_windows
                         << " steps joined a window as predicted; " << tally.replayed_units
                         << " feasible units replayed to their peaks; " << tally.unconstructible
                         << " modules budget a missing device");
  CHECK(tally.programs + tally.plans > 9000);
  CHECK(tally.unconstructible < 1000);
  CHECK(tally.failures_predicted > 100); // failures were exercised, not only successes
  CHECK(tally.content_checks > 10000);
  CHECK(tally.replayed_units > 1000);
  CHECK(tally.overlapped > 10); // windows really started copies together (the unit tests aim at them)
}
