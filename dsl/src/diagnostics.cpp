#include "fhr/dsl/diagnostics.hpp"

#include <llvm/ADT/Hashing.h>
#include <llvm/Support/ConvertUTF.h>
#include <llvm/Support/Unicode.h>

#include <algorithm>

namespace fhr {

namespace {
struct CodeRow {
  llvm::StringRef code;
  llvm::StringRef summary;
  llvm::StringRef flag; ///< warnings only
};
constexpr CodeRow kCodes[] = {
#define FHR_DIAGNOSTIC(identifier, code, summary) {code, summary, {}},
#define FHR_WARNING(identifier, code, flag, summary) {code, summary, flag},
#include "fhr/dsl/diagnostic_codes.def"
#undef FHR_WARNING
#undef FHR_DIAGNOSTIC
};
constexpr unsigned kFirstWarning = [] {
  unsigned i = 0;
  while (i < std::size(kCodes) && kCodes[i].flag.empty())
    ++i;
  return i;
}();

const CodeRow &row(DiagCode code) { return kCodes[static_cast<unsigned>(code)]; }
unsigned warning_ordinal(DiagCode code) { return static_cast<unsigned>(code) - kFirstWarning; }

/// Length in bytes of the code point at `p`: a valid UTF-8 sequence, or 1
/// for a byte that does not start one.
unsigned code_point_length(const char *p, const char *end) {
  const auto first = static_cast<unsigned char>(*p);
  if (first < 0x80) return 1;
  const unsigned length = llvm::getNumBytesForUTF8(first);
  if (length < 2 || length > 4 || end - p < static_cast<std::ptrdiff_t>(length)) return 1;
  const auto *bytes = reinterpret_cast<const llvm::UTF8 *>(p);
  return llvm::isLegalUTF8Sequence(bytes, bytes + length) ? length : 1;
}

/// Display width of the code point of `length` bytes at `p` (control
/// characters and invalid bytes are shown as U+FFFD, one column).
unsigned code_point_width(const char *p, unsigned length) {
  if (length == 1) return 1;
  const int width = llvm::sys::unicode::columnWidthUTF8(llvm::StringRef(p, length));
  return width < 0 ? 1 : static_cast<unsigned>(width);
}

constexpr unsigned kTabStop = 8;
constexpr const char *kReplacement = "\xEF\xBF\xBD";

/// The line as printed (tabs expanded, unprintable bytes replaced) and the
/// display column where each byte of it starts.
struct DisplayLine {
  std::string text;
  std::vector<unsigned> columns; ///< columns[i]: display column of byte i; one more at the end
};

DisplayLine display_line(llvm::StringRef line) {
  DisplayLine out;
  out.columns.reserve(line.size() + 1);
  unsigned column = 0;
  const char *end = line.end();
  for (const char *p = line.begin(); p < end;) {
    const unsigned length = code_point_length(p, end);
    const auto first = static_cast<unsigned char>(*p);
    unsigned width = 1;
    if (*p == '\t') {
      width = kTabStop - column % kTabStop;
      out.text.append(width, ' ');
    } else if (length == 1 && (first < 0x20 || first >= 0x7f)) {
      out.text += kReplacement;
    } else if (length > 1 && !llvm::sys::unicode::isPrintable(static_cast<int>([&] {
                 llvm::UTF32 value = 0;
                 const auto *source = reinterpret_cast<const llvm::UTF8 *>(p);
                 llvm::convertUTF8Sequence(&source, source + length, &value, llvm::strictConversion);
                 return value;
               }()))) {
      out.text += kReplacement;
    } else {
      out.text.append(p, length);
      width = code_point_width(p, length);
    }
    for (unsigned i = 0; i < length; ++i)
      out.columns.push_back(column);
    column += width;
    p += length;
  }
  out.columns.push_back(column);
  return out;
}

llvm::StringRef kind_label(llvm::SourceMgr::DiagKind kind) {
  switch (kind) {
  case llvm::SourceMgr::DK_Error: return "error";
  case llvm::SourceMgr::DK_Warning: return "warning";
  case llvm::SourceMgr::DK_Remark: return "remark";
  case llvm::SourceMgr::DK_Note: return "note";
  }
  return "error";
}

llvm::raw_ostream::Colors kind_color(llvm::SourceMgr::DiagKind kind) {
  switch (kind) {
  case llvm::SourceMgr::DK_Error: return llvm::raw_ostream::RED;
  case llvm::SourceMgr::DK_Warning: return llvm::raw_ostream::MAGENTA;
  case llvm::SourceMgr::DK_Remark: return llvm::raw_ostream::BLUE;
  case llvm::SourceMgr::DK_Note: return llvm::raw_ostream::BLACK;
  }
  return llvm::raw_ostream::RED;
}
} // namespace

llvm::StringRef diag_code_text(DiagCode code) { return row(code).code; }
llvm::StringRef diag_code_summary(DiagCode code) { return row(code).summary; }
bool diag_code_is_warning(DiagCode code) { return !row(code).flag.empty(); }
llvm::StringRef warning_flag(DiagCode code) { return row(code).flag; }
std::vector<DiagCode> all_diag_codes() {
  std::vector<DiagCode> codes;
  for (unsigned i = 0; i < std::size(kCodes); ++i)
    codes.push_back(static_cast<DiagCode>(i));
  return codes;
}
std::optional<DiagCode> find_diag_code(llvm::StringRef text) {
  for (unsigned i = 0; i < std::size(kCodes); ++i)
    if (kCodes[i].code.equals_insensitive(text.trim())) return static_cast<DiagCode>(i);
  return std::nullopt;
}

llvm::Error DiagnosticOptions::apply_flag(llvm::StringRef flag) {
  const bool negated = flag.consume_front("no-");
  if (flag == "all" || flag == "none") {
    all_disabled = negated || flag == "none";
    disabled.reset();
    return llvm::Error::success();
  }
  const bool error = flag.consume_front("error");
  if (error && flag.empty()) {
    all_as_error = !negated;
    if (negated) as_error.reset();
    return llvm::Error::success();
  }
  if (error && !flag.consume_front("="))
    return llvm::createStringError(std::errc::invalid_argument, "unknown warning option '-W%s'",
                                   flag.str().c_str());
  std::vector<std::string> flags;
  for (unsigned i = kFirstWarning; i < std::size(kCodes); ++i) {
    flags.push_back(kCodes[i].flag.str());
    if (kCodes[i].flag != flag) continue;
    if (error)
      as_error.set(i - kFirstWarning, !negated);
    else
      disabled.set(i - kFirstWarning, negated);
    return llvm::Error::success();
  }
  const std::string suggestion = closest_match(flag, flags);
  return llvm::createStringError(std::errc::invalid_argument, "unknown warning '%s'%s", flag.str().c_str(),
                                 suggestion.empty() ? "" : ("; did you mean '" + suggestion + "'?").c_str());
}

bool DiagnosticOptions::enabled(DiagCode warning) const {
  return !all_disabled && !disabled.test(warning_ordinal(warning));
}
bool DiagnosticOptions::is_error(DiagCode warning) const {
  return all_as_error || as_error.test(warning_ordinal(warning));
}

SourceFile::SourceFile(std::unique_ptr<llvm::MemoryBuffer> buffer, DiagnosticOptions options)
    : options_(options) {
  buffer_id_ = source_manager_.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
}

llvm::StringRef SourceFile::name() const {
  return source_manager_.getMemoryBuffer(buffer_id_)->getBufferIdentifier();
}

llvm::StringRef SourceFile::text() const { return source_manager_.getMemoryBuffer(buffer_id_)->getBuffer(); }

llvm::StringRef SourceFile::line_text(std::uint32_t offset) const {
  const llvm::StringRef all = text();
  offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(all.size()));
  const std::size_t newline = all.rfind('\n', offset); // searches before offset
  llvm::StringRef line = all.substr(newline == llvm::StringRef::npos ? 0 : newline + 1);
  line = line.take_until([](char c) { return c == '\n'; });
  if (line.endswith("\r")) line = line.drop_back();
  return line;
}

std::pair<unsigned, unsigned> SourceFile::line_and_column(std::uint32_t offset) const {
  const char *base = text().data();
  offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(text().size()));
  auto [line, byte_column] =
      source_manager_.getLineAndColumn(llvm::SMLoc::getFromPointer(base + offset), buffer_id_);
  // Columns count code points: ASCII prefixes (the usual case) need no decoding.
  unsigned column = byte_column;
  const char *line_start = base + offset - (byte_column - 1);
  if (std::any_of(line_start, base + offset, [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
    column = 1;
    for (const char *p = line_start; p < base + offset; ++column)
      p += code_point_length(p, base + offset);
  }
  auto mark = std::upper_bound(line_marks_.begin(), line_marks_.end(), offset,
                               [](std::uint32_t o, const ast::LineMark &m) { return o < m.offset; });
  if (mark == line_marks_.begin()) return {line, column};
  --mark;
  const unsigned mark_line =
      source_manager_.getLineAndColumn(llvm::SMLoc::getFromPointer(base + mark->offset), buffer_id_).first;
  if (line <= mark_line) return {line, column};
  return {mark->line + (line - mark_line - 1), column};
}

void SourceFile::report(Diagnostic diagnostic) {
  if (stopped_) return;
  if (diag_code_is_warning(diagnostic.code)) {
    if (!options_.enabled(diagnostic.code)) return;
    if (options_.is_error(diagnostic.code)) {
      diagnostic.severity = Severity::Error;
      diagnostic.promoted = true;
    } else {
      diagnostic.severity = Severity::Warning;
    }
  }
  // The same diagnostic again (a loop body, a program run from several
  // places) is one diagnostic with more occurrences.
  const std::uint64_t where = (std::uint64_t{diagnostic.span.begin} << 32) | diagnostic.span.end;
  const std::uint64_t what = llvm::hash_combine(static_cast<unsigned>(diagnostic.code), diagnostic.message);
  auto [entry, inserted] = seen_.try_emplace({where, what}, diagnostics_.size());
  if (!inserted) {
    Diagnostic &seen = diagnostics_[entry->second];
    if (seen.code == diagnostic.code && seen.message == diagnostic.message) {
      ++seen.occurrences;
      return;
    }
    // A hash collision: a different diagnostic at the same place.
  }
  if (diagnostic.severity == Severity::Error) {
    if (options_.error_limit != 0 && error_count_ == options_.error_limit) {
      stopped_ = true;
      if (inserted) seen_.erase(entry);
      Diagnostic limit;
      limit.code = DiagCode::TooManyErrors;
      limit.span = diagnostic.span;
      limit.message = "too many errors (" + std::to_string(options_.error_limit) + "); stopping here";
      limit.hint = "--error-limit=N shows more, --error-limit=0 all";
      ++error_count_;
      diagnostics_.push_back(std::move(limit));
      return;
    }
    ++error_count_;
  } else {
    ++warning_count_;
  }
  diagnostics_.push_back(std::move(diagnostic));
}

void SourceFile::report(DiagCode code, std::string message, ast::Span span, std::string hint) {
  Diagnostic diagnostic;
  diagnostic.code = code;
  diagnostic.message = std::move(message);
  diagnostic.span = span;
  diagnostic.hint = std::move(hint);
  report(std::move(diagnostic));
}

void SourceFile::warn(DiagCode code, std::string message, ast::Span span, std::string hint) {
  report(code, std::move(message), span, std::move(hint));
}

void SourceFile::add_note_to_errors_since(std::size_t first, const DiagnosticNote &note) {
  for (std::size_t i = first; i < diagnostics_.size(); ++i)
    if (diagnostics_[i].severity == Severity::Error && diagnostics_[i].code != DiagCode::TooManyErrors)
      diagnostics_[i].notes.push_back(note);
}

void SourceFile::print_message(llvm::raw_ostream &os, ast::Span span, llvm::SourceMgr::DiagKind kind,
                               const llvm::Twine &message, bool colors) const {
  const std::uint32_t size = static_cast<std::uint32_t>(text().size());
  const std::uint32_t begin = std::min(span.begin, size);
  const std::uint32_t end = std::clamp(span.end, begin, size);
  const auto [line, column] = line_and_column(begin);
  if (colors) os.changeColor(llvm::raw_ostream::SAVEDCOLOR, true);
  os << name() << ':' << line << ':' << column << ": ";
  if (colors) os.changeColor(kind_color(kind), true);
  os << kind_label(kind) << ": ";
  if (colors) os.changeColor(llvm::raw_ostream::SAVEDCOLOR, true);
  os << message << '\n';
  if (colors) os.resetColor();

  const llvm::StringRef source_line = line_text(begin);
  const auto line_start = static_cast<std::uint32_t>(source_line.data() - text().data());
  const DisplayLine shown = display_line(source_line);
  os << shown.text << '\n';
  // The caret under the first character, tildes under the rest of the span
  // on this line.
  const std::uint32_t first = begin - line_start;
  const std::uint32_t last =
      std::min<std::uint32_t>(end - line_start, static_cast<std::uint32_t>(source_line.size()));
  const unsigned caret_column = shown.columns[std::min<std::size_t>(first, source_line.size())];
  std::string marks(caret_column, ' ');
  marks += '^';
  if (last > first && shown.columns[last] > caret_column + 1)
    marks.append(shown.columns[last] - caret_column - 1, '~');
  if (colors) os.changeColor(llvm::raw_ostream::GREEN, true);
  os << marks << '\n';
  if (colors) os.resetColor();
}

void SourceFile::print(llvm::raw_ostream &os, bool colors) const {
  std::vector<const Diagnostic *> ordered;
  for (const Diagnostic &d : diagnostics_)
    ordered.push_back(&d);
  // The error-limit diagnostic comes last, whatever its place.
  std::stable_sort(ordered.begin(), ordered.end(), [](const Diagnostic *a, const Diagnostic *b) {
    const bool a_limit = a->code == DiagCode::TooManyErrors, b_limit = b->code == DiagCode::TooManyErrors;
    if (a_limit != b_limit) return b_limit;
    return a->span.begin < b->span.begin;
  });
  for (const Diagnostic *d : ordered) {
    std::string message = "[" + diag_code_text(d->code).str() + "] " + d->message;
    if (d->occurrences > 1) message += " (in " + std::to_string(d->occurrences) + " iterations)";
    if (d->promoted) message += " [-Werror=" + warning_flag(d->code).str() + "]";
    print_message(os, d->span,
                  d->severity == Severity::Warning ? llvm::SourceMgr::DK_Warning : llvm::SourceMgr::DK_Error,
                  message, colors);
    for (const DiagnosticNote &note : d->notes)
      print_message(os, note.span, llvm::SourceMgr::DK_Note, note.message, colors);
    if (!d->hint.empty()) print_message(os, d->span, llvm::SourceMgr::DK_Note, d->hint, colors);
  }
}

std::string closest_match(llvm::StringRef name, const std::vector<std::string> &candidates,
                          unsigned max_distance) {
  std::string best;
  unsigned best_distance = ~0u;
  const unsigned limit =
      max_distance != 0 ? max_distance : std::max<unsigned>(1, static_cast<unsigned>(name.size()) / 3);
  for (const std::string &candidate : candidates) {
    unsigned distance = name.edit_distance(candidate, true, limit + 1);
    if (distance <= limit && distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

unsigned display_width(llvm::StringRef text) { return display_line(text).columns.back(); }

} // namespace fhr
