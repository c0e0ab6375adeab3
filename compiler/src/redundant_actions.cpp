#include "fhr/compiler/redundant_actions.hpp"

#include "fhr/executor/plan_table.hpp"

#include <cstdint>
#include <vector>

namespace fhr {

namespace {

using bytecode::Opcode;

/// The no-op reason that makes a step of `opcode` redundant, or None for
/// instructions W0006 does not judge (a move's no-op is its own business:
/// it may still remove the source).
Reason redundant_reason(Opcode opcode) {
  switch (opcode) {
  case Opcode::Ensure:
  case Opcode::Copy: return Reason::DestinationAlreadyResident;
  case Opcode::Drop: return Reason::MaterializationAlreadyAbsent;
  default: return Reason::None;
  }
}

/// Per instruction: how many of its value steps ran, and how many of those
/// did nothing.
class Tally {
public:
  explicit Tally(const bytecode::Module &module)
      : module_(module), ran_(module.code.size()), idle_(module.code.size()) {}

  void count(std::uint32_t instruction, const Outcome &outcome) {
    if (instruction >= module_.code.size()) return;
    const Reason wanted = redundant_reason(module_.code[instruction].opcode);
    if (wanted == Reason::None) return;
    ++ran_[instruction];
    if (outcome.verdict == Verdict::NoOp && outcome.reason == wanted) ++idle_[instruction];
  }

  void count(const RunResult &run) {
    for (const StepRecord &row : run.steps)
      if (row.kind != StepKind::Preflight) count(row.instruction, row.outcome); // a refusal ran nothing
  }

  bool redundant(std::uint32_t instruction) const {
    return ran_[instruction] > 0 && idle_[instruction] == ran_[instruction];
  }

private:
  const bytecode::Module &module_;
  std::vector<std::uint32_t> ran_, idle_;
};

} // namespace

void report_redundant_actions(SourceFile &source, const VerifiedModule &verified, const Analysis &analysis) {
  const bytecode::Module &module = *verified.module;
  const std::vector<ast::Span> &statements = verified.spans.statements;
  if (statements.size() != module.code.size()) return; // a module file: no text to point at
  Tally tally(module);
  tally.count(analysis.setup.run);
  // A plan that a program runs really sees the program's state: its
  // explanation against setup alone does not count.
  std::vector<bool> run_by_program(module.plans.size(), false);
  for (const bytecode::ProgramEntry &program : module.programs)
    for (std::uint32_t i = program.body.begin; i < program.body.end; ++i) {
      const bytecode::Instruction &in = module.code[i];
      if (in.opcode == Opcode::Scope || in.opcode == Opcode::Run) run_by_program[in.index()] = true;
    }
  PlanSteps plan;
  for (const PlanExplanation &explained : analysis.plans) {
    if (run_by_program[explained.plan]) continue;
    expand_plan(module, explained.plan, plan);
    for (const SimulatedStep &step : explained.explanation.steps)
      if (step.phase != Phase::Reserve)
        tally.count(plan.instruction_of(step_kind(step.phase), step.index), step.outcome);
  }
  for (const ProgramReport &program : analysis.programs)
    tally.count(program.run);
  for (std::uint32_t i = 0; i < module.code.size(); ++i) {
    if (!tally.redundant(i)) continue;
    Diagnostic diagnostic;
    diagnostic.code = DiagCode::RedundantAction;
    diagnostic.severity = Severity::Warning;
    diagnostic.span = statements[i];
    // The same words for every iteration of a loop: they count as one.
    if (module.code[i].opcode == Opcode::Drop) {
      diagnostic.message = "this drop does nothing: wherever it runs, there is no replica to drop";
      diagnostic.hint = "remove it, or drop at the location the replica is at";
    } else {
      diagnostic.message =
          "this " + std::string(module.code[i].opcode == Opcode::Copy ? "copy" : "ensure") +
          " does nothing: wherever it runs, its values are already resident at the destination";
      diagnostic.hint = "remove it, or turn the warning off with -Wno-redundant-action if it is meant";
    }
    source.report(std::move(diagnostic));
  }
}

} // namespace fhr
