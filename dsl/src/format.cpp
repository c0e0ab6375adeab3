#include "fhr/dsl/format.hpp"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <span>

namespace fhr {

namespace {

using ast::ExprKind;
using ast::StmtKind;

/// A comment or `@line` directive of the source.
struct Trivia {
  std::uint32_t begin = 0, end = 0; ///< end excludes the line break
  bool directive = false;
};

/// Comments and directives, found with the lexical rules of the grammar
/// (`#` outside strings runs to the end of the line).
std::vector<Trivia> scan_trivia(llvm::StringRef text) {
  std::vector<Trivia> out;
  const auto size = static_cast<std::uint32_t>(text.size());
  for (std::uint32_t i = 0; i < size; ++i) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < size && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\') ++i;
      continue;
    }
    if (c != '#' && !(c == '@' && text.substr(i).startswith("@line"))) continue;
    std::uint32_t end = i;
    while (end < size && text[end] != '\n')
      ++end;
    std::uint32_t trimmed = end;
    while (trimmed > i &&
           (text[trimmed - 1] == '\r' || text[trimmed - 1] == ' ' || text[trimmed - 1] == '\t'))
      --trimmed;
    out.push_back({i, trimmed, c == '@'});
    i = end;
  }
  return out;
}

class Formatter {
public:
  Formatter(const SourceFile &source, const ast::File &file)
      : text_(source.text()), file_(file), trivia_(scan_trivia(text_)) {}

  std::string run() {
    bool first = true;
    for (ast::StmtId id : file_.top_level) {
      item(id, 0, first);
      first = false;
    }
    flush_trivia(static_cast<std::uint32_t>(text_.size()), 0, false);
    std::string out;
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      llvm::StringRef line = lines_[i];
      out += line.rtrim(" ").str();
      out += '\n';
    }
    // One line break at the end, no blank lines there.
    while (out.size() > 1 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n')
      out.pop_back();
    if (out == "\n") out.clear();
    return out;
  }

private:
  const ast::Stmt &stmt(ast::StmtId id) const { return file_.statements[id]; }
  /// The statement's `{` and `}` (begin, end), or kNone for a statement without a block.
  ast::Span braces(ast::StmtId id) const { return ast::block_braces(stmt(id)); }
  std::span<const ast::StmtId> children(const ast::Stmt &s) const {
    return {file_.children.data() + s.first_child, s.child_count};
  }
  llvm::StringRef source(ast::Span span) const { return text_.substr(span.begin, span.end - span.begin); }
  bool same_line(std::uint32_t a, std::uint32_t b) const {
    return text_.substr(std::min(a, b), std::max(a, b) - std::min(a, b)).find('\n') == llvm::StringRef::npos;
  }
  unsigned newlines(std::uint32_t a, std::uint32_t b) const {
    return b > a ? static_cast<unsigned>(text_.substr(a, b - a).count('\n')) : 0;
  }

  // ---- lines and trivia ---------------------------------------------------------
  void new_line(unsigned indent) { lines_.emplace_back(2 * indent, ' '); }
  void blank_line() {
    if (!lines_.empty() && !lines_.back().empty()) lines_.emplace_back();
  }

  /// Emits the comments and directives before `until`. `first_in_block`
  /// suppresses a blank line right after an opening brace.
  /// Returns whether a blank line separates the last of them from `until`.
  bool flush_trivia(std::uint32_t until, unsigned indent, bool first_in_block) {
    bool first = first_in_block;
    while (next_trivia_ < trivia_.size() && trivia_[next_trivia_].begin < until) {
      const Trivia t = trivia_[next_trivia_++];
      const llvm::StringRef comment = source({t.begin, t.end});
      if (!lines_.empty() && has_code_ && same_line(cursor_, t.begin) && !t.directive) {
        // A trailing comment: at its column if the code still leaves room.
        const std::size_t newline = text_.rfind('\n', t.begin);
        const std::size_t line_start = newline == llvm::StringRef::npos ? 0 : newline + 1;
        const unsigned column = display_width(text_.substr(line_start, t.begin - line_start));
        const unsigned used = display_width(lines_.back());
        lines_.back().append(column > used ? column - used : 1, ' ');
        lines_.back() += comment.str();
      } else {
        if (!first && newlines(cursor_, t.begin) >= 2) blank_line();
        if (t.directive)
          lines_.emplace_back();
        else
          new_line(indent);
        lines_.back() += comment.str();
      }
      has_code_ = true;
      first = false;
      cursor_ = t.end;
    }
    return !first && newlines(cursor_, until) >= 2;
  }

  // ---- expressions ----------------------------------------------------------------
  static const char *operator_text(ExprKind kind) {
    switch (kind) {
    case ExprKind::Add: return " + ";
    case ExprKind::Subtract: return " - ";
    case ExprKind::Multiply: return " * ";
    default: return " / ";
    }
  }

  std::string number(const ast::Expr &e) const {
    llvm::StringRef written = source(e.span);
    while (written.startswith("(") && written.endswith(")"))
      written = written.drop_front().drop_back().trim();
    const llvm::StringRef digits =
        written.take_while([](char c) { return llvm::isDigit(c) || c == '_' || c == '.'; });
    const llvm::StringRef unit = written.drop_front(digits.size()).trim();
    return unit.empty() ? digits.str() : digits.str() + " " + unit.str();
  }

  /// Left-associative chains are walked, not recursed (`1+1+...+1` is as
  /// deep as it is long); right operands nest only through parentheses.
  std::string expression(ast::ExprId id) const {
    std::vector<ast::ExprId> spine;
    ast::ExprId base = id;
    while (file_.exprs[base].kind != ExprKind::Number && file_.exprs[base].kind != ExprKind::Name &&
           (base == id || !file_.exprs[base].parenthesized)) {
      spine.push_back(base);
      base = file_.exprs[base].lhs;
    }
    const ast::Expr &b = file_.exprs[base];
    std::string out = b.kind == ExprKind::Number ? number(b)
                      : b.kind == ExprKind::Name ? std::string(file_.name(b))
                                                 : expression(base);
    if (b.parenthesized && base != id) out = "(" + out + ")";
    for (auto it = spine.rbegin(); it != spine.rend(); ++it) {
      const ast::Expr &e = file_.exprs[*it];
      const ast::Expr &rhs = file_.exprs[e.rhs];
      std::string right = expression(e.rhs);
      if (rhs.parenthesized) right = "(" + right + ")";
      out += operator_text(e.kind) + right;
    }
    return out; // a parenthesized `id` gets its parentheses from the caller
  }
  std::string top_expression(ast::ExprId id) const {
    std::string out = expression(id);
    return file_.exprs[id].parenthesized ? "(" + out + ")" : out;
  }
  bool compound(ast::ExprId id) const {
    const ast::Expr &e = file_.exprs[id];
    return e.kind != ExprKind::Number && e.kind != ExprKind::Name && !e.parenthesized;
  }
  std::string range(ast::ExprId first, ast::ExprId last) const {
    const char *dots = compound(first) || compound(last) ? " .. " : "..";
    return top_expression(first) + dots + top_expression(last);
  }

  // ---- pieces -----------------------------------------------------------------------
  std::string location(const ast::LocationRef &ref) const {
    if (ref.device_expr != ast::kNone) return "cuda:{" + top_expression(ref.device_expr) + "}";
    return std::string(file_.text(ref));
  }
  std::string operand(const ast::Operand &o) const {
    std::string out(file_.name(o));
    switch (o.kind) {
    case ast::OperandKind::Whole: break;
    case ast::OperandKind::Index: out += "[" + top_expression(o.first) + "]"; break;
    case ast::OperandKind::Range: out += "[" + range(o.first, o.last) + "]"; break;
    case ast::OperandKind::All: out += "[*]"; break;
    }
    return out;
  }
  std::string operands(const ast::Stmt &s) const {
    std::string out;
    for (std::uint32_t i = 0; i < s.operand_count; ++i)
      out += (i ? ", " : "") + operand(file_.operands[s.first_operand + i]);
    return out;
  }
  std::string string(const ast::Stmt &s) const { return source(s.text_span).str(); }
  std::string alias(const ast::Stmt &s) const {
    const std::string_view name = file_.alias(s);
    return name.empty() ? "" : " as " + std::string(name);
  }

  /// The statement's text up to its block, if it has one.
  std::string header(const ast::Stmt &s) const {
    switch (s.kind) {
    case StmtKind::Const: return "const " + std::string(file_.name(s)) + " = " + top_expression(s.exprs[0]);
    case StmtKind::Budget: return "budget " + location(s.locations[0]) + " " + top_expression(s.exprs[0]);
    case StmtKind::LocationDecl: return "location " + location(s.locations[0]);
    case StmtKind::Devices: return "devices " + top_expression(s.exprs[0]);
    case StmtKind::Value: {
      std::string out = "value " + std::string(file_.name(s));
      if (s.family) out += "[" + top_expression(s.exprs[0]) + "]";
      out += " " + top_expression(s.exprs[1]);
      if (s.exprs[2] != ast::kNone) out += " storage " + top_expression(s.exprs[2]);
      if (s.replicable) out += " replicable";
      if (s.exclusive) out += " exclusive";
      return out + (s.source_placement ? " source " : " at ") + location(s.locations[0]);
    }
    case StmtKind::Ensure:
      return "ensure " + operand(file_.operands[s.first_operand]) + " at " + location(s.locations[0]);
    case StmtKind::Copy:
      return "copy " + operand(file_.operands[s.first_operand]) + " to " + location(s.locations[0]);
    case StmtKind::Move:
      return "move " + operand(file_.operands[s.first_operand]) + " to " + location(s.locations[0]) +
             (s.locations[1].present ? " from " + location(s.locations[1]) : "");
    case StmtKind::Drop:
      return "drop " + operand(file_.operands[s.first_operand]) + " at " + location(s.locations[0]);
    case StmtKind::Discard: return "discard " + operand(file_.operands[s.first_operand]);
    case StmtKind::Hold: return "hold " + operands(s) + " at " + location(s.locations[0]) + alias(s);
    case StmtKind::Lease:
      return "lease " + operands(s) + " at " + location(s.locations[0]) + (s.pending ? " pending" : "") +
             alias(s);
    case StmtKind::Acquire: return "acquire " + operands(s) + " at " + location(s.locations[0]);
    case StmtKind::Reserve:
      return "reserve " + location(s.locations[0]) + " " + top_expression(s.exprs[0]) + " " + string(s) +
             alias(s);
    case StmtKind::Release: return "release " + std::string(file_.name(s));
    case StmtKind::Plan: return "plan " + string(s) + (s.in_program ? " in program" : "");
    case StmtKind::Reclaim: return "reclaim";
    case StmtKind::Enter: return "enter";
    case StmtKind::Exit: return "exit";
    case StmtKind::Program: return s.has_text ? "program " + string(s) : "program";
    case StmtKind::Scope: return "scope " + string(s);
    case StmtKind::Run: return "run " + string(s);
    case StmtKind::Actions: return "actions " + string(s);
    case StmtKind::For: return "for " + std::string(file_.name(s)) + " in " + range(s.exprs[0], s.exprs[1]);
    case StmtKind::Step: return "step " + string(s);
    // A workload's leaf statements keep their text (their operands are
    // already in canonical form after the keyword).
    case StmtKind::Tier:
    case StmtKind::Need:
    case StmtKind::Workspace:
    case StmtKind::Compute: return llvm::StringRef(source(s.span)).rtrim(" \t;").str();
    }
    return {};
  }

  /// The whole statement on one line (a block written on one line).
  std::string inline_text(ast::StmtId id) const {
    const ast::Stmt &s = stmt(id);
    std::string out = header(s);
    if (braces(id).begin == ast::kNone) return out;
    if (s.child_count == 0) return out + " { }";
    out += " {";
    bool first = true;
    // A step's items are separated by `;` on one line, other blocks' by blanks.
    const char *separator = s.kind == StmtKind::Step ? "; " : "  ";
    for (ast::StmtId child : children(s)) {
      out += first ? " " : separator;
      out += inline_text(child);
      first = false;
    }
    return out + " }";
  }

  void item(ast::StmtId id, unsigned indent, bool first_in_block) {
    const ast::Stmt &s = stmt(id);
    if (flush_trivia(s.span.begin, indent, first_in_block)) blank_line();
    new_line(indent);
    has_code_ = true;
    const ast::Span block = braces(id);
    const bool one_line = block.begin == ast::kNone || same_line(block.begin, block.end) ||
                          (s.child_count == 0 && !trivia_between(block.begin, block.end));
    if (one_line) {
      lines_.back() += inline_text(id);
      cursor_ = s.span.end;
      return;
    }
    lines_.back() += header(s) + " {";
    cursor_ = block.begin + 1;
    bool first = true;
    for (ast::StmtId child : children(s)) {
      item(child, indent + 1, first);
      first = false;
    }
    flush_trivia(block.end, indent + 1, first);
    new_line(indent);
    lines_.back() += "}";
    cursor_ = block.end + 1;
  }

  bool trivia_between(std::uint32_t a, std::uint32_t b) const {
    return std::any_of(trivia_.begin(), trivia_.end(),
                       [&](const Trivia &t) { return t.begin > a && t.begin < b; });
  }

  llvm::StringRef text_;
  const ast::File &file_;
  std::vector<Trivia> trivia_;
  std::size_t next_trivia_ = 0;
  std::vector<std::string> lines_;
  std::uint32_t cursor_ = 0; ///< source offset emitted so far
  bool has_code_ = false;
};

} // namespace

std::string format_file(const SourceFile &source, const ast::File &file) {
  return Formatter(source, file).run();
}

} // namespace fhr
