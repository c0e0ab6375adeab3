// fhr._compiler: compiles .fhr text to a bytecode module in-process (the
// compiler and LLVM are linked here, so `import fhr` never loads them).
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/lower.hpp"

#include <llvm/Support/raw_ostream.h>

#include <pybind11/pybind11.h>

namespace py = pybind11;

PYBIND11_MODULE(_compiler, m) {
  m.doc() = "The .fhr compiler, used by fhr.load.";
  m.def(
      "compile",
      [](const std::string &text, const std::string &name) {
        fhr::CompiledFile file = fhr::compile_text(text, name);
        std::string diagnostics;
        llvm::raw_string_ostream out(diagnostics);
        file.source->print(out, /*colors=*/false);
        out.flush();
        if (!file.ok()) return py::make_tuple(py::none(), diagnostics);
        const std::vector<char> bytes = fhr::lower_module(file.module, *file.source);
        return py::make_tuple(py::bytes(bytes.data(), bytes.size()), diagnostics);
      },
      py::arg("text"), py::arg("name"), "(module bytes or None, diagnostics text) for .fhr source text.");
}
