// fhr-plan: explain and check residency plans.
#include "commands.hpp"
#include "time_commands.hpp"

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

cl::SubCommand diff_command("diff", "Compare the plans of two files (or explain JSON documents): verdicts, "
                                    "peaks, headroom and predicted time");
cl::SubCommand calibrate_command("calibrate", "Measure this machine's copy links and write a link profile "
                                              "(fhr-links/1) for explain --profile");

cl::list<std::string> files(cl::Positional, cl::ZeroOrMore, cl::desc("<file.fhr | - >..."),
                            cl::sub(explain_command), cl::sub(check_command), cl::sub(compile_command),
                            cl::sub(disasm_command), cl::sub(run_command), cl::sub(diff_command));
cl::opt<std::string> output_path("o", cl::desc("Output module"), cl::value_desc("OUT.fhrb"), cl::Required,
                                 cl::sub(compile_command));
cl::list<std::string> budgets("budget",
                              cl::desc("Override a budget: LOCATION=SIZE (repeatable), e.g. cuda:0=40GiB"),
                              cl::value_desc("LOC=SIZE"), cl::ZeroOrMore, cl::sub(explain_command),
                              cl::sub(check_command), cl::sub(run_command));
enum class RunBackend { Default, Host, Simulated, Cuda };
cl::opt<RunBackend> run_backend(
    "backend", cl::desc("Where values live (default: cuda when a GPU is present, else sim)"),
    cl::init(RunBackend::Default),
    cl::values(clEnumValN(RunBackend::Host, "host", "host memory; no CUDA locations"),
               clEnumValN(RunBackend::Simulated, "sim", "host memory standing in for cuda:N (no GPU needed)"),
               clEnumValN(RunBackend::Cuda, "cuda", "the CUDA devices of this machine")),
    cl::sub(run_command));
cl::opt<std::string> run_program("program", cl::desc("Run only this program"), cl::value_desc("NAME"),
                                 cl::sub(run_command));
cl::opt<std::string> run_plan("plan", cl::desc("Run only this plan, as a scope"), cl::value_desc("NAME"),
                              cl::sub(run_command));
cl::opt<unsigned> run_scale("scale", cl::desc("Divide every size (values, reservations, budgets) by N"),
                            cl::value_desc("N"), cl::init(1), cl::sub(run_command));
enum class RunFormat { Text, Json };
cl::opt<RunFormat> run_format("format", cl::desc("Output format"), cl::init(RunFormat::Text),
                              cl::values(clEnumValN(RunFormat::Text, "text", "a table per run"),
                                         clEnumValN(RunFormat::Json, "json", "schema fhr-run/1")),
                              cl::sub(run_command));
cl::opt<std::string> run_profile("profile",
                                 cl::desc("Predict each step's time with this link profile (fhr-links/1; "
                                          "default h200)"),
                                 cl::value_desc("FILE|h200"), cl::sub(run_command));
cl::opt<std::string> run_trace("trace", cl::desc("Write a Perfetto trace of predicted and measured spans"),
                               cl::value_desc("trace.json"), cl::sub(run_command));
cl::opt<std::string>
    run_memory_limit("memory-limit",
                     cl::desc("Host memory a run may use (default: 3/4 of what is available); "
                              "sim keeps sizes only beyond it"),
                     cl::value_desc("SIZE"), cl::sub(run_command));

// LLVM's own --version lives only at the top level; every verb takes it too.
cl::opt<bool> verb_version("version", cl::desc("Print the version and exit"), cl::sub(explain_command),
                           cl::sub(check_command), cl::sub(compile_command), cl::sub(disasm_command),
                           cl::sub(run_command), cl::sub(diff_command), cl::sub(calibrate_command));

enum class ExplainFormat { Text, Json, Html, Svg, Trace };
cl::opt<ExplainFormat> explain_format(
    "format", cl::desc("Output format"), cl::init(ExplainFormat::Text),
    cl::values(clEnumValN(ExplainFormat::Text, "text", "tables for people"),
               clEnumValN(ExplainFormat::Json, "json", "schema fhr-explain/1"),
               clEnumValN(ExplainFormat::Html, "html", "one self-contained page: memory timelines and steps"),
               clEnumValN(ExplainFormat::Svg, "svg", "the memory timelines as one SVG document"),
               clEnumValN(ExplainFormat::Trace, "trace",
                          "the predicted timeline as a Perfetto / Chrome trace")),
    cl::sub(explain_command));
cl::opt<std::string> picture_output("o", cl::desc("Write the html, svg or trace output here"),
                                    cl::value_desc("FILE"), cl::sub(explain_command));
cl::opt<std::string> link_profile("profile",
                                  cl::desc("Predict time with this link profile (fhr-links/1; h200: the "
                                           "shipped default)"),
                                  cl::value_desc("FILE|h200"), cl::sub(explain_command),
                                  cl::sub(diff_command), cl::sub(check_command));
cl::opt<std::string> max_peak_increase("max-peak-increase",
                                       cl::desc("Fail when a peak grows by more than this, e.g. 5%"),
                                       cl::value_desc("PERCENT"), cl::sub(diff_command),
                                       cl::sub(check_command));
cl::opt<std::string> check_baseline("baseline",
                                    cl::desc("Also compare with the files of the same name in this directory "
                                             "(plans or explain JSON)"),
                                    cl::value_desc("DIR"), cl::sub(check_command));
enum class DiffFormat { Text, Json, Markdown };
cl::opt<DiffFormat> diff_format("format", cl::desc("Output format"), cl::init(DiffFormat::Text),
                                cl::values(clEnumValN(DiffFormat::Text, "text", "one line per change"),
                                           clEnumValN(DiffFormat::Json, "json", "schema fhr-diff/1"),
                                           clEnumValN(DiffFormat::Markdown, "markdown",
                                                      "a pull-request comment: headline and one table")),
                                cl::sub(diff_command));
enum class CalibrateBackend { Cuda, Simulated };
cl::opt<CalibrateBackend> calibrate_backend(
    "backend", cl::desc("What to measure"), cl::init(CalibrateBackend::Cuda),
    cl::values(clEnumValN(CalibrateBackend::Cuda, "cuda", "this machine's GPUs"),
               clEnumValN(CalibrateBackend::Simulated, "sim",
                          "the simulated device backend on a simulated clock (tests the pipeline)")),
    cl::sub(calibrate_command));
cl::opt<std::string> calibrate_output("o", cl::desc("Write the profile here"), cl::value_desc("links.json"),
                                      cl::Required, cl::sub(calibrate_command));
cl::opt<unsigned> calibrate_repetitions("repetitions", cl::desc("Copies timed per size (the median is kept)"),
                                        cl::init(5), cl::sub(calibrate_command));
cl::opt<std::string> calibrate_max_bytes("max-bytes", cl::desc("Largest copy measured (default 1GiB)"),
                                         cl::value_desc("SIZE"), cl::init("1GiB"),
                                         cl::sub(calibrate_command));
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
  if (calibrate_command) {
    fhr::cli::CalibrateOptions calibrate;
    calibrate.backend = calibrate_backend == CalibrateBackend::Simulated ? "sim" : "cuda";
    calibrate.output = calibrate_output;
    calibrate.repetitions = calibrate_repetitions;
    if (!fhr::cli::parse_size_option("--max-bytes", calibrate_max_bytes, calibrate.max_bytes))
      return fhr::cli::kBadInput;
    return fhr::cli::run_calibrate(calibrate);
  }
  const char *verb = explain_command   ? "explain"
                     : check_command   ? "check"
                     : compile_command ? "compile"
                     : run_command     ? "run"
                     : diff_command    ? "diff"
                                       : "disasm";
  const bool any_verb =
      explain_command || check_command || compile_command || disasm_command || run_command || diff_command;
  if (any_verb && files.empty()) {
    llvm::errs() << "fhr-plan: no input files (use - for standard input); see fhr-plan " << verb
                 << " --help\n";
    return fhr::cli::kBadInput;
  }
  fhr::cli::CommonOptions options;
  options.files.assign(files.begin(), files.end());
  options.budget_overrides.assign(budgets.begin(), budgets.end());
  fhr::cli::DiffOptions diff;
  diff.profile = link_profile;
  if (!max_peak_increase.empty()) {
    diff.max_peak_increase_percent = fhr::cli::parse_percent(max_peak_increase);
    if (!diff.max_peak_increase_percent) return fhr::cli::kBadInput;
  }
  if (explain_command) {
    options.format = explain_format == ExplainFormat::Json    ? "json"
                     : explain_format == ExplainFormat::Html  ? "html"
                     : explain_format == ExplainFormat::Svg   ? "svg"
                     : explain_format == ExplainFormat::Trace ? "trace"
                                                              : "text";
    if (options.format == "html" || options.format == "svg" || options.format == "trace" ||
        !link_profile.empty())
      return fhr::cli::run_explain_pictures(options, fhr::cli::TimeOptions{link_profile, picture_output});
    return fhr::cli::run_explain(options);
  }
  if (diff_command) {
    if (files.size() != 2) {
      llvm::errs() << "fhr-plan: diff needs two files, the old and the new; see fhr-plan diff --help\n";
      return fhr::cli::kBadInput;
    }
    diff.format = diff_format == DiffFormat::Json       ? "json"
                  : diff_format == DiffFormat::Markdown ? "markdown"
                                                        : "text";
    return fhr::cli::run_diff(files[0], files[1], options, diff);
  }
  if (check_command) {
    options.format = check_format == CheckFormat::Sarif    ? "sarif"
                     : check_format == CheckFormat::Github ? "github"
                                                           : "text";
    if (!check_baseline.empty()) return fhr::cli::run_check_baseline(options, check_baseline, diff);
    return fhr::cli::run_check(options);
  }
  if (compile_command) return fhr::cli::run_compile(options, output_path);
  if (disasm_command) return fhr::cli::run_disasm(options);
  if (run_command) {
    fhr::cli::RunOptions run;
    run.backend = run_backend == RunBackend::Simulated ? "sim"
                  : run_backend == RunBackend::Cuda    ? "cuda"
                  : run_backend == RunBackend::Host    ? "host"
                                                       : "";
    run.program = run_program;
    run.plan = run_plan;
    run.scale = run_scale;
    run.format = run_format == RunFormat::Json ? "json" : "text";
    run.profile = run_profile;
    run.trace = run_trace;
    if (!run_memory_limit.empty() &&
        !fhr::cli::parse_size_option("--memory-limit", run_memory_limit, run.memory_limit_bytes))
      return fhr::cli::kBadInput;
    return fhr::cli::run_run(options, run);
  }
  llvm::errs() << "fhr-plan: missing command (explain, check, diff, run, compile, disasm, calibrate or solve); "
                  "see fhr-plan --help\n";
  return fhr::cli::kBadInput;
}
