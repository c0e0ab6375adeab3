#include "fhr/compiler/sema.hpp"

#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>

#include <algorithm>

namespace fhr {

namespace {

using ast::ExprKind;
using ast::StmtKind;

/// What a value name stands for.
struct ValueName {
  ValueId first = 0;
  std::uint32_t count = 1;
  bool family = false;
  ast::Span span; ///< the declaration, for "first declared here"
};

/// A named lease, hold or reservation created in setup.
struct LifetimeName {
  std::uint32_t step = 0;
  bool released = false;
  ast::Span span;
};

/// A constant and where it is declared.
struct ConstName {
  std::uint64_t value = 0;
  ast::Span span;
};

/// A loop variable in scope: its name, current value and its loop.
struct LoopVariable {
  std::string_view name;
  std::uint64_t value = 0;
  ast::Span span; ///< the variable's name in the `for`
};

class Analyzer {
public:
  Analyzer(const ast::File &file, SourceFile &source) : file_(file), source_(source) {}

  ir::Module run() {
    // Plans are collected before programs so that a program may run a plan
    // declared after it; everything else takes effect in file order.
    for (ast::StmtId id : file_.top_level) {
      if (source_.stopped()) break;
      top_statement(id);
    }
    run_deferred_programs();
    loops_.clear();
    check_device_budgets();
    check_unused_plans();
    return std::move(module_);
  }

  std::optional<std::uint64_t> evaluate(ast::ExprId root);

private:
  const ast::Stmt &stmt(ast::StmtId id) const { return file_.statements[id]; }
  std::span<const ast::StmtId> children(const ast::Stmt &s) const {
    return {file_.children.data() + s.first_child, s.child_count};
  }
  void error(DiagCode code, std::string message, ast::Span span, std::string hint = {}) {
    source_.report(code, std::move(message), span, std::move(hint));
  }
  /// An error with a note at another place ("first declared here").
  void error_with_note(DiagCode code, std::string message, ast::Span span, ast::Span note_span,
                       std::string note, std::string hint = {}) {
    Diagnostic diagnostic;
    diagnostic.code = code;
    diagnostic.message = std::move(message);
    diagnostic.span = span;
    diagnostic.hint = std::move(hint);
    diagnostic.notes.push_back({note_span, std::move(note)});
    source_.report(std::move(diagnostic));
  }
  void warning(DiagCode code, std::string message, ast::Span span, std::string hint = {},
               std::optional<FixIt> fix = std::nullopt) {
    Diagnostic diagnostic;
    diagnostic.code = code;
    diagnostic.severity = Severity::Warning;
    diagnostic.message = std::move(message);
    diagnostic.span = span;
    diagnostic.hint = std::move(hint);
    diagnostic.fix = std::move(fix);
    source_.report(std::move(diagnostic));
  }
  std::string_view source_text(ast::Span span) const {
    return std::string_view(source_.text()).substr(span.begin, span.end - span.begin);
  }
  /// What unrolling has made against one of its limits. Past the limit
  /// the error is reported once, where it was passed, and every loop stops.
  struct UnrollCount {
    std::uint64_t made = 0;
    bool passed = false;
  };
  /// Adds `more` to `count`: true within `limit`, else false, reporting
  /// (`report`) the first time.
  template <typename Report>
  bool count_within(UnrollCount &count, std::uint64_t limit, std::uint64_t more, Report &&report) {
    count.made += more;
    if (count.made <= limit) return true;
    if (!count.passed) report();
    count.passed = true;
    return false;
  }
  /// A limit that stops every loop was passed.
  bool expansion_stopped() const {
    return expansion_.passed || units_.passed || setup_steps_.passed || program_statements_.passed;
  }

  /// Counts `items` more values and unrolled statements against the limit.
  bool count_expansion(ast::Span span, std::uint64_t items = 1) {
    return count_within(expansion_, kMaxExpandedItems, items, [&] {
      error(DiagCode::TooManyValues,
            "the file expands to more than " + std::to_string(kMaxExpandedItems) + " values and statements",
            span);
    });
  }
  /// Counts one more plan or program (a program when it is deferred, before
  /// it is analysed).
  bool count_unit(ast::Span span) {
    return count_within(units_, bytecode::kMaxPlansAndPrograms, 1, [&] {
      error(DiagCode::TooManyValues,
            "a file may declare at most " + std::to_string(bytecode::kMaxPlansAndPrograms) +
                " plans and programs together",
            span,
            "each is explained and reported on its own; a workload's printed program has a plan per step");
    });
  }
  /// Counts `steps` more setup steps besides declarations. A statement's
  /// steps are the verifier's (bytecode::count_steps): an action one per
  /// value of its range, a hold, lease, reservation or release one.
  bool count_setup(ast::Span span, std::uint64_t steps) {
    return count_within(setup_steps_, bytecode::kMaxSetupSteps, steps, [&] {
      error(DiagCode::TooManyValues,
            "the setup asks for more than " + std::to_string(bytecode::kMaxSetupSteps) +
                " steps besides declaring values",
            span,
            "each action, hold, lease, reservation and release of the setup is a step that every report "
            "keeps; a setup usually needs a handful");
    });
  }
  /// Counts one more program statement (kMaxProgramStatements).
  bool count_program_statement(ast::Span span) {
    return count_within(program_statements_, kMaxProgramStatements, 1, [&] {
      error(DiagCode::TooManyValues,
            "the programs unroll to more than " + std::to_string(kMaxProgramStatements) + " statements", span,
            "each statement is a record that explain and run keep; to repeat a plan many times, put its "
            "actions in one plan, or run it from a shorter loop");
    });
  }

  // ---- names -------------------------------------------------------------
  std::optional<std::uint64_t> lookup_number(std::string_view name, ast::Span span);
  bool declare_global(std::string_view name, ast::Span span);
  /// Where `name` is declared (a value or constant anywhere in the file,
  /// loops included), for "declared later" notes.
  std::optional<ast::Span> declaration_of(std::string_view name);
  void unknown_name(std::string message, std::string_view name, ast::Span span,
                    const std::vector<std::string> &candidates);
  std::vector<std::string> number_names() const;
  std::vector<std::string> value_names() const;

  // ---- pieces --------------------------------------------------------------
  std::optional<Location> location(const ast::LocationRef &ref);
  std::optional<std::string> text(const ast::Stmt &s);
  std::optional<std::uint64_t> index_value(ast::ExprId expression);
  bool operand_range(const ast::Operand &operand, ValueId &first, std::uint32_t &count);
  bool operand_values(const ast::Operand &operand, std::vector<ValueId> &out);
  bool operand_list(const ast::Stmt &s, std::vector<ValueId> &out);
  bool action_of(const ast::Stmt &s, ir::ActionRange &out);
  void action_items(std::span<const ast::StmtId> items, ir::ActionList &out);
  template <typename F>
  void for_each_iteration(const ast::Stmt &s, F &&body);
  /// Adds "in the iteration i = K" to the errors reported since `reported`.
  void note_iteration(std::size_t reported, const ast::Stmt &s, std::uint64_t i, std::uint64_t first,
                      std::uint64_t last);

  // ---- warnings ----------------------------------------------------------------
  /// W0001: a size written as a bare number of bytes.
  void check_size_unit(ast::ExprId root);
  void check_device_budgets();
  void check_unused_plans();
  void run_deferred_programs();

  // ---- statements ------------------------------------------------------------
  void top_statement(ast::StmtId id);
  void value(const ast::Stmt &s);
  void plan(const ast::Stmt &s);
  void program(ast::StmtId id);
  void program_items(std::span<const ast::StmtId> items, std::vector<ir::ProgramItem> &out);
  std::optional<std::uint32_t> plan_named(const ast::Stmt &s);
  void lifetime_statement(const ast::Stmt &s, std::vector<ir::SetupStep> &out);
  // Workloads (sema_workload.inc)
  void tier(const ast::Stmt &s);
  void step(const ast::Stmt &s);
  std::optional<double> duration(const ast::Stmt &s);

  const ast::File &file_;
  SourceFile &source_;
  ir::Module module_;
  llvm::StringMap<ConstName> consts_;
  llvm::StringMap<ValueName> values_;
  /// The operand name found last and its entry (a StringMap's entries do
  /// not move, and names are never undeclared): plans name one family in
  /// long runs, and the lookup hashed every operand.
  std::string_view last_value_name_;
  const ValueName *last_value_ = nullptr;
  /// The fixed-spelling location parsed last ("cuda:0" in every action).
  std::string_view last_location_text_;
  Location last_location_;
  llvm::StringMap<std::uint32_t> plans_;
  /// Where each program's name is first given, and whether it was written.
  llvm::StringMap<std::pair<ast::Span, bool>> programs_;
  llvm::StringMap<LifetimeName> lifetimes_;
  std::vector<LoopVariable> loops_;
  std::vector<std::pair<ast::StmtId, std::vector<LoopVariable>>> deferred_programs_;
  /// Every value and constant declaration of the file, built on the first
  /// unknown name.
  std::optional<llvm::StringMap<ast::Span>> declarations_;
  std::vector<ast::Span> budget_statement_spans_ = std::vector<ast::Span>(Location::kCount);
  ast::Span devices_span_;
  llvm::DenseMap<std::uint32_t, bool> plan_used_;
  std::vector<bool> budgeted_ = std::vector<bool>(Location::kCount, false);
  UnrollCount expansion_, units_, setup_steps_, program_statements_;
  unsigned program_counter_ = 0;
};

std::vector<std::string> Analyzer::number_names() const {
  std::vector<std::string> names;
  for (const auto &entry : consts_)
    names.push_back(entry.getKey().str());
  for (const LoopVariable &loop : loops_)
    names.emplace_back(loop.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> Analyzer::value_names() const {
  std::vector<std::string> names;
  for (const auto &entry : values_)
    names.push_back(entry.getKey().str());
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::uint64_t> Analyzer::lookup_number(std::string_view name, ast::Span span) {
  for (auto it = loops_.rbegin(); it != loops_.rend(); ++it)
    if (it->name == name) return it->value;
  if (auto it = consts_.find(name); it != consts_.end()) return it->second.value;
  if (values_.count(name) || plans_.count(name)) {
    error(DiagCode::NameIsNotANumber, "'" + std::string(name) + "' is a value, not a number", span);
    return std::nullopt;
  }
  unknown_name("unknown name '" + std::string(name) + "'", name, span, number_names());
  return std::nullopt;
}

std::optional<ast::Span> Analyzer::declaration_of(std::string_view name) {
  if (!declarations_) {
    declarations_.emplace();
    for (const ast::Stmt &s : file_.statements)
      if ((s.kind == StmtKind::Value || s.kind == StmtKind::Const) && !file_.name(s).empty())
        declarations_->try_emplace(file_.name(s), s.name_span);
  }
  auto it = declarations_->find(name);
  if (it == declarations_->end()) return std::nullopt;
  return it->second;
}

void Analyzer::unknown_name(std::string message, std::string_view name, ast::Span span,
                            const std::vector<std::string> &candidates) {
  Diagnostic diagnostic;
  diagnostic.code = DiagCode::UnknownName;
  diagnostic.message = std::move(message);
  diagnostic.span = span;
  if (std::optional<ast::Span> declared = declaration_of(name); declared && declared->begin > span.begin) {
    diagnostic.message += ": it is declared later";
    diagnostic.notes.push_back({*declared, "'" + std::string(name) + "' is declared here"});
    diagnostic.hint = "declarations take effect in file order: move it before its first use";
  } else if (std::string suggestion = closest_match(name, candidates); !suggestion.empty()) {
    diagnostic.hint = "did you mean '" + suggestion + "'?";
  }
  source_.report(std::move(diagnostic));
}

std::optional<std::uint64_t> Analyzer::evaluate(ast::ExprId root) {
  // Iterative post-order walk: `1+1+1+...` builds trees as deep as the
  // expression is long, which recursion would not survive.
  struct Frame {
    ast::ExprId id;
    bool expanded;
  };
  std::vector<Frame> work{{root, false}};
  std::vector<std::optional<std::uint64_t>> results;
  while (!work.empty()) {
    Frame frame = work.back();
    work.pop_back();
    const ast::Expr &e = file_.exprs[frame.id];
    if (e.kind == ExprKind::Number) {
      if (e.number_overflow) {
        error(DiagCode::SizeOverflow, "size does not fit in 64 bits", e.span);
        results.push_back(std::nullopt);
      } else if (e.number_inexact) {
        error(DiagCode::FractionalBytes,
              "'" + std::string(source_text(e.span)) + "' is not a whole number of bytes (between " +
                  std::to_string(e.number) + " B and " + std::to_string(e.number + 1) + " B)",
              e.span, "write a whole number of bytes, for example '" + std::to_string(e.number) + " B'");
        results.push_back(std::nullopt);
      } else {
        results.push_back(e.number);
      }
      continue;
    }
    if (e.kind == ExprKind::Name) {
      results.push_back(lookup_number(file_.name(e), e.span));
      continue;
    }
    if (!frame.expanded) {
      work.push_back({frame.id, true});
      work.push_back({e.rhs, false});
      work.push_back({e.lhs, false});
      continue;
    }
    std::optional<std::uint64_t> rhs = results.back();
    results.pop_back();
    std::optional<std::uint64_t> lhs = results.back();
    results.pop_back();
    if (!lhs || !rhs) {
      results.push_back(std::nullopt);
      continue;
    }
    std::uint64_t value = 0;
    bool ok = true;
    switch (e.kind) {
    case ExprKind::Add:
      ok = !__builtin_add_overflow(*lhs, *rhs, &value);
      if (!ok) error(DiagCode::SizeOverflow, "sum overflows 64 bits", e.span);
      break;
    case ExprKind::Subtract:
      ok = *lhs >= *rhs;
      value = *lhs - *rhs;
      if (!ok)
        error(DiagCode::SizeUnderflow,
              "difference is below zero (" + std::to_string(*lhs) + " - " + std::to_string(*rhs) + ")",
              e.span);
      break;
    case ExprKind::Multiply:
      ok = !__builtin_mul_overflow(*lhs, *rhs, &value);
      if (!ok) error(DiagCode::SizeOverflow, "product overflows 64 bits", e.span);
      break;
    case ExprKind::Divide:
      ok = *rhs != 0;
      if (ok)
        value = *lhs / *rhs;
      else
        error(DiagCode::DivisionByZero, "division by zero", e.span);
      break;
    default: break;
    }
    results.push_back(ok ? std::optional<std::uint64_t>(value) : std::nullopt);
  }
  return results.empty() ? std::nullopt : results.back();
}

bool Analyzer::declare_global(std::string_view name, ast::Span span) {
  std::optional<ast::Span> first;
  if (auto it = consts_.find(name); it != consts_.end()) first = it->second.span;
  if (auto it = values_.find(name); it != values_.end()) first = it->second.span;
  for (const LoopVariable &loop : loops_)
    if (loop.name == name) first = loop.span;
  if (!first) return true;
  if (first->begin == span.begin)
    error(DiagCode::DuplicateName,
          "'" + std::string(name) + "' is declared again by the next iteration of its loop", span,
          "a declaration inside a loop runs once per iteration: move it out of the loop");
  else
    error_with_note(DiagCode::DuplicateName, "'" + std::string(name) + "' is already declared", span, *first,
                    "first declared here");
  return false;
}

std::optional<Location> Analyzer::location(const ast::LocationRef &ref) {
  if (ref.device_expr != ast::kNone) {
    std::optional<std::uint64_t> device = evaluate(ref.device_expr);
    if (!device) return std::nullopt;
    if (*device >= Location::kMaxCudaDevices) {
      error(DiagCode::BadLocation,
            "location 'cuda:" + std::to_string(*device) + "' is out of range (cuda:0 to cuda:127)", ref.span);
      return std::nullopt;
    }
    return Location::cuda(static_cast<unsigned>(*device));
  }
  const std::string_view text = file_.text(ref);
  if (!last_location_text_.empty() && text == last_location_text_) return last_location_;
  LocationParseError problem{};
  if (std::optional<Location> parsed = parse_location(text, &problem)) {
    last_location_text_ = text;
    last_location_ = *parsed;
    return parsed;
  }
  std::string hint;
  if (problem.kind == LocationParseError::Kind::MissingIndex) hint = "write cuda:0 for the first GPU";
  error(DiagCode::BadLocation, problem.message, ref.span, hint);
  return std::nullopt;
}

std::optional<std::string> Analyzer::text(const ast::Stmt &s) {
  std::string out;
  std::string_view raw = file_.text(s);
  out.reserve(raw.size());
  const ast::Span span = s.text_span;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '\\' && i + 1 < raw.size()) {
      const char escaped = raw[++i];
      out += escaped == 'n' ? '\n' : escaped == 't' ? '\t' : escaped;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const std::size_t close = raw.find('}', i);
    const std::string_view name = close == std::string_view::npos ? "" : raw.substr(i + 1, close - i - 1);
    if (close == std::string_view::npos || name.empty()) {
      error(DiagCode::BadInterpolation, "'{' starts an interpolation that has no name and '}'", span,
            "write \\{ for a literal brace");
      return std::nullopt;
    }
    bool found = false;
    for (auto it = loops_.rbegin(); it != loops_.rend() && !found; ++it)
      if (it->name == name) {
        out += std::to_string(it->value);
        found = true;
      }
    if (!found)
      if (auto it = consts_.find(name); it != consts_.end()) {
        out += std::to_string(it->second.value);
        found = true;
      }
    const bool is_name = llvm::all_of(name, [](char ch) { return llvm::isAlnum(ch) || ch == '_'; }) &&
                         !llvm::isDigit(name.front());
    if (!found && !is_name) {
      error(DiagCode::BadInterpolation,
            "only names can be interpolated: '{" + std::string(name) + "}' is an expression", span,
            "declare a constant for it (const last = ...) and write {last}");
      return std::nullopt;
    }
    if (!found) {
      std::string suggestion = closest_match(name, number_names());
      error(DiagCode::BadInterpolation, "unknown name '" + std::string(name) + "' in '{...}'", span,
            suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
      return std::nullopt;
    }
    i = close;
  }
  return out;
}

/// A family index: most are literals, which need none of evaluate's
/// machinery (a million `w[123]` operands cost it more than lowering).
std::optional<std::uint64_t> Analyzer::index_value(ast::ExprId expression) {
  const ast::Expr &e = file_.exprs[expression];
  if (e.kind == ExprKind::Number && !e.number_overflow) return e.number;
  return evaluate(expression);
}

bool Analyzer::operand_range(const ast::Operand &operand, ValueId &first_value, std::uint32_t &count) {
  const std::string_view operand_name = file_.name(operand);
  if (last_value_ == nullptr || operand_name != last_value_name_) {
    auto it = values_.find(operand_name);
    if (it == values_.end()) {
      const ast::Span name_span{operand.span.begin, operand.name_end};
      unknown_name("unknown value '" + std::string(operand_name) + "'", operand_name, name_span,
                   value_names());
      return false;
    }
    last_value_name_ = operand_name;
    last_value_ = &it->second;
  }
  const ValueName &value = *last_value_;
  // Only error messages spell the name: no string for an operand that is fine.
  const auto name = [&] { return std::string(operand_name); };
  if (operand.kind == ast::OperandKind::Whole) {
    if (value.family) {
      error(DiagCode::FamilyNeedsIndex,
            "'" + name() + "' is a family of " + std::to_string(value.count) + " values", operand.span,
            "write " + name() + "[i], " + name() + "[a..b] or " + name() + "[*]");
      return false;
    }
    first_value = value.first;
    count = 1;
    return true;
  }
  if (!value.family) {
    error(DiagCode::NotAFamily, "'" + name() + "' is a single value, not a family", operand.span);
    return false;
  }
  std::uint64_t first = 0, last = value.count;
  if (operand.kind != ast::OperandKind::All) {
    std::optional<std::uint64_t> index = index_value(operand.first);
    if (!index) return false;
    first = *index;
    last = first + 1;
    if (operand.kind == ast::OperandKind::Range) {
      std::optional<std::uint64_t> end = index_value(operand.last);
      if (!end) return false;
      last = *end;
      if (first >= last) {
        error(DiagCode::EmptyRange,
              "range " + std::to_string(first) + ".." + std::to_string(last) + " of '" + name() +
                  "' is empty (ranges are half-open: first..last excludes last)",
              operand.span);
        return false;
      }
    }
    if (last > value.count) {
      error(DiagCode::IndexOutOfRange,
            "index " + std::to_string(last - 1) + " is out of range for '" + name() + "' (" +
                std::to_string(value.count) + " values: 0.." + std::to_string(value.count) + ")",
            operand.span);
      return false;
    }
  }
  first_value = value.first + static_cast<ValueId>(first);
  count = static_cast<std::uint32_t>(last - first);
  return true;
}

bool Analyzer::operand_values(const ast::Operand &operand, std::vector<ValueId> &out) {
  ValueId first = 0;
  std::uint32_t count = 0;
  if (!operand_range(operand, first, count)) return false;
  for (std::uint32_t i = 0; i < count; ++i)
    out.push_back(first + i);
  return true;
}

bool Analyzer::operand_list(const ast::Stmt &s, std::vector<ValueId> &out) {
  bool ok = true;
  for (std::uint32_t i = 0; i < s.operand_count; ++i)
    ok = operand_values(file_.operands[s.first_operand + i], out) && ok;
  // Duplicates collapse, keeping first-occurrence order (§7.2).
  std::vector<ValueId> unique;
  for (ValueId v : out)
    if (std::find(unique.begin(), unique.end(), v) == unique.end()) unique.push_back(v);
  out = std::move(unique);
  return ok;
}

bool Analyzer::action_of(const ast::Stmt &s, ir::ActionRange &out) {
  ir::ActionRange action;
  switch (s.kind) {
  case StmtKind::Ensure: action.kind = ActionKind::Ensure; break;
  case StmtKind::Copy: action.kind = ActionKind::Copy; break;
  case StmtKind::Move: action.kind = ActionKind::Move; break;
  case StmtKind::Drop: action.kind = ActionKind::Drop; break;
  default: action.kind = ActionKind::Discard; break;
  }
  bool ok = true;
  if (s.kind != StmtKind::Discard) {
    std::optional<Location> at = location(s.locations[0]);
    ok = at.has_value();
    if (at) action.location = *at;
    if (s.locations[1].present) {
      std::optional<Location> from = location(s.locations[1]);
      ok = ok && from.has_value();
      action.from = from;
    }
  }
  ok = operand_range(file_.operands[s.first_operand], action.value, action.count) && ok;
  if (!ok || !count_expansion(s.span, action.count)) return false;
  out = action;
  return true;
}

template <typename F>
void Analyzer::for_each_iteration(const ast::Stmt &s, F &&body) {
  std::optional<std::uint64_t> first = evaluate(s.exprs[0]);
  std::optional<std::uint64_t> last = evaluate(s.exprs[1]);
  if (!first || !last) return;
  const std::string_view name = file_.name(s);
  for (const LoopVariable &loop : loops_)
    if (loop.name == name) {
      error_with_note(DiagCode::DuplicateName, "loop variable '" + std::string(name) + "' hides another name",
                      s.name_span, loop.span, "the outer loop's variable");
      return;
    }
  if (values_.count(name) || consts_.count(name)) {
    const ast::Span other = values_.count(name) ? values_[name].span : consts_[name].span;
    error_with_note(DiagCode::DuplicateName, "loop variable '" + std::string(name) + "' hides another name",
                    s.name_span, other, "first declared here");
    return;
  }
  const ast::Span range{file_.exprs[s.exprs[0]].span.begin, file_.exprs[s.exprs[1]].span.end};
  if (*first > *last) {
    const std::string low(source_text(file_.exprs[s.exprs[1]].span)),
        high(source_text(file_.exprs[s.exprs[0]].span));
    warning(DiagCode::EmptyLoop,
            "the range " + std::to_string(*first) + ".." + std::to_string(*last) +
                " is reversed: the loop runs no iteration",
            range,
            "ranges count up and exclude the end: write '" + low + ".." + high + "' to count from " + low,
            FixIt{range, low + ".." + high});
    return;
  }
  loops_.push_back({name, 0, s.name_span});
  for (std::uint64_t i = *first; i < *last; ++i) {
    if (!count_expansion(s.span) || source_.stopped() || expansion_stopped()) break;
    loops_.back().value = i;
    const std::size_t reported = source_.diagnostics().size();
    const unsigned errors = source_.error_count();
    body();
    if (source_.error_count() == errors) continue;
    // The loop stops at its first error: later iterations would repeat it
    // or fail for the same reason, and a long loop would flood the output.
    note_iteration(reported, s, i, *first, *last);
    break;
  }
  loops_.pop_back();
}

void Analyzer::note_iteration(std::size_t reported, const ast::Stmt &s, std::uint64_t i, std::uint64_t first,
                              std::uint64_t last) {
  std::string note = "in the iteration " + std::string(file_.name(s)) + " = " + std::to_string(i) + " of " +
                     std::to_string(first) + ".." + std::to_string(last);
  if (i + 1 < last)
    note += "; the loop stops here, " + std::to_string(last - i - 1) + " iterations unchecked";
  source_.add_note_to_errors_since(reported, {s.name_span, std::move(note)});
}

void Analyzer::check_size_unit(ast::ExprId root) {
  // A size with a unit or a name somewhere is deliberate; only unitless
  // literal arithmetic (`budget cuda:0 40`) is likely a missing unit.
  std::vector<ast::ExprId> work{root};
  bool single_literal = true;
  while (!work.empty()) {
    const ast::Expr &e = file_.exprs[work.back()];
    work.pop_back();
    if (e.kind == ExprKind::Name || (e.kind == ExprKind::Number && e.has_unit)) return;
    if (e.kind != ExprKind::Number) {
      single_literal = false;
      work.push_back(e.lhs);
      work.push_back(e.rhs);
    }
  }
  const ast::Expr &e = file_.exprs[root];
  std::optional<std::uint64_t> value = e.kind == ExprKind::Number ? std::optional(e.number) : std::nullopt;
  if (value == 0u) return; // zero bytes is zero in any unit
  const std::string text(source_text(e.span));
  if (single_literal && !e.parenthesized)
    warning(DiagCode::BareSize, "a size without a unit is bytes: '" + text + "' means " + text + " B", e.span,
            "write '" + text + " B' if bytes are meant, or give a unit such as '" + text + " GiB'",
            FixIt{e.span, text + " B"});
  else
    warning(DiagCode::BareSize, "a size without a unit is bytes: '" + text + "' has no unit", e.span,
            "give one of its numbers a unit ('B' if bytes are meant)");
}

void Analyzer::check_device_budgets() {
  if (!module_.device_count) return;
  for (std::size_t i = 0; i < module_.budgets.size(); ++i) {
    const Location at = module_.budgets[i].first;
    if (!at.is_cuda() || at.device() < *module_.device_count) continue;
    Diagnostic diagnostic;
    diagnostic.code = DiagCode::UndeclaredDeviceBudget;
    diagnostic.message = "'" + at.name() + "' is not one of the " + std::to_string(*module_.device_count) +
                         " devices this file declares: a manager for it cannot be built";
    diagnostic.span = module_.budget_spans[i];
    diagnostic.notes.push_back({devices_span_, "the machine's devices are declared here"});
    source_.report(std::move(diagnostic));
  }
}

void Analyzer::check_unused_plans() {
  // Plans are checked on their own as well; in a file with programs, a
  // plan that none of them runs is usually a misspelt or forgotten run.
  if (source_.has_errors()) return;
  // A plan marked `in program` is explained only where programs run it:
  // with no program running it, it would be checked nowhere (E0407).
  // One error per declaration, as loops report: the plans of its other
  // iterations are counted in it.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> unrun; // first plan, count
  llvm::DenseMap<std::uint32_t, std::size_t> by_declaration;
  for (std::uint32_t i = 0; i < module_.plans.size(); ++i) {
    if (!module_.plans[i].in_program || plan_used_.count(i)) continue;
    auto [it, inserted] = by_declaration.try_emplace(module_.plans[i].span.begin, unrun.size());
    if (inserted) unrun.push_back({i, 0});
    ++unrun[it->second].second;
  }
  for (const auto &[first, count] : unrun) {
    const ir::Plan &plan = module_.plans[first];
    const std::string others =
        count > 1 ? " (and " + std::to_string(count - 1) + " more that its loop declares)" : "";
    error(DiagCode::ProgramPlanNotRun,
          "plan \"" + plan.name + "\"" + others +
              " runs only in programs, but no program runs it: it is checked nowhere",
          plan.span, "add 'run \"" + plan.name + "\"' to a program, or remove 'in program'");
  }
  if (module_.programs.empty() || source_.has_errors()) return;
  std::vector<std::pair<ast::Span, std::vector<std::string>>> unused; // by declaration (loops share one)
  for (std::uint32_t i = 0; i < module_.plans.size(); ++i) {
    if (plan_used_.count(i)) continue;
    const ir::Plan &plan = module_.plans[i];
    if (unused.empty() || unused.back().first.begin != plan.span.begin) unused.push_back({plan.span, {}});
    unused.back().second.push_back(plan.name);
  }
  for (const auto &[span, names] : unused) {
    std::string message = names.size() == 1
                              ? "plan \"" + names[0] + "\" is not run by any program"
                              : std::to_string(names.size()) +
                                    " plans declared here are not run by any program (\"" + names[0] +
                                    "\", \"" + names[1] + "\"" + (names.size() > 2 ? ", ..." : "") + ")";
    warning(DiagCode::UnusedPlan, std::move(message), span,
            "programs are checked as one run; add 'run \"NAME\"' to a program, or remove the plan");
  }
}

void Analyzer::run_deferred_programs() {
  // A program inside a loop is one program per iteration; the first that
  // has an error stops the others of the same declaration, as a loop
  // stops at its first error.
  ast::StmtId failed = ast::kNone;
  for (const auto &[program, loop_scope] : deferred_programs_) {
    if (source_.stopped()) break;
    if (program == failed) continue;
    loops_ = loop_scope;
    const std::size_t reported = source_.diagnostics().size();
    const unsigned errors = source_.error_count();
    this->program(program);
    if (source_.error_count() == errors || loops_.empty()) continue;
    failed = program;
    const LoopVariable &loop = loops_.back();
    source_.add_note_to_errors_since(
        reported, {loop.span, "in the program of the iteration " + std::string(loop.name) + " = " +
                                  std::to_string(loop.value) + "; later iterations are not checked"});
  }
}

void Analyzer::action_items(std::span<const ast::StmtId> items, ir::ActionList &out) {
  for (ast::StmtId id : items) {
    const ast::Stmt &s = stmt(id);
    if (s.kind == StmtKind::For) {
      for_each_iteration(s, [&] { action_items(children(s), out); });
      continue;
    }
    ir::ActionRange action;
    if (action_of(s, action)) out.add(action, s.span);
  }
}

void Analyzer::top_statement(ast::StmtId id) {
  const ast::Stmt &s = stmt(id);
  switch (s.kind) {
  case StmtKind::Const: {
    std::optional<std::uint64_t> value = evaluate(s.exprs[0]);
    const std::string_view name = file_.name(s);
    if (declare_global(name, s.name_span) && value) consts_[name] = ConstName{*value, s.name_span};
    break;
  }
  case StmtKind::Budget:
  case StmtKind::LocationDecl: {
    std::optional<Location> at = location(s.locations[0]);
    std::optional<std::uint64_t> budget;
    if (s.kind == StmtKind::Budget) {
      budget = evaluate(s.exprs[0]);
      if (!budget) break;
      check_size_unit(s.exprs[0]);
    }
    if (!at) break;
    if (budgeted_[at->index()]) {
      error_with_note(DiagCode::DuplicateBudget, "location '" + at->name() + "' is already declared", s.span,
                      budget_statement_spans_[at->index()], "first declared here");
      break;
    }
    budgeted_[at->index()] = true;
    budget_statement_spans_[at->index()] = s.span;
    module_.budgets.emplace_back(*at, budget);
    module_.budget_spans.push_back(s.span);
    break;
  }
  case StmtKind::Devices: {
    std::optional<std::uint64_t> count = evaluate(s.exprs[0]);
    if (!count) break;
    if (module_.device_count) {
      error_with_note(DiagCode::DuplicateName, "'devices' is already declared", s.span, devices_span_,
                      "first declared here");
    } else if (*count > Location::kMaxCudaDevices) {
      error(DiagCode::DeviceCount, "devices must be between 0 and 128", s.span);
    } else {
      module_.device_count = static_cast<unsigned>(*count);
      devices_span_ = s.span;
    }
    break;
  }
  case StmtKind::Value: value(s); break;
  case StmtKind::Ensure:
  case StmtKind::Copy:
  case StmtKind::Move:
  case StmtKind::Drop:
  case StmtKind::Discard: {
    ir::SetupStep step;
    if (!action_of(s, step.action) || !count_setup(s.span, step.action.count)) break;
    step.kind = ir::SetupKind::Action;
    step.span = s.span;
    module_.setup.push_back(std::move(step));
    break;
  }
  case StmtKind::Hold:
  case StmtKind::Lease:
  case StmtKind::Reserve:
    if (count_setup(s.span, 1)) lifetime_statement(s, module_.setup);
    break;
  case StmtKind::Release: {
    if (!count_setup(s.span, 1)) break;
    const std::string_view name = file_.name(s);
    auto it = lifetimes_.find(name);
    if (it == lifetimes_.end() || it->second.released) {
      std::vector<std::string> names;
      for (const auto &entry : lifetimes_)
        if (!entry.getValue().released) names.push_back(entry.getKey().str());
      std::string suggestion = closest_match(name, names);
      error(DiagCode::UnknownLifetime,
            it == lifetimes_.end() ? "nothing named '" + std::string(name) + "' to release"
                                   : "'" + std::string(name) + "' is already released",
            s.name_span, suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
      break;
    }
    it->second.released = true;
    ir::SetupStep step;
    step.kind = ir::SetupKind::Release;
    step.span = s.span;
    step.target = it->second.step;
    step.alias = std::string(name);
    module_.setup.push_back(std::move(step));
    break;
  }
  case StmtKind::Plan: plan(s); break;
  case StmtKind::Program:
    // Counted now: a loop of programs would otherwise queue every iteration.
    if (count_unit(s.keyword)) deferred_programs_.emplace_back(id, loops_);
    break;
  case StmtKind::Tier: tier(s); break;
  case StmtKind::Step: step(s); break;
  case StmtKind::For:
    for_each_iteration(s, [&] {
      for (ast::StmtId child : children(s))
        top_statement(child);
    });
    break;
  default:
    error(DiagCode::MisplacedStatement, "this statement belongs inside a plan or program", s.keyword);
    break;
  }
}

void Analyzer::lifetime_statement(const ast::Stmt &s, std::vector<ir::SetupStep> &out) {
  ir::SetupStep step;
  step.span = s.span;
  std::optional<Location> at = location(s.locations[0]);
  bool ok = at.has_value();
  if (s.kind == StmtKind::Reserve) {
    step.kind = ir::SetupKind::Reserve;
    std::optional<std::uint64_t> nbytes = evaluate(s.exprs[0]);
    if (nbytes) check_size_unit(s.exprs[0]);
    std::optional<std::string> label = text(s);
    ok = ok && nbytes && label;
    if (label && label->find_first_not_of(" \t\n") == std::string::npos) {
      error(DiagCode::EmptyPlanName, "a reservation needs a non-blank label", s.text_span);
      ok = false;
    }
    if (ok) {
      step.nbytes = *nbytes;
      step.label = *label;
    }
  } else {
    step.kind = s.kind == StmtKind::Hold ? ir::SetupKind::Hold : ir::SetupKind::Lease;
    ok = operand_list(s, step.values) && ok;
    step.pending = s.pending;
  }
  if (!ok) return;
  step.location = *at;
  if (const std::string_view alias = file_.alias(s); !alias.empty()) {
    if (lifetimes_.count(alias) && !lifetimes_[alias].released) {
      error_with_note(DiagCode::DuplicateName, "'" + std::string(alias) + "' already names a lifetime",
                      s.alias_span, lifetimes_[alias].span, "first named here");
      return;
    }
    lifetimes_[alias] = LifetimeName{static_cast<std::uint32_t>(out.size()), false, s.alias_span};
    step.alias = std::string(alias);
  }
  out.push_back(std::move(step));
}

void Analyzer::value(const ast::Stmt &s) {
  std::uint64_t count = 1;
  if (s.family) {
    std::optional<std::uint64_t> declared = evaluate(s.exprs[0]);
    if (!declared) return;
    if (*declared == 0) {
      error(DiagCode::EmptyRange, "a family needs at least one value", s.name_span);
      return;
    }
    count = *declared;
  }
  std::optional<std::uint64_t> logical = evaluate(s.exprs[1]);
  std::optional<std::uint64_t> storage = s.exprs[2] != ast::kNone ? evaluate(s.exprs[2]) : logical;
  std::optional<Location> at = location(s.locations[0]);
  if (!logical || !storage || !at) return;
  check_size_unit(s.exprs[1]);
  if (s.exprs[2] != ast::kNone) check_size_unit(s.exprs[2]);
  if (*storage < *logical) {
    error(DiagCode::StorageBelowLogical,
          "storage (" + std::to_string(*storage) + " B) is smaller than the value's size (" +
              std::to_string(*logical) + " B)",
          file_.exprs[s.exprs[2]].span);
    return;
  }
  const std::string_view name = file_.name(s);
  if (!declare_global(name, s.name_span)) return;
  if (count > kMaxValues - module_.values.size()) {
    error(DiagCode::TooManyValues,
          "a file may declare at most " + std::to_string(kMaxValues) + " values; this family adds " +
              std::to_string(count),
          s.span);
    return;
  }
  expansion_.made += count;
  ValueSpec spec;
  spec.logical_nbytes = *logical;
  spec.storage_nbytes = *storage;
  spec.replica_mode = s.replicable ? ReplicaMode::Replicable : ReplicaMode::Exclusive;
  spec.recoverability = s.source_placement ? Recoverability::Reconstructible : Recoverability::MustPreserve;
  const auto first = static_cast<ValueId>(module_.values.size());
  values_[name] = ValueName{first, static_cast<std::uint32_t>(count), s.family, s.name_span};
  const auto family = s.family ? static_cast<std::uint32_t>(module_.families.size()) : ir::kNoFamily;
  if (s.family)
    module_.families.push_back(ir::Family{std::string(name), first, static_cast<std::uint32_t>(count)});
  for (std::uint64_t i = 0; i < count; ++i) {
    ir::Value value;
    value.name = s.family ? std::string(name) + "[" + std::to_string(i) + "]" : std::string(name);
    value.spec = spec;
    value.location = *at;
    value.span = s.span;
    value.family = family;
    value.family_index = static_cast<std::uint32_t>(i);
    ir::SetupStep step;
    step.kind = s.source_placement ? ir::SetupKind::RegisterSource : ir::SetupKind::Adopt;
    step.value = static_cast<ValueId>(module_.values.size());
    step.span = s.span;
    module_.values.push_back(std::move(value));
    module_.setup.push_back(std::move(step));
  }
}

void Analyzer::plan(const ast::Stmt &s) {
  std::optional<std::string> name = text(s);
  if (!name) return;
  if (name->find_first_not_of(" \t\n") == std::string::npos) {
    error(DiagCode::EmptyPlanName, "a plan needs a non-blank name", s.text_span);
    return;
  }
  // One lookup of the name (a fuzzed loop named 100,000 plans with
  // kilobyte names: each lookup hashes the whole name).
  const auto [previous, inserted] =
      plans_.try_emplace(*name, static_cast<std::uint32_t>(module_.plans.size()));
  if (!inserted) {
    const ast::Span first = module_.plans[previous->second].span;
    if (first.begin == s.text_span.begin)
      error(DiagCode::DuplicatePlan,
            "plan \"" + *name + "\" is declared again by the next iteration of its loop", s.text_span,
            "interpolate the loop variable into the name, as in \"" + *name + "-{i}\"");
    else
      error_with_note(DiagCode::DuplicatePlan, "plan \"" + *name + "\" is already declared", s.text_span,
                      first, "first declared here");
    return;
  }
  if (!count_unit(s.text_span)) {
    plans_.erase(previous);
    return;
  }
  ir::Plan plan;
  plan.name = std::move(*name);
  plan.span = s.text_span;
  plan.in_program = s.in_program;
  for (ast::StmtId id : children(s)) {
    const ast::Stmt &item = stmt(id);
    switch (item.kind) {
    case StmtKind::Reclaim: action_items(children(item), plan.reclaim); break;
    case StmtKind::Enter: action_items(children(item), plan.enter); break;
    case StmtKind::Exit: action_items(children(item), plan.exit); break;
    default: { // Reserve
      std::vector<ir::SetupStep> steps;
      if (!file_.alias(item).empty()) {
        error(DiagCode::MisplacedStatement,
              "a plan's reservations end with the plan; 'as' names are for setup", item.alias_span);
        break;
      }
      lifetime_statement(item, steps);
      if (steps.empty()) break;
      plan.reservations.push_back(Reservation{steps[0].location, steps[0].nbytes, steps[0].label});
      plan.reservation_spans.push_back(item.span);
      break;
    }
    }
  }
  module_.plans.push_back(std::move(plan));
}

std::optional<std::uint32_t> Analyzer::plan_named(const ast::Stmt &s) {
  std::optional<std::string> name = text(s);
  if (!name) return std::nullopt;
  if (auto it = plans_.find(*name); it != plans_.end()) return it->second;
  std::vector<std::string> names;
  for (const auto &entry : plans_)
    names.push_back(entry.getKey().str());
  std::sort(names.begin(), names.end());
  std::string suggestion = closest_match(*name, names);
  error(DiagCode::UnknownPlan, "no plan named \"" + *name + "\"", s.text_span,
        suggestion.empty() ? "" : "did you mean \"" + suggestion + "\"?");
  return std::nullopt;
}

void Analyzer::program_items(std::span<const ast::StmtId> items, std::vector<ir::ProgramItem> &out) {
  for (ast::StmtId id : items) {
    const ast::Stmt &s = stmt(id);
    ir::ProgramItem item;
    item.span = s.span;
    switch (s.kind) {
    case StmtKind::Scope:
    case StmtKind::Run: {
      std::optional<std::uint32_t> plan = plan_named(s);
      if (!plan) continue;
      plan_used_[*plan] = true;
      item.kind = s.kind == StmtKind::Scope ? ir::ProgramItemKind::Scope : ir::ProgramItemKind::Run;
      item.plan = *plan;
      if (s.kind == StmtKind::Scope) program_items(children(s), item.body);
      break;
    }
    case StmtKind::Actions: {
      std::optional<std::string> name = text(s);
      if (!name) continue;
      if (name->find_first_not_of(" \t\n") == std::string::npos) {
        error(DiagCode::EmptyPlanName, "an action list needs a non-blank name", s.text_span);
        continue;
      }
      item.kind = ir::ProgramItemKind::Actions;
      item.name = *name;
      action_items(children(s), item.actions);
      break;
    }
    case StmtKind::Acquire:
    case StmtKind::Hold: {
      std::optional<Location> at = location(s.locations[0]);
      if (!operand_list(s, item.values) || !at) continue;
      item.kind = s.kind == StmtKind::Acquire ? ir::ProgramItemKind::Acquire : ir::ProgramItemKind::Hold;
      item.location = *at;
      if (!file_.alias(s).empty())
        error(DiagCode::MisplacedStatement, "inside a program a hold ends with its scope; 'as' is for setup",
              s.alias_span);
      break;
    }
    case StmtKind::Reserve: {
      std::vector<ir::SetupStep> steps;
      if (!file_.alias(s).empty()) {
        error(DiagCode::MisplacedStatement,
              "inside a program a reservation ends with its scope; 'as' is for setup", s.alias_span);
        continue;
      }
      lifetime_statement(s, steps);
      if (steps.empty()) continue;
      item.kind = ir::ProgramItemKind::Reserve;
      item.location = steps[0].location;
      item.reservation = Reservation{steps[0].location, steps[0].nbytes, steps[0].label};
      break;
    }
    case StmtKind::For: for_each_iteration(s, [&] { program_items(children(s), out); }); continue;
    default: { // a direct primitive
      ir::ActionRange action;
      if (!action_of(s, action)) continue;
      item.kind = ir::ProgramItemKind::Direct;
      item.actions.add(action, s.span);
      break;
    }
    }
    if (!count_program_statement(s.span)) return;
    out.push_back(std::move(item));
  }
}

void Analyzer::program(ast::StmtId id) {
  const ast::Stmt &s = stmt(id);
  ir::Program program;
  ++program_counter_;
  if (s.has_text) {
    std::optional<std::string> name = text(s);
    if (!name) return;
    program.name = *name;
  } else {
    program.name = "program-" + std::to_string(program_counter_);
  }
  // Programs are found by name (`run --program`, ModuleRunner, the reports'
  // units), so two may not share one.
  const ast::Span name_span = s.has_text ? s.text_span : s.keyword;
  if (auto [first, inserted] = programs_.try_emplace(program.name, name_span, s.has_text); !inserted) {
    const auto &[first_span, first_named] = first->second;
    if (first_span.begin == name_span.begin)
      error(DiagCode::DuplicatePlan,
            "program \"" + program.name + "\" is declared again by the next iteration of its loop", name_span,
            "interpolate the loop variable into the name, as in \"" + program.name + "-{i}\"");
    else
      error_with_note(DiagCode::DuplicatePlan, "program \"" + program.name + "\" is already declared",
                      name_span, first_span,
                      s.has_text && first_named
                          ? "first declared here"
                          : "first declared here (an unnamed program is called program-N, N "
                            "its position among the programs)");
    return;
  }
  program.span = s.keyword;
  program_items(children(s), program.items);
  module_.programs.push_back(std::move(program));
}

#include "sema_workload.inc"

} // namespace

ir::Module analyze(const ast::File &file, SourceFile &source) { return Analyzer(file, source).run(); }

std::optional<std::uint64_t> evaluate_constant(const ast::File &file, ast::ExprId expression,
                                               SourceFile &source) {
  return Analyzer(file, source).evaluate(expression);
}

} // namespace fhr
