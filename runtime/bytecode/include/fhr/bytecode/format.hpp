#pragma once
/// \file
/// The fhr bytecode module format (`.fhrb`), version 1. All integers are
/// little-endian; variable-length integers are unsigned LEB128 (at most 10
/// bytes, no bits past 64).
///
///   offset  size  field
///   ------  ----  -----------------------------------------------------
///        0     4  magic "FHRB"
///        4     2  format version (1)
///        6     2  flags (0; reserved)
///        8     4  section count (7)
///       12     4  payload size: bytes after this 32-byte header
///       16     8  XXH64 of the payload, seed 0
///       24     8  reserved (0)
///       32  16*n  section table: kind u32, offset u32 (from the start of
///                 the file), size u32, reserved u32 (0)
///        …        sections, in kind order, back to back, filling the payload
///
/// Sections (each exactly once):
///   1 STRINGS   count, then count × (length, bytes)
///   2 MACHINE   devices + 1 (0: undeclared), budget count, count × (location
///               byte, has-budget byte, [budget]), setup end (instruction index)
///   3 DECLS     count, then count × (name string, family size (0: a single
///               value), logical bytes, storage bytes, flags byte (bit 0
///               replicable, bit 1 reconstructible), location byte)
///   4 CODE      count, then count instructions: opcode byte + operands
///               (see opcodes.def)
///   5 PLANS     count, then count × (name string, line, first instruction,
///               reclaim, reserve, enter, exit instruction counts)
///   6 PROGRAMS  count, then count × (name string, line, first instruction,
///               instruction count)
///   7 LINES     count (= instructions), then count zigzag LEB128 deltas of
///               the source line of each instruction from the previous one
///
/// The instruction stream is partitioned, in order, into setup, the plans
/// and the programs. docs/bytecode.md explains every field and rule.

#include <cstdint>

namespace fhr::bytecode {

inline constexpr char kMagic[4] = {'F', 'H', 'R', 'B'};
inline constexpr std::uint16_t kFormatVersion = 1;
inline constexpr std::uint32_t kHeaderSize = 32;
inline constexpr std::uint32_t kSectionEntrySize = 16;

enum class SectionKind : std::uint32_t {
  Strings = 1,
  Machine = 2,
  Decls = 3,
  Code = 4,
  Plans = 5,
  Programs = 6,
  Lines = 7,
};
inline constexpr std::uint32_t kSectionCount = 7;

enum class Opcode : std::uint8_t {
#define FHR_OPCODE(name, mnemonic, operands, syntax) name,
#include "fhr/bytecode/opcodes.def"
#undef FHR_OPCODE
};

struct OpcodeInfo {
  const char *mnemonic;
  const char *operands; ///< operand kind letters, see opcodes.def
  const char *syntax;   ///< disassembly template
};

inline constexpr OpcodeInfo kOpcodes[] = {
#define FHR_OPCODE(name, mnemonic, operands, syntax) {mnemonic, operands, syntax},
#include "fhr/bytecode/opcodes.def"
#undef FHR_OPCODE
};
inline constexpr unsigned kOpcodeCount = sizeof(kOpcodes) / sizeof(kOpcodes[0]);

inline const OpcodeInfo &info(Opcode op) { return kOpcodes[static_cast<unsigned>(op)]; }

/// Declaration flag bits.
inline constexpr std::uint8_t kDeclReplicable = 1;
inline constexpr std::uint8_t kDeclReconstructible = 2;

/// The words of the plan language that cannot name a value or an alias.
/// Declaration names and aliases in a module must be identifiers outside this
/// list, so that every verified module disassembles to valid text.
inline constexpr const char *kReservedWords[] = {
    "const",  "budget",  "location", "devices", "value",   "storage", "exclusive", "replicable", "at",
    "source", "ensure",  "copy",     "move",    "drop",    "discard", "to",        "from",       "hold",
    "lease",  "pending", "acquire",  "reserve", "release", "as",      "plan",      "reclaim",    "enter",
    "exit",   "program", "scope",    "run",     "actions", "for",     "in"};

/// Nesting limit of scopes in a program (as in the language).
inline constexpr unsigned kMaxScopeDepth = 64;

} // namespace fhr::bytecode
