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

LoadedFiles load_files(const CommonOptions &options) {
  LoadedFiles loaded;
  for (const std::string &text : options.budget_overrides) {
    llvm::Expected<BudgetOverride> parsed = parse_budget_override(text);
    if (!parsed) {
      report_error(parsed.takeError());
      loaded.ok = false;
      continue;
    }
    loaded.overrides.push_back(*parsed);
  }
  for (const std::string &path : options.files) {
    llvm::Expected<CompiledFile> compiled = compile_file(path);
    if (!compiled) {
      report_error(compiled.takeError());
      loaded.ok = false;
      continue;
    }
    if (!compiled->ok()) {
      compiled->source->print(llvm::errs(), stderr_colors());
      loaded.ok = false;
    }
    loaded.files.push_back(std::move(*compiled));
  }
  return loaded;
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
    llvm::outs() << json_text(explain_json(reports)) << '\n';
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
