#pragma once
/// \file
/// Located diagnostics: a stable code, a message, a span and an optional
/// hint, printed through LLVM's SourceMgr as `file:line:col`, the source line
/// and a caret under the span.

#include "fhr/dsl/ast.hpp"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fhr {

enum class DiagCode : std::uint8_t {
#define FHR_DIAGNOSTIC(identifier, code, summary) identifier,
#include "fhr/dsl/diagnostic_codes.def"
#undef FHR_DIAGNOSTIC
};

/// "E0101", ...
llvm::StringRef diag_code_text(DiagCode code);
/// The one-line summary of the code.
llvm::StringRef diag_code_summary(DiagCode code);
/// Every code, in table order (for documentation checks).
std::vector<DiagCode> all_diag_codes();

struct Diagnostic {
  DiagCode code;
  std::string message;
  ast::Span span;
  std::string hint; ///< printed as a note, e.g. "did you mean 'rotkey'?"
};

/// One source buffer with the diagnostics found in it.
class SourceFile {
public:
  /// Takes the buffer; `name` is what diagnostics print ("-" for stdin).
  SourceFile(std::unique_ptr<llvm::MemoryBuffer> buffer);

  llvm::StringRef name() const;
  llvm::StringRef text() const;
  /// 1-based line and column of a byte offset, lines as `@line` directives
  /// renumber them.
  std::pair<unsigned, unsigned> line_and_column(std::uint32_t offset) const;
  /// Records a `@line` directive (in source order).
  void add_line_mark(ast::LineMark mark) { line_marks_.push_back(mark); }

  void report(DiagCode code, std::string message, ast::Span span, std::string hint = {});
  const std::vector<Diagnostic> &diagnostics() const { return diagnostics_; }
  bool has_errors() const { return !diagnostics_.empty(); }

  /// Prints every diagnostic, in source order, with caret lines.
  void print(llvm::raw_ostream &os, bool colors) const;
  /// Prints one located message (used for infeasible actions too).
  void print_message(llvm::raw_ostream &os, ast::Span span, llvm::SourceMgr::DiagKind kind,
                     const llvm::Twine &message, bool colors) const;

private:
  llvm::SourceMgr source_manager_;
  unsigned buffer_id_ = 0;
  std::vector<Diagnostic> diagnostics_;
  std::vector<ast::LineMark> line_marks_;
};

/// The closest candidate by edit distance, if close enough to suggest.
std::string closest_match(llvm::StringRef name, const std::vector<std::string> &candidates);

} // namespace fhr
