#include "fhr/compiler/lower.hpp"

#include "fhr/bytecode/format.hpp"
#include "fhr/bytecode/module.hpp"

#include <llvm/ADT/StringMap.h>
#include <llvm/Support/EndianStream.h>
#include <llvm/Support/LEB128.h>
#include <llvm/Support/raw_ostream.h>

namespace fhr {

namespace {

using bytecode::Opcode;

/// One instruction before encoding; operands as the opcode table orders them.
struct Encoded {
  Opcode opcode = Opcode::End;
  Location location, from;
  std::uint32_t value = 0, count = 0, index = 0, alias = 0;
  std::uint64_t size = 0;
  bool flag = false;
  std::uint32_t line = 0;
};

class Lowering {
public:
  Lowering(const ir::Module &module, const SourceFile &source) : module_(module), source_(source) {}

  std::vector<char> run() {
    declarations();
    setup();
    setup_end_ = static_cast<std::uint32_t>(code_.size());
    for (const ir::Plan &plan : module_.plans)
      this->plan(plan);
    for (const ir::Program &program : module_.programs)
      this->program(program);
    return assemble();
  }

private:
  std::uint32_t line(ast::Span span) const { return source_.line_and_column(span.begin).first; }

  std::uint32_t intern(const std::string &text) {
    auto [it, inserted] = string_index_.try_emplace(text, static_cast<std::uint32_t>(strings_.size()));
    if (inserted) strings_.push_back(text);
    return it->second;
  }

  std::uint32_t emit(Encoded in) {
    code_.push_back(in);
    return static_cast<std::uint32_t>(code_.size() - 1);
  }

  void declarations() {
    for (std::size_t v = 0; v < module_.values.size();) {
      const ir::Value &value = module_.values[v];
      const bool family = value.family != ir::kNoFamily;
      const std::uint32_t count = family ? module_.families[value.family].count : 1;
      decl_of_value_.insert(decl_of_value_.end(), count, static_cast<std::uint32_t>(decl_names_.size()));
      decl_names_.push_back(intern(family ? module_.families[value.family].name : value.name));
      decl_family_sizes_.push_back(family ? count : 0);
      v += count;
    }
  }

  bool same_family(ValueId a, ValueId b) const {
    return module_.values[a].family != ir::kNoFamily && module_.values[a].family == module_.values[b].family;
  }

  static Opcode opcode_of(const Action &action) {
    switch (action.kind) {
    case ActionKind::Ensure: return Opcode::Ensure;
    case ActionKind::Copy: return Opcode::Copy;
    case ActionKind::Move: return action.from ? Opcode::MoveFrom : Opcode::Move;
    case ActionKind::Drop: return Opcode::Drop;
    case ActionKind::Discard: return Opcode::Discard;
    }
    return Opcode::Ensure;
  }

  /// Emits actions, folding runs that one statement wrote over consecutive
  /// members of a family into one range instruction.
  void actions(std::span<const Action> list, std::span<const ast::Span> spans) {
    for (std::size_t i = 0; i < list.size();) {
      std::size_t run = 1;
      while (i + run < list.size() && spans[i + run].begin == spans[i].begin &&
             list[i + run].kind == list[i].kind && list[i + run].location == list[i].location &&
             list[i + run].from == list[i].from && list[i + run].value == list[i].value + run &&
             same_family(list[i].value, list[i + run].value))
        ++run;
      Encoded in;
      in.opcode = opcode_of(list[i]);
      in.location = list[i].location;
      if (list[i].from) in.from = *list[i].from;
      in.value = list[i].value;
      in.count = static_cast<std::uint32_t>(run);
      in.line = line(spans[i]);
      emit(in);
      i += run;
    }
  }

  /// A hold/lease/acquire header followed by its items (runs of one family).
  void value_list(Encoded header, const std::vector<ValueId> &values) {
    std::vector<Encoded> items;
    for (std::size_t i = 0; i < values.size();) {
      std::size_t run = 1;
      while (i + run < values.size() && values[i + run] == values[i] + run &&
             same_family(values[i], values[i + run]))
        ++run;
      Encoded item;
      item.opcode = Opcode::Item;
      item.value = values[i];
      item.count = static_cast<std::uint32_t>(run);
      item.line = header.line;
      items.push_back(item);
      i += run;
    }
    header.index = static_cast<std::uint32_t>(items.size());
    emit(header);
    for (const Encoded &item : items)
      emit(item);
  }

  std::uint32_t alias(const std::string &name) { return name.empty() ? 0 : intern(name) + 1; }

  Encoded reserve(Location location, std::uint64_t nbytes, const std::string &label, const std::string &name,
                  ast::Span span) {
    Encoded in;
    in.opcode = Opcode::Reserve;
    in.location = location;
    in.size = nbytes;
    in.index = intern(label);
    in.alias = alias(name);
    in.line = line(span);
    return in;
  }

  void setup() {
    std::vector<std::uint32_t> instruction_of_step(module_.setup.size(), 0);
    for (std::size_t s = 0; s < module_.setup.size();) {
      const ir::SetupStep &step = module_.setup[s];
      switch (step.kind) {
      case ir::SetupKind::Adopt:
      case ir::SetupKind::RegisterSource: {
        const ir::Value &value = module_.values[step.value];
        if (value.family == ir::kNoFamily || value.family_index == 0) {
          Encoded in;
          in.opcode = Opcode::Declare;
          in.index = decl_of_value_[step.value];
          in.line = line(step.span);
          emit(in);
        }
        ++s;
        continue;
      }
      case ir::SetupKind::Action: {
        std::size_t end = s;
        std::vector<Action> run;
        std::vector<ast::Span> spans;
        while (end < module_.setup.size() && module_.setup[end].kind == ir::SetupKind::Action) {
          run.push_back(module_.setup[end].action);
          spans.push_back(module_.setup[end].span);
          ++end;
        }
        actions(run, spans);
        s = end;
        continue;
      }
      case ir::SetupKind::Hold:
      case ir::SetupKind::Lease: {
        Encoded header;
        header.opcode = step.kind == ir::SetupKind::Hold ? Opcode::Hold : Opcode::Lease;
        header.location = step.location;
        header.alias = alias(step.alias);
        header.flag = step.pending;
        header.line = line(step.span);
        instruction_of_step[s] = static_cast<std::uint32_t>(code_.size());
        value_list(header, step.values);
        break;
      }
      case ir::SetupKind::Reserve:
        instruction_of_step[s] = emit(reserve(step.location, step.nbytes, step.label, step.alias, step.span));
        break;
      case ir::SetupKind::Release: {
        Encoded in;
        in.opcode = Opcode::Release;
        in.index = instruction_of_step[step.target];
        in.line = line(step.span);
        emit(in);
        break;
      }
      }
      ++s;
    }
  }

  void plan(const ir::Plan &plan) {
    PlanRecord record{intern(plan.name), line(plan.span), static_cast<std::uint32_t>(code_.size()), {}};
    std::size_t start = code_.size();
    actions(plan.reclaim.actions, plan.reclaim.spans);
    record.counts[0] = static_cast<std::uint32_t>(code_.size() - start);
    start = code_.size();
    for (std::size_t i = 0; i < plan.reservations.size(); ++i) {
      const Reservation &r = plan.reservations[i];
      emit(reserve(r.location, r.nbytes, r.label, {}, plan.reservation_spans[i]));
    }
    record.counts[1] = static_cast<std::uint32_t>(code_.size() - start);
    start = code_.size();
    actions(plan.enter.actions, plan.enter.spans);
    record.counts[2] = static_cast<std::uint32_t>(code_.size() - start);
    start = code_.size();
    actions(plan.exit.actions, plan.exit.spans);
    record.counts[3] = static_cast<std::uint32_t>(code_.size() - start);
    plans_.push_back(record);
  }

  void program_items(const std::vector<ir::ProgramItem> &items) {
    for (std::size_t i = 0; i < items.size();) {
      const ir::ProgramItem &item = items[i];
      Encoded in;
      in.line = line(item.span);
      switch (item.kind) {
      case ir::ProgramItemKind::Scope:
        in.opcode = Opcode::Scope;
        in.index = item.plan;
        emit(in);
        program_items(item.body);
        in.opcode = Opcode::End;
        in.index = 0;
        emit(in);
        break;
      case ir::ProgramItemKind::Run:
        in.opcode = Opcode::Run;
        in.index = item.plan;
        emit(in);
        break;
      case ir::ProgramItemKind::Actions:
        in.opcode = Opcode::Actions;
        in.index = intern(item.name);
        emit(in);
        actions(item.actions.actions, item.actions.spans);
        in.opcode = Opcode::End;
        in.index = 0;
        emit(in);
        break;
      case ir::ProgramItemKind::Acquire:
      case ir::ProgramItemKind::Hold:
        in.opcode = item.kind == ir::ProgramItemKind::Acquire ? Opcode::Acquire : Opcode::Hold;
        in.location = item.location;
        value_list(in, item.values);
        break;
      case ir::ProgramItemKind::Reserve:
        emit(reserve(item.location, item.reservation.nbytes, item.reservation.label, {}, item.span));
        break;
      case ir::ProgramItemKind::Direct: {
        // Consecutive direct actions fold like any action list.
        std::vector<Action> run;
        std::vector<ast::Span> spans;
        while (i < items.size() && items[i].kind == ir::ProgramItemKind::Direct) {
          run.push_back(items[i].actions.actions[0]);
          spans.push_back(items[i].actions.spans[0]);
          ++i;
        }
        actions(run, spans);
        continue;
      }
      }
      ++i;
    }
  }

  void program(const ir::Program &program) {
    const auto start = static_cast<std::uint32_t>(code_.size());
    program_items(program.items);
    programs_.push_back(ProgramRecord{intern(program.name), line(program.span), start,
                                      static_cast<std::uint32_t>(code_.size()) - start});
  }

  // ---- encoding --------------------------------------------------------------
  using Buffer = llvm::SmallVector<char, 0>;

  static void leb(llvm::raw_ostream &os, std::uint64_t value) { llvm::encodeULEB128(value, os); }
  static void byte(llvm::raw_ostream &os, std::uint8_t value) { os << static_cast<char>(value); }

  void encode_instruction(llvm::raw_ostream &os, const Encoded &in) {
    byte(os, static_cast<std::uint8_t>(in.opcode));
    bool first_location = true;
    for (const char *kind = bytecode::info(in.opcode).operands; *kind; ++kind) {
      switch (*kind) {
      case 'L':
        byte(os, static_cast<std::uint8_t>((first_location ? in.location : in.from).index()));
        first_location = false;
        break;
      case 'V':
        leb(os, in.value);
        leb(os, in.count);
        break;
      case 'S': leb(os, in.size); break;
      case 'A': leb(os, in.alias); break;
      case 'F': byte(os, in.flag ? 1 : 0); break;
      default: leb(os, in.index); break; // D P R N T
      }
    }
  }

  /// STRINGS: count, then (length, bytes) per string.
  void write_strings(llvm::raw_ostream &os) {
    leb(os, strings_.size());
    for (const std::string &s : strings_) {
      leb(os, s.size());
      os << s;
    }
  }

  /// MACHINE: devices + 1, budgets, setup end.
  void write_machine(llvm::raw_ostream &os) {
    leb(os, module_.device_count ? *module_.device_count + 1 : 0);
    leb(os, module_.budgets.size());
    for (const auto &[location, budget] : module_.budgets) {
      byte(os, static_cast<std::uint8_t>(location.index()));
      byte(os, budget ? 1 : 0);
      if (budget) leb(os, *budget);
    }
    leb(os, setup_end_);
  }

  /// DECLS: one record per single value or family.
  void write_declarations_section(llvm::raw_ostream &os) {
    leb(os, decl_names_.size());
    std::size_t v = 0;
    for (std::size_t d = 0; d < decl_names_.size(); ++d) {
      const ir::Value &value = module_.values[v];
      leb(os, decl_names_[d]);
      leb(os, decl_family_sizes_[d]);
      leb(os, value.spec.logical_nbytes);
      leb(os, value.spec.storage_nbytes);
      byte(os,
           static_cast<std::uint8_t>(
               (value.spec.replica_mode == ReplicaMode::Replicable ? bytecode::kDeclReplicable : 0) |
               (value.spec.recoverability == Recoverability::Reconstructible ? bytecode::kDeclReconstructible
                                                                             : 0)));
      byte(os, static_cast<std::uint8_t>(value.location.index()));
      v += decl_family_sizes_[d] == 0 ? 1 : decl_family_sizes_[d];
    }
  }

  /// CODE: count, then the instructions.
  void write_code(llvm::raw_ostream &os) {
    leb(os, code_.size());
    for (const Encoded &in : code_)
      encode_instruction(os, in);
  }

  /// PLANS: name, line, first instruction and the four phase counts.
  void write_plans(llvm::raw_ostream &os) {
    leb(os, plans_.size());
    for (const PlanRecord &p : plans_) {
      leb(os, p.name);
      leb(os, p.line);
      leb(os, p.start);
      for (std::uint32_t c : p.counts)
        leb(os, c);
    }
  }

  /// PROGRAMS: name, line, first instruction and length.
  void write_programs(llvm::raw_ostream &os) {
    leb(os, programs_.size());
    for (const ProgramRecord &p : programs_) {
      leb(os, p.name);
      leb(os, p.line);
      leb(os, p.start);
      leb(os, p.length);
    }
  }

  /// LINES: zigzag deltas of each instruction's line.
  void write_lines(llvm::raw_ostream &os) {
    leb(os, code_.size());
    std::int64_t previous = 0;
    for (const Encoded &in : code_) {
      const std::int64_t delta = static_cast<std::int64_t>(in.line) - previous;
      leb(os, (static_cast<std::uint64_t>(delta) << 1) ^ static_cast<std::uint64_t>(delta >> 63));
      previous = in.line;
    }
  }

  std::vector<char> assemble() {
    Buffer sections[bytecode::kSectionCount];
    auto fill = [](Buffer &buffer, auto &&write) {
      llvm::raw_svector_ostream os(buffer);
      write(os);
    };
    fill(sections[0], [&](llvm::raw_ostream &os) { write_strings(os); });
    fill(sections[1], [&](llvm::raw_ostream &os) { write_machine(os); });
    fill(sections[2], [&](llvm::raw_ostream &os) { write_declarations_section(os); });
    fill(sections[3], [&](llvm::raw_ostream &os) { write_code(os); });
    fill(sections[4], [&](llvm::raw_ostream &os) { write_plans(os); });
    fill(sections[5], [&](llvm::raw_ostream &os) { write_programs(os); });
    fill(sections[6], [&](llvm::raw_ostream &os) { write_lines(os); });

    Buffer file;
    llvm::raw_svector_ostream os(file);
    llvm::support::endian::Writer out(os, llvm::support::little);
    os.write(bytecode::kMagic, 4);
    out.write<std::uint16_t>(bytecode::kFormatVersion);
    out.write<std::uint16_t>(0);
    out.write<std::uint32_t>(bytecode::kSectionCount);
    std::size_t payload = bytecode::kSectionCount * bytecode::kSectionEntrySize;
    for (const Buffer &s : sections)
      payload += s.size();
    out.write<std::uint32_t>(static_cast<std::uint32_t>(payload));
    const std::size_t checksum_at = file.size();
    out.write<std::uint64_t>(0); // patched below
    out.write<std::uint64_t>(0);
    std::uint32_t offset = bytecode::kHeaderSize + bytecode::kSectionCount * bytecode::kSectionEntrySize;
    for (std::uint32_t i = 0; i < bytecode::kSectionCount; ++i) {
      out.write<std::uint32_t>(i + 1);
      out.write<std::uint32_t>(offset);
      out.write<std::uint32_t>(static_cast<std::uint32_t>(sections[i].size()));
      out.write<std::uint32_t>(0);
      offset += static_cast<std::uint32_t>(sections[i].size());
    }
    for (const Buffer &s : sections)
      os.write(s.data(), s.size());
    const std::uint64_t sum = bytecode::checksum(
        std::as_bytes(std::span(file.data() + bytecode::kHeaderSize, file.size() - bytecode::kHeaderSize)));
    llvm::support::endian::write64le(file.data() + checksum_at, sum);
    return std::vector<char>(file.begin(), file.end());
  }

  struct PlanRecord {
    std::uint32_t name, line, start;
    std::uint32_t counts[4];
  };
  struct ProgramRecord {
    std::uint32_t name, line, start, length;
  };

  const ir::Module &module_;
  const SourceFile &source_;
  std::vector<std::string> strings_;
  llvm::StringMap<std::uint32_t> string_index_;
  std::vector<std::uint32_t> decl_of_value_;
  std::vector<std::uint32_t> decl_names_;
  std::vector<std::uint32_t> decl_family_sizes_;
  std::vector<Encoded> code_;
  std::uint32_t setup_end_ = 0;
  std::vector<PlanRecord> plans_;
  std::vector<ProgramRecord> programs_;
};

} // namespace

std::vector<char> lower_module(const ir::Module &module, const SourceFile &source) {
  return Lowering(module, source).run();
}

} // namespace fhr
