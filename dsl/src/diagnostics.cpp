#include "fhr/dsl/diagnostics.hpp"

#include <algorithm>

namespace fhr {

namespace {
struct CodeRow {
  llvm::StringRef code;
  llvm::StringRef summary;
};
constexpr CodeRow kCodes[] = {
#define FHR_DIAGNOSTIC(identifier, code, summary) {code, summary},
#include "fhr/dsl/diagnostic_codes.def"
#undef FHR_DIAGNOSTIC
};
} // namespace

llvm::StringRef diag_code_text(DiagCode code) { return kCodes[static_cast<unsigned>(code)].code; }
llvm::StringRef diag_code_summary(DiagCode code) { return kCodes[static_cast<unsigned>(code)].summary; }
std::vector<DiagCode> all_diag_codes() {
  std::vector<DiagCode> codes;
  for (unsigned i = 0; i < std::size(kCodes); ++i)
    codes.push_back(static_cast<DiagCode>(i));
  return codes;
}

SourceFile::SourceFile(std::unique_ptr<llvm::MemoryBuffer> buffer) {
  buffer_id_ = source_manager_.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
}

llvm::StringRef SourceFile::name() const {
  return source_manager_.getMemoryBuffer(buffer_id_)->getBufferIdentifier();
}

llvm::StringRef SourceFile::text() const { return source_manager_.getMemoryBuffer(buffer_id_)->getBuffer(); }

std::pair<unsigned, unsigned> SourceFile::line_and_column(std::uint32_t offset) const {
  const char *base = text().data();
  offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(text().size()));
  auto [line, column] =
      source_manager_.getLineAndColumn(llvm::SMLoc::getFromPointer(base + offset), buffer_id_);
  auto mark = std::upper_bound(line_marks_.begin(), line_marks_.end(), offset,
                               [](std::uint32_t o, const ast::LineMark &m) { return o < m.offset; });
  if (mark == line_marks_.begin()) return {line, column};
  --mark;
  const unsigned mark_line =
      source_manager_.getLineAndColumn(llvm::SMLoc::getFromPointer(base + mark->offset), buffer_id_).first;
  if (line <= mark_line) return {line, column};
  return {mark->line + (line - mark_line - 1), column};
}

void SourceFile::report(DiagCode code, std::string message, ast::Span span, std::string hint) {
  diagnostics_.push_back(Diagnostic{code, std::move(message), span, std::move(hint)});
}

void SourceFile::print_message(llvm::raw_ostream &os, ast::Span span, llvm::SourceMgr::DiagKind kind,
                               const llvm::Twine &message, bool colors) const {
  const char *base = text().data();
  const std::uint32_t size = static_cast<std::uint32_t>(text().size());
  const std::uint32_t begin = std::min(span.begin, size);
  const std::uint32_t end = std::clamp(span.end, begin, size);
  llvm::SMLoc location = llvm::SMLoc::getFromPointer(base + begin);
  std::vector<llvm::SMRange> ranges;
  // A range must stay on one line to be drawn under it.
  llvm::StringRef rest = text().substr(begin, end - begin);
  std::uint32_t line_end = begin + static_cast<std::uint32_t>(std::min(rest.find('\n'), rest.size()));
  if (line_end > begin) ranges.emplace_back(location, llvm::SMLoc::getFromPointer(base + line_end));
  if (line_marks_.empty()) {
    source_manager_.PrintMessage(os, location, kind, message, ranges, {}, colors);
    return;
  }
  // Renumbered text: build the diagnostic with the line the directives give.
  const auto [line, column] = line_and_column(begin);
  const char *line_start = base + begin - (column - 1);
  llvm::StringRef line_text(line_start, static_cast<std::size_t>(base + size - line_start));
  line_text = line_text.take_until([](char c) { return c == '\n' || c == '\r'; });
  std::vector<std::pair<unsigned, unsigned>> columns;
  for (const llvm::SMRange &r : ranges)
    columns.emplace_back(static_cast<unsigned>(r.Start.getPointer() - line_start),
                         static_cast<unsigned>(std::min(r.End.getPointer() - line_start,
                                                        static_cast<std::ptrdiff_t>(line_text.size()))));
  llvm::SMDiagnostic diagnostic(source_manager_, location, name(), static_cast<int>(line),
                                static_cast<int>(column) - 1, kind, message.str(), line_text, columns);
  diagnostic.print(nullptr, os, colors);
}

void SourceFile::print(llvm::raw_ostream &os, bool colors) const {
  std::vector<const Diagnostic *> ordered;
  for (const Diagnostic &d : diagnostics_)
    ordered.push_back(&d);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const Diagnostic *a, const Diagnostic *b) { return a->span.begin < b->span.begin; });
  for (const Diagnostic *d : ordered) {
    print_message(os, d->span, llvm::SourceMgr::DK_Error, "[" + diag_code_text(d->code) + "] " + d->message,
                  colors);
    if (!d->hint.empty()) print_message(os, d->span, llvm::SourceMgr::DK_Note, d->hint, colors);
  }
}

std::string closest_match(llvm::StringRef name, const std::vector<std::string> &candidates) {
  std::string best;
  unsigned best_distance = ~0u;
  const unsigned limit = std::max<unsigned>(1, static_cast<unsigned>(name.size()) / 3);
  for (const std::string &candidate : candidates) {
    unsigned distance = name.edit_distance(candidate, true, limit + 1);
    if (distance <= limit && distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

} // namespace fhr
