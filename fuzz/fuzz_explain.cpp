// libFuzzer target: any bytes through the parser, sema, lowering, the
// verifier, the interpreter's explain pass and every output format. A
// finding is a crash, a sanitizer report or a hang.
#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/diagnostic_output.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/output.hpp"

#include <llvm/Support/raw_ostream.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  fhr::CompiledFile compiled = fhr::compile_text(text, "fuzz.fhr");
  llvm::raw_null_ostream sink;
  fhr::DiagnosticInputs diagnostics{{compiled.source.get()}, {}};
  if (!compiled.ok()) {
    compiled.source->print(sink, false);
    fhr::print_diagnostics_github(sink, diagnostics);
    sink << fhr::json_text(fhr::check_sarif({}, diagnostics, "fuzz"));
    return 0;
  }
  fhr::Analysis analysis = fhr::analyze_module(*compiled.lowered);
  std::vector<fhr::FileReport> reports{fhr::build_report(*compiled.lowered, analysis)};
  fhr::print_explain_text(sink, *compiled.lowered, analysis);
  sink << fhr::json_text(fhr::explain_json(reports));
  fhr::print_check_text(sink, reports);
  fhr::print_check_github(sink, reports);
  sink << fhr::json_text(fhr::check_sarif(reports, diagnostics, "fuzz"));
  return 0;
}
