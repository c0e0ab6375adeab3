#pragma once
/// \file
/// From a path to a checked module: read, parse, analyse. Also parses the
/// command line's `--budget LOC=SIZE` overrides with the language's own size
/// syntax.

#include "fhr/bytecode/module.hpp"
#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/ir.hpp"
#include "fhr/dsl/ast.hpp"
#include "fhr/dsl/diagnostics.hpp"

#include <llvm/Support/Error.h>

#include <memory>

namespace fhr {

struct CompiledFile {
  std::unique_ptr<SourceFile> source;
  ast::File syntax;
  ir::Module module;

  bool ok() const { return !source->has_errors(); }
};

/// Reads `path` ("-" for standard input): `.fhr` text, or a bytecode module
/// (recognised by its magic), which is verified and disassembled first so
/// that it is explained exactly as its source. Fails when the file cannot be
/// read or the module does not verify; syntax and semantic errors are in the
/// result's diagnostics.
llvm::Expected<CompiledFile> compile_file(llvm::StringRef path);

/// Reads a file that must be a bytecode module, loads and verifies it.
llvm::Expected<bytecode::Module> load_module_file(llvm::StringRef path);

/// Whether `bytes` start with the bytecode magic.
bool is_module(llvm::StringRef bytes);
/// Compiles text held in memory (tests, fuzzing).
CompiledFile compile_text(llvm::StringRef text, llvm::StringRef name = "<input>");

/// Parses "cuda:0=40 GiB".
llvm::Expected<BudgetOverride> parse_budget_override(llvm::StringRef text);

} // namespace fhr
