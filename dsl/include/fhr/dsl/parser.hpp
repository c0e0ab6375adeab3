#pragma once
/// \file
/// Parses a `.fhr` buffer into an AST. Syntax errors are reported into the
/// SourceFile (several per run: the parser resumes at the next line that
/// starts a top-level statement); the returned tree holds every statement
/// that parsed.

#include "fhr/dsl/ast.hpp"
#include "fhr/dsl/diagnostics.hpp"

#include <string_view>

namespace fhr {

/// Largest input accepted (offsets are 32-bit).
inline constexpr std::size_t kMaxSourceBytes = std::size_t{1} << 30;
/// Deepest nesting of parentheses, `for` loops and scopes.
inline constexpr unsigned kMaxNestingDepth = 64;

ast::File parse(SourceFile &source);

/// Parses one standalone size expression (for `--budget LOC=SIZE`).
/// Returns false and reports into `source` on a syntax error.
bool parse_expression(SourceFile &source, ast::File &file, ast::ExprId &expression);

/// Whether `word` is an identifier of the language: a letter or `_`, then
/// letters, digits and `_`.
bool is_identifier(std::string_view word);
/// Whether `word` is one of the language's keywords (`value`, `location`,
/// `plan`, ...), which no name may be.
bool is_keyword(std::string_view word);

} // namespace fhr
