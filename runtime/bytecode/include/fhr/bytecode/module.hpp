#pragma once
/// \file
/// A loaded and verified bytecode module. `load_module` accepts untrusted
/// bytes; everything it returns has been checked (offsets, indices, ranges,
/// nesting, the checksum), so executors and the disassembler use it without
/// further bounds checks. writer.hpp encodes the same structure.

#include "fhr/bytecode/format.hpp"
#include "fhr/model/location.hpp"
#include "fhr/model/value_spec.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace fhr::bytecode {

/// Why a module was rejected.
enum class ModuleErrorCode : std::uint8_t {
  Truncated, ///< the file ends before a field it must hold
  BadMagic,
  UnsupportedVersion,
  BadHeader, ///< flags, reserved fields or sizes of the header
  ChecksumMismatch,
  BadSectionTable, ///< unknown, missing, repeated, misordered, overlapping or out-of-bounds sections
  BadSection,      ///< a section's contents do not decode or have bytes left over
  BadIndex,        ///< a string, declaration, plan, value or instruction index out of range
  BadOperand,      ///< an operand value that is never valid (location, flag, count, blank name)
  BadOpcode,
  BadStructure, ///< instructions in the wrong place, unbalanced scopes, wrong ranges
};

/// The error class of every loader failure; `what()` says what and where.
class ModuleError : public std::runtime_error {
public:
  ModuleError(ModuleErrorCode code, std::size_t offset, const std::string &message);
  ModuleErrorCode code() const { return code_; }
  /// Byte offset in the file where the problem was found.
  std::size_t offset() const { return offset_; }

private:
  ModuleErrorCode code_;
  std::size_t offset_;
};

std::string_view module_error_name(ModuleErrorCode code);

/// One decoded instruction, 24 bytes: a module of a million actions decodes
/// into 24 MB. No opcode has both a V operand and an index or alias, so they
/// share storage; read them through the accessors.
struct Instruction {
  Opcode opcode = Opcode::End;
  Location location;       ///< first L operand
  Location from;           ///< second L operand (MoveFrom)
  bool flag = false;       ///< F
  std::uint32_t value = 0; ///< V: first value id; A: the alias
  std::uint32_t count = 0; ///< V: number of values; D P R T N: the index or item count
  std::uint32_t line = 0;  ///< source line
  std::uint64_t size = 0;  ///< S

  /// D, P, R, T: the index; N: the number of items that follow.
  std::uint32_t index() const { return count; }
  /// A: 0 for none, else the alias's string index + 1.
  std::uint32_t alias() const { return value; }
  void set_index(std::uint32_t index) { count = index; }
  void set_alias(std::uint32_t alias) { value = alias; }
};
static_assert(sizeof(Instruction) == 24);

struct Declaration {
  std::uint32_t name = 0;        ///< string index
  std::uint32_t family_size = 0; ///< 0: a single value
  ValueSpec spec;
  Location location;             ///< `at` location, or the source location
  std::uint32_t first_value = 0; ///< id of its first value

  std::uint32_t value_count() const { return family_size == 0 ? 1 : family_size; }
};

struct InstructionRange {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::uint32_t size() const { return end - begin; }
};

struct PlanEntry {
  std::uint32_t name = 0;
  std::uint32_t line = 0;
  /// `in program`: runs only inside programs, so it is explained only there;
  /// the verifier requires a program that runs it.
  bool in_program = false;
  InstructionRange reclaim, reserve, enter, exit;
};

struct ProgramEntry {
  std::uint32_t name = 0;
  std::uint32_t line = 0;
  InstructionRange body;
};

struct Module {
  std::vector<std::string> strings;
  std::optional<std::uint32_t> device_count;
  std::vector<std::pair<Location, std::optional<std::uint64_t>>> budgets;
  std::vector<Declaration> declarations;
  std::uint32_t value_count = 0;
  InstructionRange setup;
  std::vector<Instruction> code;
  std::vector<PlanEntry> plans;
  std::vector<ProgramEntry> programs;

  /// The declaration a value id belongs to (binary search).
  const Declaration &declaration_of(std::uint32_t value) const;
};

/// Loads and verifies a module; throws ModuleError.
Module load_module(std::span<const std::byte> bytes);

/// XXH64 of `bytes` with seed 0.
std::uint64_t checksum(std::span<const std::byte> bytes);

} // namespace fhr::bytecode
