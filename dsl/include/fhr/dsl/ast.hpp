#pragma once
/// \file
/// The syntax tree of a `.fhr` file. Statements, expressions and operands
/// live in flat arrays and refer to each other by index, so a file with a
/// million actions is a few large allocations rather than millions of small
/// ones. Every node keeps the byte span of its text for diagnostics, and its
/// names and strings only as spans: the File reads them out of the parsed
/// buffer (which outlives the tree), so a node holds no pointers and an
/// action statement takes about a hundred bytes.

#include <cstdint>
#include <string_view>
#include <vector>

namespace fhr::ast {

/// Byte offsets [begin, end) into the parsed buffer.
struct Span {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

using ExprId = std::uint32_t;
using StmtId = std::uint32_t;
inline constexpr std::uint32_t kNone = ~std::uint32_t{0};

enum class ExprKind : std::uint8_t { Number, Name, Add, Subtract, Multiply, Divide };

struct Expr {
  std::uint64_t number = 0; ///< Number: the value with its unit applied
  Span span;
  Span name_span; ///< Name: the name (`span` grows over parentheses), see File::name
  ExprId lhs = kNone, rhs = kNone;
  ExprKind kind = ExprKind::Number;
  bool number_overflow = false; ///< Number: literal times unit does not fit 64 bits
  bool number_inexact =
      false;             ///< Number: a decimal that is not a whole number of bytes (`number` is its floor)
  bool has_unit = false; ///< Number: written with a unit
  bool parenthesized = false; ///< written inside parentheses
};

/// A location as written: a fixed spelling, or `cuda:{expr}`.
struct LocationRef {
  Span span;                  ///< its text, e.g. "pinned", "cuda:3" (File::text)
  ExprId device_expr = kNone; ///< set for cuda:{expr}
  bool present = false;
};

enum class OperandKind : std::uint8_t { Whole, Index, Range, All };

/// `name`, `name[i]`, `name[lo..hi]` or `name[*]`.
struct Operand {
  OperandKind kind = OperandKind::Whole;
  Span span;
  std::uint32_t name_end = 0; ///< the name is [span.begin, name_end), see File::name
  ExprId first = kNone;       ///< index, or range start
  ExprId last = kNone;        ///< range end (exclusive)
};

enum class StmtKind : std::uint8_t {
  Const,
  Budget,
  LocationDecl,
  Devices,
  Value,
  Ensure,
  Copy,
  Move,
  Drop,
  Discard,
  Hold,
  Lease,
  Acquire,
  Reserve,
  Release,
  Plan,
  Reclaim,
  Enter,
  Exit,
  Program,
  Scope,
  Run,
  Actions,
  For,
  // Workloads (workload_grammar.hpp)
  Tier,
  Step,
  Need,
  Workspace,
  Compute,
};

struct Stmt {
  StmtKind kind = StmtKind::Const;
  bool has_text = false; ///< a string literal was written (File::text)
  Span span;             ///< the whole statement
  Span keyword;          ///< its first word
  Span name_span;        ///< const / value / for variable / release target (File::name)
  /// A string literal, quotes included (plan, label, ...), or a compute
  /// statement's duration (File::text).
  Span text_span;
  /// `as NAME` (File::alias). A statement with a block takes no `as`: there
  /// it holds the offsets of the block's `{` (begin) and `}` (end), see
  /// block_braces().
  Span alias_span;
  ExprId exprs[3] = {kNone, kNone, kNone}; ///< see the grammar for each kind
  LocationRef locations[2];                ///< [1] is `from` of a move
  std::uint32_t first_operand = 0, operand_count = 0;
  std::uint32_t first_child = 0, child_count = 0;
  /// Value: replica mode given, `replicable`, `source` placement.
  bool replicable = false;
  bool source_placement = false;
  bool family = false;     ///< Value: declared as name[count]
  bool pending = false;    ///< Lease: `pending`
  bool in_program = false; ///< Plan: `in program` (runs only inside programs)
  bool exclusive = false;  ///< Value: `exclusive` written
};

/// The offsets of a block statement's `{` and `}`: {kNone, kNone} without a
/// block. (Kept in alias_span, unused by blocks, so statements stay small.)
inline Span block_braces(const Stmt &s) {
  switch (s.kind) {
  case StmtKind::Plan:
  case StmtKind::Reclaim:
  case StmtKind::Enter:
  case StmtKind::Exit:
  case StmtKind::Program:
  case StmtKind::Scope:
  case StmtKind::Actions:
  case StmtKind::Step:
  case StmtKind::For: return s.alias_span;
  default: return {kNone, kNone};
  }
}

struct File {
  /// The parsed buffer: every span of the tree is into it. It belongs to the
  /// SourceFile, which outlives the tree.
  std::string_view source;
  std::vector<Stmt> statements;
  std::vector<Expr> exprs;
  std::vector<Operand> operands;
  /// Children of blocks, contiguous per block.
  std::vector<StmtId> children;
  std::vector<StmtId> top_level;

  /// The source text of `span` (the parser's spans lie within the buffer:
  /// no bounds check, which sema would pay for every operand and location).
  std::string_view text(Span span) const { return {source.data() + span.begin, span.end - span.begin}; }
  /// A const, value, `for` variable or release target's name; empty if none.
  std::string_view name(const Stmt &s) const { return text(s.name_span); }
  /// A string literal's raw contents between the quotes (escapes are
  /// sema's), or a compute statement's duration as written; empty if none.
  std::string_view text(const Stmt &s) const {
    if (!s.has_text) return text(s.text_span);
    return text(Span{s.text_span.begin + 1, s.text_span.end - 1});
  }
  /// `as NAME`; empty without one (and for blocks, which take none).
  std::string_view alias(const Stmt &s) const {
    return block_braces(s).begin == kNone ? text(s.alias_span) : std::string_view();
  }
  /// A location as written ("pinned", "cuda:3", "cuda:{d + 1}").
  std::string_view text(const LocationRef &ref) const { return text(ref.span); }
  /// An operand's value or family name.
  std::string_view name(const Operand &o) const { return text(Span{o.span.begin, o.name_end}); }
  /// A Name expression's name.
  std::string_view name(const Expr &e) const { return text(e.name_span); }
};

/// A `@line N` directive: lines after the one holding byte `offset` count
/// from `line`.
struct LineMark {
  std::uint32_t offset = 0;
  std::uint32_t line = 0;
};

} // namespace fhr::ast
