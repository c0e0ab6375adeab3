#include "fhr/compiler/disasm.hpp"

#include "fhr/compiler/report.hpp"

namespace fhr {

namespace {

using bytecode::Instruction;
using bytecode::Opcode;

class Disassembler {
public:
  /// With `spans`, records where each instruction's statement is printed
  /// (and builds no text); without, builds the text.
  explicit Disassembler(const bytecode::Module &module, SpanTable *spans = nullptr)
      : module_(module), spans_(spans) {}

  std::string run(const std::string &origin) {
    raw("# fhr bytecode v" + std::to_string(bytecode::kFormatVersion) + ", disassembled from " + origin);
    if (module_.device_count) raw("devices " + std::to_string(*module_.device_count));
    for (const auto &[location, budget] : module_.budgets)
      raw(budget ? "budget " + location.name() + " " + format_size(*budget) : "location " + location.name());
    for (std::uint32_t i = module_.setup.begin; i < module_.setup.end;)
      i = statement(i, 0);
    for (const bytecode::PlanEntry &plan : module_.plans)
      this->plan(plan);
    for (const bytecode::ProgramEntry &program : module_.programs)
      this->program(program);
    return std::move(text_);
  }

private:
  /// Writes one physical line that carries no instruction.
  void raw(const std::string &line) {
    if (!spans_) {
      text_ += line;
      text_ += '\n';
    }
    ++next_line_;
  }
  /// Writes a line that must count as source line `line`: the statement of
  /// instructions [first, first + count).
  void at(std::uint32_t line, unsigned indent, const std::string &content, std::uint32_t first,
          std::uint32_t count) {
    if (spans_) {
      const auto column = static_cast<std::uint32_t>(indent * 2 + 1);
      for (std::uint32_t i = first; i < first + count; ++i)
        spans_->instructions[i] =
            SourceSpan{line, column, column + static_cast<std::uint32_t>(content.size())};
      return;
    }
    if (line != next_line_) {
      text_ += std::string(indent * 2, ' ') + "@line " + std::to_string(line) + "\n";
      next_line_ = line;
    }
    text_ += std::string(indent * 2, ' ') + content + '\n';
    ++next_line_;
  }

  std::string values(std::uint32_t first, std::uint32_t count) const {
    const bytecode::Declaration &d = module_.declaration_of(first);
    const std::string &name = module_.strings[d.name];
    if (d.family_size == 0) return name;
    const std::uint32_t index = first - d.first_value;
    if (count == d.family_size) return name + "[*]";
    if (count == 1) return name + "[" + std::to_string(index) + "]";
    return name + "[" + std::to_string(index) + ".." + std::to_string(index + count) + "]";
  }

  std::string declaration(const bytecode::Declaration &d) const {
    std::string out = "value " + module_.strings[d.name];
    if (d.family_size) out += "[" + std::to_string(d.family_size) + "]";
    out += " " + format_size(d.spec.logical_nbytes);
    if (d.spec.storage_nbytes != d.spec.logical_nbytes)
      out += " storage " + format_size(d.spec.storage_nbytes);
    out += d.spec.replica_mode == ReplicaMode::Replicable ? " replicable" : " exclusive";
    out += d.spec.recoverability == Recoverability::Reconstructible ? " source " : " at ";
    return out + d.location.name();
  }

public:
  /// The statement instruction i prints as (an item: its list's statement).
  std::string statement_text(std::uint32_t i) const {
    while (module_.code[i].opcode == Opcode::Item)
      --i;
    const Instruction &in = module_.code[i];
    if (in.opcode == Opcode::Declare) return declaration(module_.declarations[in.index()]);
    return render(i);
  }

private:
  /// Fills an opcode's syntax template.
  std::string render(std::uint32_t i) const {
    const Instruction &in = module_.code[i];
    std::string operands[4];
    unsigned n = 0;
    bool first_location = true;
    for (const char *kind = bytecode::info(in.opcode).operands; *kind && n < 4; ++kind, ++n) {
      switch (*kind) {
      case 'L':
        operands[n] = (first_location ? in.location : in.from).name();
        first_location = false;
        break;
      case 'V': operands[n] = values(in.value, in.count); break;
      case 'S': operands[n] = format_size(in.size); break;
      case 'P': operands[n] = string_literal(module_.strings[module_.plans[in.index()].name]); break;
      case 'R': operands[n] = module_.strings[module_.code[in.index()].alias() - 1]; break;
      default: break;
      }
    }
    std::string items;
    if (in.opcode == Opcode::Hold || in.opcode == Opcode::Lease || in.opcode == Opcode::Acquire)
      for (std::uint32_t k = 1; k <= in.index(); ++k)
        items += (k > 1 ? ", " : "") + values(module_.code[i + k].value, module_.code[i + k].count);
    std::string out;
    for (const char *p = bytecode::info(in.opcode).syntax; *p; ++p) {
      if (*p != '{' || p[1] == ' ' || p[1] == '\0') {
        out += *p;
        continue;
      }
      const char *close = p;
      while (*close && *close != '}')
        ++close;
      const std::string key(p + 1, close);
      if (key == "items")
        out += items;
      else if (key == "as")
        out += in.alias() ? " as " + module_.strings[in.alias() - 1] : "";
      else if (key == "pending")
        out += in.flag ? " pending" : "";
      else if (key == "label")
        out += string_literal(module_.strings[in.index()]);
      else
        out += operands[key[0] - '0'];
      p = close;
    }
    return out;
  }

  /// Prints the instruction at `i` (and its items); returns the next index.
  std::uint32_t statement(std::uint32_t i, unsigned indent) {
    const Instruction &in = module_.code[i];
    const std::uint32_t count = bytecode::has_items(in.opcode) ? in.index() + 1 : 1;
    at(in.line, indent, statement_text(i), i, count);
    return i + count;
  }

  void block(const char *keyword, bytecode::InstructionRange range) {
    if (range.size() == 0) return;
    raw(std::string("  ") + keyword + " {");
    for (std::uint32_t i = range.begin; i < range.end;)
      i = statement(i, 2);
    raw("  }");
  }

  void plan(const bytecode::PlanEntry &plan) {
    const std::string name = string_literal(module_.strings[plan.name]);
    if (spans_) // the plan's position is its name's, after `plan `
      spans_->plans.push_back(SourceSpan{plan.line, 6, 6 + static_cast<std::uint32_t>(name.size())});
    at(plan.line, 0, "plan " + name + (plan.in_program ? " in program {" : " {"), 0, 0);
    block("reclaim", plan.reclaim);
    for (std::uint32_t i = plan.reserve.begin; i < plan.reserve.end;)
      i = statement(i, 1);
    block("enter", plan.enter);
    block("exit", plan.exit);
    raw("}");
  }

  void program(const bytecode::ProgramEntry &program) {
    if (spans_) // the position of the `program` keyword
      spans_->programs.push_back(SourceSpan{program.line, 1, 8});
    at(program.line, 0, "program " + string_literal(module_.strings[program.name]) + " {", 0, 0);
    unsigned depth = 1;
    for (std::uint32_t i = program.body.begin; i < program.body.end;) {
      const Instruction &in = module_.code[i];
      if (in.opcode == Opcode::End) {
        --depth;
        if (spans_) // never a step's position; the closing brace's
          spans_->instructions[i] = SourceSpan{in.line, depth * 2 + 1, depth * 2 + 2};
        raw(std::string(depth * 2, ' ') + "}");
        ++i;
        continue;
      }
      i = statement(i, depth);
      if (in.opcode == Opcode::Scope || in.opcode == Opcode::Actions) ++depth;
    }
    raw("}");
  }

  const bytecode::Module &module_;
  SpanTable *spans_;
  std::string text_;
  std::uint32_t next_line_ = 1;
};

} // namespace

std::string disassemble(const bytecode::Module &module, const std::string &origin) {
  return Disassembler(module).run(origin);
}

SpanTable module_spans(std::shared_ptr<const bytecode::Module> module, const std::string &file) {
  SpanTable layout;
  layout.instructions.resize(module->code.size());
  Disassembler(*module, &layout).run(file);
  auto indents = std::make_shared<std::vector<std::uint32_t>>();
  indents->reserve(layout.instructions.size());
  for (const SourceSpan &span : layout.instructions)
    indents->push_back(span.column == 0 ? 0 : span.column - 1);
  // An excerpt is the statement as the disassembly prints it, indented:
  // rendered when a message shows it, not for every instruction.
  SpanTable spans(file, [module, indents](std::uint32_t i) {
    if (i >= module->code.size()) return std::string();
    if (module->code[i].opcode == Opcode::End) return std::string((*indents)[i], ' ') + "}";
    return std::string((*indents)[i], ' ') + Disassembler(*module).statement_text(i);
  });
  spans.instructions = std::move(layout.instructions);
  spans.plans = std::move(layout.plans);
  spans.programs = std::move(layout.programs);
  return spans;
}

} // namespace fhr
