#pragma once
/// \file
/// Lowering: a checked module to bytecode (docs/bytecode.md). Values and
/// locations become indices, families stay one declaration, consecutive
/// members of a family written by one statement become one range operand,
/// names and labels go to the string table, and every instruction records
/// its source line. The output is canonical: the same module always gives
/// the same bytes.

#include "fhr/compiler/ir.hpp"
#include "fhr/dsl/diagnostics.hpp"

#include <vector>

namespace fhr {

std::vector<char> lower_module(const ir::Module &module, const SourceFile &source);

} // namespace fhr
