#pragma once
// Helpers shared by the tests: compile a snippet, explain it, find things.
#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/report.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fhr::test {

inline std::string read_file(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Every examples/*.fhr, sorted.
inline std::vector<std::string> example_paths() {
  std::vector<std::string> paths;
  for (const auto &entry : std::filesystem::directory_iterator(FHR_SOURCE_DIR "/examples"))
    if (entry.path().extension() == ".fhr") paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

constexpr std::uint64_t MiB = 1 << 20;
constexpr std::uint64_t GiB = 1ull << 30;

/// Compiles `text`; the test fails if it has diagnostics.
inline CompiledFile compile_ok(const std::string &text) {
  CompiledFile compiled = compile_text(text, "test.fhr");
  if (!compiled.ok())
    for (const Diagnostic &d : compiled.source->diagnostics())
      FAIL_CHECK(diag_code_text(d.code).str() << ": " << d.message);
  return compiled;
}

/// The codes of every error of `text`, in report order (warnings left out).
inline std::vector<std::string> diagnostic_codes(const std::string &text) {
  CompiledFile compiled = compile_text(text, "test.fhr");
  std::vector<std::string> codes;
  for (const Diagnostic &d : compiled.source->diagnostics())
    if (d.severity == Severity::Error) codes.push_back(diag_code_text(d.code).str());
  return codes;
}

/// The first diagnostic's message (empty if none).
inline std::string first_message(const std::string &text) {
  CompiledFile compiled = compile_text(text, "test.fhr");
  return compiled.source->diagnostics().empty() ? "" : compiled.source->diagnostics().front().message;
}

struct Explained {
  CompiledFile compiled;
  Analysis analysis;
  FileReport report;

  const Explanation &plan(std::size_t i = 0) const { return analysis.plans.at(i).explanation; }
  const LocationPrediction &location(const Explanation &e, Location l) const {
    for (const LocationPrediction &p : e.locations)
      if (p.location == l) return p;
    FAIL("location not in the explanation: " << l.name());
    return e.locations.front();
  }
};

inline Explained explain(const std::string &text, std::vector<BudgetOverride> overrides = {}) {
  Explained out{compile_ok(text), {}, {}};
  out.analysis = analyze_module(*out.compiled.lowered, overrides);
  out.report = build_report(*out.compiled.lowered, out.analysis);
  return out;
}

} // namespace fhr::test
