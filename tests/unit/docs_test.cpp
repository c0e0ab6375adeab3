// Every diagnostic code is documented with an example.
#include "fhr/dsl/diagnostics.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

TEST_CASE("docs/diagnostics.md lists every code") {
  std::ifstream file(FHR_SOURCE_DIR "/docs/diagnostics.md");
  REQUIRE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  for (fhr::DiagCode code : fhr::all_diag_codes()) {
    const std::string heading = "## " + fhr::diag_code_text(code).str();
    CHECK_MESSAGE(text.str().find(heading) != std::string::npos, heading << " is missing");
  }
}
