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

void expand_actions(const bytecode::Module &module, bytecode::InstructionRange range, std::uint32_t container,
                    PhaseActions &out) {
  out.container = container;
  // Sized first, then written in place: two push_backs per action were most
  // of explain's cost before the rules ran.
  std::size_t total = 0;
  for (std::uint32_t pc = range.begin; pc < range.end; ++pc)
    if (bytecode::is_action(module.code[pc].opcode)) total += module.code[pc].count;
  out.actions.resize(total);
  out.instructions.resize(total);
  Action *action_out = out.actions.data();
  std::uint32_t *instruction_out = out.instructions.data();
  for (std::uint32_t pc = range.begin; pc < range.end; ++pc) {
    const Instruction &in = module.code[pc];
    if (!bytecode::is_action(in.opcode)) continue;
    // Field by field from scalars: an Action assembled on the stack and
    // copied whole was read back wider than it was written, a
    // store-forwarding stall that was half of the loop's time.
    const ActionKind kind = action_kind_of(in.opcode);
    const std::optional<Location> from = action_source_of(in);
    for (std::uint32_t k = 0; k < in.count; ++k, ++action_out) {
      action_out->kind = kind;
      action_out->value = in.value + k;
      action_out->location = in.location;
      action_out->from = from;
      *instruction_out++ = pc;
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
