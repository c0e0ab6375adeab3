// libFuzzer target over the bytecode loader and verifier. The checksum is
// recomputed before loading (a random byte string almost never matches its
// checksum, which would stop every input at the first check); a module that
// verifies must then explain as a module (the interpreter on the model),
// write and load again unchanged, and disassemble to text that compiles,
// without fault.
#include "fhr/bytecode/module.hpp"
#include "fhr/bytecode/writer.hpp"
#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/disasm.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/output.hpp"
#include "fhr/compiler/report.hpp"

#include <llvm/Support/raw_ostream.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::vector<char> bytes(reinterpret_cast<const char *>(data), reinterpret_cast<const char *>(data) + size);
  if (bytes.size() >= fhr::bytecode::kHeaderSize) {
    const std::uint64_t sum = fhr::bytecode::checksum(std::as_bytes(
        std::span(bytes.data() + fhr::bytecode::kHeaderSize, bytes.size() - fhr::bytecode::kHeaderSize)));
    for (int i = 0; i < 8; ++i)
      bytes[16 + i] = static_cast<char>((sum >> (8 * i)) & 0xff);
  }
  llvm::Expected<fhr::CompiledFile> compiled =
      fhr::compile_module_bytes(llvm::StringRef(bytes.data(), bytes.size()), "fuzz.fhrb");
  if (!compiled) {
    llvm::consumeError(compiled.takeError());
    return 0;
  }
  const fhr::bytecode::Module &module = *compiled->lowered->module;
  fhr::Analysis analysis = fhr::analyze_module(*compiled->lowered);
  llvm::raw_null_ostream sink;
  fhr::print_explain_text(sink, *compiled->lowered, analysis);
  // Writing is the loader's inverse: what it wrote loads and writes again unchanged.
  const std::vector<char> written = fhr::bytecode::write_module(module);
  if (fhr::bytecode::write_module(fhr::bytecode::load_module(std::as_bytes(std::span(written)))) != written)
    std::abort();
  fhr::CompiledFile text = fhr::compile_text(fhr::disassemble(module, "fuzz.fhrb"), "fuzz.fhrb");
  if (!text.ok()) std::abort(); // a module that verifies must disassemble to valid text
  return 0;
}
