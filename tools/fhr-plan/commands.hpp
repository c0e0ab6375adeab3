#pragma once
/// \file
/// The verbs of `fhr-plan`, each a thin layer over the compiler library.

#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/report.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace fhr::cli {

/// Exit codes shared by every verb.
enum ExitCode : int { kFeasible = 0, kInfeasible = 1, kBadInput = 2 };

struct CommonOptions {
  std::vector<std::string> files;
  std::vector<std::string> budget_overrides;
  std::string format;
};

/// Compiles every file, printing diagnostics to stderr. `ok` is false when a
/// file could not be read or had errors; `overrides` receives the parsed
/// `--budget` options.
/// Prints `fhr-plan: error: <message>` to stderr.
void report_error(llvm::Error error);

struct LoadedFiles {
  std::vector<CompiledFile> files;
  std::vector<BudgetOverride> overrides;
  bool ok = true;
};
LoadedFiles load_files(const CommonOptions &options);

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
};
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
