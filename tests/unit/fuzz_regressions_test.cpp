// Inputs the fuzzer once found troublesome run through the whole pipeline
// and are rejected or explained quickly, with a diagnostic where they are bad.
#include "test_support.hpp"

#include "fhr/compiler/output.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

TEST_CASE("fuzz regressions go through parse, sema, explain and every output") {
  std::size_t files = 0;
  for (const auto &entry : std::filesystem::directory_iterator(FHR_SOURCE_DIR "/tests/fuzz-regressions")) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    CAPTURE(entry.path().string());
    fhr::CompiledFile compiled = fhr::compile_text(text.str(), entry.path().filename().string());
    ++files;
    if (!compiled.ok()) {
      CHECK_FALSE(compiled.source->diagnostics().empty());
      continue;
    }
    fhr::Analysis analysis = fhr::analyze_module(*compiled.lowered);
    std::vector<fhr::FileReport> reports{fhr::build_report(*compiled.lowered, analysis)};
    CHECK_FALSE(fhr::json_text(fhr::explain_json(reports)).empty());
  }
  CHECK(files >= 2);
}

TEST_CASE("a family larger than the value limit is refused") {
  CHECK(fhr::test::diagnostic_codes("value v[2000000] 1 at pinned") == std::vector<std::string>{"E0205"});
}

TEST_CASE("a setup of more steps than the limit is refused once, where the limit is passed") {
  // 1,000,000 setup steps besides the declarations compile and verify; the
  // step past them is refused at its statement, and later loops stop.
  const std::string values = "value v[500000] 1 B at pageable\n";
  const std::string at_limit = values + "ensure v[*] at pinned\ndrop v[*] at pageable\n";
  CHECK(fhr::test::diagnostic_codes(at_limit).empty());
  const std::string past =
      at_limit + "hold v[0] at pinned\nfor i in 0..1000000 { reserve pinned 1 B \"r\" }\n";
  CHECK(fhr::test::diagnostic_codes(past) == std::vector<std::string>{"E0205"});
  CHECK(fhr::test::first_message(past) ==
        "the setup asks for more than 1000000 steps besides declaring values");
  // A loop of reservations: nine million were 22 s and 4.9 GB of `check`.
  const std::string loop =
      "for i in 0..9000000 { reserve pinned 1 B \"r\" }\nfor i in 0..10 { hold v at pinned }\n";
  CHECK(fhr::test::diagnostic_codes("value v 1 B at pinned\n" + loop) == std::vector<std::string>{"E0205"});
}

TEST_CASE("programs unrolling to more statements than the limit are refused once, where it is passed") {
  // 1,000,000 program statements compile (a scope counts with its body);
  // the next is refused at its statement, and later loops stop.
  const std::string values = "value v 1 B replicable at pinned\nplan \"p\" { }\n";
  const std::string at_limit =
      values +
      "program \"a\" {\n  for i in 0..999998 { ensure v at cuda:0 }\n  scope \"p\" { run \"p\" }\n}\n";
  CHECK(fhr::test::diagnostic_codes(at_limit).empty());
  const std::string past = at_limit + "program \"b\" { for i in 0..9000000 { run \"p\" } }\n";
  CHECK(fhr::test::diagnostic_codes(past) == std::vector<std::string>{"E0205"});
  CHECK(fhr::test::first_message(past) == "the programs unroll to more than 1000000 statements");
}

TEST_CASE("more plans and programs than the limit are refused once, where the limit is passed") {
  // 100,000 plans and programs together load; the next is refused (E0205),
  // and the loop that declares it stops there.
  const std::string at_limit = "for i in 0..99999 { plan \"p{i}\" { } }\nprogram { }\n";
  CHECK(fhr::test::diagnostic_codes(at_limit).empty());
  const std::string past = "for i in 0..100000 { plan \"p{i}\" { } }\nprogram { }\nplan \"last\" { }\n";
  CHECK(fhr::test::diagnostic_codes(past) == std::vector<std::string>{"E0205"});
  CHECK(fhr::test::first_message(past) == "a file may declare at most 100000 plans and programs together");
}
