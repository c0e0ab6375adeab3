#pragma once
/// \file
/// The canonical layout of a `.fhr` file (`fhr-plan fmt`): one statement a
/// line, two spaces of indentation per block, single spaces between
/// tokens, `a..b` without spaces unless a bound is an expression. The
/// author's choices that carry meaning for a reader are kept: comments
/// (trailing ones at their column when it still fits), `@line` directives,
/// single blank lines, blocks written on one line, parentheses, number
/// spellings (`1_000_000`, `40 GiB`), location aliases and string escapes.
/// Formatting is idempotent and the result parses to the same tree.

#include "fhr/dsl/ast.hpp"
#include "fhr/dsl/diagnostics.hpp"

#include <string>

namespace fhr {

/// The formatted text of a file that parsed without errors.
std::string format_file(const SourceFile &source, const ast::File &file);

} // namespace fhr
