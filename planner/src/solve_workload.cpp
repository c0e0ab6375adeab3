// Solving a workload end to end: `fhr-plan solve` and `fhr.solve`
// (docs/planner.md).
#include "fhr/planner/solve_workload.hpp"

#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/printed_program.hpp"
#include "fhr/dsl/format.hpp"
#include "fhr/dsl/parser.hpp"
#include "fhr/planner/lru_baseline.hpp"
#include "fhr/planner/workload_json.hpp"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

namespace fhr::planner {

namespace {

using json = nlohmann::ordered_json;

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
    w.tiers.push_back(Tier{tier.from, tier.to});
  for (const ir::Family &family : module.families)
    w.families.push_back(Family{family.name, family.first, family.count});
  for (const ir::Value &value : module.values) {
    Value v;
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
    Step out;
    out.name = step.name;
    for (const ir::StepNeed &need : step.needs)
      out.needs.push_back(Need{need.value, need.at});
    for (const ir::StepWorkspace &ws : step.workspace)
      out.workspace.push_back(Workspace{ws.at, ws.bytes, ws.label});
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

/// The printed program in `fmt`'s canonical layout: the emitter says what
/// the statements are, the formatter how they are laid out (an empty plan
/// on one line), so that a solved plan kept in a repository passes `fmt
/// --check`. Text that does not parse is left as it is (the check
/// reports it).
std::string canonical_layout(const std::string &program) {
  SourceFile source(llvm::MemoryBuffer::getMemBufferCopy(program, "<solve>"));
  ast::File syntax = parse(source);
  return source.has_errors() ? program : format_file(source, syntax);
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
  out["swap_stops_on_tiers"] = r.swap_stops_on_tiers;
  out["solve_seconds"] = r.solve_seconds;
  return out;
}

} // namespace

const char *exact_status_text(ExactResult::Status status) {
  switch (status) {
  case ExactResult::Status::Optimal: return "optimal";
  case ExactResult::Status::TimeLimit: return "stopped at the time limit";
  case ExactResult::Status::Unavailable: return "unavailable";
  case ExactResult::Status::Failed: return "failed";
  }
  return "failed";
}

WorkloadText read_workload(std::string_view text, const std::string &file) {
  WorkloadText out;
  if (llvm::StringRef(text).ltrim().startswith("{")) {
    std::variant<Workload, WorkloadError> parsed = parse_workload_json(text);
    if (auto *error = std::get_if<WorkloadError>(&parsed))
      out.error = error->text();
    else
      out.workload = std::get<Workload>(std::move(parsed));
    return out;
  }
  const bool standard_input = file == "-" || file == "<stdin>";
  CompiledFile compiled = compile_text(text, standard_input ? "<stdin>" : llvm::StringRef(file));
  if (compiled.ok() && compiled.module.steps.empty())
    compiled.source->report(DiagCode::NotAWorkload, "the file has no steps: nothing to solve", {0, 0},
                            "a workload says what each step needs: step \"NAME\" { need X at cuda:0 }");
  if (compiled.ok()) {
    std::vector<ast::Span> spans;
    const std::string name = standard_input ? "stdin" : llvm::sys::path::stem(file).str();
    Workload w = workload_of(compiled.module, name, spans);
    if (const std::optional<WorkloadError> error = check_workload(w)) {
      const std::optional<std::size_t> step = step_of_path(error->path);
      compiled.source->report(DiagCode::NotAWorkload, error->text(),
                              step && *step < spans.size() ? spans[*step] : ast::Span{0, 0});
    } else {
      out.workload = std::move(w);
    }
  }
  if (!compiled.ok()) {
    llvm::raw_string_ostream diagnostics(out.error);
    compiled.source->print(diagnostics, false);
  }
  return out;
}

SolveOutcome SolvedWorkload::outcome() const {
  if (result.infeasible) return SolveOutcome::Infeasible;
  if (!result.failure.empty()) return result.policy == "lru" ? SolveOutcome::GaveUp : SolveOutcome::Internal;
  return check_failure.empty() ? SolveOutcome::Solved : SolveOutcome::Internal;
}

std::string SolvedWorkload::failure_text(const Workload &w) const {
  if (result.infeasible) return "infeasible: " + result.infeasible->text(w);
  if (!result.failure.empty()) return result.failure;
  return check_failure.empty() ? std::string() : "internal error: " + check_failure;
}

SolvedWorkload solve_workload(const Workload &w, const SolveRequest &request) {
  SolveOptions options;
  options.exact = request.exact;
  options.exact_options.time_limit_seconds = request.time_limit;
  options.prefetch = request.prefetch;
  options.links = request.links;
  LruOptions lru;
  lru.links = request.links;
  const bool lru_first = request.policy == SolvePolicy::Lru;
  SolvedWorkload solved;
  solved.result = lru_first ? solve_lru(w, lru) : solve_planner(w, options);
  if (lru_first) {
    // The controller decides step by step: the model says whether the
    // workload can fit at all, and bounds it.
    const BoundOnly bound = bound_workload(w);
    solved.result.infeasible = bound.infeasible;
    solved.result.bound = bound.bound;
  }
  if (request.compare) solved.compared = lru_first ? solve_planner(w, options) : solve_lru(w, lru);
  if (!solved.result.ok()) return solved;
  const std::string header = "fhr-plan solve " +
                             std::string(lru_first ? "--policy lru" : "--policy planner") + ": workload '" +
                             w.name + "'\n" + std::to_string(solved.result.bytes_moved) +
                             " bytes moved; every step's values resident within the budgets";
  solved.program = canonical_layout(emit_program(w, solved.result.schedule, header));
  if (request.check) {
    const PrintedProgramCheck printed = check_printed_program(solved.program, w.budgets);
    solved.checked = true;
    if (!printed.accepted) solved.check_failure = printed.detail;
  }
  return solved;
}

json solve_report_json(const Workload &w, const SolvedWorkload &solved) {
  const SolveResult &result = solved.result;
  if (result.infeasible) {
    const Infeasibility &x = *result.infeasible;
    return json{{"schema", "fhr-solve-report/1"},
                {"feasible", false},
                {"step", x.step},
                {"step_name", w.steps[x.step].name},
                {"at", x.at.name()},
                {"needed_bytes", x.needed_bytes},
                {"budget_bytes", x.budget_bytes},
                {"short_bytes", x.short_bytes()}};
  }
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
    out["exact"] = json{{"status", exact_status_text(result.exact->status)},
                        {"bound_bytes", result.exact->bound_bytes},
                        {"seconds", result.exact->seconds}};
  if (solved.compared && solved.compared->ok()) out["compared"] = result_json(*solved.compared);
  out["checked"] = solved.checked;
  return out;
}

std::string solve_report_text(const Workload &w, const SolvedWorkload &solved, int indent) {
  return solve_report_json(w, solved).dump(indent, ' ', false, json::error_handler_t::replace);
}

} // namespace fhr::planner
