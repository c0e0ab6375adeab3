#pragma once
/// \file
/// A module's plans and action lists as targets consume them: every range
/// instruction expanded to one action per value, each action with the
/// instruction it came from. Built once per plan, on first use, and shared
/// by every run over the same module.

#include "fhr/bytecode/module.hpp"
#include "fhr/model/plan.hpp"
#include "fhr/model/step_kind.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fhr {

/// The actions of one phase or list, in order.
struct PhaseActions {
  /// What its steps belong to (StepRecord::container): the plan's index, or
  /// the list's `actions` instruction.
  std::uint32_t container = 0;
  std::vector<Action> actions;
  std::vector<std::uint32_t> instructions; ///< per action: the instruction it comes from

  std::size_t size() const { return actions.size(); }
};

/// One plan: the phases of §10.1 with the instruction of every step.
struct PlanSteps {
  std::uint32_t index = 0; ///< into Module::plans
  std::string name;
  PhaseActions reclaim, enter, exit;
  std::vector<Reservation> reservations;
  std::vector<std::uint32_t> reservation_instructions;

  /// Reclaim, Enter or Exit (Execute: enter, the phase an action list is simulated as).
  const PhaseActions &phase(StepKind kind) const;
  PlanView view() const { return {reclaim.actions, reservations, enter.actions, exit.actions}; }
  /// The instruction of a simulated step (preflights name the step they refused).
  std::uint32_t instruction_of(StepKind phase, std::uint32_t position) const;
};

/// An `actions` list of a program.
struct ActionListSteps {
  std::string name;
  std::uint32_t instruction = 0; ///< the `actions` instruction
  PhaseActions actions;

  PlanView view() const { return {{}, {}, actions.actions, {}}; }
};

/// The actions of `range` (its action instructions, one action per value),
/// belonging to `container`, into `out` (whose storage is reused).
void expand_actions(const bytecode::Module &module, bytecode::InstructionRange range, std::uint32_t container,
                    PhaseActions &out);
/// Plan `index` of `module`, into `out` (whose storage is reused: explaining
/// every plan once through one PlanSteps keeps the expansion in cache).
void expand_plan(const bytecode::Module &module, std::uint32_t index, PlanSteps &out);

/// The kind of action an action instruction names.
inline ActionKind action_kind_of(bytecode::Opcode opcode) {
  using bytecode::Opcode;
  switch (opcode) {
  case Opcode::Ensure: return ActionKind::Ensure;
  case Opcode::Copy: return ActionKind::Copy;
  case Opcode::Move:
  case Opcode::MoveFrom: return ActionKind::Move;
  case Opcode::Drop: return ActionKind::Drop;
  default: return ActionKind::Discard;
  }
}

/// The explicit source an action instruction names, if any.
inline std::optional<Location> action_source_of(const bytecode::Instruction &in) {
  return in.opcode == bytecode::Opcode::MoveFrom ? std::optional(in.from) : std::nullopt;
}

/// The action an instruction names for one of its values (inline: the
/// expansion calls it per action instruction).
inline Action action_of(const bytecode::Instruction &in, ValueId value) {
  return Action{action_kind_of(in.opcode), value, in.location, action_source_of(in)};
}

class PlanTable {
public:
  explicit PlanTable(const bytecode::Module &module) : module_(module), plans_(module.plans.size()) {}

  const bytecode::Module &module() const { return module_; }
  /// The expanded plan (built on first use).
  const PlanSteps &plan(std::uint32_t index);

private:
  const bytecode::Module &module_;
  std::vector<std::unique_ptr<PlanSteps>> plans_;
};

} // namespace fhr
