// libFuzzer target, differential: any bytes that compile are run by the one
// interpreter on its model target and on a manager over simulated devices
// with overlap windows (sizes and fingerprints only), every program (every
// plan as a scope where the file has none), as `fhr-plan run` and the
// differential test do. A finding is a disagreement (a step, its verdict
// or classes, a peak charge, a replica's fingerprint), a step the manager
// ran in another place among its overlap windows than explain's time
// predictor puts it (fhr::WindowPlace), a crash, a sanitizer report or a
// hang.
#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/explain_time.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/output.hpp"
#include "fhr/compiler/report.hpp"
#include "fhr/harness/execution_check.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

/// Runs longer than this (explained steps, all units together) are left to
/// fuzz_explain: here they would only slow the search down.
constexpr std::size_t kMaxSteps = 2'000;

[[noreturn]] void finding(const std::string &what, const std::string &text) {
  std::fprintf(stderr, "%s\n--- the input\n%s\n", what.c_str(), text.c_str());
  std::abort();
}

/// The explained unit of `kind` named `name`.
const nlohmann::ordered_json *unit_named(const nlohmann::ordered_json &document, const std::string &kind,
                                         const std::string &name) {
  for (const auto &unit : document["files"][0]["units"])
    if (unit["kind"] == kind && unit["name"] == name) return &unit;
  return nullptr;
}

void compare(const fhr::ExecutionCheck &check, const nlohmann::ordered_json &document,
             const std::string &text) {
  for (const std::string &difference : check.differences)
    finding(check.kind + " '" + check.name + "': " + difference, text);
  if (!check.predicted_setup.completed) return;
  const nlohmann::ordered_json *unit = unit_named(document, check.kind, check.name);
  // A plan its preflight refuses is explained step by step but runs as one
  // refused step: nothing to compare.
  if (!unit || (*unit)["steps"].size() != check.run.steps.size()) return;
  const fhr::Timeline timeline =
      fhr::unit_timeline(*unit, fhr::unit_memory(*unit, fhr::MemorySeries::Totals), fhr::LinkModel::h200());
  for (const fhr::WindowDifference &d : fhr::window_differences(timeline, check.run))
    finding(check.kind + " '" + check.name + "': " + fhr::window_difference_text(d), text);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  fhr::CompiledFile compiled = fhr::compile_text(text, "fuzz.fhr");
  if (!compiled.ok()) return 0;
  const fhr::bytecode::Module &module = *compiled.lowered->module;
  fhr::ExecutionOptions options;
  options.backend = fhr::BackendKind::Simulated;
  options.simulated_overlap = true;
  options.simulated_memory = fhr::SimulatedMemory::SizesOnly;
  // Explained on the devices the run has, as `fhr-plan run` explains it.
  const fhr::Analysis analysis =
      fhr::analyze_module(*compiled.lowered, {}, fhr::backend_devices(module, options));
  std::size_t steps = analysis.setup.steps;
  for (const fhr::PlanExplanation &plan : analysis.plans)
    steps += plan.explanation.steps.size();
  for (const fhr::ProgramReport &program : analysis.programs)
    steps += program.run.steps.size();
  if (steps > kMaxSteps) return 0;
  const nlohmann::ordered_json document = fhr::explain_json({fhr::build_report(*compiled.lowered, analysis)});
  try {
    for (std::uint32_t p = 0; p < module.programs.size(); ++p)
      compare(fhr::check_program(module, p, options), document, text);
    if (module.programs.empty())
      for (std::uint32_t p = 0; p < module.plans.size(); ++p)
        compare(fhr::check_plan(module, p, options), document, text);
  } catch (const fhr::ExecutionTooLarge &) {
    // Values of more address space than sizes-only blocks can reserve:
    // `run` refuses them too (exit 2, "cannot run").
  } catch (const std::invalid_argument &error) {
    // A budget at a device the module does not declare: the manager refuses
    // it at construction (§1.2), so nothing runs.
    if (std::string(error.what()).find("is not available") == std::string::npos)
      finding(std::string("invalid_argument: ") + error.what(), text);
  }
  return 0;
}
