#include "fhr/compiler/output.hpp"

#include "fhr/compiler/human_size.hpp"

#include <algorithm>
#include <optional>

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
        widths[i] = std::max(widths[i], columns(row[i]));
    for (const auto &row : rows_) {
      std::string line = " ";
      for (std::size_t i = 0; i < row.size(); ++i) {
        line += " " + row[i];
        if (i + 1 < row.size()) line += std::string(widths[i] - columns(row[i]) + 1, ' ');
      }
      while (!line.empty() && line.back() == ' ')
        line.pop_back();
      os << line << '\n';
    }
  }

private:
  /// Code points, so that names and the '×' of family rows align.
  static std::size_t columns(const std::string &cell) {
    return static_cast<std::size_t>(std::count_if(
        cell.begin(), cell.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
  }
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
  const std::optional<std::int64_t> bytes = p.headroom_at_peak();
  if (!bytes) return "-";
  if (*bytes < 0) return "over by " + human_size(static_cast<std::uint64_t>(-*bytes));
  return human_size(static_cast<std::uint64_t>(*bytes));
}

/// Whether `next` repeats `first` (the same instruction for the following
/// value of its family) with the same places, bytes and result.
bool same_family_step(const ReportStep &first, const ReportStep &next) {
  return next.instruction == first.instruction && next.context == first.context &&
         next.source == first.source && next.destination == first.destination &&
         next.storage_bytes == first.storage_bytes && next.verdict == first.verdict &&
         next.error == first.error && next.raised == first.raised && next.reason == first.reason;
}

/// The text of `count` family steps whose first is the `offset`-th value of
/// its instruction: `ensure rk[3] at cuda:0` becomes `ensure rk[3..11] at
/// cuda:0`. Nothing when the step does not name that value as expected.
std::optional<std::string> family_text(const bytecode::Module &module, const ReportStep &first,
                                       std::uint32_t offset, std::uint32_t count) {
  if (first.instruction >= module.code.size()) return std::nullopt;
  const bytecode::Instruction &in = module.code[first.instruction];
  const ValueId value = in.value + offset;
  if (in.count < offset + count || value >= module.value_count) return std::nullopt;
  const bytecode::Declaration &d = module.declaration_of(value);
  if (d.family_size == 0) return std::nullopt;
  const std::string &name = module.strings[d.name];
  const std::uint32_t index = value - d.first_value;
  const std::string single = " " + name + "[" + std::to_string(index) + "]";
  const std::size_t at = first.text.find(single);
  if (at == std::string::npos) return std::nullopt;
  const std::string range = count == d.family_size ? name + "[*]"
                                                   : name + "[" + std::to_string(index) + ".." +
                                                         std::to_string(index + count) + "]";
  return first.text.substr(0, at + 1) + range + first.text.substr(at + single.size());
}

std::string unit_title(const ReportUnit &unit) {
  if (unit.kind == ReportUnit::Kind::Setup) return "setup";
  return std::string(unit.kind == ReportUnit::Kind::Plan ? "plan" : "program") + " \"" + unit.name + "\"";
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
    // `offset`: the position of step i among the consecutive steps of its
    // instruction, i.e. which value of the family it acts on.
    std::uint32_t offset = 0;
    for (std::size_t i = 0; i < unit.steps.size();) {
      const ReportStep &s = unit.steps[i];
      if (i > 0 && (unit.steps[i - 1].instruction != s.instruction || unit.steps[i - 1].context != s.context))
        offset = 0;
      std::uint32_t run = 1;
      while (i + run < unit.steps.size() && same_family_step(s, unit.steps[i + run]))
        ++run;
      const std::optional<std::string> text =
          run > 1 ? family_text(*module.module, s, offset, run) : std::nullopt;
      if (!text) run = 1;
      if (run == 1)
        steps.add({std::to_string(i + 1), s.context, s.text, location_or_dash(s.source),
                   location_or_dash(s.destination), human_size(s.storage_bytes), result_text(s)});
      else
        steps.add({std::to_string(i + 1) + "-" + std::to_string(i + run), s.context,
                   *text + " ×" + std::to_string(run), location_or_dash(s.source),
                   location_or_dash(s.destination), human_size(s.storage_bytes) + " each", result_text(s)});
      i += run;
      offset += run;
    }
    if (unit.steps.empty())
      os << "  (no steps)\n";
    else
      steps.print(os);
    if (!unit.locations.empty()) {
      Table locations({"location", "budget", "used before", "peak charged", "peak used", "headroom at peak"});
      for (const LocationPrediction &p : unit.locations)
        locations.add({p.location.name(), p.budget_bytes ? human_size(*p.budget_bytes) : "-",
                       human_size(p.used_before + p.reserved_before), human_size(p.peak_charged),
                       human_size(p.peak_used), headroom(p)});
      os << '\n';
      locations.print(os);
    }
    if (unit.failure) {
      os << '\n';
      module.spans.print_message(os, unit.steps[*unit.failure].instruction, llvm::SourceMgr::DK_Error,
                                 failure_summary(unit), false);
      for (const FailureNote &note : failure_notes(unit))
        module.spans.print_message(os, note.statement->instruction, llvm::SourceMgr::DK_Note, note.message,
                                   false);
    }
  });
}

void print_explain_summary(llvm::raw_ostream &os, const VerifiedModule &module, const Analysis &analysis) {
  const bool feasible = analysis.feasible();
  os << "file " << module.spans.file << ": " << (feasible ? "all feasible" : "INFEASIBLE") << '\n';
  Table table({"unit", "line", "verdict", "peak / budget (headroom) per location"});
  for_each_unit(module, analysis, ReportDetail::FailuresOnly, [&](const ReportUnit &unit) {
    std::string peaks;
    for (const LocationPrediction &p : unit.locations) {
      if (!p.budget_bytes && p.peak_charged == 0) continue;
      peaks += (peaks.empty() ? "" : "; ") + p.location.name() + " " + human_size(p.peak_charged);
      if (p.budget_bytes) peaks += " / " + human_size(*p.budget_bytes) + " (" + headroom(p) + ")";
    }
    std::string verdict = unit.feasible ? "feasible" : "INFEASIBLE";
    if (unit.failure) {
      const ReportStep &step = unit.steps[*unit.failure];
      verdict += " at '" + step.text + "' [" + std::string(error_class_id(step.error)) + "]";
    }
    table.add({unit_title(unit), std::to_string(unit.span.line), verdict, peaks.empty() ? "-" : peaks});
  });
  table.print(os);
}

} // namespace fhr
