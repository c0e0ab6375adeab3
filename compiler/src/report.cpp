#include "fhr/compiler/report.hpp"

namespace fhr {

std::string format_size(std::uint64_t bytes) {
  if (bytes == 0) return "0 B";
  static const struct {
    std::uint64_t factor;
    const char *unit;
  } units[] = {
      {1ull << 40, "TiB"},          {1ull << 30, "GiB"},      {1ull << 20, "MiB"},  {1ull << 10, "KiB"},
      {1'000'000'000'000ull, "TB"}, {1'000'000'000ull, "GB"}, {1'000'000ull, "MB"}, {1'000ull, "KB"}};
  for (const auto &u : units)
    if (bytes % u.factor == 0) return std::to_string(bytes / u.factor) + " " + u.unit;
  return std::to_string(bytes) + " B";
}

std::string string_literal(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    // Braces are escaped too: unescaped they would interpolate.
    if (c == '"' || c == '\\' || c == '{' || c == '}') out += '\\';
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out + "\"";
}

namespace {

class Builder {
public:
  Builder(const ir::Module &module, ReportDetail detail) : module_(module), detail_(detail) {}

  /// Whether step `index` of a unit whose first failure is `failure` is shown.
  bool shows(std::size_t index, std::size_t count, bool feasible) const {
    return detail_ == ReportDetail::AllSteps || (!feasible && index + 1 == count);
  }

  std::string value_name(ValueId id) const {
    return id < module_.values.size() ? module_.values[id].name : "#" + std::to_string(id);
  }

  std::string action_text(const Action &a) const {
    const std::string value = value_name(a.value);
    switch (a.kind) {
    case ActionKind::Ensure: return "ensure " + value + " at " + a.location.name();
    case ActionKind::Copy: return "copy " + value + " to " + a.location.name();
    case ActionKind::Move:
      return "move " + value + " to " + a.location.name() + (a.from ? " from " + a.from->name() : "");
    case ActionKind::Drop: return "drop " + value + " at " + a.location.name();
    case ActionKind::Discard: return "discard " + value;
    }
    return {};
  }

  std::string reservation_text(const Reservation &r) const {
    return "reserve " + r.location.name() + " " + format_size(r.nbytes) + " " + string_literal(r.label);
  }

  /// Lists values as written: runs of one family become `rk[0..8]` or `rk[*]`.
  std::string values_text(const std::vector<ValueId> &values) const {
    std::string out;
    for (std::size_t i = 0; i < values.size();) {
      std::size_t run = 1;
      const ValueId first = values[i];
      const bool in_family = first < module_.values.size() && module_.values[first].family != ir::kNoFamily;
      if (in_family)
        while (i + run < values.size() && values[i + run] == first + run &&
               module_.values[values[i + run]].family == module_.values[first].family)
          ++run;
      if (!out.empty()) out += ", ";
      if (run == 1) {
        out += value_name(first);
      } else {
        const ir::Family &family = module_.families[module_.values[first].family];
        const std::uint32_t begin = module_.values[first].family_index;
        out += family.name + (run == family.count
                                  ? std::string("[*]")
                                  : "[" + std::to_string(begin) + ".." + std::to_string(begin + run) + "]");
      }
      i += run;
    }
    return out;
  }

  ReportStep step_for(std::string context, std::string text, ast::Span span, const Outcome &outcome,
                      const ValueSpec *spec, const MessageContext &message,
                      const FailureDetail *detail) const {
    ReportStep step;
    step.context = std::move(context);
    step.text = std::move(text);
    step.span = span;
    step.source = outcome.source;
    step.destination = outcome.destination;
    // Handle failures carry no spec figures (§10.3).
    if (spec && outcome.error != ErrorClass::Handle) {
      step.logical_bytes = spec->logical_nbytes;
      step.storage_bytes = spec->storage_nbytes;
    }
    step.verdict = outcome.verdict;
    step.reason = describe(outcome, message, outcome.failed() ? detail : nullptr);
    step.error = outcome.error;
    step.raised = outcome.error;
    return step;
  }

  ReportStep action_step(std::string context, const Action &action, ast::Span span, const Outcome &outcome,
                         const FailureDetail *detail) const {
    const std::string name = value_name(action.value);
    return step_for(std::move(context), action_text(action), span, outcome,
                    action.value < module_.values.size() ? &module_.values[action.value].spec : nullptr,
                    MessageContext{name, {}}, detail);
  }

  ReportStep reservation_step(std::string context, const Reservation &r, ast::Span span,
                              const Outcome &outcome, const FailureDetail *detail) const {
    ReportStep step = step_for(std::move(context), reservation_text(r), span, outcome, nullptr,
                               MessageContext{{}, r.label}, detail);
    step.storage_bytes = step.logical_bytes = r.nbytes;
    return step;
  }

  ReportUnit plan(const PlanExplanation &report) const {
    const ir::Plan &plan = *report.plan;
    ReportUnit unit;
    unit.kind = ReportUnit::Kind::Plan;
    unit.name = plan.name;
    unit.span = plan.span;
    unit.feasible = report.explanation.feasible;
    unit.locations = report.explanation.locations;
    const FailureDetail *detail = &report.explanation.failure_detail;
    const auto &simulated = report.explanation.steps;
    for (std::size_t n = 0; n < simulated.size(); ++n) {
      if (!shows(n, simulated.size(), unit.feasible)) continue;
      const SimulatedStep &s = simulated[n];
      const std::string context(phase_name(s.phase));
      if (s.phase == Phase::Reserve) {
        unit.steps.push_back(reservation_step(context, plan.reservations[s.index],
                                              plan.reservation_spans[s.index], s.outcome, detail));
        continue;
      }
      const ir::ActionList &list = s.phase == Phase::Reclaim ? plan.reclaim
                                   : s.phase == Phase::Enter ? plan.enter
                                                             : plan.exit;
      unit.steps.push_back(
          action_step(context, list.actions[s.index], list.spans[s.index], s.outcome, detail));
    }
    if (!unit.feasible) unit.failure = unit.steps.size() - 1;
    return unit;
  }

  ReportUnit program(const ProgramReport &report) const {
    ReportUnit unit;
    unit.kind = ReportUnit::Kind::Program;
    unit.name = report.program->name;
    unit.span = report.program->span;
    unit.feasible = report.feasible;
    unit.locations = report.locations;
    const FailureDetail *detail = &report.detail;
    for (std::size_t n = 0; n < report.rows.size(); ++n) {
      if (!shows(n, report.rows.size(), unit.feasible)) continue;
      const ProgramRow &row = report.rows[n];
      const ir::ProgramItem &item = *row.item;
      ReportStep step;
      if (row.part == ProgramPart::Acquire || row.part == ProgramPart::Hold) {
        const std::string keyword = row.part == ProgramPart::Acquire ? "acquire" : "hold";
        const std::string name = value_name(row.failed_value);
        step = step_for(keyword, keyword + " " + values_text(item.values) + " at " + item.location.name(),
                        item.span, row.outcome, nullptr, MessageContext{name, {}}, detail);
      } else if (row.part == ProgramPart::BodyReserve) {
        step = reservation_step("reserve", item.reservation, item.span, row.outcome, detail);
      } else if (row.part == ProgramPart::Direct) {
        step = action_step("direct", item.actions.actions[0], item.actions.spans[0], row.outcome, detail);
      } else if (row.part == ProgramPart::Execute ||
                 (row.part == ProgramPart::Preflight && item.kind == ir::ProgramItemKind::Actions)) {
        const std::string context =
            item.name + (row.part == ProgramPart::Preflight ? "/preflight" : "/execute");
        step = action_step(context, item.actions.actions[row.index], item.actions.spans[row.index],
                           row.outcome, detail);
      } else {
        const ir::Plan &plan = module_.plans[item.plan];
        std::string context = plan.name + "/" + std::string(phase_name(row.phase));
        if (row.part == ProgramPart::Preflight)
          context = plan.name + "/preflight:" + std::string(phase_name(row.phase));
        if (row.phase == Phase::Reserve) {
          step = reservation_step(context, plan.reservations[row.index], plan.reservation_spans[row.index],
                                  row.outcome, detail);
        } else {
          const ir::ActionList &list = row.phase == Phase::Reclaim ? plan.reclaim
                                       : row.phase == Phase::Enter ? plan.enter
                                                                   : plan.exit;
          step = action_step(context, list.actions[row.index], list.spans[row.index], row.outcome, detail);
        }
      }
      step.raised = row.raised;
      unit.steps.push_back(std::move(step));
    }
    if (!unit.feasible) unit.failure = unit.steps.size() - 1;
    return unit;
  }

  ReportUnit setup(const SetupReport &report) const {
    ReportUnit unit;
    unit.kind = ReportUnit::Kind::Setup;
    unit.name = "setup";
    unit.feasible = false;
    const ir::SetupStep &s = module_.setup[*report.failed_step];
    unit.span = s.span;
    const FailureDetail *detail = &report.detail;
    switch (s.kind) {
    case ir::SetupKind::Adopt:
    case ir::SetupKind::RegisterSource: {
      const ir::Value &v = module_.values[s.value];
      const std::string text = "value " + v.name + " " + format_size(v.spec.logical_nbytes) +
                               (v.adopted() ? " at " : " source ") + v.location.name();
      unit.steps.push_back(
          step_for("setup", text, s.span, report.failure, &v.spec, MessageContext{v.name, {}}, detail));
      break;
    }
    case ir::SetupKind::Action:
      unit.steps.push_back(action_step("setup", s.action, s.span, report.failure, detail));
      break;
    case ir::SetupKind::Hold:
    case ir::SetupKind::Lease: {
      const std::string keyword = s.kind == ir::SetupKind::Hold ? "hold" : "lease";
      const std::string name = value_name(report.failed_value);
      unit.steps.push_back(step_for("setup",
                                    keyword + " " + values_text(s.values) + " at " + s.location.name() +
                                        (s.pending ? " pending" : ""),
                                    s.span, report.failure, nullptr, MessageContext{name, {}}, detail));
      break;
    }
    case ir::SetupKind::Reserve:
      unit.steps.push_back(reservation_step("setup", Reservation{s.location, s.nbytes, s.label}, s.span,
                                            report.failure, detail));
      break;
    case ir::SetupKind::Release:
      unit.steps.push_back(step_for("setup", "release " + s.alias, s.span, report.failure, nullptr,
                                    MessageContext{{}, s.alias}, detail));
      break;
    }
    unit.failure = 0;
    return unit;
  }

private:
  const ir::Module &module_;
  ReportDetail detail_;
};

} // namespace

void for_each_unit(const ir::Module &module, const Analysis &analysis, ReportDetail detail,
                   const std::function<void(const ReportUnit &)> &sink) {
  Builder builder(module, detail);
  if (analysis.setup.failed_step) sink(builder.setup(analysis.setup));
  for (const PlanExplanation &plan : analysis.plans)
    sink(builder.plan(plan));
  for (const ProgramReport &program : analysis.programs)
    sink(builder.program(program));
}

FileReport build_report(const SourceFile &source, const ir::Module &module, const Analysis &analysis,
                        ReportDetail detail) {
  FileReport report;
  report.file = source.name().str();
  report.source = &source;
  report.setup_steps = analysis.setup.steps;
  report.feasible = analysis.feasible();
  for_each_unit(module, analysis, detail, [&](const ReportUnit &unit) { report.units.push_back(unit); });
  return report;
}

std::string failure_summary(const ReportUnit &unit) {
  if (!unit.failure) return {};
  const ReportStep &step = unit.steps[*unit.failure];
  std::string what = unit.kind == ReportUnit::Kind::Setup
                         ? "setup step '" + step.text + "' failed"
                         : std::string(unit.kind == ReportUnit::Kind::Plan ? "plan" : "program") + " \"" +
                               unit.name + "\" is infeasible at '" + step.text + "'";
  std::string classes(error_class_id(step.error));
  if (step.raised != step.error && step.raised != ErrorClass::None)
    classes = std::string(error_class_id(step.raised)) + ", caused by " + classes;
  return what + ": " + step.reason + " [" + classes + "]";
}

} // namespace fhr
