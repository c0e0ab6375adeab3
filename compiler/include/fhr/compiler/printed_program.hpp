#pragma once
/// \file
/// What `fhr-plan solve` promises of the program it prints
/// (docs/planner.md): it compiles, `fhr-plan check` accepts it (setup,
/// every plan, every program), and explain's peak at each budgeted
/// location stays within the workload's budget. One check for the command,
/// the planner's tests and the workload fuzzer.

#include "fhr/model/location.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <utility>

namespace fhr {

struct PrintedProgramCheck {
  bool accepted = false;
  /// Why not: "the printed program does not compile: ...", and so on.
  std::string detail;
};

PrintedProgramCheck check_printed_program(const std::string &program,
                                          std::span<const std::pair<Location, std::uint64_t>> budgets);

} // namespace fhr
