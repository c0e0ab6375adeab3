#include "fhr/compiler/lower.hpp"

#include "fhr/bytecode/writer.hpp"

#include <llvm/ADT/StringMap.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace fhr {

namespace {

using bytecode::Instruction;
using bytecode::Opcode;

/// Lines and columns of byte offsets of one source. Lowering visits the
/// statements of each section in file order, so the cursor keeps the line it
/// is on (its start and end) and moves over the line breaks between it and
/// the next offset (backwards too: a loop body's statements come round
/// again); offsets on the same line cost no scan. A file with `@line`
/// directives asks SourceFile::line_and_column, which applies them.
class LineCursor {
public:
  explicit LineCursor(const SourceFile &source)
      : source_(source), text_(source.text()), renumbered_(has_line_directive(text_)) {
    line_end_ = end_of_line(0);
  }

  struct Position {
    std::uint32_t line = 1, column = 1;
    std::uint32_t line_start = 0; ///< offset of the physical line's first byte
    std::uint32_t line_end = 0;   ///< offset of its line break (or the end of the text)
  };

  Position at(std::uint32_t offset) {
    offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(text_.size()));
    if (renumbered_) {
      const auto [line, column] = source_.line_and_column(offset);
      const std::uint32_t start = offset - (column - 1);
      return Position{line, column, start, end_of_line(start)};
    }
    const char *data = text_.data();
    if (offset > line_end_) {
      // Forward: every line break from the end of this line up to `offset`.
      for (const char *p = data + line_end_, *end = data + offset;
           (p = static_cast<const char *>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)))) !=
           nullptr;
           ++p) {
        ++line_;
        line_start_ = static_cast<std::uint32_t>(p - data) + 1;
      }
      line_end_ = end_of_line(offset);
    } else if (offset < line_start_) {
      line_ -= static_cast<std::uint32_t>(std::count(data + offset, data + line_start_, '\n'));
      const void *previous = offset == 0 ? nullptr : ::memrchr(data, '\n', offset);
      line_start_ = previous ? static_cast<std::uint32_t>(static_cast<const char *>(previous) - data) + 1 : 0;
      line_end_ = end_of_line(offset);
    }
    return Position{line_, offset - line_start_ + 1, line_start_, line_end_};
  }

private:
  /// The offset of the first line break at or after `offset`, or the text's size.
  std::uint32_t end_of_line(std::uint32_t offset) const {
    const char *first = text_.data() + offset;
    const auto *found = static_cast<const char *>(std::memchr(first, '\n', text_.size() - offset));
    return found ? static_cast<std::uint32_t>(found - text_.data())
                 : static_cast<std::uint32_t>(text_.size());
  }

  /// Whether `@line` occurs anywhere (a comment holding it only costs the
  /// fast path). '@' is rare in plans, so memchr skips most of the text.
  static bool has_line_directive(llvm::StringRef text) {
    for (const char *p = text.begin(), *end = text.end();
         (p = static_cast<const char *>(std::memchr(p, '@', static_cast<std::size_t>(end - p)))) != nullptr;
         ++p)
      if (llvm::StringRef(p, static_cast<std::size_t>(end - p)).startswith("@line")) return true;
    return false;
  }

  const SourceFile &source_;
  llvm::StringRef text_;
  bool renumbered_;
  std::uint32_t line_ = 1, line_start_ = 0, line_end_ = 0;
};

Opcode opcode_of(const ir::ActionRange &action) {
  switch (action.kind) {
  case ActionKind::Ensure: return Opcode::Ensure;
  case ActionKind::Copy: return Opcode::Copy;
  case ActionKind::Move: return action.from ? Opcode::MoveFrom : Opcode::Move;
  case ActionKind::Drop: return Opcode::Drop;
  case ActionKind::Discard: return Opcode::Discard;
  }
  return Opcode::Ensure;
}

class Lowering {
public:
  Lowering(const ir::Module &module, const SourceFile &source)
      : ir_(module), source_(source), cursor_(source) {}

  Lowered run() {
    reserve_instructions();
    out_.module.device_count = ir_.device_count;
    out_.module.budgets = ir_.budgets;
    declarations();
    setup();
    out_.module.setup = {0, size()};
    for (const ir::Plan &plan : ir_.plans)
      this->plan(plan);
    for (const ir::Program &program : ir_.programs)
      this->program(program);
    // The excerpt of an instruction is its physical source line.
    out_.spans = SpanTable(source_.name().str(),
                           [text = source_.text(), starts = std::make_shared<std::vector<std::uint32_t>>(
                                                       std::move(line_starts_))](std::uint32_t i) {
                             if (i >= starts->size()) return std::string();
                             llvm::StringRef rest = text.substr((*starts)[i]);
                             return rest.take_until([](char c) { return c == '\n' || c == '\r'; }).str();
                           });
    out_.spans.instructions = std::move(instruction_spans_);
    out_.spans.plans = std::move(plan_spans_);
    out_.spans.programs = std::move(program_spans_);
    out_.spans.statements = std::move(statement_spans_);
    return std::move(out_);
  }

private:
  std::uint32_t size() const { return static_cast<std::uint32_t>(out_.module.code.size()); }

  /// Room for about as many instructions as the IR has statements (items
  /// and ends aside), so that a million of them are not copied as they grow.
  void reserve_instructions() {
    std::size_t count = ir_.setup.size();
    for (const ir::Plan &plan : ir_.plans)
      count += plan.reclaim.size() + plan.reservations.size() + plan.enter.size() + plan.exit.size();
    for (const ir::Program &program : ir_.programs)
      count += program.items.size();
    out_.module.code.reserve(count);
    instruction_spans_.reserve(count);
    statement_spans_.reserve(count);
    line_starts_.reserve(count);
  }

  SourceSpan span_of(ast::Span span, std::uint32_t *line_start = nullptr) {
    const LineCursor::Position begin = cursor_.at(span.begin);
    if (line_start) *line_start = begin.line_start;
    // The range stops at the end of the first line.
    const std::uint32_t end_offset = std::min(span.end, begin.line_end);
    const std::uint32_t end = begin.column + (end_offset > span.begin ? end_offset - span.begin : 0);
    return SourceSpan{begin.line, begin.column, end};
  }

  std::uint32_t intern(const std::string &text) {
    auto [it, inserted] =
        string_index_.try_emplace(text, static_cast<std::uint32_t>(out_.module.strings.size()));
    if (inserted) out_.module.strings.push_back(text);
    return it->second;
  }
  std::uint32_t alias(const std::string &name) { return name.empty() ? 0 : intern(name) + 1; }

  std::uint32_t emit(Instruction in, ast::Span span) {
    std::uint32_t line_start = 0;
    const SourceSpan where = span_of(span, &line_start);
    in.line = where.line;
    out_.module.code.push_back(in);
    instruction_spans_.push_back(where);
    statement_spans_.push_back(span);
    line_starts_.push_back(line_start);
    return size() - 1;
  }

  void declarations() {
    std::uint32_t value = 0;
    while (value < ir_.values.size()) {
      const ir::Value &v = ir_.values[value];
      const bool family = v.family != ir::kNoFamily;
      bytecode::Declaration d;
      d.family_size = family ? ir_.families[v.family].count : 0;
      d.name = intern(family ? ir_.families[v.family].name : v.name);
      d.spec = v.spec;
      d.location = v.location;
      d.first_value = value;
      value += d.value_count();
      out_.module.declarations.push_back(d);
    }
    out_.module.value_count = value;
  }

  std::uint32_t emit_action(const ir::ActionRange &action, ast::Span span) {
    Instruction in;
    in.opcode = opcode_of(action);
    in.value = action.value;
    in.count = action.count;
    in.location = action.location;
    if (action.from) in.from = *action.from;
    return emit(in, span);
  }

  void actions(const ir::ActionList &list) {
    for (std::size_t i = 0; i < list.size(); ++i)
      emit_action(list.actions[i], list.spans[i]);
  }

  bool same_family(ValueId a, ValueId b) const {
    return ir_.values[a].family != ir::kNoFamily && ir_.values[a].family == ir_.values[b].family;
  }

  /// A hold/lease/acquire header followed by its items: maximal runs of
  /// consecutive members of one family.
  std::uint32_t value_list(Instruction header, const std::vector<ValueId> &values, ast::Span span) {
    std::vector<std::pair<ValueId, std::uint32_t>> runs;
    for (std::size_t i = 0; i < values.size();) {
      std::uint32_t run = 1;
      while (i + run < values.size() && values[i + run] == values[i] + run &&
             same_family(values[i], values[i + run]))
        ++run;
      runs.emplace_back(values[i], run);
      i += run;
    }
    header.set_index(static_cast<std::uint32_t>(runs.size()));
    const std::uint32_t at = emit(header, span);
    for (const auto &[first, count] : runs) {
      Instruction item;
      item.opcode = Opcode::Item;
      item.value = first;
      item.count = count;
      emit(item, span);
    }
    return at;
  }

  Instruction reserve(Location location, std::uint64_t nbytes, const std::string &label,
                      const std::string &name) {
    Instruction in;
    in.opcode = Opcode::Reserve;
    in.location = location;
    in.size = nbytes;
    in.set_index(intern(label));
    in.set_alias(alias(name));
    return in;
  }

  void setup() {
    std::vector<std::uint32_t> instruction_of_step(ir_.setup.size(), 0);
    for (std::size_t s = 0; s < ir_.setup.size(); ++s) {
      const ir::SetupStep &step = ir_.setup[s];
      switch (step.kind) {
      case ir::SetupKind::Adopt:
      case ir::SetupKind::RegisterSource: {
        const ir::Value &value = ir_.values[step.value];
        if (value.family != ir::kNoFamily && value.family_index != 0) break; // the family's one declare
        Instruction in;
        in.opcode = Opcode::Declare;
        in.set_index(declaration_of_value(step.value));
        emit(in, step.span);
        break;
      }
      case ir::SetupKind::Action: emit_action(step.action, step.span); break;
      case ir::SetupKind::Hold:
      case ir::SetupKind::Lease: {
        Instruction header;
        header.opcode = step.kind == ir::SetupKind::Hold ? Opcode::Hold : Opcode::Lease;
        header.location = step.location;
        header.set_alias(alias(step.alias));
        header.flag = step.pending;
        instruction_of_step[s] = value_list(header, step.values, step.span);
        break;
      }
      case ir::SetupKind::Reserve:
        instruction_of_step[s] = emit(reserve(step.location, step.nbytes, step.label, step.alias), step.span);
        break;
      case ir::SetupKind::Release: {
        Instruction in;
        in.opcode = Opcode::Release;
        in.set_index(instruction_of_step[step.target]);
        emit(in, step.span);
        break;
      }
      }
    }
  }

  std::uint32_t declaration_of_value(ValueId value) {
    // Declarations are in value order: the last one starting at or before `value`.
    while (next_declaration_ < out_.module.declarations.size() &&
           out_.module.declarations[next_declaration_].first_value <= value)
      ++next_declaration_;
    return static_cast<std::uint32_t>(next_declaration_ - 1);
  }

  void plan(const ir::Plan &plan) {
    bytecode::PlanEntry entry;
    entry.name = intern(plan.name);
    const SourceSpan where = span_of(plan.span);
    entry.line = where.line;
    entry.in_program = plan.in_program;
    plan_spans_.push_back(where);
    auto range = [&](auto &&emit_all) {
      const std::uint32_t begin = size();
      emit_all();
      return bytecode::InstructionRange{begin, size()};
    };
    entry.reclaim = range([&] { actions(plan.reclaim); });
    entry.reserve = range([&] {
      for (std::size_t i = 0; i < plan.reservations.size(); ++i) {
        const Reservation &r = plan.reservations[i];
        emit(reserve(r.location, r.nbytes, r.label, {}), plan.reservation_spans[i]);
      }
    });
    entry.enter = range([&] { actions(plan.enter); });
    entry.exit = range([&] { actions(plan.exit); });
    out_.module.plans.push_back(entry);
  }

  static Instruction end_of_block() {
    Instruction end;
    end.opcode = Opcode::End;
    return end;
  }

  void program_items(const std::vector<ir::ProgramItem> &items) {
    for (const ir::ProgramItem &item : items) {
      Instruction in;
      switch (item.kind) {
      case ir::ProgramItemKind::Scope:
      case ir::ProgramItemKind::Run:
        in.opcode = item.kind == ir::ProgramItemKind::Scope ? Opcode::Scope : Opcode::Run;
        in.set_index(item.plan);
        emit(in, item.span);
        if (item.kind == ir::ProgramItemKind::Run) break;
        program_items(item.body);
        emit(end_of_block(), item.span);
        break;
      case ir::ProgramItemKind::Actions:
        in.opcode = Opcode::Actions;
        in.set_index(intern(item.name));
        emit(in, item.span);
        actions(item.actions);
        emit(end_of_block(), item.span);
        break;
      case ir::ProgramItemKind::Acquire:
      case ir::ProgramItemKind::Hold:
        in.opcode = item.kind == ir::ProgramItemKind::Acquire ? Opcode::Acquire : Opcode::Hold;
        in.location = item.location;
        value_list(in, item.values, item.span);
        break;
      case ir::ProgramItemKind::Reserve:
        emit(reserve(item.location, item.reservation.nbytes, item.reservation.label, {}), item.span);
        break;
      case ir::ProgramItemKind::Direct: actions(item.actions); break;
      }
    }
  }

  void program(const ir::Program &program) {
    bytecode::ProgramEntry entry;
    const std::uint32_t begin = size();
    program_items(program.items);
    entry.body = {begin, size()};
    // Interned after the body's strings: the string table's order is part
    // of the canonical bytes.
    entry.name = intern(program.name);
    const SourceSpan where = span_of(program.span);
    entry.line = where.line;
    program_spans_.push_back(where);
    out_.module.programs.push_back(entry);
  }

  const ir::Module &ir_;
  const SourceFile &source_;
  LineCursor cursor_;
  Lowered out_;
  llvm::StringMap<std::uint32_t> string_index_;
  std::size_t next_declaration_ = 0;
  std::vector<SourceSpan> instruction_spans_, plan_spans_, program_spans_;
  std::vector<ast::Span> statement_spans_;
  std::vector<std::uint32_t> line_starts_;
};

} // namespace

Lowered lower(const ir::Module &module, const SourceFile &source) { return Lowering(module, source).run(); }

std::vector<char> lower_module(const ir::Module &module, const SourceFile &source) {
  return bytecode::write_module(lower(module, source).module);
}

} // namespace fhr
