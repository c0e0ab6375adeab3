#pragma once
/// \file
/// Lowering: a checked module to bytecode (docs/bytecode.md), one
/// instruction per IR action (a family range stays one instruction) and per
/// declaration, lifetime, release and program item. Values and locations
/// become indices, names and labels go to the string table, and every
/// instruction gets its source span in the side table and its line in the
/// module. The bytes come from the bytecode writer (runtime/bytecode); the
/// output is canonical: the same module always gives the same bytes.

#include "fhr/bytecode/module.hpp"
#include "fhr/compiler/ir.hpp"
#include "fhr/compiler/span_table.hpp"
#include "fhr/dsl/diagnostics.hpp"

#include <vector>

namespace fhr {

struct Lowered {
  bytecode::Module module;
  SpanTable spans;
};

/// The module and its span table (the table's excerpts read `source`,
/// which must outlive it).
Lowered lower(const ir::Module &module, const SourceFile &source);

/// The bytes of the lowered module (`fhr-plan compile`).
std::vector<char> lower_module(const ir::Module &module, const SourceFile &source);

} // namespace fhr
