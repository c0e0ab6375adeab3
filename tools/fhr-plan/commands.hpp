#pragma once
/// \file
/// The verbs of `fhr-plan`, each a thin layer over the compiler library.

#include "fhr/compiler/diagnostic_output.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/report.hpp"
#include "fhr/compiler/unit_filter.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fhr::cli {

/// Exit codes shared by every verb.
enum ExitCode : int { kFeasible = 0, kInfeasible = 1, kBadInput = 2 };

struct CommonOptions {
  std::vector<std::string> files;
  std::vector<std::string> budget_overrides;
  std::string format;
  /// Warnings, error limit, the name of standard input.
  CompileOptions compile;
  /// `--plan`, `--program` (explain and check).
  UnitFilter filter;
  /// `explain --summary`.
  bool summary = false;
};

/// Prints `fhr-plan: error: <message>` to stderr.
void report_error(llvm::Error error);

/// The files of a command compiled, their diagnostics printed to stderr.
/// `ok` is false when a file could not be read or had errors; `overrides`
/// holds the parsed `--budget` options.
struct LoadedFiles {
  std::vector<CompiledFile> files;
  /// Parallel to files: the analysis a text file without errors got while
  /// loading, for the warnings only a run finds (W0006); analyse_selected
  /// and analyse_files reuse it rather than interpret the module again.
  std::vector<std::optional<Analysis>> analyses;
  std::vector<BudgetOverride> overrides;
  /// Command-line problems and files that could not be read or loaded (the
  /// machine-readable formats report them beside the files' diagnostics).
  std::vector<InputDiagnostic> input_diagnostics;
  bool ok = true;
};
/// Without `print_diagnostics`, a second load of the same files stays quiet.
LoadedFiles load_files(const CommonOptions &options, bool print_diagnostics = true);
/// Every diagnostic of `loaded`, for the machine-readable formats.
DiagnosticInputs diagnostic_inputs(const LoadedFiles &loaded);
/// Prints an unlocated diagnostic: `fhr-plan: error: [E0501] ...`.
void print_input_diagnostic(const InputDiagnostic &diagnostic);

int run_fmt(const CommonOptions &options, bool check, bool in_place);
/// Prints the docs/diagnostics.md entry of a code.
int run_explain_code(const std::string &code);

/// A file without errors interpreted, with the units the command selects.
struct AnalysedFile {
  const CompiledFile *file = nullptr;
  Analysis analysis;
};
/// Interprets every file without errors and keeps the units `filter`
/// selects. A name that selects nothing in any file is an error (E0503):
/// printed, added to `loaded`'s diagnostics, `loaded.ok` cleared, and
/// nothing is returned.
std::vector<AnalysedFile> analyse_selected(LoadedFiles &loaded, const UnitFilter &filter);
/// Analyses the good files and builds their reports.
std::vector<FileReport> analyse_files(const LoadedFiles &loaded, ReportDetail detail);

int run_explain(const CommonOptions &options);
int run_check(const CommonOptions &options);
/// Lowers one file to a verified module at `output` (written atomically).
int run_compile(const CommonOptions &options, const std::string &output);
/// Prints each module as .fhr text.
int run_disasm(const CommonOptions &options);

struct RunOptions {
  /// "host", "sim" or "cuda"; empty: cuda when the CUDA runtime reports a
  /// device, else sim.
  std::string backend;
  std::string program;                  ///< run only this program
  std::string plan;                     ///< run only this plan (as a scope)
  std::uint64_t scale = 1;              ///< --scale: every size divided by this
  std::string format = "text";          ///< "text" or "json" (fhr-run/1)
  std::string profile;                  ///< --profile: the link model of the prediction (h200 when empty)
  std::string trace;                    ///< --trace: where the Perfetto trace goes
  std::uint64_t memory_limit_bytes = 0; ///< --memory-limit: host memory a run may use (0: 3/4 of it)
  /// --warm-up: each run's cold allocations reserved before it (docs/run.md).
  bool warm_up = false;
  /// --overlap: the simulated devices overlap copies in windows, as the
  /// CUDA backend's copy engines do (only with the simulated backend).
  bool overlap = false;
  /// --repeat: runs of each unit, each on a fresh manager and backend; the
  /// report's step times are their medians (docs/run.md).
  unsigned repeat = 1;
  /// --check-content: "transitions" or "end"; empty: end on the CUDA
  /// backend, transitions on the others (docs/run.md).
  std::string check_content;
};
inline constexpr unsigned kMaxRepeat = 100;
/// Executes programs (or plans) on a fresh manager and compares every step
/// with the prediction: 0 all completed as predicted, 1 stopped at a
/// predicted failure, 2 bad input or a difference between prediction and
/// execution.
int run_run(const CommonOptions &options, const RunOptions &run);

/// `fhr-plan solve` (solve_command.cpp, which declares its own options):
/// was it the verb given, and run it.
bool solve_selected();
int run_solve();

} // namespace fhr::cli
