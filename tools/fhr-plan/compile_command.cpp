#include "commands.hpp"

#include "fhr/compiler/disasm.hpp"

#include <llvm/Support/FileUtilities.h>
#include <llvm/Support/WithColor.h>

namespace fhr::cli {

int run_compile(const CommonOptions &options, const std::string &output) {
  if (options.files.size() != 1) {
    llvm::errs() << "fhr-plan: compile takes exactly one input file\n";
    return kBadInput;
  }
  LoadedFiles loaded = load_files(options);
  if (!loaded.ok) {
    llvm::errs() << "fhr-plan: no module written\n";
    return kBadInput;
  }
  const std::vector<char> &bytes = loaded.files.front().lowered->bytes;
  // The module appears whole or not at all: written to a temporary file
  // beside the output, then renamed over it.
  llvm::Error written =
      llvm::writeFileAtomically(output + ".tmp%%%%%%", output, llvm::StringRef(bytes.data(), bytes.size()));
  if (written) {
    llvm::WithColor::error(llvm::errs(), "fhr-plan")
        << "cannot write '" << output << "': " << llvm::toString(std::move(written)) << '\n';
    return kBadInput;
  }
  return kFeasible;
}

int run_disasm(const CommonOptions &options) {
  int status = kFeasible;
  for (const std::string &path : options.files) {
    llvm::Expected<bytecode::Module> module = load_module_file(path);
    if (!module) {
      report_error(module.takeError());
      status = kBadInput;
      continue;
    }
    llvm::outs() << disassemble(*module, path == "-" ? "<stdin>" : path);
  }
  return status;
}

} // namespace fhr::cli
