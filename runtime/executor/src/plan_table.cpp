#include "fhr/executor/plan_table.hpp"

namespace fhr {

using bytecode::Instruction;
using bytecode::Opcode;

const PhaseActions &PlanSteps::phase(StepKind kind) const {
  return kind == StepKind::Reclaim ? reclaim : kind == StepKind::Exit ? exit : enter;
}

std::uint32_t PlanSteps::instruction_of(StepKind kind, std::uint32_t position) const {
  if (kind == StepKind::Reserve) return reservation_instructions[position];
  return phase(kind).instructions[position];
}

Action action_of(const Instruction &in, ValueId value) {
  Action action;
  action.value = value;
  action.location = in.location;
  switch (in.opcode) {
  case Opcode::Ensure: action.kind = ActionKind::Ensure; break;
  case Opcode::Copy: action.kind = ActionKind::Copy; break;
  case Opcode::Move: action.kind = ActionKind::Move; break;
  case Opcode::MoveFrom:
    action.kind = ActionKind::Move;
    action.from = in.from;
    break;
  case Opcode::Drop: action.kind = ActionKind::Drop; break;
  default: action.kind = ActionKind::Discard; break;
  }
  return action;
}

void expand_actions(const bytecode::Module &module, bytecode::InstructionRange range, std::uint32_t container,
                    PhaseActions &out) {
  out.container = container;
  out.actions.clear();
  out.instructions.clear();
  for (std::uint32_t pc = range.begin; pc < range.end; ++pc) {
    const Instruction &in = module.code[pc];
    if (!bytecode::is_action(in.opcode)) continue;
    Action action = action_of(in, in.value);
    for (std::uint32_t k = 0; k < in.count; ++k, ++action.value) {
      out.actions.push_back(action);
      out.instructions.push_back(pc);
    }
  }
}

void expand_plan(const bytecode::Module &module, std::uint32_t index, PlanSteps &plan) {
  const bytecode::PlanEntry &entry = module.plans[index];
  plan.index = index;
  plan.name = module.strings[entry.name];
  expand_actions(module, entry.reclaim, index, plan.reclaim);
  expand_actions(module, entry.enter, index, plan.enter);
  expand_actions(module, entry.exit, index, plan.exit);
  plan.reservations.clear();
  plan.reservation_instructions.clear();
  for (std::uint32_t pc = entry.reserve.begin; pc < entry.reserve.end; ++pc) {
    const Instruction &in = module.code[pc];
    plan.reservations.push_back(Reservation{in.location, in.size, module.strings[in.index()]});
    plan.reservation_instructions.push_back(pc);
  }
}

const PlanSteps &PlanTable::plan(std::uint32_t index) {
  std::unique_ptr<PlanSteps> &slot = plans_.at(index);
  if (!slot) {
    slot = std::make_unique<PlanSteps>();
    expand_plan(module_, index, *slot);
  }
  return *slot;
}

} // namespace fhr
