// fhr-plan: explain and check residency plans.
//
// The option tables below are the only description of the command line:
// `--help`, the man page and the shell completions (cli_reference.cpp) are
// all generated from them.
#include "cli_reference.hpp"
#include "commands.hpp"
#include "time_commands.hpp"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/WithColor.h>
#include <llvm/Support/raw_ostream.h>

#include <initializer_list>
#include <memory>

namespace cl = llvm::cl;

namespace {

cl::SubCommand explain_command("explain", "Dry-run every plan and program; print each step, its "
                                          "bytes and result, and the peak per location");
cl::SubCommand check_command("check",
                             "CI gate: quiet on success, one line per infeasible plan or diagnostic");
cl::SubCommand compile_command("compile", "Lower one plan file to a verified bytecode module");
cl::SubCommand disasm_command("disasm",
                              "Print bytecode modules as .fhr text that compiles to the same bytes");
cl::SubCommand run_command("run", "Execute programs on a fresh manager with synthetic values; print each "
                                  "step's prediction beside what ran and its time");
cl::SubCommand diff_command("diff", "Compare the plans of two files (or explain JSON documents): verdicts, "
                                    "peaks, headroom and predicted time");
cl::SubCommand calibrate_command("calibrate", "Measure this machine's copy links and write a link profile "
                                              "(fhr-links/2) for explain --profile");
cl::SubCommand fmt_command("fmt", "Print plan files in the canonical layout, comments kept");
cl::SubCommand explain_code_command("explain-code", "Print the documentation of a diagnostic code");
cl::SubCommand completion_command("completion", "Print a shell completion script (bash or zsh)");
cl::SubCommand man_command("man", "Print the manual page (roff)");

cl::list<std::string> explain_files(cl::Positional, cl::ZeroOrMore,
                                    cl::desc("<file.fhr | file.fhrb | - >..."), cl::sub(explain_command),
                                    cl::sub(check_command), cl::sub(run_command));
cl::list<std::string> compile_input(cl::Positional, cl::ZeroOrMore, cl::desc("<file.fhr | - >"),
                                    cl::sub(compile_command));
cl::list<std::string> disasm_files(cl::Positional, cl::ZeroOrMore, cl::desc("<module.fhrb | - >..."),
                                   cl::sub(disasm_command));
cl::list<std::string> diff_files(cl::Positional, cl::ZeroOrMore,
                                 cl::desc("<old.fhr | old.json> <new.fhr | new.json>"),
                                 cl::sub(diff_command));
cl::list<std::string> fmt_files(cl::Positional, cl::ZeroOrMore, cl::desc("<file.fhr | - >..."),
                                cl::sub(fmt_command));
cl::list<std::string> code_argument(cl::Positional, cl::ZeroOrMore, cl::desc("<CODE>"),
                                    cl::sub(explain_code_command));
cl::list<std::string> shell_argument(cl::Positional, cl::ZeroOrMore, cl::desc("<bash | zsh>"),
                                     cl::sub(completion_command));

cl::opt<std::string> output_path("o", cl::desc("Output module"), cl::value_desc("OUT.fhrb"), cl::Required,
                                 cl::sub(compile_command));
cl::list<std::string> budgets("budget",
                              cl::desc("Override a budget: LOCATION=SIZE (repeatable; for one location the "
                                       "last applies, with a warning), e.g. cuda:0=40GiB"),
                              cl::value_desc("LOC=SIZE"), cl::ZeroOrMore, cl::sub(explain_command),
                              cl::sub(check_command), cl::sub(run_command), cl::sub(diff_command));
cl::list<std::string> warning_flags(
    "W", cl::Prefix, cl::ZeroOrMore,
    cl::desc("Warnings: -WFLAG, -Wno-FLAG, -Werror, -Werror=FLAG, -Wnone (flags: bare-size, empty-loop, "
             "unused-plan, undeclared-device, repeated-override)"),
    cl::value_desc("FLAG"), cl::sub(explain_command), cl::sub(check_command), cl::sub(compile_command),
    cl::sub(run_command), cl::sub(diff_command));
cl::opt<unsigned> error_limit("error-limit", cl::desc("Stop after N errors (0: no limit)"), cl::init(20),
                              cl::value_desc("N"), cl::sub(explain_command), cl::sub(check_command),
                              cl::sub(compile_command), cl::sub(run_command), cl::sub(fmt_command),
                              cl::sub(diff_command));
cl::opt<std::string> stdin_filename("stdin-filename",
                                    cl::desc("The name of standard input (-) in diagnostics and reports"),
                                    cl::value_desc("NAME"), cl::sub(explain_command), cl::sub(check_command),
                                    cl::sub(compile_command), cl::sub(run_command), cl::sub(fmt_command),
                                    cl::sub(diff_command));
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
                                 cl::desc("Predict each step's time with this link profile (fhr-links/2; "
                                          "default h200)"),
                                 cl::value_desc("FILE|h200"), cl::sub(run_command));
cl::opt<std::string> run_trace("trace", cl::desc("Write a Perfetto trace of predicted and measured spans"),
                               cl::value_desc("trace.json"), cl::sub(run_command));
cl::opt<bool> run_warm_up("warm-up",
                          cl::desc("Before each run, reserve the pool blocks its steps would allocate cold "
                                   "(Manager::warm_up) and predict warm pools"),
                          cl::sub(run_command));
cl::opt<bool> run_overlap("overlap",
                          cl::desc("With the simulated backend: give its devices the CUDA backend's copy "
                                   "engines, so that a phase's independent copies run in overlap windows as "
                                   "on a GPU, compared with the predicted ones"),
                          cl::sub(run_command));
cl::opt<unsigned> run_repeat("repeat",
                             cl::desc("Run each program or plan N times, each on a fresh manager; step times "
                                      "are the medians (at most 100)"),
                             cl::value_desc("N"), cl::init(1), cl::sub(run_command));
enum class RunContentChecks { Default, Transitions, End };
cl::opt<RunContentChecks> run_check_content(
    "check-content",
    cl::desc("When replicas' bytes are compared with what they should hold (default: end on the CUDA "
             "backend, whose steps a check between them would slow; transitions elsewhere)"),
    cl::init(RunContentChecks::Default),
    cl::values(clEnumValN(RunContentChecks::Transitions, "transitions",
                          "each replica as a transition installs it, and all at the end"),
               clEnumValN(RunContentChecks::End, "end", "every replica left at the end of each run")),
    cl::sub(run_command));
cl::opt<std::string>
    run_memory_limit("memory-limit",
                     cl::desc("Host memory a run may use (default: 3/4 of what is available); "
                              "sim keeps sizes only beyond it"),
                     cl::value_desc("SIZE"), cl::sub(run_command));
cl::list<std::string> unit_plans("plan", cl::desc("Report only this plan (repeatable)"),
                                 cl::value_desc("NAME"), cl::ZeroOrMore, cl::sub(explain_command),
                                 cl::sub(check_command));
cl::list<std::string> unit_programs("program", cl::desc("Report only this program (repeatable)"),
                                    cl::value_desc("NAME"), cl::ZeroOrMore, cl::sub(explain_command),
                                    cl::sub(check_command));
cl::opt<bool> explain_summary("summary",
                              cl::desc("One line per plan and program: verdict, peak, budget and headroom "
                                       "per location"),
                              cl::sub(explain_command));
cl::opt<bool> fmt_check("check", cl::desc("Change nothing; exit 1 and name each file that is not formatted"),
                        cl::sub(fmt_command));
cl::opt<bool> fmt_in_place("i", cl::desc("Rewrite the files in place"), cl::sub(fmt_command));

// LLVM's own --version lives only at the top level; every verb takes it too.
cl::opt<bool> verb_version("version", cl::desc("Print the version and exit"), cl::sub(explain_command),
                           cl::sub(check_command), cl::sub(compile_command), cl::sub(disasm_command),
                           cl::sub(run_command), cl::sub(fmt_command), cl::sub(diff_command),
                           cl::sub(calibrate_command));
cl::opt<std::string> explain_code_option("explain", cl::desc("Print the documentation of a diagnostic code"),
                                         cl::value_desc("CODE"));

enum class ExplainFormat { Text, Json, Html, Svg, Trace };
cl::opt<ExplainFormat> explain_format(
    "format", cl::desc("Output format"), cl::init(ExplainFormat::Text),
    cl::values(clEnumValN(ExplainFormat::Text, "text", "tables for people"),
               clEnumValN(ExplainFormat::Json, "json", "schema fhr-explain/2"),
               clEnumValN(ExplainFormat::Html, "html", "one self-contained page: memory timelines and steps"),
               clEnumValN(ExplainFormat::Svg, "svg", "the memory timelines as one SVG document"),
               clEnumValN(ExplainFormat::Trace, "trace",
                          "the predicted timeline as a Perfetto / Chrome trace")),
    cl::sub(explain_command));
cl::opt<std::string> picture_output("o", cl::desc("Write the html, svg or trace output here"),
                                    cl::value_desc("FILE"), cl::sub(explain_command));
cl::opt<std::string> link_profile("profile",
                                  cl::desc("Predict time with this link profile (fhr-links/2; h200: the "
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
cl::list<std::string> calibrate_merge("merge",
                                      cl::desc("Measure nothing: merge these profiles of one machine (two or "
                                               "more; h200 is the shipped one), each figure their median"),
                                      cl::value_desc("a.json,b.json,..."), cl::CommaSeparated,
                                      cl::sub(calibrate_command));
enum class CheckFormat { Text, Github, Sarif };
cl::opt<CheckFormat>
    check_format("format", cl::desc("Output format"), cl::init(CheckFormat::Text),
                 cl::values(clEnumValN(CheckFormat::Text, "text", "file:line:col: error: ..."),
                            clEnumValN(CheckFormat::Github, "github", "GitHub workflow annotations"),
                            clEnumValN(CheckFormat::Sarif, "sarif", "SARIF 2.1.0")),
                 cl::sub(check_command));

void print_version(llvm::raw_ostream &os) { os << "fhr-plan " << FHR_VERSION << '\n'; }

/// The values an enumerated option accepts, for the man page and completions.
template <typename Option>
std::vector<fhr::cli::OptionValue> values_of(Option &option) {
  std::vector<fhr::cli::OptionValue> values;
  auto &parser = option.getParser();
  for (unsigned i = 0; i < parser.getNumOptions(); ++i)
    values.push_back({parser.getOption(i).str(), parser.getDescription(i).str()});
  return values;
}

fhr::cli::Reference reference() {
  fhr::cli::Reference out;
  out.overview = "explain and check residency plans for GPU encrypted computation";
  out.values[&explain_format] = values_of(explain_format);
  out.values[&check_format] = values_of(check_format);
  out.values[&run_backend] = values_of(run_backend);
  out.values[&diff_format] = values_of(diff_format);
  out.values[&calibrate_backend] = values_of(calibrate_backend);
  std::vector<fhr::cli::OptionValue> warnings{{"error", "every warning is an error"},
                                              {"none", "no warnings"}};
  for (fhr::DiagCode code : fhr::all_diag_codes())
    if (fhr::diag_code_is_warning(code)) {
      const std::string flag = fhr::warning_flag(code).str();
      warnings.push_back({flag, fhr::diag_code_summary(code).str()});
      warnings.push_back({"no-" + flag, "no " + fhr::diag_code_summary(code).str()});
      warnings.push_back({"error=" + flag, fhr::diag_code_summary(code).str() + " is an error"});
    }
  out.values[std::addressof(warning_flags)] = warnings; // cl::list overloads operator&
  out.values_per_verb["completion"] = {{"bash", "bash completion"}, {"zsh", "zsh completion"}};
  return out;
}

/// `fhr-plan chek`: an unknown verb, with the closest known one.
bool reject_unknown_verb(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  const llvm::StringRef word = argv[1];
  std::vector<std::string> verbs;
  for (cl::SubCommand *sub : cl::getRegisteredSubcommands())
    if (!sub->getName().empty()) {
      if (sub->getName() == word) return false;
      verbs.push_back(sub->getName().str());
    }
  const std::string suggestion = fhr::closest_match(word, verbs);
  llvm::WithColor::error(llvm::errs(), "fhr-plan")
      << "unknown command '" << word << "'"
      << (suggestion.empty() ? std::string() : "; did you mean '" + suggestion + "'?")
      << " (see fhr-plan --help)\n";
  return true;
}

} // namespace

int main(int argc, char **argv) {
  cl::SetVersionPrinter(print_version);
  // LLVM's --color is accepted at the top level only, where nothing prints
  // in colour; colours follow the terminal and NO_COLOR.
  if (auto color = cl::getRegisteredOptions().find("color"); color != cl::getRegisteredOptions().end())
    color->second->setHiddenFlag(cl::ReallyHidden);
  // Messages name the tool, not the path it was started from, so that they
  // are the same wherever it is installed.
  std::string tool_name = "fhr-plan";
  if (argc > 0) argv[0] = tool_name.data();
  if (reject_unknown_verb(argc, argv)) return fhr::cli::kBadInput;
  if (!cl::ParseCommandLineOptions(
          argc, argv, "fhr-plan: explain and check residency plans for GPU encrypted computation\n",
          &llvm::errs()))
    return fhr::cli::kBadInput;
  if (verb_version) {
    print_version(llvm::outs());
    return fhr::cli::kFeasible;
  }
  if (fhr::cli::solve_selected()) return fhr::cli::run_solve();
  if (!explain_code_option.empty()) return fhr::cli::run_explain_code(explain_code_option);
  if (explain_code_command) {
    if (code_argument.size() != 1) {
      llvm::errs() << "fhr-plan: explain-code takes one code, as in fhr-plan explain-code E0009\n";
      return fhr::cli::kBadInput;
    }
    return fhr::cli::run_explain_code(code_argument.front());
  }
  if (completion_command) {
    if (shell_argument.size() != 1 || (shell_argument[0] != "bash" && shell_argument[0] != "zsh")) {
      llvm::errs() << "fhr-plan: completion takes one shell: bash or zsh\n";
      return fhr::cli::kBadInput;
    }
    fhr::cli::print_completion(llvm::outs(), reference(), shell_argument[0]);
    return fhr::cli::kFeasible;
  }
  if (man_command) {
    fhr::cli::print_man_page(llvm::outs(), reference(), FHR_VERSION);
    return fhr::cli::kFeasible;
  }
  if (calibrate_command) {
    fhr::cli::CalibrateOptions calibrate;
    calibrate.backend = calibrate_backend == CalibrateBackend::Simulated ? "sim" : "cuda";
    calibrate.output = calibrate_output;
    calibrate.repetitions = calibrate_repetitions;
    calibrate.merge.assign(calibrate_merge.begin(), calibrate_merge.end());
    // A merge measures nothing: options that say how to measure have no
    // meaning beside it, and silently ignoring one would hide a mistake.
    if (!calibrate.merge.empty())
      for (const cl::Option *measuring : std::initializer_list<const cl::Option *>{
               &calibrate_backend, &calibrate_repetitions, &calibrate_max_bytes})
        if (measuring->getNumOccurrences() > 0) {
          fhr::cli::report_error(
              llvm::createStringError(std::errc::invalid_argument,
                                      "calibrate --merge measures nothing: --%s has no meaning beside it",
                                      measuring->ArgStr.str().c_str()));
          return fhr::cli::kBadInput;
        }
    if (!fhr::cli::parse_size_option("--max-bytes", calibrate_max_bytes, calibrate.max_bytes))
      return fhr::cli::kBadInput;
    return fhr::cli::run_calibrate(calibrate);
  }

  const char *verb = explain_command   ? "explain"
                     : check_command   ? "check"
                     : compile_command ? "compile"
                     : run_command     ? "run"
                     : fmt_command     ? "fmt"
                     : diff_command    ? "diff"
                                       : "disasm";
  const bool any_verb = explain_command || check_command || compile_command || disasm_command ||
                        run_command || fmt_command || diff_command;
  if (!any_verb) {
    llvm::errs()
        << "fhr-plan: missing command (explain, check, diff, run, compile, disasm, fmt, calibrate, solve, "
           "explain-code, completion or man); see fhr-plan --help\n";
    return fhr::cli::kBadInput;
  }
  fhr::cli::CommonOptions options;
  if (compile_command)
    options.files.assign(compile_input.begin(), compile_input.end());
  else if (disasm_command)
    options.files.assign(disasm_files.begin(), disasm_files.end());
  else if (fmt_command)
    options.files.assign(fmt_files.begin(), fmt_files.end());
  else if (diff_command)
    options.files.assign(diff_files.begin(), diff_files.end());
  else
    options.files.assign(explain_files.begin(), explain_files.end());
  if (options.files.empty()) {
    llvm::errs() << "fhr-plan: no input files (use - for standard input); see fhr-plan " << verb
                 << " --help\n";
    return fhr::cli::kBadInput;
  }
  options.budget_overrides.assign(budgets.begin(), budgets.end());
  options.compile.diagnostics.error_limit = error_limit;
  for (const std::string &flag : warning_flags)
    if (llvm::Error error = options.compile.diagnostics.apply_flag(flag)) {
      llvm::WithColor::error(llvm::errs(), "fhr-plan") << "[" << fhr::diag_code_text(fhr::DiagCode::BadOption)
                                                       << "] " << llvm::toString(std::move(error)) << '\n';
      return fhr::cli::kBadInput;
    }
  if (!stdin_filename.empty()) options.compile.stdin_name = stdin_filename;
  options.filter.plans.assign(unit_plans.begin(), unit_plans.end());
  options.filter.programs.assign(unit_programs.begin(), unit_programs.end());
  options.summary = explain_summary;
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
    if (options.files.size() != 2) {
      llvm::errs() << "fhr-plan: diff needs two files, the old and the new; see fhr-plan diff --help\n";
      return fhr::cli::kBadInput;
    }
    diff.format = diff_format == DiffFormat::Json       ? "json"
                  : diff_format == DiffFormat::Markdown ? "markdown"
                                                        : "text";
    return fhr::cli::run_diff(options.files[0], options.files[1], options, diff);
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
  if (fmt_command) return fhr::cli::run_fmt(options, fmt_check, fmt_in_place);
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
  run.warm_up = run_warm_up;
  run.overlap = run_overlap;
  run.repeat = run_repeat;
  run.check_content = run_check_content == RunContentChecks::Transitions ? "transitions"
                      : run_check_content == RunContentChecks::End       ? "end"
                                                                         : "";
  if (!run_memory_limit.empty() &&
      !fhr::cli::parse_size_option("--memory-limit", run_memory_limit, run.memory_limit_bytes))
    return fhr::cli::kBadInput;
  return fhr::cli::run_run(options, run);
}
