// fhr-plan run: executes programs (or plans) of a file on a fresh manager
// with synthetic payloads of the declared sizes and prints, step by step,
// the simulator's prediction beside what the runtime did and how long it
// took.
#include "commands.hpp"

#include "fhr/bytecode/module.hpp"
#include "fhr/harness/execution_check.hpp"

#include <llvm/Support/FormatVariadic.h>

#include <cstdio>
#include <llvm/Support/WithColor.h>

namespace fhr::cli {

namespace {

constexpr const char *kRow = "  {0,5}  {1,-12} {2,-40} {3,-22} {4,-22} {5,10}\n";

std::string verdict_text(Verdict verdict, ErrorClass raised) {
  switch (verdict) {
  case Verdict::Ok: return "done";
  case Verdict::NoOp: return "no-op";
  case Verdict::Failed: return "refused (" + std::string(error_class_id(raised)) + ")";
  }
  return "?";
}

/// The action a step ran, as the runtime resolved it: "ensure rotkey from
/// pageable to cuda:0"; other steps by their kind.
std::string action_text(const bytecode::Module &module, const StepRecord &step,
                        const std::vector<DeclaredValue> &values) {
  const bytecode::Instruction &in = module.code[step.instruction];
  if (!bytecode::is_action(in.opcode) || step.failed() || step.kind == StepKind::Preflight)
    return std::string(step_kind_name(step.kind));
  std::string text = std::string(bytecode::info(in.opcode).mnemonic);
  if (in.opcode == bytecode::Opcode::MoveFrom) text = "move";
  if (step.value < values.size()) text += " " + values[step.value].display_name();
  if (step.outcome.source) text += " from " + step.outcome.source->name();
  if (step.outcome.destination) text += " to " + step.outcome.destination->name();
  return text;
}

void print_check(llvm::raw_ostream &os, const std::string &path, const bytecode::Module &module,
                 const ExecutionCheck &check, const char *backend) {
  os << path << ": " << check.kind << " " << string_literal(check.name) << " on the " << backend
     << " backend\n";
  auto line_of = [&](const StepRecord &step) { return module.code[step.instruction].line; };
  if (!check.setup.completed) {
    const StepRecord &failed = *check.setup.failure();
    os << "  setup stopped at line " << line_of(failed) << ": " << check.setup.failure_message << "\n";
  }
  if (!check.run.steps.empty()) {
    os << llvm::formatv(kRow, "line", "step", "action", "predicted", "measured", "time");
    for (std::size_t i = 0; i < check.run.steps.size(); ++i) {
      const StepRecord &step = check.run.steps[i];
      const std::string predicted =
          i < check.predicted.steps.size()
              ? verdict_text(check.predicted.steps[i].outcome.verdict, check.predicted.steps[i].raised)
              : "-";
      std::string time = "-";
      if (i < check.run.timings.size() && check.run.timings[i].completed_at_ns != 0) {
        const StepTiming &t = check.run.timings[i];
        const double us = static_cast<double>(t.completed_at_ns - t.started_at_ns) / 1e3;
        char text[32];
        std::snprintf(text, sizeof text, "%.1f us", us);
        time = text;
      }
      const std::string where = std::string(step_kind_name(step.kind)) + " " + std::to_string(step.index);
      // Strings only: LLVM 14's integer formatter trips GCC's
      // -Wmaybe-uninitialized at -O2.
      os << llvm::formatv(kRow, std::to_string(line_of(step)), where, action_text(module, step, check.values),
                          predicted, verdict_text(step.outcome.verdict, step.raised), time);
    }
  }
  for (const ExecutionCheck::Peak &peak : check.peaks)
    os << "  peak charged at " << peak.location.name() << ": predicted " << format_size(peak.predicted)
       << ", measured " << format_size(peak.measured) << "\n";
  if (check.warnings)
    for (const std::string &warning : *check.warnings)
      os << "  runtime warning: " << warning << "\n";
  if (const StepRecord *failed = check.run.failure())
    os << "  stopped at line " << line_of(*failed) << ": " << check.run.failure_message << "\n";
  if (check.agrees())
    os << "  result: " << (check.run.completed && check.setup.completed ? "completed" : "stopped")
       << " as predicted; " << check.content_checks << " content checks passed\n";
  else
    for (const std::string &difference : check.differences)
      os << "  DIFFERS: " << difference << "\n";
}

} // namespace

int run_run(const CommonOptions &options, const RunOptions &run) {
  LoadedFiles loaded = load_files(options);
  if (!loaded.ok) return kBadInput;
  ExecutionOptions execution;
  execution.backend = run.backend == "sim"    ? BackendKind::Simulated
                      : run.backend == "cuda" ? BackendKind::Cuda
                                              : BackendKind::Host;
  execution.overrides = loaded.overrides;
  const char *backend = run.backend == "sim" ? "simulated device" : run.backend == "cuda" ? "CUDA" : "host";
  int status = kFeasible;
  bool first = true;
  for (std::size_t f = 0; f < loaded.files.size(); ++f) {
    const bytecode::Module &module = *loaded.files[f].lowered->module;
    auto name_of = [&](std::uint32_t string) -> const std::string & { return module.strings[string]; };
    std::vector<ExecutionCheck> checks;
    bool selected = false;
    try {
      for (std::uint32_t p = 0; p < module.programs.size(); ++p)
        if ((run.program.empty() && run.plan.empty()) || name_of(module.programs[p].name) == run.program) {
          checks.push_back(check_program(module, p, execution));
          selected = true;
        }
      for (std::uint32_t p = 0; p < module.plans.size(); ++p)
        if ((run.program.empty() && run.plan.empty() && module.programs.empty()) ||
            name_of(module.plans[p].name) == run.plan) {
          checks.push_back(check_plan(module, p, execution));
          selected = true;
        }
    } catch (const std::exception &error) {
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
    for (const ExecutionCheck &check : checks) {
      if (!first) llvm::outs() << '\n';
      first = false;
      print_check(llvm::outs(), options.files[f], module, check, backend);
      if (!check.agrees())
        status = kBadInput;
      else if (status == kFeasible && (!check.run.completed || !check.setup.completed))
        status = kInfeasible;
    }
  }
  llvm::outs().flush();
  return status;
}

} // namespace fhr::cli
