#include "fhr/executor/interpreter.hpp"

#include "fhr/model/scope_sequence.hpp"

#include <algorithm>
#include <stdexcept>

namespace fhr {

using bytecode::Instruction;
using bytecode::InstructionRange;
using bytecode::Opcode;

namespace {

/// The End that closes the Scope or Actions at `open`.
std::uint32_t matching_end(const std::vector<Instruction> &code, std::uint32_t open) {
  int depth = 0;
  for (std::uint32_t pc = open; pc < code.size(); ++pc) {
    const Opcode op = code[pc].opcode;
    if (op == Opcode::Scope || op == Opcode::Actions) ++depth;
    if (op == Opcode::End && --depth == 0) return pc;
  }
  return static_cast<std::uint32_t>(code.size()); // the verifier guarantees a match
}

StepRecord step_at(StepKind kind, std::uint32_t instruction, ValueId value = 0) {
  StepRecord step;
  step.kind = kind;
  step.instruction = instruction;
  step.value = value;
  return step;
}

} // namespace

RunResult Interpreter::run_setup() {
  RunResult run;
  run.name = "setup";
  target_.record_into(&run);
  run.completed = run_body(module_.setup, /*setup=*/true);
  target_.record_into(nullptr);
  return run;
}

RunResult Interpreter::run_plan(std::uint32_t plan) {
  if (plan >= module_.plans.size()) throw std::invalid_argument("no plan " + std::to_string(plan));
  RunResult run;
  run.name = module_.strings[module_.plans[plan].name];
  target_.record_into(&run);
  run.completed = run_scope(plan, std::nullopt, std::nullopt);
  target_.record_into(nullptr);
  return run;
}

RunResult Interpreter::run_program(std::uint32_t program) {
  begin_program(program);
  try {
    return finish_program();
  } catch (...) { // a usage error of the target, not a result: the next run starts afresh
    walk_.reset();
    run_ = nullptr;
    throw;
  }
}

void Interpreter::begin_program(std::uint32_t program) {
  if (program >= module_.programs.size())
    throw std::invalid_argument("no program " + std::to_string(program));
  if (walk_) throw std::logic_error("a program is already being run");
  const bytecode::ProgramEntry &entry = module_.programs[program];
  walk_.emplace();
  walk_->run.name = module_.strings[entry.name];
  run_ = &walk_->run;
  walk_->pc = entry.body.begin;
  walk_->end = entry.body.end;
}

Interpreter::Walk &Interpreter::walk() {
  if (!walk_) throw std::logic_error("no program is being run");
  return *walk_;
}

std::optional<std::uint32_t> Interpreter::current_plan() const { return walk_ ? walk_->plan : std::nullopt; }

bool Interpreter::run_current_body() {
  Walk &w = walk();
  if (!w.ok || !w.body) return w.ok;
  target_.record_into(&w.run);
  const InstructionRange body = *w.body;
  w.body.reset();
  if (!run_body(body, /*setup=*/false)) { // as run_scope does
    target_.abandon_scope();
    note_scope_released(w.entry);
    w.plan.reset();
    w.ok = false;
  }
  target_.record_into(nullptr);
  return w.ok;
}

bool Interpreter::end_current_statement(Walk &w) {
  if (!w.plan) return true;
  if (w.body && !run_current_body()) return false;
  target_.record_into(&w.run);
  const std::uint32_t plan = *w.plan;
  w.plan.reset();
  const std::size_t first = w.run.steps.size();
  w.ok = target_.exit_scope(plans_.plan(plan));
  mark_entered_by(first, w.entered_by);
  note_scope_released(w.entry);
  return w.ok;
}

bool Interpreter::enter_next_statement() {
  Walk &w = walk();
  if (!w.ok || !end_current_statement(w)) return false;
  target_.record_into(&w.run);
  while (w.ok && w.pc < w.end) {
    const Instruction &in = module_.code[w.pc];
    if (in.opcode == Opcode::Scope || in.opcode == Opcode::Run) {
      const PlanSteps &plan = plans_.plan(in.index());
      const std::size_t first = w.run.steps.size();
      const bool entered = target_.enter_scope(plan);
      mark_entered_by(first, w.pc);
      w.entry = EntryRows{first, w.run.steps.size(), !plan.reservations.empty()};
      if (!entered) {
        note_scope_released(w.entry);
        w.ok = false;
        break;
      }
      w.plan = in.index();
      w.entered_by = w.pc;
      if (in.opcode == Opcode::Scope) {
        const std::uint32_t close = matching_end(module_.code, w.pc);
        w.body = InstructionRange{w.pc + 1, close};
        w.pc = close + 1;
      } else {
        ++w.pc;
      }
      target_.record_into(nullptr);
      return true;
    }
    w.ok = run_statement(w.pc, /*setup=*/false, w.lifetimes);
  }
  target_.record_into(nullptr);
  return false;
}

void Interpreter::abandon_program() {
  if (!walk_) return;
  if (walk_->plan) target_.abandon_scope();
  end_body_lifetimes(walk_->lifetimes);
  walk_.reset();
  run_ = nullptr;
}

RunResult Interpreter::finish_program() {
  Walk &w = walk();
  while (enter_next_statement()) {
  }
  target_.record_into(&w.run);
  // Lifetimes the program body opened end with it, whether it completed
  // or stopped at a failure.
  end_body_lifetimes(w.lifetimes);
  target_.record_into(nullptr);
  RunResult run = std::move(w.run);
  run.completed = w.ok;
  walk_.reset();
  run_ = nullptr;
  return run;
}

bool Interpreter::run_body(InstructionRange range, bool setup) {
  // Lifetimes this body opens end with it, whether the body completed or
  // stopped at a failure.
  std::vector<BodyLifetime> lifetimes;
  bool ok = true;
  for (std::uint32_t pc = range.begin; ok && pc < range.end;)
    ok = run_statement(pc, setup, lifetimes);
  end_body_lifetimes(lifetimes);
  return ok;
}

void Interpreter::end_body_lifetimes(std::vector<BodyLifetime> &lifetimes) {
  release_last_first(lifetimes, [&](const BodyLifetime &lifetime) {
    target_.end_lifetime(lifetime.token);
    if (run_ && lifetime.reservation_row)
      run_->steps[*lifetime.reservation_row].released_before_row =
          static_cast<std::uint32_t>(recorded_rows());
  });
}

void Interpreter::note_scope_released(EntryRows entry) {
  if (!run_ || !entry.reserves) return; // most plans reserve nothing: no rows to look at
  for (std::size_t n = entry.begin; n < entry.end; ++n) {
    StepRecord &row = run_->steps[n];
    if (row.kind == StepKind::Reserve && !row.failed())
      row.released_before_row = static_cast<std::uint32_t>(recorded_rows());
  }
}

std::size_t Interpreter::recorded_rows() const { return run_ ? run_->steps.size() : 0; }

bool Interpreter::run_statement(std::uint32_t &pc, bool setup, std::vector<BodyLifetime> &lifetimes) {
  const Instruction &in = module_.code[pc];
  const StepKind direct = setup ? StepKind::Setup : StepKind::Direct;
  bool ok = true;
  switch (in.opcode) {
  case Opcode::Declare: {
    const bytecode::Declaration &d = module_.declarations[in.index()];
    for (ValueId v = d.first_value; ok && v < d.first_value + d.value_count(); ++v)
      ok = target_.declare(d, v, step_at(StepKind::Setup, pc, v));
    ++pc;
    break;
  }
  case Opcode::Scope: {
    const std::uint32_t close = matching_end(module_.code, pc);
    ok = run_scope(in.index(), InstructionRange{pc + 1, close}, pc);
    pc = close + 1;
    break;
  }
  case Opcode::Run:
    ok = run_scope(in.index(), std::nullopt, pc);
    ++pc;
    break;
  case Opcode::Actions: {
    const std::uint32_t close = matching_end(module_.code, pc);
    ok = run_actions(pc, InstructionRange{pc + 1, close});
    pc = close + 1;
    break;
  }
  case Opcode::Release: {
    auto it = std::find_if(named_lifetimes_.begin(), named_lifetimes_.end(),
                           [&](const auto &entry) { return entry.first == in.index(); });
    // The verifier guarantees an earlier named lifetime; setup got here,
    // so it opened.
    if (it == named_lifetimes_.end()) throw std::logic_error("release of a lifetime that is not open");
    ok = target_.release(it->second, step_at(StepKind::Setup, pc));
    named_lifetimes_.erase(it);
    ++pc;
    break;
  }
  default:
    if (bytecode::is_action(in.opcode)) {
      for (ValueId v = in.value; ok && v < in.value + in.count; ++v)
        ok = target_.apply(action_of(in, v), step_at(direct, pc, v));
      ++pc;
    } else {
      ok = run_lifetime(pc, setup, lifetimes);
      pc += bytecode::has_items(in.opcode) ? 1 + in.index() : 1;
    }
    break;
  }
  return ok;
}

bool Interpreter::run_lifetime(std::uint32_t pc, bool setup, std::vector<BodyLifetime> &body_lifetimes) {
  const Instruction &in = module_.code[pc];
  Target::Token token = 0;
  bool ok = false;
  if (in.opcode == Opcode::Reserve) {
    const Reservation reservation{in.location, in.size, module_.strings[in.index()]};
    ok = target_.reserve(reservation, step_at(setup ? StepKind::Setup : StepKind::BodyReserve, pc), token);
  } else {
    // The values of the items, duplicates already collapsed by the compiler.
    std::vector<ValueId> values;
    for (std::uint32_t k = pc + 1; k <= pc + in.index(); ++k)
      for (ValueId v = module_.code[k].value; v < module_.code[k].value + module_.code[k].count; ++v)
        values.push_back(v);
    const bool hold = in.opcode == Opcode::Hold;
    const StepKind kind = setup ? StepKind::Setup : hold ? StepKind::Hold : StepKind::Acquire;
    ok = target_.protect(hold ? LifetimeKind::Hold : LifetimeKind::Lease, values, in.location,
                         in.opcode == Opcode::Lease && in.flag, step_at(kind, pc), token);
  }
  if (!ok) return false;
  if (!setup) {
    // A body's reservation is the row the target just recorded.
    std::optional<std::size_t> row;
    if (in.opcode == Opcode::Reserve && run_) row = recorded_rows() - 1;
    body_lifetimes.push_back(BodyLifetime{token, row});
  } else if (in.alias() != 0) {
    named_lifetimes_.emplace_back(pc, token);
  }
  return true;
}

bool Interpreter::run_scope(std::uint32_t plan, std::optional<InstructionRange> body,
                            std::optional<std::uint32_t> entered_by) {
  const PlanSteps &steps = plans_.plan(plan);
  EntryRows entry{recorded_rows(), 0, !steps.reservations.empty()};
  const bool entered = target_.enter_scope(steps);
  entry.end = recorded_rows();
  if (entered_by) mark_entered_by(entry.begin, *entered_by);
  if (!entered) {
    note_scope_released(entry);
    return false;
  }
  if (body && !run_body(*body, /*setup=*/false)) {
    target_.abandon_scope();
    note_scope_released(entry);
    return false;
  }
  const std::size_t first = recorded_rows();
  const bool exited = target_.exit_scope(steps);
  if (entered_by) mark_entered_by(first, *entered_by);
  note_scope_released(entry);
  return exited;
}

void Interpreter::mark_entered_by(std::size_t first, std::uint32_t entered_by) {
  // The rows a scope's entry and exit add (not its body's) name the
  // instruction that entered it, so that a report can say which program
  // step reached a failure inside the plan.
  if (!run_) return;
  for (std::size_t n = first; n < run_->steps.size(); ++n)
    run_->steps[n].entered_by = entered_by;
}

bool Interpreter::run_actions(std::uint32_t pc, InstructionRange list) {
  ActionListSteps steps;
  steps.name = module_.strings[module_.code[pc].index()];
  steps.instruction = pc;
  expand_actions(module_, list, pc, steps.actions);
  return target_.execute_actions(steps);
}

} // namespace fhr
