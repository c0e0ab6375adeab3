#pragma once
/// \file
/// The side table of source spans of a module: for every instruction, plan
/// and program, the file, line and column range it was written at, and the
/// text of that line for the excerpt under a message. Every output (explain
/// text and JSON, check's text, GitHub and SARIF formats) locates steps
/// through it.
///
/// Lowering fills it from the `.fhr` source. A module read from a `.fhrb`
/// file has only lines (its LINES section); its columns and excerpts are
/// those of the module's disassembled text, which is what the outputs for
/// modules have always shown (module_spans() in disasm.hpp).

#include "fhr/dsl/ast.hpp"

#include <llvm/ADT/Twine.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fhr {

/// Where something was written; 0 where unknown.
struct SourceSpan {
  std::uint32_t line = 0;       ///< 1-based line (as `@line` directives number them)
  std::uint32_t column = 0;     ///< 1-based column of the first byte
  std::uint32_t end_column = 0; ///< one past the last column on that line
};

class SpanTable {
public:
  SpanTable() = default;
  /// `excerpt(i)` returns the text of the line instruction i is written on.
  SpanTable(std::string file_name, std::function<std::string(std::uint32_t)> excerpt)
      : file(std::move(file_name)), excerpt_(std::move(excerpt)) {}

  std::string file;                     ///< as diagnostics name it ("<stdin>" for standard input)
  std::vector<SourceSpan> instructions; ///< one per instruction of the module
  std::vector<SourceSpan> plans;        ///< each plan's name
  std::vector<SourceSpan> programs;     ///< each program's keyword
  /// For a module lowered from text: each instruction's statement as byte
  /// offsets into that text, where diagnostics found by running the module
  /// point (W0006); empty for a module file.
  std::vector<ast::Span> statements;

  /// The text of instruction i's line, without the line break.
  std::string excerpt(std::uint32_t instruction) const {
    return excerpt_ ? excerpt_(instruction) : std::string();
  }

  /// Prints `file:line:col: kind: message`, the line and a caret under the
  /// instruction's span, exactly as LLVM's SourceMgr prints a diagnostic.
  void print_message(llvm::raw_ostream &os, std::uint32_t instruction, llvm::SourceMgr::DiagKind kind,
                     const llvm::Twine &message, bool colors) const;

private:
  std::function<std::string(std::uint32_t)> excerpt_;
};

} // namespace fhr
