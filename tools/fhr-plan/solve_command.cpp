// fhr-plan solve: a workload in, an explicit plan program and a report out
// (docs/planner.md). The program goes to standard output (or -o FILE, the
// report then to standard output), the report to standard error.
#include "commands.hpp"

#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/printed_program.hpp"
#include "fhr/dsl/format.hpp"
#include "fhr/dsl/parser.hpp"
#include "fhr/planner/lru_baseline.hpp"
#include "fhr/planner/solve.hpp"
#include "fhr/planner/workload_json.hpp"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>
#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>

namespace cl = llvm::cl;

namespace fhr::cli {

namespace {

cl::SubCommand
    solve("solve",
          "Plan a workload (.fhr steps or fhr-workload/1 JSON): print an explicit program that meets every "
          "step within the budgets, and a report of bytes, time and the lower bound");
cl::opt<std::string> solve_input(cl::Positional, cl::Required,
                                 cl::desc("<workload.fhr | workload.json | - >"), cl::sub(solve));
cl::opt<std::string> solve_output("o", cl::desc("Write the program here; the report goes to standard output"),
                                  cl::value_desc("PROGRAM.fhr"), cl::sub(solve));
enum class SolvePolicy { Planner, Lru };
cl::opt<SolvePolicy> solve_policy(
    "policy", cl::desc("Who decides"), cl::init(SolvePolicy::Planner),
    cl::values(clEnumValN(SolvePolicy::Planner, "planner", "look-ahead planner with prefetch (default)"),
               clEnumValN(SolvePolicy::Lru, "lru",
                          "the reference controller: tiered LRU, one step at a time")),
    cl::sub(solve));
cl::opt<bool> solve_exact("exact", cl::desc("Also run the exact ILP solver (COIN-OR CBC) and use its plan"),
                          cl::sub(solve));
cl::opt<double> solve_time_limit("time-limit", cl::desc("Seconds for the exact solver (default 60)"),
                                 cl::init(60.0), cl::sub(solve));
cl::opt<bool> solve_compare("compare", cl::desc("Also run the other policy and report both"), cl::sub(solve));
cl::opt<bool> solve_no_prefetch("no-prefetch", cl::desc("Issue every load right before its step"),
                                cl::sub(solve));
cl::opt<bool> solve_no_check("no-check",
                             cl::desc("Do not compile and explain the printed program in-process"),
                             cl::sub(solve));
cl::opt<bool> solve_timings("timings", cl::desc("Report how long solving took"), cl::sub(solve));
cl::opt<std::string> solve_links("links",
                                 cl::desc("Link profile (fhr-links/2 JSON); default: the measured H200"),
                                 cl::value_desc("PROFILE.json"), cl::sub(solve));
enum class SolveFormat { Text, Json };
cl::opt<SolveFormat>
    solve_format("format", cl::desc("Report format"), cl::init(SolveFormat::Text),
                 cl::values(clEnumValN(SolveFormat::Text, "text", "for people"),
                            clEnumValN(SolveFormat::Json, "json", "schema fhr-solve-report/1")),
                 cl::sub(solve));

using json = nlohmann::ordered_json;
using planner::SolveResult;
using planner::Workload;

/// "12.345 GiB", "480.00 MiB", "300 B": for people; the exact bytes are printed beside.
std::string gib(std::uint64_t bytes) {
  char text[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30))
    std::snprintf(text, sizeof text, "%.3f GiB", b / double(1ull << 30));
  else if (bytes >= (1ull << 20))
    std::snprintf(text, sizeof text, "%.2f MiB", b / double(1ull << 20));
  else if (bytes >= (1ull << 10))
    std::snprintf(text, sizeof text, "%.2f KiB", b / double(1ull << 10));
  else
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  return text;
}

std::string seconds_text(double s) {
  char text[64];
  std::snprintf(text, sizeof text, "%.4f s", s);
  return text;
}

std::string percent(double fraction) {
  char text[64];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * fraction);
  return text;
}

/// What compiling and explaining the printed program found.
struct ProgramCheck {
  bool ran = false, accepted = false;
  std::string detail;
};

/// The printed program in `fmt`'s canonical layout: the emitter says what
/// the statements are, the formatter how they are laid out (an empty plan
/// on one line), so that a solved plan kept in a repository passes `fmt
/// --check`. Text that does not parse is left as it is (check_program
/// reports it).
std::string canonical_layout(const std::string &program) {
  SourceFile source(llvm::MemoryBuffer::getMemBufferCopy(program, "<solve>"));
  ast::File syntax = parse(source);
  return source.has_errors() ? program : format_file(source, syntax);
}

ProgramCheck check_program(const std::string &program, const Workload &w) {
  const PrintedProgramCheck printed = check_printed_program(program, w.budgets);
  return {true, printed.accepted, printed.detail};
}

const char *status_text(planner::ExactResult::Status status) {
  switch (status) {
  case planner::ExactResult::Status::Optimal: return "optimal";
  case planner::ExactResult::Status::TimeLimit: return "stopped at the time limit";
  case planner::ExactResult::Status::Unavailable: return "unavailable";
  case planner::ExactResult::Status::Failed: return "failed";
  }
  return "failed";
}

json result_json(const SolveResult &r) {
  json out;
  out["policy"] = r.policy;
  out["bytes_moved"] = r.bytes_moved;
  out["transfers"] = r.verification.transfers.size();
  json links = json::object();
  for (std::size_t i = 0; i < kLinkKindCount; ++i)
    if (r.verification.bytes_per_link[i] > 0)
      links[std::string(link_kind_name(static_cast<LinkKind>(i)))] = r.verification.bytes_per_link[i];
  if (r.verification.bytes_loaded_in_place > 0) links["in-place"] = r.verification.bytes_loaded_in_place;
  out["bytes_per_link"] = std::move(links);
  out["time"] = json{{"total_seconds", r.timeline.total_seconds},
                     {"compute_seconds", r.timeline.compute_seconds},
                     {"stall_seconds", r.timeline.stall_seconds},
                     {"transfer_seconds", r.timeline.transfer_seconds},
                     {"overlapped_seconds", r.timeline.overlapped_seconds}};
  json peaks = json::array();
  for (const auto &[at, bytes] : r.verification.peaks)
    peaks.push_back(json{{"at", at.name()}, {"peak_bytes", bytes}});
  out["peaks"] = std::move(peaks);
  out["solve_seconds"] = r.solve_seconds;
  return out;
}

void print_text(llvm::raw_ostream &os, const std::string &file, const Workload &w, const SolveResult &r,
                const std::optional<SolveResult> &other, const ProgramCheck &check) {
  os << "fhr-plan solve: " << file << ": workload '" << w.name << "', " << w.steps.size() << " steps, "
     << w.values.size() << " values\n";
  os << "policy: "
     << (r.policy == "lru" ? "lru (the reference controller, tiered LRU" : "planner (look-ahead");
  if (r.policy == "lru") {
    os << "; spill tiers:";
    if (w.tiers.empty()) os << " none";
    for (std::size_t k = 0; k < w.tiers.size(); ++k) {
      os << (k ? "; " : " ") << w.tiers[k].from.name() << " ->";
      for (std::size_t i = 0; i < w.tiers[k].to.size(); ++i)
        os << (i ? ", " : " ") << w.tiers[k].to[i].name();
    }
  } else {
    os << ", prefetch " << (solve_no_prefetch ? "off" : "on");
  }
  os << ")\n";
  os << "bytes moved: " << gib(r.bytes_moved) << " (" << r.bytes_moved << " B) in "
     << r.verification.transfers.size() << " transfers\n";
  for (std::size_t i = 0; i < kLinkKindCount; ++i)
    if (r.verification.bytes_per_link[i] > 0)
      os << "  " << link_kind_name(static_cast<LinkKind>(i)) << ": " << gib(r.verification.bytes_per_link[i])
         << " (" << r.verification.bytes_per_link[i] << " B)\n";
  if (r.verification.bytes_loaded_in_place > 0)
    os << "  loaded in place: " << gib(r.verification.bytes_loaded_in_place) << "\n";
  if (r.bound) {
    const double gap = r.bound->bytes > 0
                           ? static_cast<double>(r.bytes_moved) / static_cast<double>(r.bound->bytes) - 1
                           : (r.bytes_moved == 0 ? 0.0 : 1.0);
    os << "lower bound: " << gib(r.bound->bytes) << " (" << r.bound->bytes << " B, " << r.bound->method
       << "); gap " << percent(gap) << "\n";
  }
  if (r.exact) {
    os << "exact: " << status_text(r.exact->status);
    if (r.exact->selection) os << ", bound " << gib(r.exact->bound_bytes);
    if (!r.exact->detail.empty()) os << " (" << r.exact->detail << ")";
    os << "\n";
  }
  if (other) {
    if (other->ok())
      os << other->policy << ": " << gib(other->bytes_moved) << " (" << other->bytes_moved << " B), stall "
         << seconds_text(other->timeline.stall_seconds) << "\n";
    else
      os << other->policy << ": failed: " << (other->infeasible ? other->infeasible->text(w) : other->failure)
         << "\n";
  }
  os << "time: total " << seconds_text(r.timeline.total_seconds) << " = compute "
     << seconds_text(r.timeline.compute_seconds) << " + stall " << seconds_text(r.timeline.stall_seconds)
     << "; transfers " << seconds_text(r.timeline.transfer_seconds) << ", "
     << percent(r.timeline.overlap_fraction()) << " overlapped with compute\n";
  os << "peak:";
  for (std::size_t i = 0; i < r.verification.peaks.size(); ++i) {
    const auto &[at, bytes] = r.verification.peaks[i];
    os << (i ? "; " : " ") << at.name() << " " << planner::size_text(bytes) << " of "
       << planner::size_text(*w.budget(at));
  }
  os << "\n";
  if (check.ran) os << "check: the printed program is accepted by fhr-plan check, peaks within the budgets\n";
  if (solve_timings)
    os << "solve time: " << seconds_text(r.solve_seconds) << " (bound " << seconds_text(r.bound_seconds)
       << ", verification " << seconds_text(r.check_seconds) << ")\n";
}

/// The steps, tiers, values and budgets of a `.fhr` workload as the
/// planner's workload; the span of each step, for the rules the planner
/// checks on the whole (docs/language.md, "Workloads").
Workload workload_of(const ir::Module &module, std::string name, std::vector<ast::Span> &step_spans) {
  Workload w;
  w.name = std::move(name);
  w.devices = module.device_count;
  for (const auto &[at, budget] : module.budgets)
    if (budget) w.budgets.emplace_back(at, *budget);
  for (const ir::Tier &tier : module.tiers)
    w.tiers.push_back(planner::Tier{tier.from, tier.to});
  for (const ir::Family &family : module.families)
    w.families.push_back(planner::Family{family.name, family.first, family.count});
  for (const ir::Value &value : module.values) {
    planner::Value v;
    v.name = value.name;
    v.logical_bytes = value.spec.logical_nbytes;
    v.storage_bytes = value.spec.storage_nbytes;
    v.mode = value.spec.replica_mode;
    v.adopted = value.adopted();
    v.home = value.location;
    if (value.family != ir::kNoFamily) v.family = value.family;
    w.values.push_back(std::move(v));
  }
  for (const ir::WorkloadStep &step : module.steps) {
    planner::Step out;
    out.name = step.name;
    for (const ir::StepNeed &need : step.needs)
      out.needs.push_back(planner::Need{need.value, need.at});
    for (const ir::StepWorkspace &ws : step.workspace)
      out.workspace.push_back(planner::Workspace{ws.at, ws.bytes, ws.label});
    out.compute_seconds = step.compute_seconds;
    w.steps.push_back(std::move(out));
    step_spans.push_back(step.span);
  }
  return w;
}

/// The step index a check_workload path names ("steps[12].needs[0]").
std::optional<std::size_t> step_of_path(llvm::StringRef path) {
  if (!path.consume_front("steps[")) return std::nullopt;
  std::size_t index = 0;
  if (path.consumeInteger(10, index)) return std::nullopt;
  return index;
}

/// Reads the workload: `.fhr` text (compiled by the front end, its
/// diagnostics printed) or fhr-workload/1 JSON (a text that starts with '{').
std::optional<Workload> read_workload(llvm::StringRef text) {
  if (text.ltrim().startswith("{")) {
    std::variant<Workload, planner::WorkloadError> parsed = planner::parse_workload_json(text);
    if (auto *error = std::get_if<planner::WorkloadError>(&parsed)) {
      llvm::errs() << "fhr-plan: error: " << solve_input << ": " << error->text() << "\n";
      return std::nullopt;
    }
    return std::get<Workload>(std::move(parsed));
  }
  CompiledFile compiled = compile_text(text, solve_input == "-" ? "<stdin>" : llvm::StringRef(solve_input));
  if (compiled.ok() && compiled.module.steps.empty())
    compiled.source->report(DiagCode::NotAWorkload, "the file has no steps: nothing to solve", {0, 0},
                            "a workload says what each step needs: step \"NAME\" { need X at cuda:0 }");
  std::vector<ast::Span> spans;
  std::optional<Workload> w;
  if (compiled.ok()) {
    const std::string name = solve_input == "-" ? "stdin" : llvm::sys::path::stem(solve_input).str();
    w = workload_of(compiled.module, name, spans);
    if (const std::optional<planner::WorkloadError> error = planner::check_workload(*w)) {
      const std::optional<std::size_t> step = step_of_path(error->path);
      compiled.source->report(DiagCode::NotAWorkload, error->text(),
                              step && *step < spans.size() ? spans[*step] : ast::Span{0, 0});
      w.reset();
    }
  }
  if (!compiled.ok()) {
    compiled.source->print(llvm::errs(), false);
    return std::nullopt;
  }
  return w;
}

} // namespace

bool solve_selected() { return static_cast<bool>(solve); }

int run_solve() {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFileOrSTDIN(solve_input);
  if (!buffer) {
    llvm::errs() << "fhr-plan: error: " << solve_input << ": " << buffer.getError().message() << "\n";
    return kBadInput;
  }
  const std::optional<Workload> read = read_workload((*buffer)->getBuffer());
  if (!read) return kBadInput;
  const Workload &w = *read;
  LinkModel profile;
  const LinkModel *links = &LinkModel::h200();
  if (!solve_links.empty()) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text = llvm::MemoryBuffer::getFile(solve_links);
    if (!text) {
      llvm::errs() << "fhr-plan: error: " << solve_links << ": " << text.getError().message() << "\n";
      return kBadInput;
    }
    try {
      profile = link_model_from_json((*text)->getBuffer());
    } catch (const std::invalid_argument &e) {
      llvm::errs() << "fhr-plan: error: " << solve_links << ": " << e.what() << "\n";
      return kBadInput;
    }
    links = &profile;
  }
  planner::SolveOptions options;
  options.exact = solve_exact;
  options.exact_options.time_limit_seconds = solve_time_limit;
  options.prefetch = !solve_no_prefetch;
  options.links = links;
  planner::LruOptions lru;
  lru.links = links;
  const bool lru_first = solve_policy == SolvePolicy::Lru;
  SolveResult result = lru_first ? planner::solve_lru(w, lru) : planner::solve_planner(w, options);
  if (lru_first) {
    const planner::BoundOnly bound = planner::bound_workload(w);
    result.infeasible = bound.infeasible;
    result.bound = bound.bound;
  }
  std::optional<SolveResult> other;
  if (solve_compare) other = lru_first ? planner::solve_planner(w, options) : planner::solve_lru(w, lru);

  if (result.infeasible) {
    llvm::errs() << "fhr-plan solve: " << solve_input << ": infeasible: " << result.infeasible->text(w)
                 << "\n";
    if (solve_format == SolveFormat::Json) {
      const planner::Infeasibility &x = *result.infeasible;
      llvm::outs() << json{{"schema", "fhr-solve-report/1"},
                           {"feasible", false},
                           {"step", x.step},
                           {"step_name", w.steps[x.step].name},
                           {"at", x.at.name()},
                           {"needed_bytes", x.needed_bytes},
                           {"budget_bytes", x.budget_bytes},
                           {"short_bytes", x.short_bytes()}}
                          .dump(2)
                   << "\n";
    }
    return kInfeasible;
  }
  if (!result.failure.empty()) {
    llvm::errs() << "fhr-plan solve: " << solve_input << ": " << result.failure << "\n";
    return lru_first ? kInfeasible : kBadInput;
  }
  const std::string header = "fhr-plan solve " +
                             std::string(lru_first ? "--policy lru" : "--policy planner") + ": workload '" +
                             w.name + "'\n" + std::to_string(result.bytes_moved) +
                             " bytes moved; every step's values resident within the budgets";
  const std::string program = canonical_layout(planner::emit_program(w, result.schedule, header));
  ProgramCheck check;
  if (!solve_no_check) {
    check = check_program(program, w);
    if (!check.accepted) {
      llvm::errs() << "fhr-plan solve: internal error: " << check.detail << "\n";
      return kBadInput;
    }
  }
  llvm::raw_ostream *report = &llvm::errs();
  std::unique_ptr<llvm::raw_fd_ostream> file;
  if (!solve_output.empty()) {
    std::error_code ec;
    file = std::make_unique<llvm::raw_fd_ostream>(solve_output, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      llvm::errs() << "fhr-plan: error: " << solve_output << ": " << ec.message() << "\n";
      return kBadInput;
    }
    *file << program;
    report = &llvm::outs();
  } else {
    llvm::outs() << program;
    llvm::outs().flush();
  }
  if (solve_format == SolveFormat::Json) {
    json out;
    out["schema"] = "fhr-solve-report/1";
    out["feasible"] = true;
    out["workload"] = w.name;
    out["steps"] = w.steps.size();
    out["values"] = w.values.size();
    out["result"] = result_json(result);
    if (result.bound)
      out["lower_bound"] = json{{"bytes", result.bound->bytes}, {"method", result.bound->method}};
    if (result.exact)
      out["exact"] = json{{"status", status_text(result.exact->status)},
                          {"bound_bytes", result.exact->bound_bytes},
                          {"seconds", result.exact->seconds}};
    if (other && other->ok()) out["compared"] = result_json(*other);
    out["checked"] = check.ran;
    *report << out.dump(2) << "\n";
  } else {
    print_text(*report, solve_input, w, result, other, check);
  }
  report->flush();
  return kFeasible;
}

} // namespace fhr::cli
