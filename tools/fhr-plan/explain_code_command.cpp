// fhr-plan explain-code CODE (or --explain CODE): the entry of
// docs/diagnostics.md about one diagnostic code, built into the tool.
#include "commands.hpp"

#include <llvm/Support/WithColor.h>

namespace fhr::cli {

int run_explain_code(const std::string &code) {
  std::optional<DiagCode> found = find_diag_code(code);
  if (!found) {
    std::vector<std::string> codes;
    for (DiagCode known : all_diag_codes())
      codes.push_back(diag_code_text(known).str());
    const std::string suggestion = closest_match(llvm::StringRef(code).upper(), codes);
    llvm::WithColor::error(llvm::errs(), "fhr-plan")
        << "[" << diag_code_text(DiagCode::BadOption) << "] no diagnostic code '" << code << "'"
        << (suggestion.empty() ? std::string() : "; did you mean '" + suggestion + "'?")
        << " (codes are E0001..., W0001...; all in docs/diagnostics.md)\n";
    return kBadInput;
  }
  llvm::outs() << diagnostic_documentation(*found) << '\n';
  return kFeasible;
}

} // namespace fhr::cli
