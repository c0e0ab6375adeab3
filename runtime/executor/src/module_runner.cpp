#include "fhr/executor/module_runner.hpp"

#include <stdexcept>
#include <string>

namespace fhr {

ModuleRunner::ModuleRunner(Manager &manager, const bytecode::Module &module, ValueBinder &binder,
                           RunnerOptions options)
    : module_(module), plans_(module), target_(manager, module, binder, std::move(options)),
      interpreter_(plans_, target_) {}

Handle ModuleRunner::handle(std::string_view name, std::optional<std::uint32_t> index) const {
  for (const DeclaredValue &value : values())
    if (value.name == name && value.index == index) return handle_of(value.value_id);
  throw std::out_of_range("the module declares no value " + std::string(name) +
                          (index ? "[" + std::to_string(*index) + "]" : ""));
}

std::uint32_t ModuleRunner::plan_index(std::string_view name) const {
  for (std::uint32_t i = 0; i < module_.plans.size(); ++i)
    if (module_.strings[module_.plans[i].name] == name) return i;
  throw std::invalid_argument("the module has no plan '" + std::string(name) + "'");
}

PlanSpec ModuleRunner::plan(std::string_view name) const {
  return target_.plan_spec(plans_.plan(plan_index(name)));
}

RunResult ModuleRunner::run_plan(std::string_view name) { return run_plan(plan_index(name)); }

std::uint32_t ModuleRunner::program_index(std::string_view name) const {
  for (std::uint32_t i = 0; i < module_.programs.size(); ++i)
    if (module_.strings[module_.programs[i].name] == name) return i;
  throw std::invalid_argument("the module has no program '" + std::string(name) + "'");
}

RunResult ModuleRunner::run_program(std::string_view name) { return run_program(program_index(name)); }

void ModuleRunner::begin_program(std::string_view name) { interpreter_.begin_program(program_index(name)); }

std::optional<std::string_view> ModuleRunner::current_plan() const {
  const std::optional<std::uint32_t> plan = interpreter_.current_plan();
  if (!plan) return std::nullopt;
  return std::string_view(module_.strings[module_.plans[*plan].name]);
}

} // namespace fhr
