// libFuzzer target over the bytecode loader and verifier. The checksum is
// recomputed before loading (a random byte string almost never matches its
// checksum, which would stop every input at the first check); a module that
// verifies must then disassemble, compile and explain without fault.
#include "fhr/bytecode/module.hpp"
#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/disasm.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/report.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::vector<std::byte> bytes(reinterpret_cast<const std::byte *>(data),
                               reinterpret_cast<const std::byte *>(data) + size);
  if (bytes.size() >= fhr::bytecode::kHeaderSize) {
    const std::uint64_t sum = fhr::bytecode::checksum(std::span(bytes).subspan(fhr::bytecode::kHeaderSize));
    for (int i = 0; i < 8; ++i)
      bytes[16 + i] = static_cast<std::byte>((sum >> (8 * i)) & 0xff);
  }
  fhr::bytecode::Module module;
  try {
    module = fhr::bytecode::load_module(bytes);
  } catch (const fhr::bytecode::ModuleError &) {
    return 0;
  }
  fhr::CompiledFile compiled = fhr::compile_text(fhr::disassemble(module, "fuzz.fhrb"), "fuzz.fhrb");
  if (!compiled.ok()) return 0;
  fhr::Analysis analysis = fhr::analyze_module(compiled.module);
  (void)fhr::build_report(*compiled.source, compiled.module, analysis);
  return 0;
}
