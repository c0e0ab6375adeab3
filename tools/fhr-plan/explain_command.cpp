#include "commands.hpp"

#include "fhr/compiler/output.hpp"

#include <llvm/Support/WithColor.h>

#include "fhr/compiler/redundant_actions.hpp"
#include "fhr/compiler/unit_filter.hpp"

#include <algorithm>
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
    std::optional<Analysis> analysis;
    // Redundant actions (W0006) are found by running the module: the run
    // is kept for the command.
    if (compiled->source && compiled->ok() &&
        options.compile.diagnostics.enabled(DiagCode::RedundantAction)) {
      analysis = analyze_module(*compiled->lowered, loaded.overrides);
      report_redundant_actions(*compiled->source, *compiled->lowered, *analysis);
      if (!compiled->ok()) analysis.reset(); // -Werror: the file is bad input now
    }
    if (print_diagnostics && compiled->source && !compiled->source->diagnostics().empty())
      compiled->source->print(llvm::errs(), stderr_colors());
    loaded.ok = loaded.ok && compiled->ok();
    loaded.files.push_back(std::move(*compiled));
    loaded.analyses.push_back(std::move(analysis));
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
  for (std::size_t i = 0; i < loaded.files.size(); ++i) {
    const CompiledFile &file = loaded.files[i];
    if (!file.ok()) continue;
    if (loaded.analyses[i]) {
      reports.push_back(build_report(*file.lowered, *loaded.analyses[i], detail));
      continue;
    }
    const Analysis analysis = analyze_module(*file.lowered, loaded.overrides);
    reports.push_back(build_report(*file.lowered, analysis, detail));
  }
  return reports;
}

std::vector<AnalysedFile> analyse_selected(LoadedFiles &loaded, const UnitFilter &filter) {
  std::vector<AnalysedFile> analysed;
  for (std::size_t i = 0; i < loaded.files.size(); ++i) {
    const CompiledFile &file = loaded.files[i];
    if (!file.ok()) continue;
    std::optional<Analysis> &kept = loaded.analyses[i];
    analysed.push_back({&file, kept ? std::move(*kept) : analyze_module(*file.lowered, loaded.overrides)});
    kept.reset();
  }
  if (filter.empty()) return analysed;
  // A name must select a unit in some file; the suggestion comes from the first.
  UnitFilter unknown;
  for (const std::string &name : filter.plans)
    if (std::none_of(analysed.begin(), analysed.end(), [&](const AnalysedFile &a) {
          return std::any_of(a.analysis.plans.begin(), a.analysis.plans.end(),
                             [&](const PlanExplanation &p) { return p.name == name; });
        }))
      unknown.plans.push_back(name);
  for (const std::string &name : filter.programs)
    if (std::none_of(analysed.begin(), analysed.end(), [&](const AnalysedFile &a) {
          return std::any_of(a.analysis.programs.begin(), a.analysis.programs.end(),
                             [&](const ProgramReport &p) { return p.name == name; });
        }))
      unknown.programs.push_back(name);
  if (!unknown.empty()) {
    const Analysis none;
    for (const std::string &message :
         unknown_units(analysed.empty() ? none : analysed.front().analysis, unknown)) {
      loaded.input_diagnostics.push_back({"", DiagCode::BadOption, Severity::Error, message});
      print_input_diagnostic(loaded.input_diagnostics.back());
    }
    loaded.ok = false;
    return {}; // a mistyped name reports nothing rather than a misleading "all feasible"
  }
  for (AnalysedFile &a : analysed)
    select_units(a.analysis, filter);
  return analysed;
}

int run_explain(const CommonOptions &options) {
  LoadedFiles loaded = load_files(options);
  std::vector<AnalysedFile> analysed = analyse_selected(loaded, options.filter);
  bool feasible = true;
  if (options.format == "json") {
    std::vector<FileReport> reports;
    for (const AnalysedFile &a : analysed)
      reports.push_back(build_report(*a.file->lowered, a.analysis, ReportDetail::AllSteps));
    nlohmann::ordered_json document = explain_json(reports);
    add_diagnostics_json(document, diagnostic_inputs(loaded));
    llvm::outs() << json_text(document) << '\n';
    for (const FileReport &r : reports)
      feasible = feasible && r.feasible;
  } else {
    bool first = true;
    for (const AnalysedFile &a : analysed) {
      if (!first && !options.summary) llvm::outs() << '\n';
      first = false;
      if (options.summary)
        print_explain_summary(llvm::outs(), *a.file->lowered, a.analysis);
      else
        print_explain_text(llvm::outs(), *a.file->lowered, a.analysis);
      feasible = feasible && a.analysis.feasible();
    }
  }
  llvm::outs().flush();
  if (!loaded.ok) return kBadInput;
  return feasible ? kFeasible : kInfeasible;
}

} // namespace fhr::cli
