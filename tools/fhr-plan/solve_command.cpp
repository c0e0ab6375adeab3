// fhr-plan solve: a workload in, an explicit plan program and a report out
// (docs/planner.md). The program goes to standard output (or -o FILE, the
// report then to standard output), the report to standard error.
#include "commands.hpp"

#include "fhr/planner/solve_workload.hpp"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

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

void print_text(llvm::raw_ostream &os, const std::string &file, const Workload &w,
                const planner::SolvedWorkload &solved) {
  const SolveResult &r = solved.result;
  const std::optional<SolveResult> &other = solved.compared;
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
    os << "exact: " << planner::exact_status_text(r.exact->status);
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
  if (solved.checked)
    os << "check: the printed program is accepted by fhr-plan check, peaks within the budgets\n";
  if (solve_timings)
    os << "solve time: " << seconds_text(r.solve_seconds) << " (bound " << seconds_text(r.bound_seconds)
       << ", verification " << seconds_text(r.check_seconds) << ")\n";
}

} // namespace

bool solve_selected() { return static_cast<bool>(solve); }

int run_solve() {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFileOrSTDIN(solve_input);
  if (!buffer) {
    llvm::errs() << "fhr-plan: error: " << solve_input << ": " << buffer.getError().message() << "\n";
    return kBadInput;
  }
  const llvm::StringRef text = (*buffer)->getBuffer();
  planner::WorkloadText read = planner::read_workload(text, solve_input);
  if (!read.workload) {
    if (text.ltrim().startswith("{"))
      llvm::errs() << "fhr-plan: error: " << solve_input << ": " << read.error << "\n";
    else
      llvm::errs() << read.error;
    return kBadInput;
  }
  const Workload &w = *read.workload;
  LinkModel profile;
  planner::SolveRequest request;
  if (!solve_links.empty()) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> profile_text =
        llvm::MemoryBuffer::getFile(solve_links);
    if (!profile_text) {
      llvm::errs() << "fhr-plan: error: " << solve_links << ": " << profile_text.getError().message() << "\n";
      return kBadInput;
    }
    try {
      profile = link_model_from_json((*profile_text)->getBuffer());
    } catch (const std::invalid_argument &e) {
      llvm::errs() << "fhr-plan: error: " << solve_links << ": " << e.what() << "\n";
      return kBadInput;
    }
    request.links = &profile;
  }
  request.policy =
      solve_policy == SolvePolicy::Lru ? planner::SolvePolicy::Lru : planner::SolvePolicy::Planner;
  request.prefetch = !solve_no_prefetch;
  request.exact = solve_exact;
  request.time_limit = solve_time_limit;
  request.compare = solve_compare;
  request.check = !solve_no_check;
  const planner::SolvedWorkload solved = planner::solve_workload(w, request);
  switch (solved.outcome()) {
  case planner::SolveOutcome::Solved: break;
  case planner::SolveOutcome::Infeasible:
    llvm::errs() << "fhr-plan solve: " << solve_input << ": " << solved.failure_text(w) << "\n";
    if (solve_format == SolveFormat::Json) llvm::outs() << planner::solve_report_text(w, solved) << "\n";
    return kInfeasible;
  case planner::SolveOutcome::GaveUp:
    llvm::errs() << "fhr-plan solve: " << solve_input << ": " << solved.failure_text(w) << "\n";
    return kInfeasible;
  case planner::SolveOutcome::Internal:
    llvm::errs() << "fhr-plan solve: " << solve_input << ": " << solved.failure_text(w) << "\n";
    return kBadInput;
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
    *file << solved.program;
    report = &llvm::outs();
  } else {
    llvm::outs() << solved.program;
    llvm::outs().flush();
  }
  if (solve_format == SolveFormat::Json)
    *report << planner::solve_report_text(w, solved) << "\n";
  else
    print_text(*report, solve_input, w, solved);
  report->flush();
  return kFeasible;
}

} // namespace fhr::cli
