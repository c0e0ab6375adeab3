#pragma once
/// \file
/// From a path to a checked module: read, parse, analyse. Also parses the
/// command line's `--budget LOC=SIZE` overrides with the language's own size
/// syntax.

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

/// Reads `path` ("-" for standard input). Fails only when the file cannot be
/// read; syntax and semantic errors are in the result's diagnostics.
llvm::Expected<CompiledFile> compile_file(llvm::StringRef path);
/// Compiles text held in memory (tests, fuzzing).
CompiledFile compile_text(llvm::StringRef text, llvm::StringRef name = "<input>");

/// Parses "cuda:0=40 GiB".
llvm::Expected<BudgetOverride> parse_budget_override(llvm::StringRef text);

} // namespace fhr
