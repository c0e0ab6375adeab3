#include "fhr/bytecode/limits.hpp"
#include "fhr/bytecode/module.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

namespace fhr::bytecode {

ModuleError::ModuleError(ModuleErrorCode code, std::size_t offset, const std::string &message)
    : std::runtime_error(std::string(module_error_name(code)) + " at byte " + std::to_string(offset) + ": " +
                         message),
      code_(code), offset_(offset) {}

std::string_view module_error_name(ModuleErrorCode code) {
  switch (code) {
  case ModuleErrorCode::Truncated: return "truncated module";
  case ModuleErrorCode::BadMagic: return "not an fhr module";
  case ModuleErrorCode::UnsupportedVersion: return "unsupported format version";
  case ModuleErrorCode::BadHeader: return "bad header";
  case ModuleErrorCode::ChecksumMismatch: return "checksum mismatch";
  case ModuleErrorCode::BadSectionTable: return "bad section table";
  case ModuleErrorCode::BadSection: return "bad section";
  case ModuleErrorCode::BadIndex: return "index out of range";
  case ModuleErrorCode::BadOperand: return "bad operand";
  case ModuleErrorCode::BadOpcode: return "bad opcode";
  case ModuleErrorCode::BadStructure: return "bad structure";
  }
  return "bad module";
}

const Declaration &Module::declaration_of(std::uint32_t value) const {
  auto it = std::upper_bound(declarations.begin(), declarations.end(), value,
                             [](std::uint32_t v, const Declaration &d) { return v < d.first_value; });
  return *(it - 1);
}

namespace {

/// Bounds-checked reading of one section.
class Reader {
public:
  Reader(const std::byte *data, std::size_t begin, std::size_t end) : data_(data), at_(begin), end_(end) {}

  std::size_t offset() const { return at_; }
  bool done() const { return at_ == end_; }
  std::size_t left() const { return end_ - at_; }

  [[noreturn, gnu::cold, gnu::noinline]] void fail(ModuleErrorCode code, const std::string &message) const {
    throw ModuleError(code, at_, message);
  }

  std::uint8_t byte(const char *what) {
    if (at_ >= end_) [[unlikely]]
      missing(what);
    return static_cast<std::uint8_t>(data_[at_++]);
  }

  /// LEB128 with the one-byte case inline: most operands are small.
  std::uint64_t leb(const char *what) {
    if (end_ - at_ >= 2) [[likely]] {
      const auto first = static_cast<std::uint8_t>(data_[at_]);
      if (first < 0x80) [[likely]] {
        ++at_;
        return first;
      }
      const auto second = static_cast<std::uint8_t>(data_[at_ + 1]);
      if (second < 0x80) {
        at_ += 2;
        return (first & 0x7fu) | std::uint64_t{second} << 7;
      }
    }
    return leb_slow(what);
  }

  [[noreturn, gnu::cold, gnu::noinline]] void missing(const char *what) const {
    fail(ModuleErrorCode::Truncated, std::string("missing ") + what);
  }

  [[gnu::noinline]] std::uint64_t leb_slow(const char *what) {
    std::uint64_t value = 0;
    for (unsigned shift = 0;; shift += 7) {
      const std::uint8_t b = byte(what);
      if (shift == 63 && (b & 0x7e) != 0)
        fail(ModuleErrorCode::BadSection, std::string(what) + " does not fit 64 bits");
      value |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return value;
      if (shift == 63) fail(ModuleErrorCode::BadSection, std::string(what) + " is longer than 10 bytes");
    }
  }

  std::uint32_t leb32(const char *what) {
    const std::uint64_t value = leb(what);
    if (value > UINT32_MAX) [[unlikely]]
      fail(ModuleErrorCode::BadSection, std::string(what) + " does not fit 32 bits");
    return static_cast<std::uint32_t>(value);
  }

  /// A count of items each at least `min_bytes` long: refuses counts that the
  /// section cannot hold, so no length field drives an unbounded allocation.
  std::uint32_t count(const char *what, std::size_t min_bytes) {
    const std::uint32_t n = leb32(what);
    if (min_bytes > 0 && n > left() / min_bytes)
      fail(ModuleErrorCode::BadSection, std::string(what) + " " + std::to_string(n) + " exceeds the section");
    return n;
  }

  std::string bytes(std::size_t n) {
    if (n > left()) fail(ModuleErrorCode::Truncated, "string runs past its section");
    std::string out(reinterpret_cast<const char *>(data_ + at_), n);
    at_ += n;
    return out;
  }

  Location location(const char *what) {
    const std::uint8_t index = byte(what);
    if (index >= Location::kCount) [[unlikely]]
      fail(ModuleErrorCode::BadOperand, std::string("invalid location byte for ") + what);
    return Location::from_index(index);
  }

private:
  const std::byte *data_;
  std::size_t at_;
  std::size_t end_;
};

std::uint32_t read_u32(const std::byte *p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}
std::uint64_t read_u64(const std::byte *p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}

/// `[A-Za-z_][A-Za-z0-9_]*` and not a reserved word.
bool is_identifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  for (const char *word : kReservedWords)
    if (name == word) return false;
  return true;
}

/// Operand kinds of every opcode, decoded once from the opcode table.
struct OperandKinds {
  char kinds[kOpcodeCount][5] = {};
  constexpr OperandKinds() {
    for (unsigned op = 0; op < kOpcodeCount; ++op)
      for (unsigned k = 0; kOpcodes[op].operands[k] != '\0' && k < 4; ++k)
        kinds[op][k] = kOpcodes[op].operands[k];
  }
};
constexpr OperandKinds kOperandKinds;

struct SectionSpan {
  std::size_t begin = 0, end = 0;
};

class Loader {
public:
  explicit Loader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  Module load() {
    header();
    strings();
    machine();
    declarations();
    code();
    plans();
    programs();
    verify_partition();
    verify_instructions();
    verify_steps();
    return std::move(module_);
  }

private:
  Reader section(SectionKind kind) const {
    const SectionSpan &s = sections_[static_cast<unsigned>(kind) - 1];
    return Reader(bytes_.data(), s.begin, s.end);
  }
  static void finish(const Reader &r, const char *what) {
    if (!r.done())
      r.fail(ModuleErrorCode::BadSection, std::to_string(r.left()) + " unused bytes at the end of " + what);
  }

  void header() {
    if (bytes_.size() < kHeaderSize)
      throw ModuleError(ModuleErrorCode::Truncated, 0, "shorter than the header");
    if (std::memcmp(bytes_.data(), kMagic, 4) != 0)
      throw ModuleError(ModuleErrorCode::BadMagic, 0, "magic is not FHRB");
    const auto version =
        static_cast<std::uint16_t>(static_cast<unsigned>(bytes_[4]) | static_cast<unsigned>(bytes_[5]) << 8);
    if (version < kOldestFormatVersion || version > kFormatVersion)
      throw ModuleError(ModuleErrorCode::UnsupportedVersion, 4,
                        "version " + std::to_string(version) + " (this reader knows " +
                            std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion) +
                            ")");
    version_ = version;
    if (bytes_[6] != std::byte{0} || bytes_[7] != std::byte{0})
      throw ModuleError(ModuleErrorCode::BadHeader, 6, "flags must be 0");
    const std::uint32_t section_count = read_u32(bytes_.data() + 8);
    const std::uint32_t payload_size = read_u32(bytes_.data() + 12);
    if (read_u64(bytes_.data() + 24) != 0)
      throw ModuleError(ModuleErrorCode::BadHeader, 24, "reserved field must be 0");
    if (payload_size != bytes_.size() - kHeaderSize)
      throw ModuleError(bytes_.size() - kHeaderSize < payload_size ? ModuleErrorCode::Truncated
                                                                   : ModuleErrorCode::BadHeader,
                        12,
                        "payload size " + std::to_string(payload_size) + " but the file holds " +
                            std::to_string(bytes_.size() - kHeaderSize));
    if (checksum(bytes_.subspan(kHeaderSize)) != read_u64(bytes_.data() + 16))
      throw ModuleError(ModuleErrorCode::ChecksumMismatch, 16,
                        "the payload does not match its XXH64 checksum");
    if (section_count != kSectionCount)
      throw ModuleError(ModuleErrorCode::BadSectionTable, 8,
                        "expected 7 sections, found " + std::to_string(section_count));
    std::size_t expected = kHeaderSize + std::size_t{kSectionCount} * kSectionEntrySize;
    if (expected > bytes_.size()) throw ModuleError(ModuleErrorCode::Truncated, kHeaderSize, "section table");
    for (std::uint32_t i = 0; i < kSectionCount; ++i) {
      const std::byte *entry = bytes_.data() + kHeaderSize + i * kSectionEntrySize;
      const std::size_t at = kHeaderSize + i * kSectionEntrySize;
      const std::uint32_t kind = read_u32(entry), offset = read_u32(entry + 4), size = read_u32(entry + 8);
      if (kind != i + 1)
        throw ModuleError(ModuleErrorCode::BadSectionTable, at,
                          "section " + std::to_string(i) + " has kind " + std::to_string(kind) +
                              ", expected " + std::to_string(i + 1));
      if (read_u32(entry + 12) != 0)
        throw ModuleError(ModuleErrorCode::BadSectionTable, at + 12, "reserved field must be 0");
      // Sections are back to back in kind order: no gaps, no overlap.
      if (offset != expected)
        throw ModuleError(ModuleErrorCode::BadSectionTable, at + 4,
                          "section " + std::to_string(kind) + " starts at " + std::to_string(offset) +
                              ", expected " + std::to_string(expected));
      if (size > bytes_.size() - offset)
        throw ModuleError(ModuleErrorCode::BadSectionTable, at + 8,
                          "section " + std::to_string(kind) + " runs past the file");
      sections_[i] = {offset, std::size_t{offset} + size};
      expected = std::size_t{offset} + size;
    }
    if (expected != bytes_.size())
      throw ModuleError(ModuleErrorCode::BadSectionTable, expected, "bytes after the last section");
  }

  void strings() {
    Reader r = section(SectionKind::Strings);
    const std::uint32_t n = r.count("string count", 1);
    module_.strings.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      module_.strings.push_back(r.bytes(r.count("string length", 0)));
      // No .fhr string can hold one (not even escaped), so no module may:
      // every module that loads disassembles to text that compiles.
      if (module_.strings.back().find('\r') != std::string::npos)
        r.fail(ModuleErrorCode::BadOperand, "a string holds a carriage return");
    }
    finish(r, "STRINGS");
  }

  std::uint32_t string_index(Reader &r, const char *what, bool non_blank) {
    const std::uint32_t index = r.leb32(what);
    if (index >= module_.strings.size())
      r.fail(ModuleErrorCode::BadIndex, std::string(what) + " string " + std::to_string(index));
    if (non_blank && module_.strings[index].find_first_not_of(" \t\n") == std::string::npos)
      r.fail(ModuleErrorCode::BadOperand, std::string(what) + " is blank");
    return index;
  }

  void machine() {
    Reader r = section(SectionKind::Machine);
    const std::uint32_t devices = r.leb32("device count");
    if (devices > Location::kMaxCudaDevices + 1)
      r.fail(ModuleErrorCode::BadOperand, "device count above 128");
    if (devices > 0) module_.device_count = devices - 1;
    const std::uint32_t n = r.count("budget count", 2);
    bool seen[Location::kCount] = {};
    for (std::uint32_t i = 0; i < n; ++i) {
      const Location location = r.location("budget location");
      if (seen[location.index()]) r.fail(ModuleErrorCode::BadStructure, "location budgeted twice");
      seen[location.index()] = true;
      const std::uint8_t has_budget = r.byte("budget flag");
      if (has_budget > 1) r.fail(ModuleErrorCode::BadOperand, "budget flag must be 0 or 1");
      std::optional<std::uint64_t> budget;
      if (has_budget) budget = r.leb("budget");
      module_.budgets.emplace_back(location, budget);
    }
    setup_end_ = r.leb32("setup end");
    finish(r, "MACHINE");
  }

  void declarations() {
    Reader r = section(SectionKind::Decls);
    const std::uint32_t n = r.count("declaration count", 6);
    module_.declarations.reserve(n);
    std::set<std::string_view> names;
    std::uint64_t values = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      Declaration d;
      d.name = string_index(r, "declaration name", true);
      if (!is_identifier(module_.strings[d.name]))
        r.fail(ModuleErrorCode::BadOperand,
               "declaration name '" + module_.strings[d.name] + "' is not a name");
      if (!names.insert(module_.strings[d.name]).second)
        r.fail(ModuleErrorCode::BadStructure, "two declarations have the same name");
      d.family_size = r.leb32("family size");
      d.spec.logical_nbytes = r.leb("logical bytes");
      d.spec.storage_nbytes = r.leb("storage bytes");
      if (d.spec.storage_nbytes < d.spec.logical_nbytes)
        r.fail(ModuleErrorCode::BadOperand, "storage below logical size");
      const std::uint8_t flags = r.byte("declaration flags");
      if (flags > 3) r.fail(ModuleErrorCode::BadOperand, "unknown declaration flags");
      d.spec.replica_mode = flags & kDeclReplicable ? ReplicaMode::Replicable : ReplicaMode::Exclusive;
      d.spec.recoverability =
          flags & kDeclReconstructible ? Recoverability::Reconstructible : Recoverability::MustPreserve;
      d.location = r.location("declaration location");
      d.first_value = static_cast<std::uint32_t>(values);
      values += d.value_count();
      if (values > kMaxValues)
        r.fail(ModuleErrorCode::BadOperand, "more than " + std::to_string(kMaxValues) + " values");
      module_.declarations.push_back(d);
    }
    module_.value_count = static_cast<std::uint32_t>(values);
    finish(r, "DECLS");
  }

  /// Decodes CODE and, in the same pass, each instruction's line from LINES
  /// (one pass over the decoded array, which is the larger cost).
  void code() {
    Reader r = section(SectionKind::Code);
    const std::uint32_t n = r.count("instruction count", 1);
    Reader lines = section(SectionKind::Lines);
    if (lines.leb32("line count") != n)
      lines.fail(ModuleErrorCode::BadStructure, "line count differs from the instruction count");
    module_.code.reserve(n);
    std::int64_t line = 0;
    // The declaration of the last value operand: consecutive instructions
    // usually name values of the same declaration.
    std::uint32_t declaration_begin = 1, declaration_end = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      Instruction &in = module_.code.emplace_back();
      const std::uint64_t zigzag = lines.leb("line delta");
      line += static_cast<std::int64_t>(zigzag >> 1) ^ -static_cast<std::int64_t>(zigzag & 1);
      // The language's `@line` directive stops at 2^30; so do modules.
      if (line < 0 || line > (std::int64_t{1} << 30)) [[unlikely]]
        lines.fail(ModuleErrorCode::BadOperand, "line out of range");
      in.line = static_cast<std::uint32_t>(line);
      const std::uint8_t op = r.byte("opcode");
      if (op >= kOpcodeCount) [[unlikely]]
        r.fail(ModuleErrorCode::BadOpcode, "opcode " + std::to_string(op));
      in.opcode = static_cast<Opcode>(op);
      bool first_location = true;
      for (const char *kind = kOperandKinds.kinds[op]; *kind; ++kind) {
        switch (*kind) {
        case 'L':
          (first_location ? in.location : in.from) = r.location("location operand");
          first_location = false;
          break;
        case 'V': {
          in.value = r.leb32("value operand");
          in.count = r.leb32("value count");
          if (in.value < declaration_begin || in.value >= declaration_end) {
            if (in.value >= module_.value_count) [[unlikely]]
              r.fail(ModuleErrorCode::BadIndex, "value " + std::to_string(in.value));
            const Declaration &d = module_.declaration_of(in.value);
            declaration_begin = d.first_value;
            declaration_end = d.first_value + d.value_count();
          }
          if (in.count == 0 || in.count > declaration_end - in.value) [[unlikely]]
            r.fail(in.count == 0 ? ModuleErrorCode::BadOperand : ModuleErrorCode::BadOperand,
                   in.count == 0 ? "value count 0" : "a value range runs past its declaration");
          break;
        }
        case 'D':
        case 'P':
        case 'R':
        case 'N': in.count = r.leb32("index operand"); break;
        case 'T': in.count = string_index(r, "name", true); break;
        case 'S': in.size = r.leb("size operand"); break;
        case 'A':
          in.value = r.leb32("alias");
          if (in.value > module_.strings.size()) r.fail(ModuleErrorCode::BadIndex, "alias string");
          if (in.value && !is_identifier(module_.strings[in.value - 1]))
            r.fail(ModuleErrorCode::BadOperand, "alias is not a name");
          break;
        case 'F': {
          const std::uint8_t f = r.byte("flag");
          if (f > 1) r.fail(ModuleErrorCode::BadOperand, "flag must be 0 or 1");
          in.flag = f == 1;
          break;
        }
        default: break;
        }
      }
    }
    finish(r, "CODE");
    finish(lines, "LINES");
  }

  InstructionRange range(Reader &r, std::uint64_t &cursor, const char *what) {
    const std::uint32_t n = r.leb32(what);
    if (n > module_.code.size() - cursor)
      r.fail(ModuleErrorCode::BadIndex, std::string(what) + " runs past the code");
    InstructionRange out{static_cast<std::uint32_t>(cursor), static_cast<std::uint32_t>(cursor + n)};
    cursor += n;
    return out;
  }

  void expect_start(Reader &r, std::uint64_t cursor, std::uint32_t start, const char *what) {
    if (start != cursor)
      r.fail(ModuleErrorCode::BadStructure, std::string(what) + " starts at instruction " +
                                                std::to_string(start) + ", expected " +
                                                std::to_string(cursor));
  }

  void plans() {
    Reader r = section(SectionKind::Plans);
    const bool has_flags = version_ >= 2;
    const std::uint32_t n = r.count("plan count", has_flags ? 8 : 7);
    if (n > kMaxPlansAndPrograms)
      r.fail(ModuleErrorCode::BadOperand,
             "more than " + std::to_string(kMaxPlansAndPrograms) + " plans and programs together");
    module_.plans.reserve(n);
    std::set<std::string_view> plan_names;
    if (setup_end_ > module_.code.size()) r.fail(ModuleErrorCode::BadIndex, "setup end past the code");
    module_.setup = {0, setup_end_};
    cursor_ = setup_end_;
    for (std::uint32_t i = 0; i < n; ++i) {
      PlanEntry p;
      p.name = string_index(r, "plan name", true);
      if (!plan_names.insert(module_.strings[p.name]).second)
        r.fail(ModuleErrorCode::BadStructure, "two plans have the same name");
      p.line = r.leb32("plan line");
      if (has_flags) {
        const std::uint8_t flags = r.byte("plan flags");
        if (flags > kPlanInProgram) r.fail(ModuleErrorCode::BadOperand, "unknown plan flags");
        p.in_program = flags & kPlanInProgram;
      }
      expect_start(r, cursor_, r.leb32("plan start"), "plan");
      p.reclaim = range(r, cursor_, "reclaim count");
      p.reserve = range(r, cursor_, "reserve count");
      p.enter = range(r, cursor_, "enter count");
      p.exit = range(r, cursor_, "exit count");
      module_.plans.push_back(p);
    }
    finish(r, "PLANS");
  }

  void programs() {
    Reader r = section(SectionKind::Programs);
    const std::uint32_t n = r.count("program count", 4);
    if (n > kMaxPlansAndPrograms - module_.plans.size())
      r.fail(ModuleErrorCode::BadOperand,
             "more than " + std::to_string(kMaxPlansAndPrograms) + " plans and programs together");
    module_.programs.reserve(n);
    std::set<std::string_view> program_names;
    for (std::uint32_t i = 0; i < n; ++i) {
      ProgramEntry p;
      p.name = string_index(r, "program name", true);
      if (!program_names.insert(module_.strings[p.name]).second)
        r.fail(ModuleErrorCode::BadStructure, "two programs have the same name");
      p.line = r.leb32("program line");
      expect_start(r, cursor_, r.leb32("program start"), "program");
      p.body = range(r, cursor_, "program length");
      module_.programs.push_back(p);
    }
    finish(r, "PROGRAMS");
  }

  void verify_partition() {
    if (cursor_ != module_.code.size())
      throw ModuleError(ModuleErrorCode::BadStructure, sections_[5].end,
                        std::to_string(module_.code.size() - cursor_) +
                            " instructions belong to no plan or program");
  }

  /// limits.hpp: what the module asks the interpreter for, all added up.
  void verify_steps() const {
    const StepCount steps = count_steps(module_);
    if (steps.setup > kMaxSetupSteps)
      throw ModuleError(ModuleErrorCode::BadStructure, sections_[3].begin,
                        "the setup asks for more than " + std::to_string(kMaxSetupSteps) +
                            " steps besides its declarations (" + std::to_string(steps.setup) + ")");
    if (steps.total <= kMaxSteps) return;
    std::string message = "the module asks for more than " + std::to_string(kMaxSteps) + " steps";
    if (steps.largest_program)
      message += " (program '" + module_.strings[module_.programs[*steps.largest_program].name] +
                 "': " + std::to_string(steps.largest_program_steps) + ")";
    throw ModuleError(ModuleErrorCode::BadStructure, sections_[3].begin, message);
  }

  [[noreturn]] void fail_at(std::uint32_t index, ModuleErrorCode code, const std::string &message) const {
    throw ModuleError(code, sections_[3].begin,
                      "instruction " + std::to_string(index) + " (" +
                          info(module_.code[index].opcode).mnemonic + "): " + message);
  }

  /// Rejects instruction i where its opcode's Contexts column does not list
  /// `context`, and a named lifetime outside setup (elsewhere a lifetime
  /// ends with its plan or body, so a name could never be released).
  void require_context(std::uint32_t i, Context context) const {
    const Instruction &in = module_.code[i];
    if (!allowed_in(in.opcode, context))
      fail_at(i, ModuleErrorCode::BadStructure, std::string("not allowed in ") + context_name(context));
    if (context != Context::Setup && has_alias(in.opcode) && in.alias() != 0)
      fail_at(i, ModuleErrorCode::BadStructure, std::string("a name in ") + context_name(context));
  }

  /// Checks that instruction i+1..i+n are items; returns the index after them.
  std::uint32_t items(std::uint32_t i, std::uint32_t end) const {
    const Instruction &in = module_.code[i];
    if (in.index() == 0) fail_at(i, ModuleErrorCode::BadOperand, "empty value list");
    if (in.index() > end - i - 1) fail_at(i, ModuleErrorCode::BadStructure, "value list runs past its range");
    for (std::uint32_t k = i + 1; k <= i + in.index(); ++k)
      require_context(k, Context::Items);
    return i + in.index() + 1;
  }

  void check_values_declared(std::uint32_t i, std::uint32_t declared_values) const {
    const Instruction &in = module_.code[i];
    if (in.value + in.count > declared_values)
      fail_at(i, ModuleErrorCode::BadStructure, "uses a value before its declaration");
  }

  void verify_setup() {
    std::uint32_t declared = 0, declared_values = 0;
    std::vector<std::uint8_t> released(module_.setup.end, 0);
    // The names of the named lifetimes not yet released: a name is free
    // again once its lifetime is released (the language's rule, E0102).
    std::set<std::string_view> open_names;
    const auto name_of = [&](const Instruction &in) {
      return std::string_view(module_.strings[in.alias() - 1]);
    };
    for (std::uint32_t i = module_.setup.begin; i < module_.setup.end;) {
      require_context(i, Context::Setup);
      const Instruction &in = module_.code[i];
      if (has_alias(in.opcode) && in.alias() != 0 && !open_names.insert(name_of(in)).second)
        fail_at(i, ModuleErrorCode::BadStructure,
                "'" + std::string(name_of(in)) + "' already names a lifetime not yet released");
      if (has_items(in.opcode)) {
        const std::uint32_t next = items(i, module_.setup.end);
        for (std::uint32_t k = i + 1; k < next; ++k)
          check_values_declared(k, declared_values);
        i = next;
        continue;
      }
      if (in.opcode == Opcode::Declare) {
        if (in.index() != declared)
          fail_at(i, ModuleErrorCode::BadStructure, "declarations must come in table order");
        declared_values += module_.declarations[declared].value_count();
        ++declared;
      } else if (in.opcode == Opcode::Release) {
        if (in.index() >= i)
          fail_at(i, ModuleErrorCode::BadIndex, "release target is not an earlier instruction");
        const Instruction &target = module_.code[in.index()];
        if (info(target.opcode).kind != OpcodeKind::Lifetime || !has_alias(target.opcode) ||
            target.alias() == 0)
          fail_at(i, ModuleErrorCode::BadStructure,
                  "release target is not a named hold, lease or reservation");
        if (released[in.index()]) fail_at(i, ModuleErrorCode::BadStructure, "released twice");
        released[in.index()] = 1;
        open_names.erase(name_of(target));
      } else if (is_action(in.opcode)) {
        check_values_declared(i, declared_values);
      }
      ++i;
    }
    if (declared != module_.declarations.size())
      throw ModuleError(ModuleErrorCode::BadStructure, sections_[2].begin,
                        std::to_string(module_.declarations.size() - declared) +
                            " declarations are never declared in setup");
  }

  void verify_range(InstructionRange range, Context context) const {
    for (std::uint32_t i = range.begin; i < range.end; ++i)
      require_context(i, context);
  }

  void verify_plan(const PlanEntry &plan) const {
    verify_range(plan.reclaim, Context::PlanPhase);
    verify_range(plan.reserve, Context::PlanReserve);
    verify_range(plan.enter, Context::PlanPhase);
    verify_range(plan.exit, Context::PlanPhase);
  }

  void verify_program(const ProgramEntry &program) const {
    std::vector<Opcode> open; // Scope or Actions
    for (std::uint32_t i = program.body.begin; i < program.body.end;) {
      const Instruction &in = module_.code[i];
      require_context(i, !open.empty() && open.back() == Opcode::Actions ? Context::List : Context::Body);
      if (has_items(in.opcode)) {
        i = items(i, program.body.end);
        continue;
      }
      switch (in.opcode) {
      case Opcode::Scope:
      case Opcode::Run:
        if (in.index() >= module_.plans.size())
          fail_at(i, ModuleErrorCode::BadIndex, "plan " + std::to_string(in.index()));
        if (in.opcode == Opcode::Scope) {
          if (open.size() >= kMaxScopeDepth)
            fail_at(i, ModuleErrorCode::BadStructure, "scopes nest too deep");
          open.push_back(Opcode::Scope);
        }
        break;
      case Opcode::Actions: open.push_back(Opcode::Actions); break;
      case Opcode::End:
        if (open.empty()) fail_at(i, ModuleErrorCode::BadStructure, "end without scope or action list");
        open.pop_back();
        break;
      default: break;
      }
      ++i;
    }
    if (!open.empty())
      throw ModuleError(ModuleErrorCode::BadStructure, sections_[5].begin,
                        "a program ends inside a scope or action list");
  }

  void verify_instructions() {
    verify_setup();
    for (const PlanEntry &plan : module_.plans)
      verify_plan(plan);
    for (const ProgramEntry &program : module_.programs)
      verify_program(program);
    verify_program_plans_run();
  }

  /// A plan marked to run only in programs is explained nowhere else: some
  /// program must run it (the compiler's E0407).
  void verify_program_plans_run() const {
    std::vector<bool> run(module_.plans.size(), false);
    for (const ProgramEntry &program : module_.programs)
      for (std::uint32_t i = program.body.begin; i < program.body.end; ++i) {
        const Instruction &in = module_.code[i];
        if (in.opcode == Opcode::Scope || in.opcode == Opcode::Run) run[in.index()] = true;
        if (has_items(in.opcode)) i += in.index();
      }
    for (std::size_t p = 0; p < module_.plans.size(); ++p)
      if (module_.plans[p].in_program && !run[p])
        throw ModuleError(ModuleErrorCode::BadStructure, sections_[4].begin,
                          "plan '" + module_.strings[module_.plans[p].name] +
                              "' runs only in programs, but no program runs it");
  }

  std::span<const std::byte> bytes_;
  SectionSpan sections_[kSectionCount];
  Module module_;
  std::uint32_t setup_end_ = 0;
  std::uint64_t cursor_ = 0;
  std::uint16_t version_ = kFormatVersion;
};

} // namespace

Module load_module(std::span<const std::byte> bytes) { return Loader(bytes).load(); }

} // namespace fhr::bytecode
