// Bytecode: canonical lowering through the writer, byte-identical round
// trips through the loader and writer and through the disassembler, explain
// equivalence of a source and its module (explained as a module, without
// disassembly), the opcode table's property columns in the verifier and the
// documentation, the span side table, and a verifier that refuses every
// corruption with a distinct error, never a crash.
#include "random_program.hpp"
#include "test_support.hpp"

#include "fhr/bytecode/limits.hpp"
#include "fhr/bytecode/module.hpp"
#include "fhr/bytecode/writer.hpp"
#include "fhr/compiler/disasm.hpp"
#include "fhr/compiler/lower.hpp"
#include "fhr/compiler/output.hpp"

#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

using namespace fhr;
using namespace fhr::test;

namespace {

std::vector<char> compile_bytes(const std::string &text, const std::string &name = "test.fhr") {
  CompiledFile compiled = compile_text(text, name);
  REQUIRE_MESSAGE(compiled.ok(), text);
  return lower_module(compiled.module, *compiled.source);
}

bytecode::Module load(const std::vector<char> &bytes) {
  return bytecode::load_module(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

/// A module's bytes read as a `.fhrb` file is.
CompiledFile compile_module(const std::vector<char> &bytes, const std::string &name = "test.fhrb") {
  llvm::Expected<CompiledFile> compiled =
      compile_module_bytes(llvm::StringRef(bytes.data(), bytes.size()), name);
  REQUIRE(static_cast<bool>(compiled));
  return std::move(*compiled);
}

/// The explain JSON without what legitimately differs between a source and
/// its module: the file name and columns.
std::string explain_signature(const CompiledFile &compiled) {
  Analysis analysis = analyze_module(*compiled.lowered);
  nlohmann::ordered_json j = explain_json({build_report(*compiled.lowered, analysis)});
  for (auto &file : j["files"]) {
    file.erase("file");
    for (auto &unit : file["units"]) {
      unit["position"].erase("column");
      for (auto &step : unit["steps"])
        step["position"].erase("column");
    }
  }
  return json_text(j);
}

/// Source → module → text → module must give the same bytes, loading and
/// writing again too, and explaining the module (as a module) must give the
/// same verdicts, steps, lines and numbers as the source.
void check_round_trip(const std::string &text) {
  const std::vector<char> first = compile_bytes(text);
  const bytecode::Module module = load(first);
  CHECK(bytecode::write_module(module) == first);
  const std::string disassembled = disassemble(module, "test.fhrb");
  CompiledFile again = compile_text(disassembled, "test.fhrb");
  REQUIRE_MESSAGE(again.ok(), disassembled);
  const std::vector<char> second = lower_module(again.module, *again.source);
  REQUIRE_MESSAGE(first == second, "source:\n" << text << "\ndisassembly:\n" << disassembled);
  const std::string from_source = explain_signature(compile_text(text, "test.fhr"));
  CHECK(from_source == explain_signature(compile_module(first)));
  CHECK(from_source == explain_signature(again));
}

void fix_checksum(std::vector<char> &bytes) {
  if (bytes.size() < bytecode::kHeaderSize) return;
  const std::uint64_t sum = bytecode::checksum(
      std::as_bytes(std::span(bytes.data() + bytecode::kHeaderSize, bytes.size() - bytecode::kHeaderSize)));
  for (int i = 0; i < 8; ++i)
    bytes[16 + i] = static_cast<char>((sum >> (8 * i)) & 0xff);
}

/// Loads possibly corrupt bytes; if they verify, the module must explain
/// (as a module) and disassemble to text that compiles. Returns whether
/// they verified.
bool load_and_explain(const std::vector<char> &bytes) {
  bytecode::Module module;
  try {
    module = load(bytes);
  } catch (const bytecode::ModuleError &error) {
    CHECK(std::strlen(error.what()) > 0);
    return false;
  }
  CompiledFile explained = compile_module(bytes, "mutant.fhrb");
  Analysis analysis = analyze_module(*explained.lowered);
  const FileReport report = build_report(*explained.lowered, analysis);
  // A plan marked `in program` (a mutant may set the flag) is explained
  // only inside programs: no unit of its own.
  const auto standalone_plans = static_cast<std::size_t>(std::count_if(
      module.plans.begin(), module.plans.end(), [](const bytecode::PlanEntry &p) { return !p.in_program; }));
  CHECK(report.units.size() ==
        standalone_plans + module.programs.size() + (analysis.setup.failed_step ? 1 : 0));
  const std::string text = disassemble(module, "mutant.fhrb");
  CompiledFile compiled = compile_text(text, "mutant.fhrb");
  CHECK_MESSAGE(compiled.ok(),
                text << "\n"
                     << (compiled.source->diagnostics().empty() ? std::string()
                                                                : compiled.source->diagnostics()[0].message));
  return true;
}

bytecode::ModuleErrorCode error_of(const std::vector<char> &bytes) {
  try {
    load(bytes);
  } catch (const bytecode::ModuleError &error) {
    return error.code();
  }
  FAIL("the module verified");
  return bytecode::ModuleErrorCode::Truncated;
}

} // namespace

TEST_CASE("bytecode: every example round-trips byte for byte and explains the same") {
  for (const std::string &path : example_paths()) {
    CAPTURE(path);
    check_round_trip(read_file(path));
  }
}

TEST_CASE("bytecode: 1,000 random programs round-trip byte for byte and explain the same") {
  for (unsigned seed = 1; seed <= 1000; ++seed) {
    CAPTURE(seed);
    check_round_trip(RandomProgram(seed).generate());
  }
}

TEST_CASE("bytecode: families stay compact and lines are kept") {
  const std::vector<char> bytes = compile_bytes(R"(
value rk[64] 120 MiB replicable source pageable
plan "load" {
  enter { ensure rk[0..32] at cuda:0 }
  exit { drop rk[*] at cuda:0 }
})");
  const bytecode::Module module = load(bytes);
  REQUIRE(module.declarations.size() == 1);
  CHECK(module.declarations[0].family_size == 64);
  CHECK(module.value_count == 64);
  REQUIRE(module.plans.size() == 1);
  CHECK(module.plans[0].enter.size() == 1);
  const bytecode::Instruction &ensure = module.code[module.plans[0].enter.begin];
  CHECK(ensure.opcode == bytecode::Opcode::Ensure);
  CHECK(ensure.count == 32);
  CHECK(ensure.location == Location::cuda(0));
  CHECK(ensure.line == 4);
  CHECK(module.code[module.plans[0].exit.begin].line == 5);
  CHECK(module.plans[0].line == 3);
  CHECK(bytes.size() < 200);
}

TEST_CASE("bytecode: actions written apart stay apart even on consecutive values") {
  const bytecode::Module module =
      load(compile_bytes("value rk[4] 1 MiB replicable source pageable\nplan \"p\" { enter {\n ensure rk[0] "
                         "at cuda:0\n ensure rk[1] at cuda:0\n} }"));
  CHECK(module.plans[0].enter.size() == 2);
}

TEST_CASE("bytecode: the verifier names what is wrong") {
  const std::vector<char> good = compile_bytes(read_file(FHR_SOURCE_DIR "/examples/inference.fhr"));
  using Code = bytecode::ModuleErrorCode;
  CHECK(error_of({}) == Code::Truncated);
  CHECK(error_of(std::vector<char>(good.begin(), good.begin() + 20)) == Code::Truncated);
  CHECK(error_of(std::vector<char>(good.begin(), good.end() - 1)) == Code::Truncated);
  std::vector<char> bad = good;
  bad[0] = 'X';
  CHECK(error_of(bad) == Code::BadMagic);
  bad = good;
  bad[4] = bytecode::kFormatVersion + 1;
  CHECK(error_of(bad) == Code::UnsupportedVersion);
  bad[4] = 0;
  CHECK(error_of(bad) == Code::UnsupportedVersion);
  bad = good;
  bad[6] = 1;
  CHECK(error_of(bad) == Code::BadHeader);
  bad = good;
  bad.back() ^= 1;
  CHECK(error_of(bad) == Code::ChecksumMismatch);
  bad = good;
  bad[32] = 9; // first section's kind
  fix_checksum(bad);
  CHECK(error_of(bad) == Code::BadSectionTable);
  bad = good;
  bad.push_back(0);
  bad[12] = static_cast<char>(bad[12] + 1); // payload size grows by one
  fix_checksum(bad);
  CHECK(error_of(bad) == Code::BadSectionTable);
}

TEST_CASE("bytecode: structural rules reject modules that decode") {
  // Hand-edit the CODE section of a tiny module: its one instruction is the
  // Declare; make it an End, which is not allowed in setup.
  std::vector<char> bytes = compile_bytes("value a 1 MiB at pinned\n");
  const bytecode::Module module = load(bytes);
  REQUIRE(module.code.size() == 1);
  const std::uint32_t code_offset = static_cast<std::uint8_t>(bytes[32 + 3 * 16 + 4]) |
                                    static_cast<std::uint8_t>(bytes[32 + 3 * 16 + 5]) << 8;
  REQUIRE(bytes[code_offset + 1] == static_cast<char>(bytecode::Opcode::Declare));
  bytes[code_offset + 1] = static_cast<char>(bytecode::Opcode::Ensure);
  fix_checksum(bytes);
  CHECK(error_of(bytes) != bytecode::ModuleErrorCode::ChecksumMismatch);
  bytes[code_offset + 1] = static_cast<char>(200);
  fix_checksum(bytes);
  CHECK(error_of(bytes) == bytecode::ModuleErrorCode::BadOpcode);
}

/// The values a byte is changed to: all 255 others, or, where
/// FHR_MUTATION_VALUES=edges (the sanitizer builds in CI, about 30 times
/// slower per mutant), the ones that reach the verifier's edge cases: zero,
/// one, the sign and top values, and the byte with its low, sign or every bit
/// flipped.
static std::vector<char> replacement_values(char good) {
  std::vector<int> candidates;
  const char *choice = std::getenv("FHR_MUTATION_VALUES");
  if (choice && std::string_view(choice) == "edges") {
    const int byte = static_cast<unsigned char>(good);
    candidates = {0, 1, 0x7f, 0x80, 0xff, byte ^ 0x01, byte ^ 0x80, byte ^ 0xff};
  } else {
    for (int value = 0; value < 256; ++value)
      candidates.push_back(value);
  }
  std::vector<char> values;
  for (int value : candidates)
    if (static_cast<char>(value) != good &&
        std::find(values.begin(), values.end(), static_cast<char>(value)) == values.end())
      values.push_back(static_cast<char>(value));
  return values;
}

/// Every truncation and every single-byte change of one example's module.
static void mutate_example(const std::string &name) {
  const std::string path = FHR_SOURCE_DIR "/examples/" + name + ".fhr";
  const std::vector<char> good = compile_bytes(read_file(path));
  std::size_t verified = 0, rejected = 0;
  for (std::size_t length = 0; length < good.size(); ++length)
    CHECK_FALSE(load_and_explain(std::vector<char>(good.begin(), good.begin() + length)));
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (char value : replacement_values(good[at])) {
      std::vector<char> raw = good;
      raw[at] = value;
      // Without a fixed checksum, only header changes can get past it.
      if (at >= bytecode::kHeaderSize)
        CHECK_FALSE(load_and_explain(raw));
      else
        load_and_explain(raw);
      // With the checksum recomputed the verifier itself is exercised.
      fix_checksum(raw);
      (load_and_explain(raw) ? verified : rejected) += 1;
    }
  }
  MESSAGE(name << ": mutants that verified and explained: " << verified << ", rejected: " << rejected);
  CHECK(rejected > 0);
}

// One test case per example, so that ctest runs them in parallel.
TEST_CASE("bytecode mutation: inference") { mutate_example("inference"); }
TEST_CASE("bytecode mutation: bootstrapping") { mutate_example("bootstrapping"); }
TEST_CASE("bytecode mutation: replicated-weights") { mutate_example("replicated-weights"); }
TEST_CASE("bytecode mutation: infeasible") { mutate_example("infeasible"); }
TEST_CASE("bytecode mutation: evict-while-prefetch") { mutate_example("evict-while-prefetch"); }

TEST_CASE("bytecode mutation: every example is covered") {
  std::vector<std::string> names;
  for (const std::string &path : example_paths())
    names.push_back(std::filesystem::path(path).stem().string());
  CHECK(names == std::vector<std::string>{"bootstrapping", "evict-while-prefetch", "infeasible", "inference",
                                          "replicated-weights"});
}

TEST_CASE("bytecode: the committed golden modules are what the compiler writes today") {
  // A change to the format or to lowering shows up here first; regenerate
  // with `fhr-plan compile examples/X.fhr -o tests/golden/inputs/X.fhrb` when
  // it is intended (and bump the format version if old modules change meaning).
  for (const char *name : {"inference", "infeasible"}) {
    CAPTURE(name);
    const std::vector<char> now =
        compile_bytes(read_file(std::string(FHR_SOURCE_DIR "/examples/") + name + ".fhr"),
                      std::string("examples/") + name + ".fhr");
    const std::string committed =
        read_file(std::string(FHR_SOURCE_DIR "/tests/golden/inputs/") + name + ".fhrb");
    CHECK(std::string(now.begin(), now.end()) == committed);
  }
}

namespace {

using bytecode::Instruction;
using bytecode::Opcode;

Instruction instruction(Opcode opcode, std::uint32_t line = 1) {
  Instruction in;
  in.opcode = opcode;
  in.line = line;
  return in;
}

Instruction values(Opcode opcode, std::uint32_t first, std::uint32_t count, Location at,
                   std::uint32_t line = 1) {
  Instruction in = instruction(opcode, line);
  in.value = first;
  in.count = count;
  in.location = at;
  return in;
}

Instruction indexed(Opcode opcode, std::uint32_t index, std::uint32_t line = 1) {
  Instruction in = instruction(opcode, line);
  in.set_index(index);
  return in;
}

/// A module with one value `v` (declared in setup) and the strings "v",
/// "label", "p", "main"; callers add plans and programs.
bytecode::Module module_with_one_value() {
  bytecode::Module m;
  m.strings = {"v", "label", "p", "main"};
  bytecode::Declaration d;
  d.name = 0;
  d.spec = ValueSpec{1024, 1024, ReplicaMode::Replicable, Recoverability::MustPreserve};
  d.location = Location::pinned();
  m.declarations = {d};
  m.value_count = 1;
  m.code = {indexed(Opcode::Declare, 0)};
  m.setup = {0, 1};
  return m;
}

/// A family of 1,000,000 values and, at code 1 to 3, two instructions that
/// ensure them all on cuda:0 (500,000 each), in no plan or setup yet.
bytecode::Module module_with_a_million_ensures() {
  bytecode::Module m = module_with_one_value();
  m.declarations[0].family_size = 1'000'000;
  m.value_count = 1'000'000;
  m.code.push_back(values(Opcode::Ensure, 0, 500'000, Location::cuda(0)));
  m.code.push_back(values(Opcode::Ensure, 500'000, 500'000, Location::cuda(0)));
  return m;
}

bool same_instruction(const Instruction &a, const Instruction &b) {
  return a.opcode == b.opcode && a.location == b.location && a.from == b.from && a.flag == b.flag &&
         a.value == b.value && a.count == b.count && a.line == b.line && a.size == b.size;
}

/// The verifier's verdict on a hand-built module: its message, or "" when it loads.
std::string verifier_message(const bytecode::Module &m, bytecode::ModuleErrorCode expected) {
  try {
    load(bytecode::write_module(m));
  } catch (const bytecode::ModuleError &error) {
    CHECK(error.code() == expected);
    return error.what();
  }
  return "";
}

/// docs/bytecode.md's opcode table, as opcodes.def defines it.
std::string opcode_table() {
  auto operand_name = [](char kind) -> std::string {
    switch (kind) {
    case 'L': return "location";
    case 'V': return "values";
    case 'D': return "declaration";
    case 'S': return "size";
    case 'T': return "name";
    case 'A': return "alias";
    case 'N': return "item count";
    case 'F': return "flag";
    case 'P': return "plan";
    case 'R': return "release target";
    }
    return "?";
  };
  auto kind_name = [](bytecode::OpcodeKind kind) -> std::string {
    switch (kind) {
    case bytecode::OpcodeKind::Declaration: return "declaration";
    case bytecode::OpcodeKind::Action: return "action";
    case bytecode::OpcodeKind::Lifetime: return "lifetime";
    case bytecode::OpcodeKind::Item: return "item";
    case bytecode::OpcodeKind::Structure: return "structure";
    }
    return "?";
  };
  std::string table =
      "| opcode | mnemonic | operands | kind | allowed in | meaning |\n|---|---|---|---|---|---|\n";
  for (unsigned op = 0; op < bytecode::kOpcodeCount; ++op) {
    const bytecode::OpcodeInfo &info = bytecode::kOpcodes[op];
    std::string operands, contexts;
    for (const char *kind = info.operands; *kind; ++kind)
      operands += (operands.empty() ? "" : ", ") + operand_name(*kind);
    for (bytecode::Context context : bytecode::kContexts)
      if (info.contexts & static_cast<std::uint8_t>(context))
        contexts += (contexts.empty() ? "" : ", ") + std::string(bytecode::context_name(context));
    table += "| " + std::to_string(op) + " | `" + info.mnemonic + "` | " +
             (operands.empty() ? "—" : operands) + " | " + kind_name(info.kind) + " | " + contexts + " | " +
             info.meaning + " |\n";
  }
  return table;
}

} // namespace

TEST_CASE("bytecode: a lifetime's name is refused while another lifetime of that name is open") {
  // Found by fuzz_module: a hold and a lease both named `s4aging` verified,
  // and the module disassembled to text that sema refuses (E0102). The
  // verifier now keeps the language's rule: a name is free again once its
  // lifetime is released.
  const std::string text = "value w 64 MiB at pinned\nhold w at pinned as first\nrelease first\n"
                           "hold w at pinned as second\nlease w at pinned as third\n";
  bytecode::Module m = load(compile_bytes(text));
  std::vector<std::uint32_t> lifetimes; // hold, hold, lease: their instructions
  for (std::uint32_t i = 0; i < m.code.size(); ++i)
    if (bytecode::has_alias(m.code[i].opcode) && m.code[i].alias() != 0) lifetimes.push_back(i);
  REQUIRE(lifetimes.size() == 3);
  using Code = bytecode::ModuleErrorCode;
  // The released name again: verifies, and disassembles to text that compiles.
  bytecode::Module reused = m;
  reused.code[lifetimes[1]].set_alias(m.code[lifetimes[0]].alias());
  CHECK(verifier_message(reused, Code::BadStructure).empty());
  CHECK(load_and_explain(bytecode::write_module(reused)));
  // The open hold's name on the lease: refused, naming the instruction.
  bytecode::Module clash = m;
  clash.code[lifetimes[2]].set_alias(m.code[lifetimes[1]].alias());
  const std::string message = verifier_message(clash, Code::BadStructure);
  CHECK(message.find("instruction " + std::to_string(lifetimes[2]) +
                     " (lease): 'second' already names a lifetime not yet released") != std::string::npos);
}

TEST_CASE("bytecode: the writer encodes what the loader reads back, field for field") {
  bytecode::Module m = module_with_one_value();
  m.strings.push_back("rk");
  m.strings.push_back("evict");
  bytecode::Declaration family;
  family.name = 4;
  family.family_size = 4;
  family.spec = ValueSpec{1000, 4096, ReplicaMode::Replicable, Recoverability::Reconstructible};
  family.location = Location::pageable();
  family.first_value = 1;
  m.declarations.push_back(family);
  m.value_count = 5;
  m.device_count = 2;
  m.budgets = {{Location::cuda(0), std::uint64_t{1} << 30}, {Location::pageable(), std::nullopt}};
  m.code = {indexed(Opcode::Declare, 0, 3), indexed(Opcode::Declare, 1, 4),
            values(Opcode::Ensure, 1, 2, Location::cuda(0), 5)};
  m.setup = {0, 3};
  Instruction reserve = instruction(Opcode::Reserve, 8);
  reserve.location = Location::cuda(1);
  reserve.size = 300000;
  reserve.set_index(1);
  Instruction move = values(Opcode::MoveFrom, 3, 2, Location::cuda(1), 9);
  move.from = Location::pageable();
  m.code.push_back(values(Opcode::Drop, 1, 1, Location::cuda(0), 7)); // reclaim
  m.code.push_back(reserve);                                          // reservations
  m.code.push_back(move);                                             // enter
  bytecode::PlanEntry plan;
  plan.name = 2;
  plan.line = 6;
  plan.reclaim = {3, 4};
  plan.reserve = {4, 5};
  plan.enter = {5, 6};
  plan.exit = {6, 6};
  m.plans = {plan};
  for (const Instruction &in : {indexed(Opcode::Scope, 0, 12), indexed(Opcode::Actions, 5, 13),
                                values(Opcode::Discard, 4, 1, Location::pageable(), 14),
                                instruction(Opcode::End, 13), instruction(Opcode::End, 12)})
    m.code.push_back(in);
  m.programs = {bytecode::ProgramEntry{3, 11, {6, 11}}};

  const std::vector<char> bytes = bytecode::write_module(m);
  const bytecode::Module back = load(bytes);
  CHECK(back.strings == m.strings);
  CHECK(back.device_count == m.device_count);
  CHECK(back.budgets == m.budgets);
  REQUIRE(back.declarations.size() == 2);
  CHECK(back.declarations[1].family_size == 4);
  CHECK(back.declarations[1].first_value == 1);
  CHECK(back.declarations[1].spec.storage_nbytes == 4096);
  CHECK(back.declarations[1].spec.recoverability == Recoverability::Reconstructible);
  CHECK(back.value_count == 5);
  CHECK(back.setup.end == 3);
  REQUIRE(back.code.size() == m.code.size());
  for (std::size_t i = 0; i < m.code.size(); ++i) {
    CAPTURE(i);
    CHECK(same_instruction(back.code[i], m.code[i]));
  }
  REQUIRE(back.plans.size() == 1);
  CHECK(back.plans[0].line == 6);
  CHECK(back.plans[0].reserve.begin == 4);
  CHECK(back.plans[0].enter.end == 6);
  REQUIRE(back.programs.size() == 1);
  CHECK(back.programs[0].body.begin == 6);
  CHECK(back.programs[0].body.end == 11);
  // Loading and writing again gives the same bytes.
  CHECK(bytecode::write_module(back) == bytes);
}

TEST_CASE("bytecode: writing a loaded module gives its bytes back, for every example") {
  for (const std::string &path : example_paths()) {
    CAPTURE(path);
    const std::vector<char> bytes = compile_bytes(read_file(path));
    CHECK(bytecode::write_module(load(bytes)) == bytes);
  }
}

TEST_CASE("bytecode: is_action and the verifier's contexts come from the opcode table's columns") {
  using bytecode::Context;
  for (unsigned op = 0; op < bytecode::kOpcodeCount; ++op) {
    const auto opcode = static_cast<Opcode>(op);
    CAPTURE(bytecode::info(opcode).mnemonic);
    const bool action = opcode == Opcode::Ensure || opcode == Opcode::Copy || opcode == Opcode::Move ||
                        opcode == Opcode::MoveFrom || opcode == Opcode::Drop || opcode == Opcode::Discard;
    CHECK(bytecode::is_action(opcode) == action);
    CHECK(bytecode::info(opcode).contexts != 0); // every opcode is allowed somewhere
  }
  CHECK(bytecode::allowed_in(Opcode::Lease, Context::Setup));
  CHECK_FALSE(bytecode::allowed_in(Opcode::Lease, Context::Body));
  CHECK(bytecode::allowed_in(Opcode::End, Context::List));
  using Code = bytecode::ModuleErrorCode;

  SUBCASE("setup") {
    bytecode::Module m = module_with_one_value();
    m.code.push_back(indexed(Opcode::Run, 0));
    m.setup = {0, 2};
    CHECK(verifier_message(m, Code::BadStructure).find("instruction 1 (run): not allowed in setup") !=
          std::string::npos);
  }
  SUBCASE("a plan phase") {
    bytecode::Module m = module_with_one_value();
    Instruction reserve = instruction(Opcode::Reserve);
    reserve.set_index(1);
    m.code.push_back(reserve);
    m.plans = {bytecode::PlanEntry{2, 1, false, {1, 1}, {1, 1}, {1, 2}, {2, 2}}};
    CHECK(verifier_message(m, Code::BadStructure).find("(reserve): not allowed in a plan phase") !=
          std::string::npos);
  }
  SUBCASE("a plan's reservations") {
    bytecode::Module m = module_with_one_value();
    m.code.push_back(values(Opcode::Ensure, 0, 1, Location::cuda(0)));
    m.plans = {bytecode::PlanEntry{2, 1, false, {1, 1}, {1, 2}, {2, 2}, {2, 2}}};
    CHECK(verifier_message(m, Code::BadStructure).find("(ensure): not allowed in a plan's reservations") !=
          std::string::npos);
    // A reservation belongs there, but not a named one (names are for setup).
    Instruction named = instruction(Opcode::Reserve);
    named.set_index(1);
    named.set_alias(1);
    m.code[1] = named;
    CHECK(verifier_message(m, Code::BadStructure).find("(reserve): a name in a plan's reservations") !=
          std::string::npos);
  }
  SUBCASE("a program body") {
    bytecode::Module m = module_with_one_value();
    m.code.push_back(indexed(Opcode::Declare, 0));
    m.programs = {bytecode::ProgramEntry{3, 1, {1, 2}}};
    CHECK(verifier_message(m, Code::BadStructure).find("(declare): not allowed in a program body") !=
          std::string::npos);
  }
  SUBCASE("two programs of one name (the compiler's E0402)") {
    bytecode::Module m = module_with_one_value();
    m.programs = {bytecode::ProgramEntry{3, 1, {1, 1}}, bytecode::ProgramEntry{3, 2, {1, 1}}};
    CHECK(verifier_message(m, Code::BadStructure).find("two programs have the same name") !=
          std::string::npos);
    m.programs[1].name = 2; // "p": a plan's name, but no program's
    CHECK(verifier_message(m, Code::BadStructure).empty());
  }
  SUBCASE("an action list") {
    bytecode::Module m = module_with_one_value();
    Instruction hold = instruction(Opcode::Hold);
    hold.location = Location::pinned();
    hold.set_index(1);
    for (const Instruction &in :
         {indexed(Opcode::Actions, 1), hold, values(Opcode::Item, 0, 1, {}), instruction(Opcode::End)})
      m.code.push_back(in);
    m.programs = {bytecode::ProgramEntry{3, 1, {1, 5}}};
    CHECK(verifier_message(m, Code::BadStructure).find("(hold): not allowed in an action list") !=
          std::string::npos);
  }
  SUBCASE("an item list") {
    bytecode::Module m = module_with_one_value();
    Instruction hold = instruction(Opcode::Hold);
    hold.location = Location::pinned();
    hold.set_index(1);
    m.code.push_back(hold);
    m.code.push_back(values(Opcode::Ensure, 0, 1, Location::pinned()));
    m.setup = {0, 3};
    CHECK(verifier_message(m, Code::BadStructure).find("(ensure): not allowed in an item list") !=
          std::string::npos);
  }
  SUBCASE("the same module with every instruction where it belongs loads") {
    bytecode::Module m = module_with_one_value();
    m.code.push_back(values(Opcode::Ensure, 0, 1, Location::cuda(0)));
    m.plans = {bytecode::PlanEntry{2, 1, false, {1, 1}, {1, 1}, {1, 2}, {2, 2}}};
    CHECK(verifier_message(m, Code::BadStructure).empty());
  }
}

TEST_CASE("bytecode: docs/bytecode.md's opcode table is the one opcodes.def defines") {
  const std::string doc = read_file(FHR_SOURCE_DIR "/docs/bytecode.md");
  const std::string begin =
      "<!-- opcode table: generated from opcodes.def, checked by tests/unit/bytecode_test.cpp -->\n";
  const std::string end = "<!-- end of opcode table -->";
  const std::size_t from = doc.find(begin), to = doc.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const std::string table = doc.substr(from + begin.size(), to - from - begin.size());
  CHECK_MESSAGE(table == opcode_table(), "replace the table in docs/bytecode.md with:\n" << opcode_table());
}

TEST_CASE("bytecode: a statement over a family range is one IR action and one instruction") {
  const char *text = R"(budget cuda:0 1 GiB
value rk[48] 8 MiB replicable source pageable
plan "load" {
  enter { ensure rk[*] at cuda:0 }
  exit {
    for i in 0..3 { drop rk[i] at cuda:0 }
  }
})";
  CompiledFile compiled = compile_ok(text);
  const ir::Plan &ir_plan = compiled.module.plans.at(0);
  REQUIRE(ir_plan.enter.size() == 1);
  CHECK(ir_plan.enter.actions[0].value == 0);
  CHECK(ir_plan.enter.actions[0].count == 48);
  CHECK(ir_plan.exit.size() == 3); // a loop's iterations stay apart
  const bytecode::Module &module = *compiled.lowered->module;
  REQUIRE(module.plans[0].enter.size() == 1);
  const Instruction &ensure = module.code[module.plans[0].enter.begin];
  CHECK(ensure.opcode == Opcode::Ensure);
  CHECK(ensure.count == 48);
  CHECK(module.plans[0].exit.size() == 3);
  // Explained value by value, every step at the statement's position.
  Explained e = explain(text);
  REQUIRE(e.plan().steps.size() == 48 + 3);
  const ReportUnit &unit = e.report.units.at(0);
  for (std::size_t i = 0; i < 48; ++i) {
    CAPTURE(i);
    CHECK(unit.steps[i].text == "ensure rk[" + std::to_string(i) + "] at cuda:0");
    CHECK(unit.steps[i].span.line == 4);
    CHECK(unit.steps[i].span.column == 11);
    CHECK(unit.steps[i].span.end_column == 11 + std::string("ensure rk[*] at cuda:0").size());
  }
  CHECK(unit.steps[50].text == "drop rk[2] at cuda:0");
  CHECK(unit.steps[50].span.line == 6);
}

TEST_CASE("bytecode: the span side table locates steps of a source and of its module") {
  const std::string text = "budget cuda:0 1 MiB\n"
                           "value a 2 MiB replicable at pinned\n"
                           "plan \"p\" {\n"
                           "  enter {\n"
                           "      ensure a at cuda:0\n"
                           "  }\n"
                           "}\n";
  CompiledFile source = compile_ok(text);
  CompiledFile module = compile_module(source.lowered->bytes);
  const SpanTable &from_text = source.lowered->spans;
  const SpanTable &from_module = module.lowered->spans;
  REQUIRE(from_text.instructions.size() == 2);
  REQUIRE(from_module.instructions.size() == 2);
  // The declaration, then the ensure: the source's columns, the module's
  // lines with its disassembly's columns.
  CHECK(from_text.instructions[0].line == 2);
  CHECK(from_text.instructions[0].column == 1);
  CHECK(from_text.instructions[0].end_column == 35);
  CHECK(from_text.instructions[1].line == 5);
  CHECK(from_text.instructions[1].column == 7);
  CHECK(from_text.instructions[1].end_column == 25);
  CHECK(from_module.instructions[1].line == 5);
  CHECK(from_module.instructions[1].column == 5);
  CHECK(from_module.instructions[1].end_column == 23);
  CHECK(from_text.plans.at(0).line == 3);
  CHECK(from_text.plans.at(0).column == 6);
  CHECK(from_module.plans.at(0).line == 3);
  CHECK(from_module.plans.at(0).column == 6);
  CHECK(from_text.excerpt(1) == "      ensure a at cuda:0");
  CHECK(from_module.excerpt(1) == "    ensure a at cuda:0");

  // Every output locates the failing step through the table.
  auto outputs = [](const CompiledFile &compiled) {
    Analysis analysis = analyze_module(*compiled.lowered);
    const std::vector<FileReport> reports{build_report(*compiled.lowered, analysis)};
    std::string check, explain;
    llvm::raw_string_ostream check_stream(check), explain_stream(explain);
    print_check_text(check_stream, reports);
    print_explain_text(explain_stream, *compiled.lowered, analysis);
    const nlohmann::ordered_json json = explain_json(reports);
    return std::make_tuple(check_stream.str(), explain_stream.str(),
                           json["files"][0]["units"][0]["steps"][0]["position"]);
  };
  const auto [text_check, text_explain, text_json] = outputs(source);
  const auto [module_check, module_explain, module_json] = outputs(module);
  const std::string message =
      "error: plan \"p\" is infeasible at 'ensure a at cuda:0': Transition exceeds budget at cuda:0 (budget "
      "1 MiB, used 0 B, reserved 0 B, requested 2 MiB) [budget]\n";
  CHECK(text_check == "test.fhr:5:7: " + message);
  CHECK(module_check == "test.fhrb:5:5: " + message);
  CHECK(text_explain.find("test.fhr:5:7: " + message +
                          "      ensure a at cuda:0\n      ^~~~~~~~~~~~~~~~~~\n") != std::string::npos);
  CHECK(module_explain.find("test.fhrb:5:5: " + message +
                            "    ensure a at cuda:0\n    ^~~~~~~~~~~~~~~~~~\n") != std::string::npos);
  CHECK(text_json == nlohmann::ordered_json{{"line", 5}, {"column", 7}});
  CHECK(module_json == nlohmann::ordered_json{{"line", 5}, {"column", 5}});
}

TEST_CASE("bytecode: the verifier refuses modules that ask for more than the limits (limits.hpp)") {
  using Code = bytecode::ModuleErrorCode;
  SUBCASE("more values than a file may declare (a fuzzed 600-byte module declared millions)") {
    bytecode::Module m = module_with_one_value();
    m.declarations[0].family_size = static_cast<std::uint32_t>(bytecode::kMaxValues) + 1;
    m.value_count = m.declarations[0].family_size;
    CHECK(verifier_message(m, Code::BadOperand).find("more than 1000000 values") != std::string::npos);
    m.declarations[0].family_size = static_cast<std::uint32_t>(bytecode::kMaxValues); // at the limit: loads
    m.value_count = m.declarations[0].family_size;
    CHECK(verifier_message(m, Code::BadOperand).empty());
  }
  SUBCASE("more plans and programs than a file may declare (a fuzzed 386-byte file declared two million)") {
    bytecode::Module m = module_with_one_value();
    for (std::uint32_t k = 0; k < bytecode::kMaxPlansAndPrograms; ++k) {
      m.plans.push_back(bytecode::PlanEntry{
          static_cast<std::uint32_t>(m.strings.size()), 1, false, {1, 1}, {1, 1}, {1, 1}, {1, 1}});
      m.strings.push_back("plan-" + std::to_string(k));
    }
    CHECK(verifier_message(m, Code::BadOperand).empty()); // at the limit: loads
    bytecode::Module with_program = m;
    with_program.programs = {bytecode::ProgramEntry{3, 1, {1, 1}}};
    CHECK(verifier_message(with_program, Code::BadOperand)
              .find("more than 100000 plans and programs together") != std::string::npos);
    m.plans.push_back(bytecode::PlanEntry{
        static_cast<std::uint32_t>(m.strings.size()), 1, false, {1, 1}, {1, 1}, {1, 1}, {1, 1}});
    m.strings.push_back("one-more");
    CHECK(verifier_message(m, Code::BadOperand).find("more than 100000 plans and programs together") !=
          std::string::npos);
  }
  SUBCASE("a program that runs a large plan many times") {
    // A plan of 1,000,000 ensures (two instructions of 500,000), run by a
    // program: each run is 1,000,002 steps (the actions, the preflight and
    // the statement), the plan alone 1,000,001, the setup 1,000,000.
    bytecode::Module m = module_with_a_million_ensures();
    m.plans = {bytecode::PlanEntry{2, 1, false, {1, 1}, {1, 1}, {1, 3}, {3, 3}}};
    auto program_of_runs = [&](std::uint32_t runs) {
      bytecode::Module with = m;
      for (std::uint32_t k = 0; k < runs; ++k)
        with.code.push_back(indexed(Opcode::Run, 0));
      with.programs = {bytecode::ProgramEntry{3, 1, {3, 3 + runs}}};
      return with;
    };
    const bytecode::Module eight = program_of_runs(8); // 2,000,001 + 8,000,016 = 10,000,017 > 10,000,000
    CHECK(bytecode::count_steps(eight).total == 10'000'017);
    CHECK(bytecode::count_steps(eight).largest_program_steps == 8'000'016);
    CHECK(verifier_message(eight, Code::BadStructure)
              .find("the module asks for more than 10000000 steps (program 'main': 8000016)") !=
          std::string::npos);
    const bytecode::Module seven = program_of_runs(7); // 9,000,015: loads
    CHECK(bytecode::count_steps(seven).total == 9'000'015);
    CHECK(verifier_message(seven, Code::BadStructure).empty());
  }
  SUBCASE("a setup of more steps than the limit besides its declarations") {
    // 1,000,000 values declared (not counted), then setup actions over
    // them: 1,000,000 steps load, one more (a hold) does not.
    bytecode::Module m = module_with_a_million_ensures();
    m.setup = {0, 3};
    CHECK(bytecode::count_steps(m).setup == 1'000'000);
    CHECK(bytecode::count_steps(m).total == 2'000'000);
    CHECK(verifier_message(m, Code::BadStructure).empty());
    Instruction hold = instruction(Opcode::Hold);
    hold.location = Location::pinned();
    hold.set_index(1);
    m.code.push_back(hold);
    m.code.push_back(values(Opcode::Item, 0, 1, {}));
    m.setup = {0, 5};
    CHECK(bytecode::count_steps(m).setup == 1'000'001);
    CHECK(verifier_message(m, Code::BadStructure)
              .find("the setup asks for more than 1000000 steps besides its declarations (1000001)") !=
          std::string::npos);
  }
}
