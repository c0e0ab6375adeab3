#include "fhr/compiler/frontend.hpp"

#include "fhr/bytecode/writer.hpp"
#include "fhr/compiler/disasm.hpp"
#include "fhr/compiler/lower.hpp"
#include "fhr/compiler/sema.hpp"
#include "fhr/dsl/parser.hpp"

#include <llvm/Support/MemoryBuffer.h>

namespace fhr {

namespace {

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> read_input(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "[%s] cannot read '%s': %s",
                                   diag_code_text(DiagCode::UnreadableFile).data(), path.str().c_str(),
                                   buffer.getError().message().c_str());
  if (path == "-") return llvm::MemoryBuffer::getMemBufferCopy((*buffer)->getBuffer(), "<stdin>");
  return std::move(*buffer);
}

llvm::Expected<bytecode::Module> load_bytes(llvm::StringRef bytes, llvm::StringRef name) {
  try {
    return bytecode::load_module(std::as_bytes(std::span(bytes.data(), bytes.size())));
  } catch (const bytecode::ModuleError &error) {
    return llvm::createStringError(std::errc::invalid_argument, "[%s] '%s' is not a valid module: %s",
                                   diag_code_text(DiagCode::InvalidModule).data(), name.str().c_str(),
                                   error.what());
  }
}

/// Parse, sema and, without errors, lowering and verification.
CompiledFile compile_buffer(std::unique_ptr<llvm::MemoryBuffer> buffer) {
  CompiledFile compiled;
  compiled.name = buffer->getBufferIdentifier().str();
  compiled.source = std::make_unique<SourceFile>(std::move(buffer));
  compiled.syntax = parse(*compiled.source);
  compiled.module = analyze(compiled.syntax, *compiled.source);
  if (!compiled.ok()) return compiled;
  Lowered lowered = lower(compiled.module, *compiled.source);
  VerifiedModule verified;
  verified.bytes = bytecode::write_module(lowered.module);
  // Explain runs what the runtime would load: the module as it verifies.
  try {
    verified.module = std::make_shared<const bytecode::Module>(
        bytecode::load_module(std::as_bytes(std::span(verified.bytes.data(), verified.bytes.size()))));
  } catch (const bytecode::ModuleError &error) {
    // Lowering writes what the verifier accepts; anything else is a bug here.
    throw std::logic_error(std::string("lowering produced a module that does not verify: ") + error.what());
  }
  verified.spans = std::move(lowered.spans);
  compiled.lowered = std::move(verified);
  return compiled;
}

} // namespace

bool is_module(llvm::StringRef bytes) { return bytes.startswith(llvm::StringRef(bytecode::kMagic, 4)); }

llvm::Expected<bytecode::Module> load_module_file(llvm::StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer = read_input(path);
  if (!buffer) return buffer.takeError();
  if (!is_module((*buffer)->getBuffer()))
    return llvm::createStringError(std::errc::invalid_argument,
                                   "[%s] '%s' is not a bytecode module (no FHRB magic)",
                                   diag_code_text(DiagCode::InvalidModule).data(), path.str().c_str());
  return load_bytes((*buffer)->getBuffer(), (*buffer)->getBufferIdentifier());
}

llvm::Expected<CompiledFile> compile_module_bytes(llvm::StringRef bytes, llvm::StringRef name) {
  llvm::Expected<bytecode::Module> module = load_bytes(bytes, name);
  if (!module) return module.takeError();
  CompiledFile compiled;
  compiled.name = name.str();
  VerifiedModule verified;
  verified.module = std::make_shared<const bytecode::Module>(std::move(*module));
  // What `compile` writes for a module file: the same module, re-encoded.
  verified.bytes = bytecode::write_module(*verified.module);
  verified.spans = module_spans(verified.module, compiled.name);
  compiled.lowered = std::move(verified);
  return compiled;
}

llvm::Expected<CompiledFile> compile_file(llvm::StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer = read_input(path);
  if (!buffer) return buffer.takeError();
  if (!is_module((*buffer)->getBuffer())) return compile_buffer(std::move(*buffer));
  return compile_module_bytes((*buffer)->getBuffer(), (*buffer)->getBufferIdentifier());
}

CompiledFile compile_text(llvm::StringRef text, llvm::StringRef name) {
  return compile_buffer(llvm::MemoryBuffer::getMemBufferCopy(text, name));
}

llvm::Expected<BudgetOverride> parse_budget_override(llvm::StringRef text) {
  const std::string code = diag_code_text(DiagCode::BadBudgetOverride).str();
  auto [location_text, size_text] = text.split('=');
  if (size_text.empty() || location_text.empty())
    return llvm::createStringError(std::errc::invalid_argument,
                                   "[%s] --budget expects LOCATION=SIZE (for example cuda:0=40GiB), got '%s'",
                                   code.c_str(), text.str().c_str());
  LocationParseError problem{};
  std::optional<Location> location = parse_location(location_text.trim(), &problem);
  if (!location)
    return llvm::createStringError(std::errc::invalid_argument, "[%s] --budget %s: %s", code.c_str(),
                                   text.str().c_str(), problem.message.c_str());
  SourceFile source(llvm::MemoryBuffer::getMemBufferCopy(size_text, "--budget"));
  ast::File file;
  ast::ExprId expression = ast::kNone;
  std::optional<std::uint64_t> size;
  if (parse_expression(source, file, expression)) size = evaluate_constant(file, expression, source);
  if (!size) {
    std::string message = source.diagnostics().empty() ? "bad size" : source.diagnostics().front().message;
    return llvm::createStringError(std::errc::invalid_argument, "[%s] --budget %s: %s", code.c_str(),
                                   text.str().c_str(), message.c_str());
  }
  return BudgetOverride{*location, *size};
}

} // namespace fhr
