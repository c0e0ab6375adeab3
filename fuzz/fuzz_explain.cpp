// libFuzzer target: any bytes through the parser, sema, lowering, the
// verifier, the interpreter's explain pass and every output format, the
// time predictor (`explain --profile`, on the shipped H200 profile) and
// the pictures and trace drawn from it. A finding is a crash, a sanitizer
// report, a hang, or a feasible unit whose memory explain's replay does not
// take to the model's peak.
#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/diagnostic_output.hpp"
#include "fhr/compiler/explain_time.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/output.hpp"
#include "fhr/compiler/pictures.hpp"
#include "fhr/compiler/trace.hpp"

#include <llvm/Support/raw_ostream.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {
constexpr std::size_t kMaxPictureUnits = 1'000;
} // namespace

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
  nlohmann::ordered_json document = fhr::explain_json(reports);
  sink << fhr::json_text(document);
  // Explain's replay of a feasible unit's memory (the pictures' stacks, the
  // time predictor's accounts) reaches exactly the model's peaks.
  for (const auto &unit : document["files"][0]["units"]) {
    if (!unit["feasible"].get<bool>()) continue;
    for (const fhr::LocationMemory &location : fhr::unit_memory(unit, fhr::MemorySeries::Totals).locations)
      if (location.derived_peak_bytes() != location.peak_charged_bytes) {
        std::fprintf(stderr, "%s at %s: the replay reaches %llu bytes, the model %llu\n",
                     unit["name"].get<std::string>().c_str(), location.location.c_str(),
                     static_cast<unsigned long long>(location.derived_peak_bytes()),
                     static_cast<unsigned long long>(location.peak_charged_bytes));
        std::abort();
      }
  }
  const fhr::LinkModel &links = fhr::LinkModel::h200();
  // A chart per unit: a file near the limit of plans (100,000 empty ones)
  // takes most of the timeout under ASan drawing them, and exercises
  // nothing a few units do not.
  if (document["files"][0]["units"].size() <= kMaxPictureUnits)
    sink << fhr::render_html(document, links) << fhr::render_svg(document, links);
  fhr::add_predicted_time(document, links);
  sink << fhr::json_text(fhr::trace_json(fhr::predicted_trace(document)));
  fhr::print_check_text(sink, reports);
  fhr::print_check_github(sink, reports);
  sink << fhr::json_text(fhr::check_sarif(reports, diagnostics, "fuzz"));
  return 0;
}
