#pragma once
/// \file
/// From a path to a verified module: read, then parse, analyse and lower a
/// `.fhr` text, or load and verify a `.fhrb` module (recognised by its
/// magic). Either way the result is a verified bytecode module with its span
/// table, which explain, check and run interpret; a module file is never
/// turned back into text for that. Also parses the command line's
/// `--budget LOC=SIZE` overrides with the language's own size syntax.

#include "fhr/bytecode/module.hpp"
#include "fhr/compiler/ir.hpp"
#include "fhr/compiler/span_table.hpp"
#include "fhr/dsl/ast.hpp"
#include "fhr/dsl/diagnostics.hpp"
#include "fhr/executor/model_target.hpp"

#include <llvm/Support/Error.h>

#include <memory>
#include <optional>
#include <vector>

namespace fhr {

/// How files are read and checked.
struct CompileOptions {
  DiagnosticOptions diagnostics;
  /// What `-` is called in diagnostics and reports (`--stdin-filename`).
  std::string stdin_name = "<stdin>";
};

/// A diagnostic without a place in a source file: about the command line
/// (`file` empty) or about a whole file that could not be read or loaded.
struct InputDiagnostic {
  std::string file;
  DiagCode code = DiagCode::BadOption;
  Severity severity = Severity::Error;
  std::string message;
};

/// An `llvm::Error` whose text starts with "[E0xxx] " as an InputDiagnostic.
InputDiagnostic input_diagnostic(std::string file, llvm::Error error);

/// A module that loaded (and so verified), with where its instructions were written.
struct VerifiedModule {
  std::shared_ptr<const bytecode::Module> module;
  std::vector<char> bytes; ///< its encoding (what `compile` writes)
  SpanTable spans;
};

struct CompiledFile {
  std::string name; ///< as given ("<stdin>" for standard input)
  /// The text of a `.fhr` file with its diagnostics; null for a module file.
  std::unique_ptr<SourceFile> source;
  ast::File syntax;
  ir::Module module; ///< sema's result (empty for a module file)
  /// Set when the file had no errors.
  std::optional<VerifiedModule> lowered;

  bool ok() const { return !source || !source->has_errors(); }
};

/// Reads `path` ("-" for standard input): `.fhr` text, or a bytecode module
/// (recognised by its magic), which is loaded and verified. Fails when the
/// file cannot be read or the module does not verify; syntax and semantic
/// errors are in the result's diagnostics.
llvm::Expected<CompiledFile> compile_file(llvm::StringRef path, const CompileOptions &options = {});

/// Reads a file that must be a bytecode module, loads and verifies it.
llvm::Expected<bytecode::Module> load_module_file(llvm::StringRef path);

/// Whether `bytes` start with the bytecode magic.
bool is_module(llvm::StringRef bytes);
/// Compiles text held in memory (tests, fuzzing).
CompiledFile compile_text(llvm::StringRef text, llvm::StringRef name = "<input>",
                          const CompileOptions &options = {});
/// A module held in memory, as compile_file reads a `.fhrb` file (tests, fuzzing).
llvm::Expected<CompiledFile> compile_module_bytes(llvm::StringRef bytes, llvm::StringRef name);

/// Parses "cuda:0=40 GiB".
llvm::Expected<BudgetOverride> parse_budget_override(llvm::StringRef text);

/// Every `--budget` of a command line: the overrides in order, a warning
/// for a size without a unit (W0001) and for a location given twice
/// (W0005: the last one applies), errors for those that do not parse.
struct ParsedOverrides {
  std::vector<BudgetOverride> overrides;
  std::vector<std::string> texts; ///< as written, parallel to overrides
  std::vector<InputDiagnostic> diagnostics;
};
ParsedOverrides parse_budget_overrides(const std::vector<std::string> &texts,
                                       const DiagnosticOptions &options);

/// E0502: an override at a device that `file` does not declare (`devices N`)
/// is an error in that file, reported at its `devices` statement.
void check_overrides(CompiledFile &file, const ParsedOverrides &overrides);

} // namespace fhr
