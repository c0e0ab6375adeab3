#include "fhr/compiler/printed_program.hpp"

#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/frontend.hpp"

#include <llvm/Support/raw_ostream.h>

#include <algorithm>

namespace fhr {

PrintedProgramCheck check_printed_program(const std::string &program,
                                          std::span<const std::pair<Location, std::uint64_t>> budgets) {
  PrintedProgramCheck check;
  CompiledFile compiled = compile_text(program, "<solve>");
  if (!compiled.ok()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    compiled.source->print(os, false);
    check.detail = "the printed program does not compile: " + os.str();
    return check;
  }
  const Analysis analysis = analyze_module(*compiled.lowered);
  if (!analysis.feasible()) {
    check.detail = "fhr-plan check refuses the printed program";
    return check;
  }
  for (const ProgramReport &report : analysis.programs)
    for (const LocationPrediction &p : report.locations) {
      const auto budget =
          std::find_if(budgets.begin(), budgets.end(), [&](const auto &b) { return b.first == p.location; });
      if (budget != budgets.end() && p.peak_charged > budget->second) {
        check.detail = "explain predicts " + std::to_string(p.peak_charged) + " bytes at " +
                       p.location.name() + ", over its budget";
        return check;
      }
    }
  check.accepted = true;
  return check;
}

} // namespace fhr
