// Bytecode: canonical lowering, byte-identical round trips through the
// disassembler, explain equivalence of source and module, and a verifier that
// refuses every corruption with a distinct error, never a crash.
#include "random_program.hpp"
#include "test_support.hpp"

#include "fhr/bytecode/module.hpp"
#include "fhr/compiler/disasm.hpp"
#include "fhr/compiler/lower.hpp"
#include "fhr/compiler/output.hpp"

#include <llvm/Support/MemoryBuffer.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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

/// The explain JSON without what legitimately differs between a source and
/// its module: the file name and columns.
std::string explain_signature(const CompiledFile &compiled) {
  Analysis analysis = analyze_module(compiled.module);
  nlohmann::ordered_json j = explain_json({build_report(*compiled.source, compiled.module, analysis)});
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

/// Source → module → text → module must give the same bytes, and explaining
/// the module must give the same verdicts, steps and numbers as the source.
void check_round_trip(const std::string &text) {
  const std::vector<char> first = compile_bytes(text);
  const bytecode::Module module = load(first);
  const std::string disassembled = disassemble(module, "test.fhrb");
  CompiledFile again = compile_text(disassembled, "test.fhrb");
  REQUIRE_MESSAGE(again.ok(), disassembled);
  const std::vector<char> second = lower_module(again.module, *again.source);
  REQUIRE_MESSAGE(first == second, "source:\n" << text << "\ndisassembly:\n" << disassembled);
  CHECK(explain_signature(compile_text(text, "test.fhr")) == explain_signature(again));
}

void fix_checksum(std::vector<char> &bytes) {
  if (bytes.size() < bytecode::kHeaderSize) return;
  const std::uint64_t sum = bytecode::checksum(
      std::as_bytes(std::span(bytes.data() + bytecode::kHeaderSize, bytes.size() - bytecode::kHeaderSize)));
  for (int i = 0; i < 8; ++i)
    bytes[16 + i] = static_cast<char>((sum >> (8 * i)) & 0xff);
}

/// Loads possibly corrupt bytes; if they verify, the module must disassemble,
/// compile and explain. Returns whether they verified.
bool load_and_explain(const std::vector<char> &bytes) {
  bytecode::Module module;
  try {
    module = load(bytes);
  } catch (const bytecode::ModuleError &error) {
    CHECK(std::strlen(error.what()) > 0);
    return false;
  }
  CompiledFile compiled = compile_text(disassemble(module, "mutant.fhrb"), "mutant.fhrb");
  if (compiled.ok()) {
    Analysis analysis = analyze_module(compiled.module);
    (void)build_report(*compiled.source, compiled.module, analysis);
  }
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
  bad[4] = 2;
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

/// Every truncation and every single-byte change of one example's module.
static void mutate_example(const std::string &name) {
  const std::string path = FHR_SOURCE_DIR "/examples/" + name + ".fhr";
  const std::vector<char> good = compile_bytes(read_file(path));
  std::size_t verified = 0, rejected = 0;
  for (std::size_t length = 0; length < good.size(); ++length)
    CHECK_FALSE(load_and_explain(std::vector<char>(good.begin(), good.begin() + length)));
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (int value = 0; value < 256; ++value) {
      if (static_cast<char>(value) == good[at]) continue;
      std::vector<char> raw = good;
      raw[at] = static_cast<char>(value);
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

TEST_CASE("bytecode mutation: every example is covered") {
  std::vector<std::string> names;
  for (const std::string &path : example_paths())
    names.push_back(std::filesystem::path(path).stem().string());
  CHECK(names == std::vector<std::string>{"bootstrapping", "infeasible", "inference", "replicated-weights"});
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
