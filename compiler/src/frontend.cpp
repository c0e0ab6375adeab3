#include "fhr/compiler/frontend.hpp"

#include "fhr/bytecode/limits.hpp"
#include "fhr/bytecode/writer.hpp"
#include "fhr/compiler/disasm.hpp"
#include "fhr/compiler/lower.hpp"
#include "fhr/compiler/sema.hpp"
#include "fhr/dsl/parser.hpp"

#include <llvm/Support/MemoryBuffer.h>

namespace fhr {

namespace {

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> read_input(llvm::StringRef path,
                                                               llvm::StringRef stdin_name = "<stdin>") {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "[%s] cannot read '%s': %s",
                                   diag_code_text(DiagCode::UnreadableFile).data(), path.str().c_str(),
                                   buffer.getError().message().c_str());
  if (path == "-") return llvm::MemoryBuffer::getMemBufferCopy((*buffer)->getBuffer(), stdin_name);
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
CompiledFile compile_buffer(std::unique_ptr<llvm::MemoryBuffer> buffer, const CompileOptions &options) {
  CompiledFile compiled;
  compiled.name = buffer->getBufferIdentifier().str();
  compiled.source = std::make_unique<SourceFile>(std::move(buffer), options.diagnostics);
  compiled.syntax = parse(*compiled.source);
  compiled.module = analyze(compiled.syntax, *compiled.source);
  if (!compiled.ok()) return compiled;
  Lowered lowered = lower(compiled.module, *compiled.source);
  // The verifier's limit on the steps a module asks for (limits.hpp), said
  // here with the program that asks most: a plan run many times can reach
  // it while the file itself stays small.
  if (const bytecode::StepCount steps = bytecode::count_steps(lowered.module);
      steps.total > bytecode::kMaxSteps) {
    const std::string limit = std::to_string(bytecode::kMaxSteps);
    if (steps.largest_program) {
      const ir::Program &program = compiled.module.programs[*steps.largest_program];
      compiled.source->report(DiagCode::TooManyValues,
                              "the file expands to more than " + limit + " steps: program '" + program.name +
                                  "' runs " + std::to_string(steps.largest_program_steps),
                              program.span,
                              "the steps counted are each declared value, each action and reservation of "
                              "every plan explained on its own, and each statement of every program with "
                              "the steps of the plans it runs");
    } else {
      compiled.source->report(DiagCode::TooManyValues, "the file expands to more than " + limit + " steps",
                              ast::Span{0, 0});
    }
    return compiled;
  }
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

llvm::Expected<CompiledFile> compile_file(llvm::StringRef path, const CompileOptions &options) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer = read_input(path, options.stdin_name);
  if (!buffer) return buffer.takeError();
  if (!is_module((*buffer)->getBuffer())) return compile_buffer(std::move(*buffer), options);
  return compile_module_bytes((*buffer)->getBuffer(), (*buffer)->getBufferIdentifier());
}

CompiledFile compile_text(llvm::StringRef text, llvm::StringRef name, const CompileOptions &options) {
  return compile_buffer(llvm::MemoryBuffer::getMemBufferCopy(text, name), options);
}

InputDiagnostic input_diagnostic(std::string file, llvm::Error error) {
  InputDiagnostic diagnostic;
  diagnostic.file = std::move(file);
  diagnostic.message = llvm::toString(std::move(error));
  llvm::StringRef text = diagnostic.message;
  // Messages of the front end start with their code: "[E0015] cannot read ...".
  if (text.startswith("[") && text.size() > 7 && text[6] == ']')
    if (std::optional<DiagCode> code = find_diag_code(text.substr(1, 5))) {
      diagnostic.code = *code;
      diagnostic.message = text.substr(7).ltrim().str();
    }
  return diagnostic;
}

ParsedOverrides parse_budget_overrides(const std::vector<std::string> &texts,
                                       const DiagnosticOptions &options) {
  ParsedOverrides parsed;
  auto warn = [&](DiagCode code, std::string message) {
    if (!options.enabled(code)) return;
    const bool error = options.is_error(code);
    if (error) message += " [-Werror=" + warning_flag(code).str() + "]";
    parsed.diagnostics.push_back({"", code, error ? Severity::Error : Severity::Warning, std::move(message)});
  };
  for (const std::string &text : texts) {
    llvm::Expected<BudgetOverride> override = parse_budget_override(text);
    if (!override) {
      parsed.diagnostics.push_back(input_diagnostic("", override.takeError()));
      continue;
    }
    const llvm::StringRef size = llvm::StringRef(text).split('=').second;
    if (override->budget_bytes != 0 && size.find_first_of("BKMGT") == llvm::StringRef::npos)
      warn(DiagCode::BareSize, "--budget " + text + ": a size without a unit is bytes; write '" +
                                   size.trim().str() + " B' if bytes are meant, or give a unit such as '" +
                                   size.trim().str() + "GiB'");
    for (std::size_t i = 0; i < parsed.overrides.size(); ++i)
      if (parsed.overrides[i].location == override->location)
        warn(DiagCode::RepeatedOverride, "--budget " + text + " replaces --budget " + parsed.texts[i] +
                                             ": for one location the last --budget applies");
    parsed.overrides.push_back(*override);
    parsed.texts.push_back(text);
  }
  return parsed;
}

void check_overrides(CompiledFile &file, const ParsedOverrides &overrides) {
  if (!file.module.device_count) return;
  const unsigned devices = *file.module.device_count;
  ast::Span declared{0, 0};
  for (const ast::Stmt &s : file.syntax.statements)
    if (s.kind == ast::StmtKind::Devices) declared = s.span;
  for (std::size_t i = 0; i < overrides.overrides.size(); ++i) {
    const Location at = overrides.overrides[i].location;
    if (!at.is_cuda() || at.device() < devices) continue;
    file.source->report(DiagCode::OverrideUnavailableDevice,
                        "--budget " + overrides.texts[i] + " names " + at.name() +
                            ", but this file declares " + std::to_string(devices) +
                            (devices == 1 ? " device" : " devices"),
                        declared,
                        devices == 0   ? "this file declares no CUDA device"
                        : devices == 1 ? "its only device is cuda:0"
                                       : "its devices are cuda:0 to cuda:" + std::to_string(devices - 1));
  }
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
