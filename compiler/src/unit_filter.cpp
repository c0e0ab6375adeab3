#include "fhr/compiler/unit_filter.hpp"

#include "fhr/dsl/diagnostics.hpp"

#include <algorithm>

namespace fhr {

namespace {
bool contains(const std::vector<std::string> &names, const std::string &name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}
} // namespace

bool UnitFilter::selects_plan(const std::string &name) const { return empty() || contains(plans, name); }
bool UnitFilter::selects_program(const std::string &name) const {
  return empty() || contains(programs, name);
}

void select_units(Analysis &analysis, const UnitFilter &filter) {
  if (filter.empty()) return;
  std::erase_if(analysis.plans, [&](const PlanExplanation &p) { return !filter.selects_plan(p.name); });
  std::erase_if(analysis.programs, [&](const ProgramReport &p) { return !filter.selects_program(p.name); });
}

std::vector<std::string> unknown_units(const Analysis &analysis, const UnitFilter &filter) {
  std::vector<std::string> plans, programs, messages;
  for (const PlanExplanation &p : analysis.plans)
    plans.push_back(p.name);
  for (const ProgramReport &p : analysis.programs)
    programs.push_back(p.name);
  auto check = [&](const std::vector<std::string> &wanted, const std::vector<std::string> &names,
                   const char *kind) {
    for (const std::string &name : wanted) {
      if (contains(names, name)) continue;
      if (std::string(kind) == "plan" && contains(analysis.program_only_plans, name)) {
        messages.push_back("plan '" + name +
                           "' runs only in programs (`in program`): select a program that runs it");
        continue;
      }
      const std::string suggestion = closest_match(name, names);
      messages.push_back(std::string("no ") + kind + " named '" + name + "'" +
                         (suggestion.empty() ? std::string() : "; did you mean '" + suggestion + "'?"));
    }
  };
  check(filter.plans, plans, "plan");
  check(filter.programs, programs, "program");
  return messages;
}

} // namespace fhr
