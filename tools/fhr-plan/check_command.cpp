#include "commands.hpp"

#include "fhr/compiler/output.hpp"

namespace fhr::cli {

int run_check(const CommonOptions &options) {
  LoadedFiles loaded = load_files(options);
  std::vector<FileReport> reports;
  for (const AnalysedFile &a : analyse_selected(loaded, options.filter))
    reports.push_back(build_report(*a.file->lowered, a.analysis, ReportDetail::FailuresOnly));
  bool feasible = true;
  for (const FileReport &r : reports)
    feasible = feasible && r.feasible;
  const DiagnosticInputs diagnostics = diagnostic_inputs(loaded);
  if (options.format == "sarif") {
    llvm::outs() << json_text(check_sarif(reports, diagnostics, FHR_VERSION)) << '\n';
  } else if (options.format == "github") {
    print_diagnostics_github(llvm::outs(), diagnostics);
    print_check_github(llvm::outs(), reports);
  } else
    print_check_text(llvm::outs(), reports);
  llvm::outs().flush();
  if (!loaded.ok) return kBadInput;
  return feasible ? kFeasible : kInfeasible;
}

} // namespace fhr::cli
