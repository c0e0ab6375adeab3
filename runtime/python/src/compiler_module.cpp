// fhr._compiler: compiles .fhr text to a bytecode module, and solves
// workloads, in-process (the compiler, the planner and LLVM are linked
// here, so `import fhr` never loads them).
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/lower.hpp"
#include "fhr/planner/solve_workload.hpp"

#include <llvm/Support/raw_ostream.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

namespace py = pybind11;

namespace {

/// fhr.solve's native half (fhr/_solve.py): (outcome, program, report JSON,
/// message), the outcome one of "solved", "infeasible" (the report names
/// the step), "gave-up" (the reference controller's search), "bad-workload"
/// (the message says why), "internal" (a schedule that does not verify or
/// a printed program check refuses). A profile that does not parse raises
/// ValueError (once the workload has been read, as fhr-plan solve orders
/// its errors).
py::tuple solve(const std::string &text, const std::string &file, const std::string &policy, bool prefetch,
                bool exact, double time_limit, bool compare, const std::optional<std::string> &links_text) {
  using fhr::planner::SolvePolicy;
  fhr::planner::SolveRequest request;
  request.policy = policy == "lru" ? SolvePolicy::Lru : SolvePolicy::Planner;
  request.prefetch = prefetch;
  request.exact = exact;
  request.time_limit = time_limit;
  request.compare = compare;
  std::string outcome, program, report, message;
  {
    py::gil_scoped_release unlocked; // planning takes a while and touches no Python object
    fhr::planner::WorkloadText read = fhr::planner::read_workload(text, file);
    std::optional<fhr::LinkModel> links;
    if (read.workload && links_text) { // the workload first, then the profile, as fhr-plan solve reads them
      try {
        links = fhr::link_model_from_json(*links_text);
      } catch (const std::invalid_argument &e) {
        outcome = "bad-links";
        message = e.what();
      }
    }
    request.links = links ? &*links : nullptr;
    if (!read.workload) {
      outcome = "bad-workload";
      message = std::move(read.error);
    } else if (outcome.empty()) {
      const fhr::planner::SolvedWorkload solved = fhr::planner::solve_workload(*read.workload, request);
      switch (solved.outcome()) {
      case fhr::planner::SolveOutcome::Solved: outcome = "solved"; break;
      case fhr::planner::SolveOutcome::Infeasible: outcome = "infeasible"; break;
      case fhr::planner::SolveOutcome::GaveUp: outcome = "gave-up"; break;
      case fhr::planner::SolveOutcome::Internal: outcome = "internal"; break;
      }
      message = solved.failure_text(*read.workload);
      if (outcome == "solved") program = solved.program;
      if (outcome == "solved" || outcome == "infeasible")
        report = fhr::planner::solve_report_text(*read.workload, solved, -1);
    }
  }
  if (outcome == "bad-links") throw py::value_error("the link profile: " + message);
  return py::make_tuple(outcome, program.empty() ? py::object(py::none()) : py::object(py::str(program)),
                        report.empty() ? py::object(py::none()) : py::object(py::str(report)), message);
}

} // namespace

PYBIND11_MODULE(_compiler, m) {
  m.doc() = "The .fhr compiler and the planner, used by fhr.load and fhr.solve.";
  m.def(
      "compile",
      [](const std::string &text, const std::string &name) {
        fhr::CompiledFile file = fhr::compile_text(text, name);
        std::string diagnostics;
        llvm::raw_string_ostream out(diagnostics);
        file.source->print(out, /*colors=*/false);
        out.flush();
        if (!file.ok()) return py::make_tuple(py::none(), diagnostics);
        const std::vector<char> bytes = fhr::lower_module(file.module, *file.source);
        return py::make_tuple(py::bytes(bytes.data(), bytes.size()), diagnostics);
      },
      py::arg("text"), py::arg("name"), "(module bytes or None, diagnostics text) for .fhr source text.");
  m.def("solve", &solve, py::arg("text"), py::arg("file"), py::arg("policy"), py::arg("prefetch"),
        py::arg("exact"), py::arg("time_limit"), py::arg("compare"), py::arg("links"),
        "(outcome, program or None, report JSON or None, message) for a workload's text.");
}
