#pragma once
/// \file
/// Semantic analysis: AST to IR. Reports unknown and duplicate names (with
/// did-you-mean hints), bad locations, size overflow, underflow and division
/// by zero, out-of-range family indices, empty names and misplaced
/// statements into the SourceFile; keeps going after an error so that one run
/// shows them all.

#include "fhr/bytecode/limits.hpp"
#include "fhr/compiler/ir.hpp"
#include "fhr/dsl/ast.hpp"
#include "fhr/dsl/diagnostics.hpp"

#include <optional>

namespace fhr {

/// Limit on values plus unrolled statements, so that a small file cannot ask
/// for unbounded memory (`for i in 0..1000000000000`).
inline constexpr std::uint64_t kMaxExpandedItems = 10'000'000;
/// Limit on the statements of all programs, unrolled (scopes' bodies
/// included; the plans they run are not statements): each is a record of
/// a few hundred bytes in the IR, four times a plan action's, so the
/// expansion limit alone let a loop of 45 bytes ask `check` for 1.9 GB and
/// 11 s. The planner's printed programs have a statement per step (at most
/// 99,999).
inline constexpr std::uint64_t kMaxProgramStatements = 1'000'000;
/// Limit on declared values: the module's (fhr/bytecode/limits.hpp).
inline constexpr std::uint64_t kMaxValues = bytecode::kMaxValues;

ir::Module analyze(const ast::File &file, SourceFile &source);

/// Evaluates a constant size expression with no names in scope (command-line
/// overrides). Reports into `source`.
std::optional<std::uint64_t> evaluate_constant(const ast::File &file, ast::ExprId expression,
                                               SourceFile &source);

} // namespace fhr
