#include "fhr/bytecode/limits.hpp"

#include "fhr/bytecode/format.hpp"

#include <vector>

namespace fhr::bytecode {

namespace {

/// Sums stop here, far beyond the limit, so that none overflows (two
/// counts below it add up to less than 2^64) and reports can say how many.
constexpr std::uint64_t kSaturated = std::uint64_t{1} << 62;

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return b >= kSaturated - a ? kSaturated : a + b;
}

class StepCounter {
public:
  explicit StepCounter(const Module &module) : module_(module) {
    plan_steps_.reserve(module.plans.size());
    for (const PlanEntry &plan : module.plans) {
      std::uint64_t steps = 1; // the preflight
      for (const InstructionRange &range : {plan.reclaim, plan.reserve, plan.enter, plan.exit})
        steps = saturating_add(steps, range_steps(range));
      plan_steps_.push_back(steps);
    }
  }

  StepCount count() const {
    StepCount count;
    count.total = range_steps(module_.setup);
    for (std::uint32_t pc = module_.setup.begin; pc < module_.setup.end; ++pc)
      if (info(module_.code[pc].opcode).kind != OpcodeKind::Declaration)
        count.setup = saturating_add(count.setup, instruction_steps(module_.code[pc]));
    for (std::uint32_t p = 0; p < module_.plans.size(); ++p)
      if (!module_.plans[p].in_program) count.total = saturating_add(count.total, plan_steps_[p]);
    for (std::uint32_t p = 0; p < module_.programs.size(); ++p) {
      const std::uint64_t steps = range_steps(module_.programs[p].body);
      if (!count.largest_program || steps > count.largest_program_steps) {
        count.largest_program = p;
        count.largest_program_steps = steps;
      }
      count.total = saturating_add(count.total, steps);
    }
    return count;
  }

private:
  /// The steps one instruction records: a declaration one per value, an
  /// action one per value of its range, a scope or run its plan's steps
  /// besides its own, items and ends none (they belong to their header).
  std::uint64_t instruction_steps(const Instruction &in) const {
    switch (info(in.opcode).kind) {
    case OpcodeKind::Declaration: return module_.declarations[in.index()].value_count();
    case OpcodeKind::Action: return in.count;
    case OpcodeKind::Item: return 0;
    default: break;
    }
    if (in.opcode == Opcode::End) return 0;
    if (in.opcode == Opcode::Run || in.opcode == Opcode::Scope)
      return saturating_add(1, plan_steps_[in.index()]);
    return 1;
  }
  std::uint64_t range_steps(InstructionRange range) const {
    std::uint64_t steps = 0;
    for (std::uint32_t pc = range.begin; pc < range.end; ++pc)
      steps = saturating_add(steps, instruction_steps(module_.code[pc]));
    return steps;
  }

  const Module &module_;
  std::vector<std::uint64_t> plan_steps_;
};

} // namespace

StepCount count_steps(const Module &module) { return StepCounter(module).count(); }

} // namespace fhr::bytecode
