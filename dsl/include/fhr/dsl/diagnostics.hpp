#pragma once
/// \file
/// Located diagnostics: a stable code, a severity, a message, a span, notes
/// at other spans ("first declared here"), an optional fix-it and a hint,
/// printed as `file:line:col: error: [CODE] message`, the source line and a
/// caret under the span. Columns count Unicode code points; carets line up
/// under wide characters. Warnings can be turned off or into errors
/// (`-Wno-FLAG`, `-Werror=FLAG`); errors past a limit stop the front end.

#include "fhr/dsl/ast.hpp"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <bitset>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fhr {

enum class DiagCode : std::uint8_t {
#define FHR_DIAGNOSTIC(identifier, code, summary) identifier,
#define FHR_WARNING(identifier, code, flag, summary) identifier,
#include "fhr/dsl/diagnostic_codes.def"
#undef FHR_WARNING
#undef FHR_DIAGNOSTIC
};

/// "E0101", "W0001", ...
llvm::StringRef diag_code_text(DiagCode code);
/// The one-line summary of the code.
llvm::StringRef diag_code_summary(DiagCode code);
/// Whether the code is a warning (W0xxx); its `-W` flag name, empty for errors.
bool diag_code_is_warning(DiagCode code);
llvm::StringRef warning_flag(DiagCode code);
/// Every code, in table order (for documentation checks).
std::vector<DiagCode> all_diag_codes();
/// The code spelled `text` ("E0009", case-insensitive), if any.
std::optional<DiagCode> find_diag_code(llvm::StringRef text);

enum class Severity : std::uint8_t { Error, Warning };

/// A message at another place that explains the diagnostic.
struct DiagnosticNote {
  ast::Span span;
  std::string message;
};

/// A suggested edit: replace the text of `span` with `replacement`.
struct FixIt {
  ast::Span span;
  std::string replacement;
};

struct Diagnostic {
  DiagCode code;
  std::string message;
  ast::Span span;
  std::string hint; ///< printed as a note at `span`, e.g. "did you mean 'rotkey'?"
  Severity severity = Severity::Error;
  std::vector<DiagnosticNote> notes;
  std::optional<FixIt> fix;
  /// How many times this exact diagnostic was reported (iterations of a loop).
  std::uint32_t occurrences = 1;
  /// A warning made an error by -Werror: printed with its flag.
  bool promoted = false;
};

/// Which warnings are reported and which count as errors, and how many
/// errors the front end reports before it stops.
struct DiagnosticOptions {
  /// Errors reported before the front end stops (0: no limit).
  unsigned error_limit = 20;
  std::bitset<32> disabled;  ///< by warning ordinal (W0001 is 0)
  std::bitset<32> as_error;  ///< -Werror=FLAG
  bool all_as_error = false; ///< -Werror
  bool all_disabled = false; ///< -Wnone / -w

  /// Applies one `-W` argument without its `-W`: `FLAG`, `no-FLAG`,
  /// `error`, `error=FLAG`, `no-error`, `no-error=FLAG`, `all`, `none`.
  llvm::Error apply_flag(llvm::StringRef flag);
  bool enabled(DiagCode warning) const;
  bool is_error(DiagCode warning) const;
};

/// One source buffer with the diagnostics found in it.
class SourceFile {
public:
  /// Takes the buffer; its identifier is what diagnostics print.
  explicit SourceFile(std::unique_ptr<llvm::MemoryBuffer> buffer, DiagnosticOptions options = {});

  llvm::StringRef name() const;
  llvm::StringRef text() const;
  const DiagnosticOptions &options() const { return options_; }
  /// 1-based line and column of a byte offset, lines as `@line` directives
  /// renumber them; the column counts code points (an invalid byte is one).
  std::pair<unsigned, unsigned> line_and_column(std::uint32_t offset) const;
  /// Records a `@line` directive (in source order).
  void add_line_mark(ast::LineMark mark) { line_marks_.push_back(mark); }

  /// Records a diagnostic: a warning that is off is dropped, one under
  /// -Werror becomes an error, a repeat of an identical one counts as an
  /// occurrence of it, and errors past the limit are dropped.
  void report(Diagnostic diagnostic);
  void report(DiagCode code, std::string message, ast::Span span, std::string hint = {});
  void warn(DiagCode code, std::string message, ast::Span span, std::string hint = {});
  const std::vector<Diagnostic> &diagnostics() const { return diagnostics_; }
  /// Adds `note` to every error reported from index `first` on.
  void add_note_to_errors_since(std::size_t first, const DiagnosticNote &note);
  bool has_errors() const { return error_count_ > 0; }
  unsigned error_count() const { return error_count_; }
  unsigned warning_count() const { return warning_count_; }
  /// The error limit was reached: the front end stops.
  bool stopped() const { return stopped_; }

  /// Prints every diagnostic, in source order, with caret lines.
  void print(llvm::raw_ostream &os, bool colors) const;
  /// Prints one located message (used for infeasible actions too).
  void print_message(llvm::raw_ostream &os, ast::Span span, llvm::SourceMgr::DiagKind kind,
                     const llvm::Twine &message, bool colors) const;
  /// The source line holding `offset`, without its line break.
  llvm::StringRef line_text(std::uint32_t offset) const;

private:
  llvm::SourceMgr source_manager_;
  unsigned buffer_id_ = 0;
  DiagnosticOptions options_;
  std::vector<Diagnostic> diagnostics_;
  std::vector<ast::LineMark> line_marks_;
  /// (span, code, message hash) -> index in diagnostics_, for repeats.
  llvm::DenseMap<std::pair<std::uint64_t, std::uint64_t>, std::size_t> seen_;
  unsigned error_count_ = 0;
  unsigned warning_count_ = 0;
  bool stopped_ = false;
};

/// The closest candidate by edit distance, if close enough to suggest: at
/// most a third of the name's letters differ (or `max_distance`, if given).
std::string closest_match(llvm::StringRef name, const std::vector<std::string> &candidates,
                          unsigned max_distance = 0);

/// Number of display columns of UTF-8 text (wide characters count 2,
/// invalid bytes and control characters 1).
unsigned display_width(llvm::StringRef text);

} // namespace fhr
