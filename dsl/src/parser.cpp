#include "fhr/dsl/parser.hpp"

#include "fhr/dsl/grammar.hpp"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <optional>
#include <type_traits>

namespace fhr {

namespace {

using ast::StmtKind;

/// The text of a token for a message: printable ASCII kept, other bytes as \xNN.
std::string printable(const char *begin, const char *end) {
  std::string out;
  for (const char *p = begin; p < end; ++p) {
    const auto byte = static_cast<unsigned char>(*p);
    if (byte >= 0x20 && byte < 0x7f) {
      out += *p;
    } else {
      static const char digits[] = "0123456789abcdef";
      out += "\\x";
      out += digits[byte >> 4];
      out += digits[byte & 15];
    }
  }
  return out;
}

const std::vector<std::string> kStatementKeywords = {
    "const",   "budget", "location", "devices", "value",   "ensure", "copy",    "move", "drop",
    "discard", "hold",   "lease",    "reserve", "release", "plan",   "program", "for"};
const std::vector<std::string> kPlanItems = {"reclaim", "reserve", "enter", "exit"};
const std::vector<std::string> kActionKeywords = {"ensure", "copy", "move", "drop", "discard", "for"};
const std::vector<std::string> kProgramItems = {"scope",  "run",  "actions", "acquire", "hold",    "reserve",
                                                "ensure", "copy", "move",    "drop",    "discard", "for"};
const std::vector<std::string> kLocationWords = {"pageable", "pinned", "pageable-host", "pinned-host"};

/// "did you mean 'value'?" when `word` is a near miss of one of `candidates`.
std::string suggest_word(llvm::StringRef word, const std::vector<std::string> &candidates) {
  if (word.empty() || std::find(candidates.begin(), candidates.end(), word) != candidates.end()) return {};
  // Keywords are short and typos often swap two letters (`valeu`), which
  // counts as two edits: allow two for words of four letters or more.
  const std::string match = closest_match(word, candidates, word.size() >= 4 ? 2 : 1);
  return match.empty() ? std::string() : "did you mean '" + match + "'?";
}

/// Thrown when the error limit is reached: parsing stops.
struct ErrorLimitReached {};

/// Parser state: the statements under construction (a stack, since blocks
/// nest), the expression stack and the nesting depth.
class Builder {
public:
  Builder(SourceFile &source, ast::File &file) : source_(source), file_(file), base_(source.text().data()) {}

  std::uint32_t offset(const char *p) const { return static_cast<std::uint32_t>(p - base_); }
  template <typename Input>
  ast::Span span(const Input &in) const {
    return {offset(in.begin()), offset(in.end())};
  }

  ast::Stmt &top() { return open_.back(); }
  const char *file_start() const { return base_; }
  ast::File &file() { return file_; }

  void open(StmtKind kind, ast::Span keyword) {
    ast::Stmt statement;
    statement.kind = kind;
    statement.keyword = keyword;
    statement.span = keyword;
    statement.first_operand = static_cast<std::uint32_t>(file_.operands.size());
    // Until it closes, first_child is where its children start on the stack.
    statement.first_child = static_cast<std::uint32_t>(pending_children_.size());
    open_.push_back(statement);
  }

  void close(std::uint32_t end) {
    ast::Stmt &statement = open_.back();
    statement.span.end = end;
    statement.operand_count = static_cast<std::uint32_t>(file_.operands.size()) - statement.first_operand;
    const auto children = pending_children_.begin() + statement.first_child;
    statement.child_count = static_cast<std::uint32_t>(pending_children_.end() - children);
    statement.first_child = static_cast<std::uint32_t>(file_.children.size());
    if (statement.child_count != 0) { // most statements are actions, without children
      file_.children.insert(file_.children.end(), children, pending_children_.end());
      pending_children_.erase(children, pending_children_.end());
    }
    const auto id = static_cast<ast::StmtId>(file_.statements.size());
    file_.statements.push_back(statement);
    open_.pop_back();
    (open_.empty() ? file_.top_level : pending_children_).push_back(id);
  }

  ast::ExprId push(const ast::Expr &expression) {
    const auto id = static_cast<ast::ExprId>(file_.exprs.size());
    file_.exprs.push_back(expression);
    expressions_.push_back(id);
    return id;
  }
  void push_id(ast::ExprId id) { expressions_.push_back(id); }
  ast::ExprId pop() {
    if (expressions_.empty()) return ast::kNone; // unreachable for a matched rule
    ast::ExprId id = expressions_.back();
    expressions_.pop_back();
    return id;
  }

  ast::ExprId take_device_expression() { return std::exchange(device_expression_, ast::kNone); }
  void set_device_expression(ast::ExprId id) { device_expression_ = id; }

  void enter_nesting(const char *at) {
    if (++depth_ <= kMaxNestingDepth) return;
    report(DiagCode::TooDeep, "nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels", at,
           at + 1, {});
    throw grammar::SyntaxAbort{};
  }
  void leave_nesting() { --depth_; }

  void report(DiagCode code, std::string message, const char *begin, const char *end, std::string hint,
              std::vector<DiagnosticNote> notes = {}) {
    Diagnostic diagnostic;
    diagnostic.code = code;
    diagnostic.message = std::move(message);
    diagnostic.span = {offset(begin), offset(end)};
    diagnostic.hint = std::move(hint);
    diagnostic.notes = std::move(notes);
    source_.report(std::move(diagnostic));
    error_reported_ = true;
    if (source_.stopped()) throw ErrorLimitReached{};
  }

  /// A block's `{` was read: the innermost open statement has it.
  void open_brace(std::uint32_t at) {
    top().alias_span.begin = at; // blocks take no `as`: see ast::block_braces
    braces_.push_back(at);
  }
  void close_brace(std::uint32_t at) {
    top().alias_span.end = at;
    if (!braces_.empty()) braces_.pop_back();
  }
  /// The innermost `{` still open, if any.
  std::optional<std::uint32_t> innermost_brace() const {
    if (braces_.empty()) return std::nullopt;
    return braces_.back();
  }

  /// After a failed statement: forget what it built, report it if nothing
  /// more precise was, and continue at the next statement.
  void recover(const char *begin, const char *end) {
    if (!error_reported_) {
      const char *word_end = begin;
      while (word_end < end && !llvm::isSpace(*word_end))
        ++word_end;
      const std::string found = printable(begin, begin + std::min<std::ptrdiff_t>(word_end - begin, 40));
      report(DiagCode::ExpectedStatement,
             "expected a statement (const, budget, location, devices, value, an action, hold, "
             "lease, reserve, release, plan, program or for), found '" +
                 found + "'",
             begin, word_end == begin ? begin + 1 : word_end, suggest_word(found, kStatementKeywords));
    }
    error_reported_ = false;
    open_.clear();
    pending_children_.clear();
    expressions_.clear();
    device_expression_ = ast::kNone;
    depth_ = 0;
    braces_.clear();
  }
  void statement_done() { error_reported_ = false; }

  template <typename Input>
  void mark_line(const Input &in) {
    std::uint64_t line = 0;
    for (char c : in.string_view())
      line = std::min<std::uint64_t>(line * 10 + static_cast<unsigned>(c - '0'), 1u << 30);
    source_.add_line_mark(ast::LineMark{offset(in.begin()), static_cast<std::uint32_t>(line)});
  }

private:
  SourceFile &source_;
  ast::File &file_;
  const char *base_;
  std::vector<ast::Stmt> open_;
  /// Closed statements whose block is still open, innermost block's last:
  /// one stack for all levels, so a statement costs no vector of its own.
  std::vector<ast::StmtId> pending_children_;
  std::vector<ast::ExprId> expressions_;
  ast::ExprId device_expression_ = ast::kNone;
  unsigned depth_ = 0;
  bool error_reported_ = false;
  std::vector<std::uint32_t> braces_; ///< unclosed `{` offsets, innermost last
};

std::string suggest_unit(llvm::StringRef word) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB", "B"};
  for (const char *unit : units)
    if (word.equals_insensitive(unit)) return std::string("did you mean '") + unit + "'?";
  return {};
}

std::uint64_t unit_multiplier(llvm::StringRef unit) {
  const bool binary = unit.size() == 3;
  const std::uint64_t base = binary ? 1024 : 1000;
  switch (unit.front()) {
  case 'K': return base;
  case 'M': return base * base;
  case 'G': return base * base * base;
  case 'T': return base * base * base * base;
  default: return 1;
  }
}

// ---- actions ----------------------------------------------------------------
template <typename Rule>
struct action : tao::pegtl::nothing<Rule> {};

template <StmtKind K, typename Keyword>
struct action<grammar::begin<K, Keyword>> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    b.open(K, b.span(in));
  }
};

/// Completes the innermost open statement.
struct close_statement {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    b.close(b.offset(in.end()));
  }
};
#define FHR_CLOSES(rule)                                                                                     \
  template <>                                                                                                \
  struct action<rule> : close_statement {}
FHR_CLOSES(grammar::const_statement);
FHR_CLOSES(grammar::budget_statement);
FHR_CLOSES(grammar::location_statement);
FHR_CLOSES(grammar::devices_statement);
FHR_CLOSES(grammar::value_statement);
FHR_CLOSES(grammar::ensure_action);
FHR_CLOSES(grammar::copy_action);
FHR_CLOSES(grammar::move_action);
FHR_CLOSES(grammar::drop_action);
FHR_CLOSES(grammar::discard_action);
FHR_CLOSES(grammar::hold_statement);
FHR_CLOSES(grammar::lease_statement);
FHR_CLOSES(grammar::acquire_statement);
FHR_CLOSES(grammar::reserve_statement);
FHR_CLOSES(grammar::release_statement);
FHR_CLOSES(grammar::reclaim_block);
FHR_CLOSES(grammar::enter_block);
FHR_CLOSES(grammar::exit_block);
FHR_CLOSES(grammar::plan_statement);
FHR_CLOSES(grammar::scope_statement);
FHR_CLOSES(grammar::run_statement);
FHR_CLOSES(grammar::actions_statement);
FHR_CLOSES(grammar::program_statement);
FHR_CLOSES(grammar::action_for);
FHR_CLOSES(grammar::program_for);
FHR_CLOSES(grammar::top_for);
FHR_CLOSES(grammar::tier_statement);
FHR_CLOSES(grammar::need_statement);
FHR_CLOSES(grammar::workspace_statement);
FHR_CLOSES(grammar::compute_statement);
FHR_CLOSES(grammar::step_statement);
#undef FHR_CLOSES

/// A compute statement's duration as written ("3.9 ms"); sema reads it.
template <>
struct action<grammar::duration> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    b.top().text_span = b.span(in);
  }
};

template <>
struct action<grammar::line_number> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    b.mark_line(in);
  }
};

template <>
struct action<grammar::top_statement> {
  template <typename Input>
  static void apply(const Input &, Builder &b) {
    b.statement_done();
  }
};

template <>
struct action<grammar::recover> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    b.recover(in.begin(), in.end());
  }
};

template <>
struct action<grammar::declared_name> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    b.top().name_span = b.span(in);
  }
};

template <>
struct action<grammar::alias_name> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    b.top().alias_span = b.span(in);
  }
};

/// A string literal, quotes included (escapes are interpreted by sema).
struct take_text {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    b.top().text_span = b.span(in);
    b.top().has_text = true;
  }
};
template <>
struct action<grammar::plan_name> : take_text {};
template <>
struct action<grammar::label> : take_text {};

template <int Slot>
struct action<grammar::slot_expression<Slot>> {
  template <typename Input>
  static void apply(const Input &, Builder &b) {
    b.top().exprs[Slot] = b.pop();
  }
};

template <int Slot>
struct action<grammar::slot_location<Slot>> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    ast::LocationRef &ref = b.top().locations[Slot];
    ref.span = b.span(in);
    ref.device_expr = b.take_device_expression();
    ref.present = true;
  }
};

/// Workload slots with messages of their own store as the slots they are.
template <>
struct action<grammar::workspace_size> : action<grammar::slot_expression<0>> {};
template <int Slot>
struct action<grammar::tier_location<Slot>> : action<grammar::slot_location<Slot>> {};

template <>
struct action<grammar::device_expression> {
  template <typename Input>
  static void apply(const Input &, Builder &b) {
    b.set_device_expression(b.pop());
  }
};

template <>
struct action<grammar::number> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    ast::Expr expression;
    expression.kind = ast::ExprKind::Number;
    expression.span = b.span(in);
    std::string_view text = in.string_view();
    // Indices are short plain integers: those need none of what follows
    // (nine digits cannot overflow; the first other byte sends the literal
    // on to the general reading below).
    if (text.size() <= 9) {
      std::uint64_t plain = 0;
      std::size_t digit = 0;
      for (; digit < text.size() && text[digit] >= '0' && text[digit] <= '9'; ++digit)
        plain = plain * 10 + static_cast<unsigned>(text[digit] - '0');
      if (digit == text.size()) {
        expression.number = plain;
        b.push(expression);
        return;
      }
    }
    std::size_t i = 0;
    std::uint64_t value = 0;
    bool overflow = false;
    for (; i < text.size() && (llvm::isDigit(text[i]) || text[i] == '_'); ++i) {
      if (text[i] == '_') continue;
      overflow |= __builtin_mul_overflow(value, 10u, &value);
      overflow |= __builtin_add_overflow(value, static_cast<unsigned>(text[i] - '0'), &value);
    }
    // A fraction: its digits as an integer `part` over 10^decimals, exact
    // with 128-bit arithmetic (25 digits; more must be zeros).
    __extension__ using wide = unsigned __int128;
    wide part = 0, scale = 1;
    if (i < text.size() && text[i] == '.')
      for (++i; i < text.size() && (llvm::isDigit(text[i]) || text[i] == '_'); ++i) {
        if (text[i] == '_') continue;
        if (scale >= (wide{1} << 84)) { // part * 2^40 must stay below 2^128
          expression.number_inexact = expression.number_inexact || text[i] != '0';
          continue;
        }
        part = part * 10 + static_cast<unsigned>(text[i] - '0');
        scale *= 10;
      }
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
      ++i;
    std::uint64_t multiplier = 1;
    if (i < text.size()) {
      multiplier = unit_multiplier(llvm::StringRef(text.substr(i)));
      expression.has_unit = true;
    }
    overflow |= __builtin_mul_overflow(value, multiplier, &value);
    if (scale > 1 && !overflow) {
      const wide part_bytes = part * multiplier; // < 10^36 * 2^40 < 2^128
      const wide whole_bytes = part_bytes / scale;
      overflow = whole_bytes > UINT64_MAX - value;
      value += static_cast<std::uint64_t>(whole_bytes);
      expression.number_inexact = expression.number_inexact || part_bytes % scale != 0;
    }
    expression.number = overflow ? 0 : value;
    expression.number_overflow = overflow;
    expression.number_inexact = expression.number_inexact && !overflow;
    b.push(expression);
  }
};

template <>
struct action<grammar::name_reference> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    ast::Expr expression;
    expression.kind = ast::ExprKind::Name;
    expression.span = b.span(in);
    expression.name_span = expression.span;
    b.push(expression);
  }
};

/// Folds the two topmost expressions into one binary node.
struct fold_binary {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    const ast::ExprId rhs = b.pop();
    const ast::ExprId lhs = b.pop();
    ast::Expr expression;
    switch (*in.begin()) {
    case '+': expression.kind = ast::ExprKind::Add; break;
    case '-': expression.kind = ast::ExprKind::Subtract; break;
    case '*': expression.kind = ast::ExprKind::Multiply; break;
    default: expression.kind = ast::ExprKind::Divide; break;
    }
    expression.lhs = lhs;
    expression.rhs = rhs;
    expression.span = {b.file().exprs[lhs].span.begin, b.offset(in.end())};
    b.push(expression);
  }
};
template <>
struct action<grammar::multiplicative_tail> : fold_binary {};
template <>
struct action<grammar::additive_tail> : fold_binary {};

template <>
struct action<grammar::parenthesized> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    // The inner expression keeps its node; its span grows to cover the parentheses.
    const ast::ExprId inner = b.pop();
    b.file().exprs[inner].span = b.span(in);
    b.file().exprs[inner].parenthesized = true;
    b.push_id(inner);
  }
};

template <>
struct action<grammar::operand_name> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    ast::Operand operand;
    operand.span = b.span(in);
    operand.name_end = operand.span.end;
    b.file().operands.push_back(operand);
  }
};
template <>
struct action<grammar::operand> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    b.file().operands.back().span.end = b.offset(in.end());
  }
};
template <>
struct action<grammar::index_all> {
  template <typename Input>
  static void apply(const Input &, Builder &b) {
    b.file().operands.back().kind = ast::OperandKind::All;
  }
};
template <>
struct action<grammar::index_first> {
  template <typename Input>
  static void apply(const Input &, Builder &b) {
    b.file().operands.back().kind = ast::OperandKind::Index;
    b.file().operands.back().first = b.pop();
  }
};
template <>
struct action<grammar::index_last> {
  template <typename Input>
  static void apply(const Input &, Builder &b) {
    b.file().operands.back().kind = ast::OperandKind::Range;
    b.file().operands.back().last = b.pop();
  }
};

template <>
struct action<grammar::replicable_mode> {
  template <typename Input>
  static void apply(const Input &, Builder &b) {
    b.top().replicable = true;
  }
};
template <>
struct action<grammar::exclusive_mode> {
  template <typename Input>
  static void apply(const Input &, Builder &b) {
    b.top().exclusive = true;
  }
};
template <>
struct action<grammar::brace_open> {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    b.open_brace(b.offset(in.begin()));
  }
};
/// A block's closing `}`.
struct take_close_brace {
  template <typename Input>
  static void apply(const Input &in, Builder &b) {
    b.close_brace(b.offset(in.begin()));
  }
};
template <>
struct action<grammar::close_actions> : take_close_brace {};
template <>
struct action<grammar::close_plan> : take_close_brace {};
template <>
struct action<grammar::close_program> : take_close_brace {};
template <>
struct action<grammar::close_top_for> : take_close_brace {};
template <>
struct action<grammar::close_step> : take_close_brace {};
template <>
struct action<grammar::source_placement> {
  template <typename Input>
  static void apply(const Input &, Builder &b) {
    b.top().source_placement = true;
  }
};
template <>
struct action<grammar::family_count> {
  template <typename Input>
  static void apply(const Input &, Builder &b) {
    b.top().family = true;
  }
};
template <>
struct action<grammar::pending_flag> {
  template <typename Input>
  static void apply(const Input &, Builder &b) {
    b.top().pending = true;
  }
};
template <>
struct action<grammar::program_context> {
  template <typename Input>
  static void apply(const Input &, Builder &b) {
    b.top().in_program = true;
  }
};

// ---- control ------------------------------------------------------------------
template <typename Rule>
inline constexpr bool is_nesting =
    std::is_same_v<Rule, grammar::parenthesized> || std::is_same_v<Rule, grammar::action_for> ||
    std::is_same_v<Rule, grammar::program_for> || std::is_same_v<Rule, grammar::top_for> ||
    std::is_same_v<Rule, grammar::scope_statement>;

template <typename Rule>
struct control : tao::pegtl::normal<Rule> {
  template <typename Input>
  static void start(const Input &in, Builder &b) {
    if constexpr (is_nesting<Rule>) b.enter_nesting(in.current());
  }
  template <typename Input>
  static void success(const Input &, Builder &b) {
    if constexpr (is_nesting<Rule>) b.leave_nesting();
  }
  template <typename Input>
  static void failure(const Input &, Builder &b) {
    if constexpr (is_nesting<Rule>) b.leave_nesting();
  }
  template <typename Input>
  [[noreturn]] static void raise(const Input &in, Builder &b) {
    using info = grammar::error_info<Rule>; // a compile error here: add a row to the table
    const char *at = in.current();
    const char *end = at;
    while (end < in.end() && !llvm::isSpace(*end) && end - at < 40)
      ++end;
    const llvm::StringRef found(at, static_cast<std::size_t>(end - at));
    std::string hint;
    if constexpr (std::is_same_v<Rule, grammar::misspelled_unit>) hint = suggest_unit(found);
    if constexpr (std::is_same_v<Rule, grammar::close_plan>) {
      hint = suggest_word(found, kPlanItems);
      if (std::find(kActionKeywords.begin(), kActionKeywords.end(), found.str()) != kActionKeywords.end())
        hint = "a plan's actions go inside 'enter { }', 'exit { }' or 'reclaim { }'";
    }
    if constexpr (std::is_same_v<Rule, grammar::close_program>) hint = suggest_word(found, kProgramItems);
    if constexpr (std::is_same_v<Rule, grammar::close_actions>) hint = suggest_word(found, kActionKeywords);
    if constexpr (std::is_same_v<Rule, grammar::close_top_for>)
      hint = suggest_word(found, kStatementKeywords);
    if constexpr (std::is_same_v<Rule, grammar::kw_at>) hint = suggest_word(found, {"at"});
    if constexpr (std::is_same_v<Rule, grammar::kw_to>) hint = suggest_word(found, {"to"});
    if constexpr (std::is_same_v<Rule, grammar::kw_in>) hint = suggest_word(found, {"in"});
    if constexpr (std::is_same_v<Rule, grammar::placement>) hint = suggest_word(found, {"at", "source"});
    if constexpr (std::is_same_v<Rule, grammar::slot_location<0>> ||
                  std::is_same_v<Rule, grammar::slot_location<1>>) {
      llvm::StringRef index = found;
      if (index.consume_front("cuda") && !index.empty() && llvm::all_of(index, llvm::isDigit))
        hint = "did you mean 'cuda:" + index.str() + "'?";
      else
        hint = suggest_word(found.take_while([](char c) { return llvm::isAlnum(c) || c == '-' || c == '_'; }),
                            kLocationWords);
    }
    std::vector<DiagnosticNote> notes;
    constexpr bool closes_block =
        std::is_same_v<Rule, grammar::close_plan> || std::is_same_v<Rule, grammar::close_program> ||
        std::is_same_v<Rule, grammar::close_actions> || std::is_same_v<Rule, grammar::close_top_for>;
    if constexpr (closes_block) {
      // A statement keyword at the start of a line, or the end of the file,
      // where a block should close: the `}` is probably missing.
      const bool line_start = at == b.file_start() || at[-1] == '\n';
      const bool statement = std::find(kStatementKeywords.begin(), kStatementKeywords.end(), found.str()) !=
                             kStatementKeywords.end();
      if (std::optional<std::uint32_t> brace = b.innermost_brace();
          brace && (at == in.end() || (line_start && statement)))
        notes.push_back({{*brace, *brace + 1}, "unclosed '{' opened here"});
    }
    std::string message = info::message;
    if (at == in.end())
      message += ", found the end of the file";
    else if (end > at)
      message += ", found '" + printable(at, end) + "'";
    b.report(info::code, std::move(message), at, end == at ? at + (at < in.end()) : end, std::move(hint),
             std::move(notes));
    throw grammar::SyntaxAbort{};
  }
};

} // namespace

ast::File parse(SourceFile &source) {
  ast::File file;
  llvm::StringRef text = source.text();
  file.source = std::string_view(text.data(), text.size());
  if (text.size() >= kMaxSourceBytes) {
    source.report(DiagCode::FileTooLarge,
                  "input is larger than " + std::to_string(kMaxSourceBytes >> 20) + " MiB", {0, 0});
    return file;
  }
  // A rough size hint: one statement per 24 bytes of source.
  file.statements.reserve(text.size() / 24);
  file.exprs.reserve(text.size() / 24);
  file.operands.reserve(text.size() / 24);
  file.children.reserve(text.size() / 24);
  Builder builder(source, file);
  tao::pegtl::memory_input<tao::pegtl::tracking_mode::lazy, tao::pegtl::eol::lf_crlf> input(
      text.data(), text.size(), source.name().str());
  try {
    tao::pegtl::parse<grammar::file, action, control>(input, builder);
  } catch (const ErrorLimitReached &) {
    // Stopped at the error limit: the statements read so far are kept.
  }
  return file;
}

namespace {
struct standalone_expression : tao::pegtl::seq<grammar::ws, tao::pegtl::must<grammar::slot_expression<0>>,
                                               grammar::ws, tao::pegtl::must<tao::pegtl::eof>> {};
} // namespace

namespace grammar {
template <>
struct error_info<tao::pegtl::eof> {
  static constexpr DiagCode code = DiagCode::ExpectedExpression;
  static constexpr const char *message = "unexpected text after the size";
};
} // namespace grammar

bool parse_expression(SourceFile &source, ast::File &file, ast::ExprId &expression) {
  file.source = std::string_view(source.text().data(), source.text().size());
  Builder builder(source, file);
  builder.open(StmtKind::Const, {0, 0});
  tao::pegtl::memory_input<tao::pegtl::tracking_mode::lazy, tao::pegtl::eol::lf_crlf> input(
      source.text().data(), source.text().size(), source.name().str());
  try {
    tao::pegtl::parse<standalone_expression, action, control>(input, builder);
  } catch (const grammar::SyntaxAbort &) {
    return false;
  } catch (const ErrorLimitReached &) {
    return false;
  }
  expression = builder.top().exprs[0];
  return !source.has_errors();
}

namespace {
/// Whether the whole of `word` matches `Rule`.
template <typename Rule>
bool matches_whole(std::string_view word) {
  tao::pegtl::memory_input<> input(word.data(), word.size(), "");
  return tao::pegtl::parse<tao::pegtl::seq<Rule, tao::pegtl::eof>>(input);
}
} // namespace

bool is_identifier(std::string_view word) { return matches_whole<tao::pegtl::identifier>(word); }

bool is_keyword(std::string_view word) { return matches_whole<grammar::keyword>(word); }

} // namespace fhr
