#include "fhr/executor/scaled_module.hpp"

#include <stdexcept>

namespace fhr {

namespace {
std::uint64_t scaled(std::uint64_t bytes, std::uint64_t divisor) { return (bytes + divisor - 1) / divisor; }
} // namespace

bytecode::Module scaled_module(bytecode::Module module, std::uint64_t divisor) {
  if (divisor == 0) throw std::invalid_argument("a module's sizes cannot be divided by 0");
  if (divisor == 1) return module;
  for (auto &[location, budget] : module.budgets)
    if (budget) budget = scaled(*budget, divisor);
  for (bytecode::Declaration &d : module.declarations) {
    d.spec.logical_nbytes = scaled(d.spec.logical_nbytes, divisor);
    d.spec.storage_nbytes = scaled(d.spec.storage_nbytes, divisor);
  }
  for (bytecode::Instruction &in : module.code)
    if (in.opcode == bytecode::Opcode::Reserve) in.size = scaled(in.size, divisor);
  return module;
}

} // namespace fhr
