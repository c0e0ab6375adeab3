#pragma once
/// \file
/// Solving a workload end to end, as `fhr-plan solve` and the Python
/// package's `fhr.solve` both do (docs/planner.md): read it (fhr-workload/1
/// JSON or `.fhr` steps), plan it with a policy, print the program in
/// `fmt`'s layout, compile and explain that program (check_printed_program),
/// and report (schema fhr-solve-report/1). Target fhr_solve: it links the
/// compiler and the controller, which fhr_planner does not.

#include "fhr/model/link_model.hpp"
#include "fhr/planner/solve.hpp"
#include "fhr/planner/workload.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace fhr::planner {

/// A workload read from text, or what is wrong with it: for JSON the
/// parser's message (with the path of the bad member), for `.fhr` the
/// compiler's diagnostics as `fhr-plan check` prints them.
struct WorkloadText {
  std::optional<Workload> workload;
  std::string error;
};

/// Reads fhr-workload/1 JSON (text whose first character besides spaces is
/// '{') or `.fhr` steps; `file` names the text in diagnostics, and its stem
/// names a `.fhr` workload ("stdin" for "-" or "<stdin>").
WorkloadText read_workload(std::string_view text, const std::string &file);

enum class SolvePolicy : std::uint8_t {
  Planner, ///< look-ahead planner with prefetch
  Lru,     ///< the reference controller: tiered LRU, one step at a time
};

struct SolveRequest {
  SolvePolicy policy = SolvePolicy::Planner;
  bool prefetch = true;
  bool exact = false;               ///< also run the exact ILP (COIN-OR CBC)
  double time_limit = 60.0;         ///< seconds for the exact solver
  bool compare = false;             ///< also run the other policy
  bool check = true;                ///< compile and explain the printed program
  const LinkModel *links = nullptr; ///< LinkModel::h200() when null
};

/// How a solve ended: `fhr-plan solve`'s exit status and `fhr.solve`'s
/// result both follow from it.
enum class SolveOutcome : std::uint8_t {
  Solved,     ///< a program, accepted where it was checked
  Infeasible, ///< a step cannot fit (the report names it)
  GaveUp,     ///< the reference controller's search found no plan for a step
  Internal,   ///< a planner bug: a schedule that does not verify, a program check refuses
};

struct SolvedWorkload {
  SolveResult result;
  std::optional<SolveResult> compared;
  /// The printed program in `fmt`'s layout; empty unless feasible() and
  /// result.failure is empty.
  std::string program;
  bool checked = false;
  /// Set where the printed program was checked and refused (a planner
  /// bug: `fhr-plan solve` reports it as an internal error).
  std::string check_failure;

  SolveOutcome outcome() const;
  /// Why there is no program (empty when solved): the step that cannot
  /// fit, the reference controller's reason, or the planner bug.
  std::string failure_text(const Workload &workload) const;
};

SolvedWorkload solve_workload(const Workload &workload, const SolveRequest &request);

/// The fhr-solve-report/1 document of a solved workload: feasible with the
/// policy's figures, the bound, the exact solver and the compared policy;
/// or infeasible with the first step that cannot fit.
nlohmann::ordered_json solve_report_json(const Workload &workload, const SolvedWorkload &solved);

/// That document as text (`indent` as nlohmann's dump; -1: one line). A
/// workload named after a file whose name is not UTF-8 has its bad bytes
/// replaced (U+FFFD) rather than failing the dump.
std::string solve_report_text(const Workload &workload, const SolvedWorkload &solved, int indent = 2);

const char *exact_status_text(ExactResult::Status status);

} // namespace fhr::planner
