#pragma once
/// \file
/// The program interpreter: runs a verified module's setup, any plan as a
/// scope, and any program, on a Target. It owns the order of a module's
/// steps once for every target: instructions in order, every value of a
/// range instruction in turn, a scope's body between its entry and exit,
/// the lifetimes a body opens ended last first when the body ends, named
/// setup lifetimes until their release, and a run stopping at the first
/// failing step. What a step does is the target's.

#include "fhr/bytecode/module.hpp"
#include "fhr/executor/plan_table.hpp"
#include "fhr/executor/step_record.hpp"
#include "fhr/executor/target.hpp"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace fhr {

/// A lifetime a program body opened; for a reservation, also its row in
/// the run, whose `released_before_row` the body's end fills in.
struct BodyLifetime {
  Target::Token token = 0;
  std::optional<std::size_t> reservation_row;
};

/// The rows a scope's entry recorded, [begin, end): its reservations' rows
/// are among them, if its plan has any.
struct EntryRows {
  std::size_t begin = 0, end = 0;
  bool reserves = false;
};

/// A program being walked by an Interpreter (begin_program .. finish_program).
struct ProgramWalk {
  RunResult run;
  std::uint32_t pc = 0, end = 0;
  std::optional<std::uint32_t> plan;              ///< the entered statement's plan
  std::uint32_t entered_by = 0;                   ///< its `run` or `scope` instruction
  EntryRows entry;                                ///< the rows its entry recorded
  std::optional<bytecode::InstructionRange> body; ///< its body, while not run yet
  std::vector<BodyLifetime> lifetimes;            ///< the program body's own lifetimes
  bool ok = true;
};

class Interpreter {
public:
  /// `plans` belongs to the module to run; both outlive the interpreter.
  Interpreter(PlanTable &plans, Target &target) : module_(plans.module()), plans_(plans), target_(target) {}

  /// The setup statements, stopping at the first failure. Named lifetimes
  /// stay open until the module releases them; the others stay open.
  RunResult run_setup();
  /// Plan `plan` as a scope with an empty body: entry, then exit.
  RunResult run_plan(std::uint32_t plan);
  /// Program `program` from the target's current state.
  RunResult run_program(std::uint32_t program);

  /// Program `program` one statement at a time, for a caller that runs its
  /// own work while each `run` or `scope` statement is current (the Python
  /// package's ProgramSteps); run_program is the same walk without pauses.
  /// enter_next_statement() ends the current statement (its body, if not
  /// run yet, then its exit), runs the statements up to the next `run` or
  /// `scope` and enters that one; false at the end of the program or at a
  /// failure. run_current_body() runs the current scope's body (none: true).
  /// finish_program() runs what is left and returns the whole run. A failure
  /// ends the walk as it ends run_program. std::logic_error for a second
  /// begin before finish, or a step without a begin.
  void begin_program(std::uint32_t program);
  bool enter_next_statement();
  bool run_current_body();
  RunResult finish_program();
  /// Stops the walk where it is: the current scope is left without its exit
  /// (as after a failing body), the program body's lifetimes end, nothing
  /// else runs. No-op when no program is being run.
  void abandon_program();
  /// The plan of the entered statement; none before the first and after the last.
  std::optional<std::uint32_t> current_plan() const;
  /// Whether the entered statement is a scope whose body has not run yet.
  bool current_body_pending() const { return walk_ && walk_->body.has_value(); }

private:
  using Walk = ProgramWalk;
  Walk &walk();
  bool end_current_statement(Walk &w);

  bool run_body(bytecode::InstructionRange range, bool setup);
  /// One statement at `pc` (a scope with its body, a primitive, a lifetime,
  /// ...); advances `pc` past it.
  bool run_statement(std::uint32_t &pc, bool setup, std::vector<BodyLifetime> &lifetimes);
  bool run_lifetime(std::uint32_t pc, bool setup, std::vector<BodyLifetime> &body_lifetimes);
  /// Ends a body's lifetimes, the last first (§7, §12.3), noting when its
  /// reservations were released.
  void end_body_lifetimes(std::vector<BodyLifetime> &lifetimes);
  /// The scope whose entry recorded `entry` released its reservations now
  /// (after its exit, or when it was left without one).
  void note_scope_released(EntryRows entry);
  /// How many rows the program run being recorded has (0 outside one).
  std::size_t recorded_rows() const;
  /// `entered_by`: the program's `scope` or `run` instruction, if any.
  bool run_scope(std::uint32_t plan, std::optional<bytecode::InstructionRange> body,
                 std::optional<std::uint32_t> entered_by);
  bool run_actions(std::uint32_t pc, bytecode::InstructionRange list);
  /// Marks the rows of run_ from `first` on as entered by instruction `entered_by`.
  void mark_entered_by(std::size_t first, std::uint32_t entered_by);

  const bytecode::Module &module_;
  PlanTable &plans_;
  Target &target_;
  /// Setup's named lifetimes by the instruction that opened them.
  std::vector<std::pair<std::uint32_t, Target::Token>> named_lifetimes_;
  std::optional<Walk> walk_;
  /// The program run being recorded (the walk's), for the rows' `entered_by`.
  RunResult *run_ = nullptr;
};

} // namespace fhr
