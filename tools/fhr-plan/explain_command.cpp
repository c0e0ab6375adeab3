#include "commands.hpp"

#include "fhr/compiler/output.hpp"

#include <llvm/Support/WithColor.h>

#include <cstdlib>

namespace fhr::cli {

namespace {
bool stderr_colors() { return std::getenv("NO_COLOR") == nullptr && llvm::errs().has_colors(); }
} // namespace

void report_error(llvm::Error error) {
  llvm::WithColor::error(llvm::errs(), "fhr-plan") << llvm::toString(std::move(error)) << '\n';
}

void print_input_diagnostic(const InputDiagnostic &diagnostic) {
  const bool warning = diagnostic.severity == Severity::Warning;
  (warning ? llvm::WithColor::warning(llvm::errs(), "fhr-plan")
           : llvm::WithColor::error(llvm::errs(), "fhr-plan"))
      << "[" << diag_code_text(diagnostic.code) << "] " << diagnostic.message << '\n';
}

LoadedFiles load_files(const CommonOptions &options, bool print_diagnostics) {
  LoadedFiles loaded;
  ParsedOverrides overrides = parse_budget_overrides(options.budget_overrides, options.compile.diagnostics);
  for (InputDiagnostic &diagnostic : overrides.diagnostics) {
    if (print_diagnostics) print_input_diagnostic(diagnostic);
    loaded.ok = loaded.ok && diagnostic.severity != Severity::Error;
    loaded.input_diagnostics.push_back(std::move(diagnostic));
  }
  loaded.overrides = overrides.overrides;
  for (const std::string &path : options.files) {
    llvm::Expected<CompiledFile> compiled = compile_file(path, options.compile);
    if (!compiled) {
      loaded.input_diagnostics.push_back(
          input_diagnostic(path == "-" ? options.compile.stdin_name : path, compiled.takeError()));
      if (print_diagnostics) print_input_diagnostic(loaded.input_diagnostics.back());
      loaded.ok = false;
      continue;
    }
    check_overrides(*compiled, overrides);
    if (print_diagnostics && compiled->source && !compiled->source->diagnostics().empty())
      compiled->source->print(llvm::errs(), stderr_colors());
    loaded.ok = loaded.ok && compiled->ok();
    loaded.files.push_back(std::move(*compiled));
  }
  return loaded;
}

DiagnosticInputs diagnostic_inputs(const LoadedFiles &loaded) {
  DiagnosticInputs inputs;
  for (const CompiledFile &file : loaded.files)
    if (file.source) inputs.sources.push_back(file.source.get()); // a module file has no text
  inputs.unlocated = loaded.input_diagnostics;
  return inputs;
}

std::vector<FileReport> analyse_files(const LoadedFiles &loaded, ReportDetail detail) {
  std::vector<FileReport> reports;
  for (const CompiledFile &file : loaded.files) {
    if (!file.ok()) continue;
    Analysis analysis = analyze_module(*file.lowered, loaded.overrides);
    reports.push_back(build_report(*file.lowered, analysis, detail));
  }
  return reports;
}

int run_explain(const CommonOptions &options) {
  LoadedFiles loaded = load_files(options);
  bool feasible = true;
  if (options.format == "json") {
    std::vector<FileReport> reports = analyse_files(loaded, ReportDetail::AllSteps);
    nlohmann::ordered_json document = explain_json(reports);
    add_diagnostics_json(document, diagnostic_inputs(loaded));
    llvm::outs() << json_text(document) << '\n';
    for (const FileReport &r : reports)
      feasible = feasible && r.feasible;
  } else {
    bool first = true;
    for (const CompiledFile &file : loaded.files) {
      if (!file.ok()) continue;
      if (!first) llvm::outs() << '\n';
      first = false;
      Analysis analysis = analyze_module(*file.lowered, loaded.overrides);
      print_explain_text(llvm::outs(), *file.lowered, analysis);
      feasible = feasible && analysis.feasible();
    }
  }
  llvm::outs().flush();
  if (!loaded.ok) return kBadInput;
  return feasible ? kFeasible : kInfeasible;
}

} // namespace fhr::cli
