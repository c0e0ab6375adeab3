// fhr-plan run: executes programs (or plans) of a file on a fresh manager
// with synthetic payloads of the declared sizes and prints, step by step,
// the simulator's prediction beside what the runtime did and how long it
// took.
#include "commands.hpp"

#include "fhr/bytecode/module.hpp"
#include "fhr/compiler/execution_check.hpp"
#include "fhr/compiler/lower.hpp"

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

std::string action_text(const ExecutedStep &step, const std::vector<DeclaredValue> &values) {
  if (!step.transition) return std::string(step_kind_name(step.kind));
  const TransitionReport &t = *step.transition;
  std::string text = std::string(action_keyword(t.action));
  if (step.value) text += " " + values[*step.value].display_name();
  if (t.source) text += " from " + t.source->name();
  if (t.destination) text += " to " + t.destination->name();
  return text;
}

void print_check(llvm::raw_ostream &os, const std::string &path, const ExecutionCheck &check,
                 const std::vector<DeclaredValue> &values, const char *backend) {
  os << path << ": " << check.kind << " " << string_literal(check.name) << " on the " << backend
     << " backend\n";
  if (!check.setup.completed) {
    const ExecutedStep &failed = *check.setup.failure();
    os << "  setup stopped at line " << failed.line << ": " << failed.message << "\n";
  }
  if (!check.run.steps.empty()) {
    os << llvm::formatv(kRow, "line", "step", "action", "predicted", "measured", "time");
    for (std::size_t i = 0; i < check.run.steps.size(); ++i) {
      const ExecutedStep &step = check.run.steps[i];
      const std::string predicted = i < check.predicted.size()
                                        ? verdict_text(check.predicted[i].verdict, check.predicted[i].raised)
                                        : "-";
      const Verdict ran = step.failed                                 ? Verdict::Failed
                          : step.transition && step.transition->no_op ? Verdict::NoOp
                                                                      : Verdict::Ok;
      std::string time = "-";
      if (step.transition) {
        const double us =
            static_cast<double>(step.transition->completed_at_ns - step.transition->started_at_ns) / 1e3;
        char text[32];
        std::snprintf(text, sizeof text, "%.1f us", us);
        time = text;
      }
      const std::string where = std::string(step_kind_name(step.kind)) + " " + std::to_string(step.index);
      // Strings only: LLVM 14's integer formatter trips GCC's
      // -Wmaybe-uninitialized at -O2.
      os << llvm::formatv(kRow, std::to_string(step.line), where, action_text(step, values), predicted,
                          verdict_text(ran, step.raised), time);
    }
  }
  for (const ExecutionCheck::Peak &peak : check.peaks)
    os << "  peak charged at " << peak.location.name() << ": predicted " << format_size(peak.predicted)
       << ", measured " << format_size(peak.measured) << "\n";
  if (check.warnings)
    for (const std::string &warning : *check.warnings)
      os << "  runtime warning: " << warning << "\n";
  if (const ExecutedStep *failed = check.run.failure())
    os << "  stopped at line " << failed->line << ": " << failed->message << "\n";
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
    const CompiledFile &file = loaded.files[f];
    const std::vector<char> bytes = lower_module(file.module, *file.source);
    bytecode::Module module;
    try {
      module = bytecode::load_module(std::as_bytes(std::span(bytes.data(), bytes.size())));
    } catch (const bytecode::ModuleError &error) {
      llvm::WithColor::error(llvm::errs(), "fhr-plan") << options.files[f] << ": " << error.what() << '\n';
      return kBadInput;
    }
    std::vector<ExecutionCheck> checks;
    bool selected = false;
    try {
      for (std::uint32_t p = 0; p < file.module.programs.size(); ++p)
        if ((run.program.empty() && run.plan.empty()) || file.module.programs[p].name == run.program) {
          checks.push_back(check_program(file.module, module, p, execution));
          selected = true;
        }
      for (std::uint32_t p = 0; p < file.module.plans.size(); ++p)
        if ((run.program.empty() && run.plan.empty() && file.module.programs.empty()) ||
            file.module.plans[p].name == run.plan) {
          checks.push_back(check_plan(file.module, module, p, execution));
          selected = true;
        }
    } catch (const std::exception &error) {
      // The manager itself could not be built (a budget at a location this
      // backend does not have, say).
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
      print_check(llvm::outs(), options.files[f], check, check.values, backend);
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
