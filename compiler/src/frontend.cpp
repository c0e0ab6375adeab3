#include "fhr/compiler/frontend.hpp"

#include "fhr/compiler/sema.hpp"
#include "fhr/dsl/parser.hpp"

#include <llvm/Support/MemoryBuffer.h>

namespace fhr {

namespace {
CompiledFile compile_buffer(std::unique_ptr<llvm::MemoryBuffer> buffer) {
  CompiledFile compiled;
  compiled.source = std::make_unique<SourceFile>(std::move(buffer));
  compiled.syntax = parse(*compiled.source);
  compiled.module = analyze(compiled.syntax, *compiled.source);
  return compiled;
}
} // namespace

llvm::Expected<CompiledFile> compile_file(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "[%s] cannot read '%s': %s",
                                   diag_code_text(DiagCode::UnreadableFile).data(), path.str().c_str(),
                                   buffer.getError().message().c_str());
  if (path == "-")
    *buffer = llvm::MemoryBuffer::getMemBufferCopy((*buffer)->getBuffer(), "<stdin>");
  return compile_buffer(std::move(*buffer));
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
