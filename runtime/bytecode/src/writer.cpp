#include "fhr/bytecode/writer.hpp"

#include <cstring>
#include <memory>

namespace fhr::bytecode {

namespace {

/// Little-endian and LEB128 encoding into a growing byte vector.
class Output {
public:
  std::vector<char> bytes;

  void byte(std::uint8_t value) { bytes.push_back(static_cast<char>(value)); }

  void leb(std::uint64_t value) {
    while (value >= 0x80) {
      bytes.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    bytes.push_back(static_cast<char>(value));
  }

  void location(Location location) { byte(static_cast<std::uint8_t>(location.index())); }

  void fixed(std::size_t at, std::uint64_t value, unsigned size) {
    for (unsigned i = 0; i < size; ++i)
      bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
  }
};

void write_strings(Output &out, const Module &m) {
  out.leb(m.strings.size());
  for (const std::string &s : m.strings) {
    out.leb(s.size());
    out.bytes.insert(out.bytes.end(), s.begin(), s.end());
  }
}

void write_machine(Output &out, const Module &m) {
  out.leb(m.device_count ? *m.device_count + 1 : 0);
  out.leb(m.budgets.size());
  for (const auto &[location, budget] : m.budgets) {
    out.location(location);
    out.byte(budget ? 1 : 0);
    if (budget) out.leb(*budget);
  }
  out.leb(m.setup.end);
}

void write_declarations(Output &out, const Module &m) {
  out.leb(m.declarations.size());
  for (const Declaration &d : m.declarations) {
    out.leb(d.name);
    out.leb(d.family_size);
    out.leb(d.spec.logical_nbytes);
    out.leb(d.spec.storage_nbytes);
    out.byte(static_cast<std::uint8_t>(
        (d.spec.replica_mode == ReplicaMode::Replicable ? kDeclReplicable : 0) |
        (d.spec.recoverability == Recoverability::Reconstructible ? kDeclReconstructible : 0)));
    out.location(d.location);
  }
}

/// LEB128 of `value` at `at`; returns the byte after it.
char *leb_at(char *at, std::uint64_t value) {
  while (value >= 0x80) {
    *at++ = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  *at++ = static_cast<char>(value);
  return at;
}

/// The most bytes an instruction encodes to: opcode, then at most a V
/// (two LEBs), an S or an index, two locations or a location and a flag,
/// and an A.
constexpr std::size_t kMaxInstructionBytes = 1 + 2 * 10 + 10 + 2 + 10;

/// The opcode byte, then the operands in the order opcodes.def lists them;
/// returns the byte after the instruction.
char *write_instruction(char *at, const Instruction &in) {
  *at++ = static_cast<char>(in.opcode);
  bool first_location = true;
  for (const char *kind = info(in.opcode).operands; *kind; ++kind) {
    switch (*kind) {
    case 'L':
      *at++ = static_cast<char>((first_location ? in.location : in.from).index());
      first_location = false;
      break;
    case 'V':
      at = leb_at(at, in.value);
      at = leb_at(at, in.count);
      break;
    case 'S': at = leb_at(at, in.size); break;
    case 'A': at = leb_at(at, in.alias()); break;
    case 'F': *at++ = static_cast<char>(in.flag ? 1 : 0); break;
    default: at = leb_at(at, in.index()); break; // D P R N T
    }
  }
  return at;
}

void write_code(Output &out, const Module &m) {
  out.leb(m.code.size());
  // Encoded into uninitialised memory of the worst-case size (pages that
  // are never written cost nothing), then appended at once.
  const std::unique_ptr<char[]> buffer(new char[m.code.size() * kMaxInstructionBytes]);
  char *at = buffer.get();
  for (const Instruction &in : m.code)
    at = write_instruction(at, in);
  out.bytes.insert(out.bytes.end(), buffer.get(), at);
}

void write_plans(Output &out, const Module &m) {
  out.leb(m.plans.size());
  for (const PlanEntry &p : m.plans) {
    out.leb(p.name);
    out.leb(p.line);
    out.byte(p.in_program ? kPlanInProgram : 0);
    out.leb(p.reclaim.begin);
    for (const InstructionRange &range : {p.reclaim, p.reserve, p.enter, p.exit})
      out.leb(range.size());
  }
}

void write_programs(Output &out, const Module &m) {
  out.leb(m.programs.size());
  for (const ProgramEntry &p : m.programs) {
    out.leb(p.name);
    out.leb(p.line);
    out.leb(p.body.begin);
    out.leb(p.body.size());
  }
}

void write_lines(Output &out, const Module &m) {
  out.leb(m.code.size());
  std::int64_t previous = 0;
  for (const Instruction &in : m.code) {
    const std::int64_t delta = static_cast<std::int64_t>(in.line) - previous;
    const auto zigzag = (static_cast<std::uint64_t>(delta) << 1) ^ static_cast<std::uint64_t>(delta >> 63);
    if (zigzag < 0x80)
      out.bytes.push_back(static_cast<char>(zigzag)); // most lines follow the one before
    else
      out.leb(zigzag);
    previous = in.line;
  }
}

} // namespace

std::vector<char> write_module(const Module &module) {
  Output out;
  // About 6 bytes per instruction; the sections are written in place after
  // the header and the section table, which are filled in at the end.
  out.bytes.reserve(kHeaderSize + kSectionCount * kSectionEntrySize + 64 + module.code.size() * 7);
  out.bytes.resize(kHeaderSize + kSectionCount * kSectionEntrySize, 0);
  using Section = void (*)(Output &, const Module &);
  constexpr Section sections[kSectionCount] = {write_strings, write_machine,  write_declarations, write_code,
                                               write_plans,   write_programs, write_lines};
  for (std::uint32_t i = 0; i < kSectionCount; ++i) {
    const std::size_t begin = out.bytes.size();
    sections[i](out, module);
    const std::size_t entry = kHeaderSize + i * kSectionEntrySize;
    out.fixed(entry, i + 1, 4); // kind
    out.fixed(entry + 4, begin, 4);
    out.fixed(entry + 8, out.bytes.size() - begin, 4);
  }
  std::memcpy(out.bytes.data(), kMagic, 4);
  out.fixed(4, kFormatVersion, 2);
  out.fixed(8, kSectionCount, 4);
  out.fixed(12, out.bytes.size() - kHeaderSize, 4);
  const std::uint64_t sum =
      checksum(std::as_bytes(std::span(out.bytes.data() + kHeaderSize, out.bytes.size() - kHeaderSize)));
  out.fixed(16, sum, 8);
  return std::move(out.bytes);
}

} // namespace fhr::bytecode
