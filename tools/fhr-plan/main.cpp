// fhr-plan: explain and check residency plans.
#include "commands.hpp"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

namespace cl = llvm::cl;

namespace {

cl::SubCommand explain_command("explain", "Dry-run every plan and program; print each step, its "
                                          "bytes and result, and the peak per location");
cl::SubCommand check_command("check", "CI gate: quiet on success, one line per infeasible plan");
cl::SubCommand compile_command("compile", "Lower a plan file to a verified bytecode module");
cl::SubCommand disasm_command("disasm",
                              "Print a bytecode module as .fhr text that compiles to the same bytes");
cl::SubCommand run_command("run", "Execute programs on a fresh manager with synthetic values; print each "
                                  "step's prediction beside what ran and its time");

cl::list<std::string> files(cl::Positional, cl::ZeroOrMore, cl::desc("<file.fhr | - >..."),
                            cl::sub(explain_command), cl::sub(check_command), cl::sub(compile_command),
                            cl::sub(disasm_command), cl::sub(run_command));
cl::opt<std::string> output_path("o", cl::desc("Output module"), cl::value_desc("OUT.fhrb"), cl::Required,
                                 cl::sub(compile_command));
cl::list<std::string> budgets("budget",
                              cl::desc("Override a budget: LOCATION=SIZE (repeatable), e.g. cuda:0=40GiB"),
                              cl::value_desc("LOC=SIZE"), cl::ZeroOrMore, cl::sub(explain_command),
                              cl::sub(check_command), cl::sub(run_command));
enum class RunBackend { Host, Simulated, Cuda };
cl::opt<RunBackend> run_backend(
    "backend", cl::desc("Where values live"), cl::init(RunBackend::Host),
    cl::values(clEnumValN(RunBackend::Host, "host", "host memory; no CUDA locations"),
               clEnumValN(RunBackend::Simulated, "sim", "host memory standing in for cuda:N (no GPU needed)"),
               clEnumValN(RunBackend::Cuda, "cuda", "the CUDA devices of this machine")),
    cl::sub(run_command));
cl::opt<std::string> run_program("program", cl::desc("Run only this program"), cl::value_desc("NAME"),
                                 cl::sub(run_command));
cl::opt<std::string> run_plan("plan", cl::desc("Run only this plan, as a scope"), cl::value_desc("NAME"),
                              cl::sub(run_command));

// LLVM's own --version lives only at the top level; every verb takes it too.
cl::opt<bool> verb_version("version", cl::desc("Print the version and exit"), cl::sub(explain_command),
                           cl::sub(check_command), cl::sub(compile_command), cl::sub(disasm_command),
                           cl::sub(run_command));

enum class ExplainFormat { Text, Json };
cl::opt<ExplainFormat>
    explain_format("format", cl::desc("Output format"), cl::init(ExplainFormat::Text),
                   cl::values(clEnumValN(ExplainFormat::Text, "text", "tables for people"),
                              clEnumValN(ExplainFormat::Json, "json", "schema fhr-explain/1")),
                   cl::sub(explain_command));
enum class CheckFormat { Text, Github, Sarif };
cl::opt<CheckFormat>
    check_format("format", cl::desc("Output format"), cl::init(CheckFormat::Text),
                 cl::values(clEnumValN(CheckFormat::Text, "text", "file:line:col: error: ..."),
                            clEnumValN(CheckFormat::Github, "github", "GitHub workflow annotations"),
                            clEnumValN(CheckFormat::Sarif, "sarif", "SARIF 2.1.0")),
                 cl::sub(check_command));

void print_version(llvm::raw_ostream &os) { os << "fhr-plan " << FHR_VERSION << '\n'; }

} // namespace

int main(int argc, char **argv) {
  cl::SetVersionPrinter(print_version);
  // Messages name the tool, not the path it was started from, so that they
  // are the same wherever it is installed.
  std::string tool_name = "fhr-plan";
  if (argc > 0) argv[0] = tool_name.data();
  if (!cl::ParseCommandLineOptions(
          argc, argv, "fhr-plan: explain and check residency plans for GPU encrypted computation\n",
          &llvm::errs()))
    return fhr::cli::kBadInput;
  if (verb_version) {
    print_version(llvm::outs());
    return fhr::cli::kFeasible;
  }
  if (fhr::cli::solve_selected()) return fhr::cli::run_solve();
  const char *verb = explain_command   ? "explain"
                     : check_command   ? "check"
                     : compile_command ? "compile"
                     : run_command     ? "run"
                                       : "disasm";
  const bool any_verb = explain_command || check_command || compile_command || disasm_command || run_command;
  if (any_verb && files.empty()) {
    llvm::errs() << "fhr-plan: no input files (use - for standard input); see fhr-plan " << verb
                 << " --help\n";
    return fhr::cli::kBadInput;
  }
  fhr::cli::CommonOptions options;
  options.files.assign(files.begin(), files.end());
  options.budget_overrides.assign(budgets.begin(), budgets.end());
  if (explain_command) {
    options.format = explain_format == ExplainFormat::Json ? "json" : "text";
    return fhr::cli::run_explain(options);
  }
  if (check_command) {
    options.format = check_format == CheckFormat::Sarif    ? "sarif"
                     : check_format == CheckFormat::Github ? "github"
                                                           : "text";
    return fhr::cli::run_check(options);
  }
  if (compile_command) return fhr::cli::run_compile(options, output_path);
  if (disasm_command) return fhr::cli::run_disasm(options);
  if (run_command) {
    fhr::cli::RunOptions run;
    run.backend = run_backend == RunBackend::Simulated ? "sim"
                  : run_backend == RunBackend::Cuda    ? "cuda"
                                                       : "host";
    run.program = run_program;
    run.plan = run_plan;
    return fhr::cli::run_run(options, run);
  }
  llvm::errs()
      << "fhr-plan: missing command (explain, check, run, compile, disasm or solve); see fhr-plan --help\n";
  return fhr::cli::kBadInput;
}
