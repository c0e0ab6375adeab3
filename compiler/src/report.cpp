#include "fhr/compiler/report.hpp"

#include "fhr/compiler/human_size.hpp"

#include <algorithm>
#include <span>

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

using bytecode::Instruction;
using bytecode::Opcode;

/// Where the discard at step `n` removed replicas, if step `n` is one
/// (`discarded` is in step order).
std::optional<LocationSet> removed_by(std::span<const DiscardedReplicas> discarded, std::size_t n) {
  const auto found =
      std::lower_bound(discarded.begin(), discarded.end(), n,
                       [](const DiscardedReplicas &d, std::size_t step) { return d.step < step; });
  if (found == discarded.end() || found->step != n) return std::nullopt;
  return found->at;
}

class Builder {
public:
  Builder(const VerifiedModule &module, ReportDetail detail)
      : module_(*module.module), spans_(module.spans), detail_(detail) {}

  /// Whether step `index` of a unit of `count` steps is shown.
  bool shows(std::size_t index, std::size_t count, bool feasible) const {
    return detail_ == ReportDetail::AllSteps || (!feasible && index + 1 == count);
  }

  std::string value_name(ValueId id) const {
    if (id >= module_.value_count) return "#" + std::to_string(id);
    const bytecode::Declaration &d = module_.declaration_of(id);
    const std::string &name = module_.strings[d.name];
    return d.family_size == 0 ? name : name + "[" + std::to_string(id - d.first_value) + "]";
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

  static Reservation reservation_of(const bytecode::Module &module, const Instruction &in) {
    return Reservation{in.location, in.size, module.strings[in.index()]};
  }

  std::string reservation_text(const Reservation &r) const {
    return "reserve " + r.location.name() + " " + format_size(r.nbytes) + " " + string_literal(r.label);
  }

  /// A value range as written: `rk[0..8]`, `rk[*]`, `rk[3]` or `weight`.
  std::string range_text(ValueId first, std::uint32_t count) const {
    const bytecode::Declaration &d = module_.declaration_of(first);
    const std::string &name = module_.strings[d.name];
    if (d.family_size == 0) return name;
    const std::uint32_t index = first - d.first_value;
    if (count == d.family_size) return name + "[*]";
    if (count == 1) return name + "[" + std::to_string(index) + "]";
    return name + "[" + std::to_string(index) + ".." + std::to_string(index + count) + "]";
  }

  /// The value list of a hold, lease or acquire at `header`.
  std::string items_text(std::uint32_t header) const {
    std::string out;
    for (std::uint32_t k = header + 1; k <= header + module_.code[header].index(); ++k)
      out += (out.empty() ? "" : ", ") + range_text(module_.code[k].value, module_.code[k].count);
    return out;
  }
  /// A hold, lease or acquire header as .fhr text: `hold w[0..4] at cuda:0`.
  std::string lifetime_text(std::uint32_t header) const {
    const Instruction &in = module_.code[header];
    const std::string keyword = in.opcode == Opcode::Hold    ? "hold"
                                : in.opcode == Opcode::Lease ? "lease"
                                                             : "acquire";
    return keyword + " " + items_text(header) + " at " + in.location.name() +
           (in.opcode == Opcode::Lease && in.flag ? " pending" : "");
  }

  /// The holds and leases whose headers are `instructions`, as notes point at them.
  std::vector<ProtectorRef> protectors(const std::vector<std::uint32_t> &instructions) const {
    std::vector<ProtectorRef> refs;
    for (std::uint32_t instruction : instructions) {
      ProtectorRef ref;
      ref.text = lifetime_text(instruction);
      ref.pending = module_.code[instruction].opcode == Opcode::Lease && module_.code[instruction].flag;
      ref.instruction = instruction;
      if (instruction < spans_.instructions.size()) ref.span = spans_.instructions[instruction];
      refs.push_back(std::move(ref));
    }
    return refs;
  }

  ReportStep step_for(std::string context, std::string text, std::uint32_t instruction,
                      const Outcome &outcome, const ValueSpec *spec, const MessageContext &message,
                      const FailureDetail *detail) const {
    ReportStep step;
    step.context = std::move(context);
    step.text = std::move(text);
    step.instruction = instruction;
    if (instruction < spans_.instructions.size()) step.span = spans_.instructions[instruction];
    step.source = outcome.source;
    step.destination = outcome.destination;
    // Handle failures carry no spec figures (§10.3).
    if (spec && outcome.error != ErrorClass::Handle) {
      step.logical_bytes = spec->logical_nbytes;
      step.storage_bytes = spec->storage_nbytes;
    }
    step.verdict = outcome.verdict;
    const FailureDetail *figures = outcome.failed() ? detail : nullptr;
    step.reason = describe(outcome, message, figures, human_size);
    step.exact_reason = describe(outcome, message, figures);
    step.error = outcome.error;
    step.raised = outcome.error;
    return step;
  }

  ReportStep action_step(std::string context, const Action &action, std::uint32_t instruction,
                         const Outcome &outcome, const FailureDetail *detail) const {
    const std::string name = value_name(action.value);
    const ValueSpec *spec =
        action.value < module_.value_count ? &module_.declaration_of(action.value).spec : nullptr;
    ReportStep step = step_for(std::move(context), action_text(action), instruction, outcome, spec,
                               MessageContext{name, {}}, detail);
    step.value = name;
    return step;
  }

  ReportStep reservation_step(std::string context, std::uint32_t instruction, const Outcome &outcome,
                              const FailureDetail *detail) const {
    const Reservation r = reservation_of(module_, module_.code[instruction]);
    ReportStep step = step_for(std::move(context), reservation_text(r), instruction, outcome, nullptr,
                               MessageContext{{}, r.label}, detail);
    step.storage_bytes = step.logical_bytes = r.nbytes;
    step.admitted_reservation = !outcome.failed();
    return step;
  }

  /// A step of a scope's plan, a plan unit's simulated step or a preflight.
  ReportStep plan_step(std::string context, StepKind phase, std::uint32_t instruction, ValueId value,
                       const Outcome &outcome, const FailureDetail *detail) const {
    if (phase == StepKind::Reserve) return reservation_step(std::move(context), instruction, outcome, detail);
    return action_step(std::move(context), bytecode_action(instruction, value), instruction, outcome, detail);
  }

  Action bytecode_action(std::uint32_t instruction, ValueId value) const {
    return action_of(module_.code[instruction], value);
  }

  ReportUnit plan(const PlanExplanation &report) {
    expand_plan(module_, report.plan, plan_);
    const PlanSteps &plan = plan_;
    ReportUnit unit;
    unit.kind = ReportUnit::Kind::Plan;
    unit.name = report.name;
    unit.span = spans_.plans[report.plan];
    unit.feasible = report.explanation.feasible;
    unit.locations = report.explanation.locations;
    const FailureDetail *detail = &report.explanation.failure_detail;
    const auto &simulated = report.explanation.steps;
    for (std::size_t n = 0; n < simulated.size(); ++n) {
      if (!shows(n, simulated.size(), unit.feasible)) continue;
      const SimulatedStep &s = simulated[n];
      const StepKind phase = step_kind(s.phase);
      const ValueId value = phase == StepKind::Reserve ? 0 : plan.phase(phase).actions[s.index].value;
      unit.steps.push_back(plan_step(std::string(step_kind_name(phase)), phase,
                                     plan.instruction_of(phase, s.index), value, s.outcome, detail));
      unit.steps.back().transfer = s.transfer;
      unit.steps.back().index = s.index;
      unit.steps.back().removed_from = removed_by(report.explanation.discarded, n);
    }
    if (!unit.feasible) {
      unit.failure = unit.steps.size() - 1;
      unit.protected_by = protectors(report.protected_by);
    }
    return unit;
  }

  /// The name of the action list whose `actions` instruction is `header`.
  const std::string &list_name(std::uint32_t header) const {
    return module_.strings[module_.code[header].index()];
  }

  ReportStep program_step(const StepRecord &row, const FailureDetail *detail) const {
    switch (row.kind) {
    case StepKind::Acquire:
    case StepKind::Hold: {
      const std::string name = value_name(row.value);
      return step_for(std::string(step_kind_name(row.kind)), lifetime_text(row.instruction), row.instruction,
                      row.outcome, nullptr, MessageContext{name, {}}, detail);
    }
    case StepKind::BodyReserve: return reservation_step("reserve", row.instruction, row.outcome, detail);
    case StepKind::Direct:
      return action_step("direct", bytecode_action(row.instruction, row.value), row.instruction, row.outcome,
                         detail);
    case StepKind::Execute:
      return action_step(list_name(row.container) + "/execute", bytecode_action(row.instruction, row.value),
                         row.instruction, row.outcome, detail);
    case StepKind::Preflight:
      if (is_list_step(row))
        return action_step(list_name(row.container) + "/preflight",
                           bytecode_action(row.instruction, row.value), row.instruction, row.outcome, detail);
      return plan_step(plan_name(row.container) + "/preflight:" + std::string(step_kind_name(row.phase)),
                       row.phase, row.instruction, row.value, row.outcome, detail);
    default: // a scope's reclaim, reserve, enter or exit
      return plan_step(plan_name(row.container) + "/" + std::string(step_kind_name(row.kind)), row.kind,
                       row.instruction, row.value, row.outcome, detail);
    }
  }

  const std::string &plan_name(std::uint32_t plan) const { return module_.strings[module_.plans[plan].name]; }

  /// Whether a preflight refused an action list (whose actions lie in a
  /// program) rather than a scope (whose steps lie in its plan).
  bool is_list_step(const StepRecord &row) const {
    return !module_.programs.empty() && row.instruction >= module_.programs.front().body.begin;
  }

  ReportUnit program(const ProgramReport &report) const {
    ReportUnit unit;
    unit.kind = ReportUnit::Kind::Program;
    unit.name = report.name;
    unit.span = spans_.programs[report.program];
    unit.feasible = report.feasible;
    unit.locations = report.locations;
    const FailureDetail *detail = &report.run.failure_detail;
    const std::vector<StepRecord> &rows = report.run.steps;
    for (std::size_t n = 0; n < rows.size(); ++n) {
      if (!shows(n, rows.size(), unit.feasible)) continue;
      ReportStep step = program_step(rows[n], detail);
      step.raised = rows[n].failed() ? rows[n].raised : ErrorClass::None;
      step.transfer = rows[n].transfer;
      step.index = rows[n].index;
      step.removed_from = removed_by(report.run.discarded, n);
      // 0: held past the record's last row; so is a release after it.
      if (const std::size_t released = rows[n].released_before_row; released != 0 && released < rows.size())
        step.released_before = released;
      unit.steps.push_back(std::move(step));
    }
    if (!unit.feasible) {
      unit.failure = unit.steps.size() - 1;
      unit.reached_by = entered_by(rows);
      unit.protected_by = protectors(report.run.protected_by);
    }
    return unit;
  }

  /// The step that entered the scope of a program's failing last row, if
  /// the failure lies in a scope (its rows name the `scope` or `run`).
  std::optional<ProgramStepRef> entered_by(const std::vector<StepRecord> &rows) const {
    if (rows.empty() || rows.back().entered_by == StepRecord::kNotInProgram) return std::nullopt;
    const std::uint32_t instruction = rows.back().entered_by;
    ProgramStepRef ref;
    // Loops are unrolled, so an instruction enters its scope once per run:
    // the scope begins at the first row that names it.
    for (std::size_t n = 0; n < rows.size(); ++n)
      if (rows[n].entered_by == instruction) {
        ref.step = n + 1;
        break;
      }
    const Instruction &in = module_.code[instruction];
    ref.text =
        std::string(in.opcode == Opcode::Scope ? "scope " : "run ") + string_literal(plan_name(in.index()));
    ref.instruction = instruction;
    if (instruction < spans_.instructions.size()) ref.span = spans_.instructions[instruction];
    return ref;
  }

  ReportUnit setup(const SetupReport &report) const {
    ReportUnit unit;
    unit.kind = ReportUnit::Kind::Setup;
    unit.name = "setup";
    unit.feasible = false;
    const StepRecord &failed = *report.run.failure();
    const Instruction &in = module_.code[failed.instruction];
    unit.span = spans_.instructions[failed.instruction];
    const FailureDetail *detail = &report.detail;
    switch (in.opcode) {
    case Opcode::Declare: {
      const bytecode::Declaration &d = module_.declarations[in.index()];
      const std::string name = value_name(failed.value);
      const bool adopted = d.spec.recoverability == Recoverability::MustPreserve;
      const std::string text = "value " + name + " " + format_size(d.spec.logical_nbytes) +
                               (adopted ? " at " : " source ") + d.location.name();
      unit.steps.push_back(step_for("setup", text, failed.instruction, failed.outcome, &d.spec,
                                    MessageContext{name, {}}, detail));
      break;
    }
    case Opcode::Hold:
    case Opcode::Lease: {
      const std::string name = value_name(failed.value);
      unit.steps.push_back(step_for("setup", lifetime_text(failed.instruction), failed.instruction,
                                    failed.outcome, nullptr, MessageContext{name, {}}, detail));
      break;
    }
    case Opcode::Reserve:
      unit.steps.push_back(reservation_step("setup", failed.instruction, failed.outcome, detail));
      break;
    case Opcode::Release: {
      const std::string alias = module_.strings[module_.code[in.index()].alias() - 1];
      unit.steps.push_back(step_for("setup", "release " + alias, failed.instruction, failed.outcome, nullptr,
                                    MessageContext{{}, alias}, detail));
      break;
    }
    default:
      unit.steps.push_back(action_step("setup", bytecode_action(failed.instruction, failed.value),
                                       failed.instruction, failed.outcome, detail));
      break;
    }
    unit.protected_by = protectors(report.run.protected_by);
    unit.failure = 0;
    return unit;
  }

private:
  const bytecode::Module &module_;
  const SpanTable &spans_;
  ReportDetail detail_;
  PlanSteps plan_; ///< the plan of the unit being built
};

} // namespace

void for_each_unit(const VerifiedModule &module, const Analysis &analysis, ReportDetail detail,
                   const std::function<void(const ReportUnit &)> &sink) {
  Builder builder(module, detail);
  auto emit = [&](ReportUnit unit) {
    if (unit.failure) unit.failure_excerpt = module.spans.excerpt(unit.steps[*unit.failure].instruction);
    if (unit.reached_by) unit.reached_by->excerpt = module.spans.excerpt(unit.reached_by->instruction);
    for (ProtectorRef &protector : unit.protected_by)
      protector.excerpt = module.spans.excerpt(protector.instruction);
    sink(unit);
  };
  if (analysis.setup.failed_step) emit(builder.setup(analysis.setup));
  for (const PlanExplanation &plan : analysis.plans)
    emit(builder.plan(plan));
  for (const ProgramReport &program : analysis.programs)
    emit(builder.program(program));
}

FileReport build_report(const VerifiedModule &module, const Analysis &analysis, ReportDetail detail) {
  FileReport report;
  report.file = module.spans.file;
  report.setup_steps = analysis.setup.steps;
  report.feasible = analysis.feasible();
  for_each_unit(module, analysis, detail, [&](const ReportUnit &unit) { report.units.push_back(unit); });
  return report;
}

std::string failure_summary(const ReportUnit &unit, bool exact_bytes) {
  if (!unit.failure) return {};
  const ReportStep &step = unit.steps[*unit.failure];
  std::string what = unit.kind == ReportUnit::Kind::Setup
                         ? "setup step '" + step.text + "' failed"
                         : std::string(unit.kind == ReportUnit::Kind::Plan ? "plan" : "program") + " \"" +
                               unit.name + "\" is infeasible at '" + step.text + "'";
  std::string classes(error_class_id(step.error));
  if (step.raised != step.error && step.raised != ErrorClass::None)
    classes = std::string(error_class_id(step.raised)) + ", caused by " + classes;
  return what + ": " + (exact_bytes ? step.exact_reason : step.reason) + " [" + classes + "]";
}

std::string reached_by_note(const ReportUnit &unit) {
  if (!unit.reached_by) return {};
  return "reached at step " + std::to_string(unit.reached_by->step) + " of program \"" + unit.name + "\": '" +
         unit.reached_by->text + "'";
}

std::string protected_by_note(const ProtectorRef &protector) {
  return "protected by '" + protector.text + "', opened here" +
         (protector.pending ? ": released, but its CUDA events have not completed" : " and not released");
}

std::vector<FailureNote> failure_notes(const ReportUnit &unit) {
  std::vector<FailureNote> notes;
  if (unit.reached_by) notes.push_back(FailureNote{&*unit.reached_by, reached_by_note(unit)});
  for (const ProtectorRef &protector : unit.protected_by)
    notes.push_back(FailureNote{&protector, protected_by_note(protector)});
  return notes;
}

} // namespace fhr
