#include "fhr/compiler/output.hpp"

#include <algorithm>

namespace fhr {

namespace {

/// A left-aligned table with two-space gutters and a two-space indent.
class Table {
public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(llvm::raw_ostream &os) const {
    std::vector<std::size_t> widths(rows_[0].size(), 0);
    for (const auto &row : rows_)
      for (std::size_t i = 0; i < row.size(); ++i)
        widths[i] = std::max(widths[i], row[i].size());
    for (const auto &row : rows_) {
      std::string line = " ";
      for (std::size_t i = 0; i < row.size(); ++i) {
        line += " " + row[i];
        if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 1, ' ');
      }
      while (!line.empty() && line.back() == ' ')
        line.pop_back();
      os << line << '\n';
    }
  }

private:
  std::vector<std::vector<std::string>> rows_;
};

std::string location_or_dash(const std::optional<Location> &location) {
  return location ? location->name() : "-";
}

std::string result_text(const ReportStep &step) {
  switch (step.verdict) {
  case Verdict::Ok: return "ok";
  case Verdict::NoOp: return "no-op: " + step.reason;
  case Verdict::Failed: {
    std::string classes(error_class_id(step.error));
    if (step.raised != step.error && step.raised != ErrorClass::None)
      classes = std::string(error_class_id(step.raised)) + " <- " + classes;
    return "FAILED [" + classes + "] " + step.reason;
  }
  }
  return {};
}

std::string headroom(const LocationPrediction &p) {
  if (!p.budget_bytes) return "-";
  if (p.peak_charged > *p.budget_bytes) return "over by " + format_size(p.peak_charged - *p.budget_bytes);
  return format_size(*p.budget_bytes - p.peak_charged);
}

} // namespace

void print_explain_text(llvm::raw_ostream &os, const VerifiedModule &module, const Analysis &analysis) {
  const bool feasible = analysis.feasible();
  const std::size_t setup_steps = analysis.setup.steps;
  os << "file " << module.spans.file << ": " << setup_steps << " setup step" << (setup_steps == 1 ? "" : "s")
     << ", " << (feasible ? "all feasible" : "INFEASIBLE") << '\n';
  for_each_unit(module, analysis, ReportDetail::AllSteps, [&](const ReportUnit &unit) {
    const std::uint32_t line = unit.span.line;
    os << '\n';
    if (unit.kind == ReportUnit::Kind::Setup)
      os << "setup: FAILED (line " << line << ")\n";
    else
      os << (unit.kind == ReportUnit::Kind::Plan ? "plan" : "program") << " \"" << unit.name << "\" (line "
         << line << "): " << (unit.feasible ? "feasible" : "INFEASIBLE") << '\n';
    Table steps({"#", "phase", "step", "source", "destination", "bytes", "result"});
    for (std::size_t i = 0; i < unit.steps.size(); ++i) {
      const ReportStep &s = unit.steps[i];
      steps.add({std::to_string(i + 1), s.context, s.text, location_or_dash(s.source),
                 location_or_dash(s.destination), format_size(s.storage_bytes), result_text(s)});
    }
    if (unit.steps.empty())
      os << "  (no steps)\n";
    else
      steps.print(os);
    if (!unit.locations.empty()) {
      Table locations({"location", "budget", "used before", "peak charged", "peak used", "headroom at peak"});
      for (const LocationPrediction &p : unit.locations)
        locations.add({p.location.name(), p.budget_bytes ? format_size(*p.budget_bytes) : "-",
                       format_size(p.used_before + p.reserved_before), format_size(p.peak_charged),
                       format_size(p.peak_used), headroom(p)});
      os << '\n';
      locations.print(os);
    }
    if (unit.failure) {
      os << '\n';
      module.spans.print_message(os, unit.steps[*unit.failure].instruction, llvm::SourceMgr::DK_Error,
                                 failure_summary(unit), false);
    }
  });
}

} // namespace fhr
