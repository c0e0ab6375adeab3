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

private:
  bool run_body(bytecode::InstructionRange range, bool setup);
  bool run_lifetime(std::uint32_t pc, bool setup, std::vector<Target::Token> &body_lifetimes);
  /// `entered_by`: the program's `scope` or `run` instruction, if any.
  bool run_scope(std::uint32_t plan, std::optional<bytecode::InstructionRange> body,
                 std::optional<std::uint32_t> entered_by);
  bool run_actions(std::uint32_t pc, bytecode::InstructionRange list);

  const bytecode::Module &module_;
  PlanTable &plans_;
  Target &target_;
  /// Setup's named lifetimes by the instruction that opened them.
  std::vector<std::pair<std::uint32_t, Target::Token>> named_lifetimes_;
  /// The program run being recorded, for the rows' `entered_by`.
  RunResult *run_ = nullptr;
};

} // namespace fhr
