#pragma once
/// \file
/// Prints a verified bytecode module as `.fhr` text that compiles back to the
/// same bytes: sizes exact, families and ranges as written, and `@line`
/// directives that give every statement its original source line. The same
/// layout gives a module's source spans: a module keeps only lines, and the
/// columns and excerpts of its outputs are those of this text.

#include "fhr/bytecode/module.hpp"
#include "fhr/compiler/span_table.hpp"

#include <memory>
#include <string>

namespace fhr {

std::string disassemble(const bytecode::Module &module, const std::string &origin);

/// The span table of a module read from `file`: each instruction at its
/// line and at the column its statement has in the disassembly.
SpanTable module_spans(std::shared_ptr<const bytecode::Module> module, const std::string &file);

} // namespace fhr
