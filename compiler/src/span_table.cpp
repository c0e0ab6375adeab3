#include "fhr/compiler/span_table.hpp"

#include <algorithm>

namespace fhr {

void SpanTable::print_message(llvm::raw_ostream &os, std::uint32_t instruction,
                              llvm::SourceMgr::DiagKind kind, const llvm::Twine &message, bool colors) const {
  static const llvm::SourceMgr no_buffers; // the diagnostic carries its line itself
  const SourceSpan span = instruction < instructions.size() ? instructions[instruction] : SourceSpan{};
  const std::string line = excerpt(instruction);
  std::vector<std::pair<unsigned, unsigned>> ranges;
  const unsigned begin = span.column == 0 ? 0 : span.column - 1;
  // A range must stay on its line to be drawn under it.
  const unsigned end =
      std::min<unsigned>(span.end_column == 0 ? 0 : span.end_column - 1, static_cast<unsigned>(line.size()));
  if (span.column != 0 && end > begin) ranges.emplace_back(begin, end);
  llvm::SMDiagnostic diagnostic(no_buffers, llvm::SMLoc(), file, static_cast<int>(span.line),
                                span.column == 0 ? -1 : static_cast<int>(begin), kind, message.str(), line,
                                ranges);
  diagnostic.print(nullptr, os, colors);
}

} // namespace fhr
