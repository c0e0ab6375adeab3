#pragma once
/// \file
/// The fhr bytecode module format (`.fhrb`), version 2. All integers are
/// little-endian; variable-length integers are unsigned LEB128 (at most 10
/// bytes, no bits past 64).
///
///   offset  size  field
///   ------  ----  -----------------------------------------------------
///        0     4  magic "FHRB"
///        4     2  format version (2; readers accept 1)
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
///   5 PLANS     count, then count × (name string, line, [flags byte (bit 0:
///               runs only in programs), version 2 only], first instruction,
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
inline constexpr std::uint16_t kFormatVersion = 2;
/// The oldest version a reader accepts: version 1 lacks the plans' flags
/// byte (every plan is then explained on its own as well).
inline constexpr std::uint16_t kOldestFormatVersion = 1;
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
#define FHR_OPCODE(name, mnemonic, operands, kind, contexts, syntax, meaning) name,
#include "fhr/bytecode/opcodes.def"
#undef FHR_OPCODE
};

/// What an instruction does (the Kind column of opcodes.def).
enum class OpcodeKind : std::uint8_t {
  Declaration, ///< registers the values of a declaration
  Action,      ///< a primitive transition for each value of its range
  Lifetime,    ///< opens or ends a hold, lease or reservation
  Item,        ///< one value range of the list of the header before it
  Structure,   ///< a scope, a run, an action list, or the end of one
};

/// Where in a module an instruction stands (the Contexts column of
/// opcodes.def); an opcode's contexts are a set of these bits.
enum class Context : std::uint8_t {
  Setup = 1,       ///< the setup section
  PlanPhase = 2,   ///< a plan's reclaim, enter or exit range
  PlanReserve = 4, ///< a plan's reservation range
  Body = 8,        ///< a program body, inside scopes too
  List = 16,       ///< inside an `actions` list
  Items = 32,      ///< the instructions counted by a header's item count
};
inline constexpr Context kContexts[] = {Context::Setup, Context::PlanPhase, Context::PlanReserve,
                                        Context::Body,  Context::List,      Context::Items};

/// "setup", "a plan phase", ...: how messages and the documentation name it.
constexpr const char *context_name(Context context) {
  switch (context) {
  case Context::Setup: return "setup";
  case Context::PlanPhase: return "a plan phase";
  case Context::PlanReserve: return "a plan's reservations";
  case Context::Body: return "a program body";
  case Context::List: return "an action list";
  case Context::Items: return "an item list";
  }
  return "?";
}

struct OpcodeInfo {
  const char *mnemonic;
  const char *operands; ///< operand kind letters, see opcodes.def
  OpcodeKind kind;
  std::uint8_t contexts; ///< Context bits where the verifier accepts it
  const char *syntax;    ///< disassembly template
  const char *meaning;   ///< the documentation's sentence
};

namespace detail {
/// The Contexts column's names, for the table's initialiser below.
namespace context_names {
inline constexpr std::uint8_t Setup = static_cast<std::uint8_t>(Context::Setup);
inline constexpr std::uint8_t PlanPhase = static_cast<std::uint8_t>(Context::PlanPhase);
inline constexpr std::uint8_t PlanReserve = static_cast<std::uint8_t>(Context::PlanReserve);
inline constexpr std::uint8_t Body = static_cast<std::uint8_t>(Context::Body);
inline constexpr std::uint8_t List = static_cast<std::uint8_t>(Context::List);
inline constexpr std::uint8_t Items = static_cast<std::uint8_t>(Context::Items);
} // namespace context_names
} // namespace detail

inline constexpr OpcodeInfo kOpcodes[] = {
#define FHR_OPCODE(name, mnemonic, operands, kind, contexts, syntax, meaning)                                \
  {mnemonic,                                                                                                 \
   operands,                                                                                                 \
   OpcodeKind::kind,                                                                                         \
   [] {                                                                                                      \
     using namespace detail::context_names;                                                                  \
     return static_cast<std::uint8_t>(contexts);                                                             \
   }(),                                                                                                      \
   syntax,                                                                                                   \
   meaning},
#include "fhr/bytecode/opcodes.def"
#undef FHR_OPCODE
};
inline constexpr unsigned kOpcodeCount = sizeof(kOpcodes) / sizeof(kOpcodes[0]);

constexpr const OpcodeInfo &info(Opcode op) { return kOpcodes[static_cast<unsigned>(op)]; }

/// A primitive transition (ensure, copy, move, move.from, drop, discard).
constexpr bool is_action(Opcode op) { return info(op).kind == OpcodeKind::Action; }
/// Whether the verifier accepts `op` in `context`.
constexpr bool allowed_in(Opcode op, Context context) {
  return (info(op).contexts & static_cast<std::uint8_t>(context)) != 0;
}
namespace detail {
constexpr bool has_operand(const OpcodeInfo &info, char operand) {
  for (const char *kind = info.operands; *kind; ++kind)
    if (*kind == operand) return true;
  return false;
}
/// Per opcode: whether it has an N operand, an A operand.
struct OperandFlags {
  bool items[kOpcodeCount] = {};
  bool alias[kOpcodeCount] = {};
  constexpr OperandFlags() {
    for (unsigned op = 0; op < kOpcodeCount; ++op) {
      items[op] = has_operand(kOpcodes[op], 'N');
      alias[op] = has_operand(kOpcodes[op], 'A');
    }
  }
};
inline constexpr OperandFlags kOperandFlags;
} // namespace detail

/// Whether `op` opens a value list (its N operand counts the items after it).
constexpr bool has_items(Opcode op) { return detail::kOperandFlags.items[static_cast<unsigned>(op)]; }
/// Whether `op` may name what it opens (an A operand).
constexpr bool has_alias(Opcode op) { return detail::kOperandFlags.alias[static_cast<unsigned>(op)]; }

/// Declaration flag bits.
inline constexpr std::uint8_t kDeclReplicable = 1;
inline constexpr std::uint8_t kDeclReconstructible = 2;

/// Plan flag bits (version 2).
inline constexpr std::uint8_t kPlanInProgram = 1;

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
