// fhr-plan fmt: prints each file in the canonical layout (dsl/format.hpp);
// -i rewrites the files, --check changes nothing and fails (exit 1) naming
// every file that is not formatted, for CI.
#include "commands.hpp"

#include "fhr/dsl/format.hpp"
#include "fhr/dsl/parser.hpp"

#include <llvm/Support/FileUtilities.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/WithColor.h>

#include <cstdlib>

namespace fhr::cli {

int run_fmt(const CommonOptions &options, bool check, bool in_place) {
  const bool colors = std::getenv("NO_COLOR") == nullptr && llvm::errs().has_colors();
  int status = kFeasible;
  for (const std::string &path : options.files) {
    if (in_place && path == "-") {
      llvm::errs() << "fhr-plan: fmt -i cannot rewrite standard input\n";
      return kBadInput;
    }
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!buffer) {
      llvm::WithColor::error(llvm::errs(), "fhr-plan")
          << "[" << diag_code_text(DiagCode::UnreadableFile) << "] cannot read '" << path
          << "': " << buffer.getError().message() << '\n';
      status = kBadInput;
      continue;
    }
    const std::string name = path == "-" ? options.compile.stdin_name : path;
    if (is_module((*buffer)->getBuffer())) {
      llvm::WithColor::error(llvm::errs(), "fhr-plan")
          << "[" << diag_code_text(DiagCode::InvalidModule) << "] '" << name
          << "' is a bytecode module; fhr-plan disasm prints its text\n";
      status = kBadInput;
      continue;
    }
    SourceFile source(llvm::MemoryBuffer::getMemBufferCopy((*buffer)->getBuffer(), name),
                      options.compile.diagnostics);
    ast::File syntax = parse(source);
    if (source.has_errors()) {
      // Only text that parses can be laid out again; nothing is written.
      source.print(llvm::errs(), colors);
      status = kBadInput;
      continue;
    }
    const std::string formatted = format_file(source, syntax);
    if (check) {
      if (formatted != source.text()) {
        llvm::outs() << name << ": not formatted (fhr-plan fmt -i " << name << " formats it)\n";
        if (status == kFeasible) status = kInfeasible;
      }
      continue;
    }
    if (!in_place) {
      llvm::outs() << formatted;
      continue;
    }
    if (formatted == source.text()) continue;
    if (llvm::Error error = llvm::writeFileAtomically(path + ".tmp%%%%%%", path, formatted)) {
      llvm::WithColor::error(llvm::errs(), "fhr-plan")
          << "cannot write '" << path << "': " << llvm::toString(std::move(error)) << '\n';
      status = kBadInput;
    }
  }
  return status;
}

} // namespace fhr::cli
