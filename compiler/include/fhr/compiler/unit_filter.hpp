#pragma once
/// \file
/// Which plans and programs a command reports (`--plan`, `--program`).

#include "fhr/compiler/analysis.hpp"

#include <string>
#include <vector>

namespace fhr {

/// Empty lists select everything; otherwise only the named units. A failed
/// setup is always reported.
struct UnitFilter {
  std::vector<std::string> plans, programs;

  bool empty() const { return plans.empty() && programs.empty(); }
  bool selects_plan(const std::string &name) const;
  bool selects_program(const std::string &name) const;
};

/// Keeps the selected units of `analysis` (its feasibility follows).
void select_units(Analysis &analysis, const UnitFilter &filter);

/// A message for each name of `filter` that `analysis` lacks, with the
/// closest name it has: "no plan named 'stagee'; did you mean 'stage'?".
std::vector<std::string> unknown_units(const Analysis &analysis, const UnitFilter &filter);

} // namespace fhr
