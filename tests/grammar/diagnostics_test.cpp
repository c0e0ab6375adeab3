#include "../unit/test_support.hpp"

#include "fhr/dsl/format.hpp"
#include "fhr/dsl/parser.hpp"

using namespace fhr;
using namespace fhr::test;

namespace {
CompiledFile compile_with(const std::string &text, DiagnosticOptions options) {
  CompileOptions compile;
  compile.diagnostics = options;
  return compile_text(text, "test.fhr", compile);
}
/// Applies a -W flag; false (and the message consumed) when it is refused.
bool apply(DiagnosticOptions &options, const char *flag) {
  if (llvm::Error error = options.apply_flag(flag)) {
    llvm::consumeError(std::move(error));
    return false;
  }
  return true;
}
std::string printed(const CompiledFile &c) {
  std::string out;
  llvm::raw_string_ostream os(out);
  c.source->print(os, false);
  return os.str();
}
} // namespace

TEST_CASE("diagnostics: warnings have codes and severities and do not make a file invalid") {
  CompiledFile c = compile_text("budget cuda:0 40\nfor i in 5..2 { }\n", "test.fhr");
  CHECK(c.ok());
  REQUIRE(c.source->diagnostics().size() == 2);
  CHECK(diag_code_text(c.source->diagnostics()[0].code) == "W0001");
  CHECK(c.source->diagnostics()[0].severity == Severity::Warning);
  REQUIRE(c.source->diagnostics()[0].fix);
  CHECK(c.source->diagnostics()[0].fix->replacement == "40 B");
  CHECK(c.source->diagnostics()[0].fix->span.begin == 14);
  CHECK(diag_code_text(c.source->diagnostics()[1].code) == "W0002");
  CHECK(c.source->diagnostics()[1].fix->replacement == "2..5");
  CHECK(c.source->warning_count() == 2);
}

TEST_CASE("diagnostics: -W flags turn warnings off or into errors") {
  DiagnosticOptions options;
  REQUIRE(apply(options, "no-bare-size"));
  CHECK(compile_with("budget cuda:0 40\n", options).source->diagnostics().empty());
  options = {};
  REQUIRE(apply(options, "error=bare-size"));
  CompiledFile c = compile_with("budget cuda:0 40\nfor i in 5..2 { }\n", options);
  CHECK_FALSE(c.ok());
  CHECK(c.source->diagnostics()[0].severity == Severity::Error);
  CHECK(c.source->diagnostics()[0].promoted);
  CHECK(c.source->diagnostics()[1].severity == Severity::Warning);
  options = {};
  REQUIRE(apply(options, "error"));
  REQUIRE(apply(options, "no-error=empty-loop"));
  c = compile_with("budget cuda:0 40\nfor i in 5..2 { }\n", options);
  CHECK(c.source->error_count() == 2); // -Werror wins over no-error=FLAG only where FLAG was not set
  options = {};
  REQUIRE(apply(options, "none"));
  CHECK(compile_with("budget cuda:0 40\n", options).source->diagnostics().empty());
  options = {};
  llvm::Error error = options.apply_flag("bare-sise");
  REQUIRE(static_cast<bool>(error));
  CHECK(llvm::toString(std::move(error)) == "unknown warning 'bare-sise'; did you mean 'bare-size'?");
}

TEST_CASE("diagnostics: the error limit stops the front end with E0504") {
  std::string text;
  for (int i = 0; i < 500; ++i)
    text += "const = 1\n";
  CompiledFile c = compile_text(text, "test.fhr");
  CHECK(c.source->diagnostics().size() == 21);
  CHECK(diag_code_text(c.source->diagnostics().back().code) == "E0504");
  CHECK(c.source->stopped());
  DiagnosticOptions unlimited;
  unlimited.error_limit = 0;
  CHECK(compile_with(text, unlimited).source->diagnostics().size() == 500);
  DiagnosticOptions three;
  three.error_limit = 3;
  CHECK(compile_with("const a = x\nconst b = y\nconst c = z\nconst d = w\n", three)
            .source->diagnostics()
            .size() == 4);
}

TEST_CASE("diagnostics: a loop stops at its first error and names the iteration") {
  CompiledFile c = compile_text("for i in 0..1000 { plan \"p\" { } }\n", "test.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  const Diagnostic &d = c.source->diagnostics()[0];
  CHECK(diag_code_text(d.code) == "E0402");
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0].message ==
        "in the iteration i = 1 of 0..1000; the loop stops here, 998 iterations unchecked");
  // A body that fails in its first iteration of millions is checked once.
  c = compile_text("value w[2] 1 MiB at pinned\nfor i in 0..4000000 { ensure w[i] at cuda:0 }\n", "test.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  CHECK(c.source->diagnostics()[0].message.find("index 2 is out of range") == 0);
  CHECK(c.source->diagnostics()[0].notes[0].message.find("in the iteration i = 2 of 0..4000000") == 0);
  // Programs in a loop: the first failing one stops the others.
  c = compile_text("for i in 0..100000 { program { run \"missing-{i}\" } }\n", "test.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  CHECK(c.source->diagnostics()[0].notes[0].message ==
        "in the program of the iteration i = 0; later iterations are not checked");
}

TEST_CASE("diagnostics: the same warning from every iteration is one, in N iterations") {
  CompiledFile c = compile_text("for i in 0..7 { plan \"p{i}\" { reserve cuda:0 40 \"t\" } }\n", "test.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  CHECK(c.source->diagnostics()[0].occurrences == 7);
  CHECK(printed(c).find("[W0001] a size without a unit is bytes: '40' means 40 B (in 7 iterations)") !=
        std::string::npos);
}

TEST_CASE("diagnostics: notes say where things were declared") {
  CompiledFile c = compile_text("const ct = 1 MiB\nconst ct = 2 MiB\n", "test.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  REQUIRE(c.source->diagnostics()[0].notes.size() == 1);
  CHECK(c.source->diagnostics()[0].notes[0].message == "first declared here");
  CHECK(c.source->line_and_column(c.source->diagnostics()[0].notes[0].span.begin).first == 1);
  c = compile_text("ensure w at pinned\nvalue w 1 MiB at pinned\n", "test.fhr");
  CHECK(c.source->diagnostics()[0].message == "unknown value 'w': it is declared later");
  CHECK(c.source->line_and_column(c.source->diagnostics()[0].notes[0].span.begin).first == 2);
  c = compile_text("budget pinned 1 GiB\nbudget pinned-host 2 GiB\n", "test.fhr");
  CHECK(c.source->diagnostics()[0].notes[0].message == "first declared here");
  CHECK(first_message("const levels = 3\nplan \"l-{levels - 1}\" { }") ==
        "only names can be interpolated: '{levels - 1}' is an expression");
}

TEST_CASE("diagnostics: typos of keywords, verbs and locations are suggested") {
  auto hint = [](const std::string &text) {
    CompiledFile c = compile_text(text, "test.fhr");
    return c.source->diagnostics().empty() ? std::string() : c.source->diagnostics()[0].hint;
  };
  CHECK(hint("valeu w 1 MiB at pinned") == "did you mean 'value'?");
  CHECK(hint("ensur w at pinned") == "did you mean 'ensure'?");
  CHECK(hint("value w 1 MiB at pinned\nensure w at pinnned") == "did you mean 'pinned'?");
  CHECK(hint("value w 1 MiB at pinned\nensure w at cuda0") == "did you mean 'cuda:0'?");
  CHECK(hint("plan \"p\" { enterr { } }") == "did you mean 'enter'?");
  CHECK(hint("plan \"p\" { ensure w at cuda:0 }") ==
        "a plan's actions go inside 'enter { }', 'exit { }' or 'reclaim { }'");
  CHECK(hint("program { rum \"p\" }") == "did you mean 'run'?");
  CHECK(hint("value w 1 MiB at pinned\nensure w att pinned") == "did you mean 'at'?");
}

TEST_CASE("diagnostics: a missing brace points at the brace it leaves open") {
  CompiledFile c = compile_text("plan \"a\" {\n  enter { }\nplan \"b\" { }\n", "test.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  REQUIRE(c.source->diagnostics()[0].notes.size() == 1);
  CHECK(c.source->diagnostics()[0].notes[0].message == "unclosed '{' opened here");
  CHECK(c.source->diagnostics()[0].notes[0].span.begin == 9);
  CHECK(c.module.plans.size() == 1); // plan "b" is still read
  c = compile_text("plan \"a\" { bogus }\n", "test.fhr");
  CHECK(c.source->diagnostics()[0].notes.empty()); // junk inside a block, not a missing brace
}

TEST_CASE("diagnostics: columns count characters and carets stay under them") {
  CompiledFile c =
      compile_text("plan \"\xC3\xA9t\xC3\xA9\" { enter { ensure w at cuda:0 } } # \xE2\x9C\x93\n", "t.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  const auto [line, column] = c.source->line_and_column(c.source->diagnostics()[0].span.begin);
  CHECK(line == 1);
  CHECK(column == 29);
  CHECK(printed(c) == "t.fhr:1:29: error: [E0101] unknown value 'w'\n"
                      "plan \"\xC3\xA9t\xC3\xA9\" { enter { ensure w at cuda:0 } } # \xE2\x9C\x93\n" +
                          std::string(28, ' ') + "^\n");
  // Wide characters count one column in the position and two under the caret.
  c = compile_text("plan \"\xE9\x87\x8D\xE3\x81\xBF\" { enter { ensure x at cuda:0 } }\n", "t.fhr");
  CHECK(printed(c) == "t.fhr:1:28: error: [E0101] unknown value 'x'\n"
                      "plan \"\xE9\x87\x8D\xE3\x81\xBF\" { enter { ensure x at cuda:0 } }\n" +
                          std::string(29, ' ') + "^\n");
}

TEST_CASE("sizes: decimals give whole bytes or an error naming the nearest sizes") {
  CHECK(compile_ok("value w 1.5 GiB at pinned").module.values[0].spec.logical_nbytes == 1536 * MiB);
  CHECK(compile_ok("value w 2.5 KB at pinned").module.values[0].spec.logical_nbytes == 2500);
  CHECK(compile_ok("value w 0.25 KiB at pinned").module.values[0].spec.logical_nbytes == 256);
  CHECK(diagnostic_codes("value w 1.1 KiB at pinned") == std::vector<std::string>{"E0206"});
  CHECK(first_message("value w 1.1 KiB at pinned") ==
        "'1.1 KiB' is not a whole number of bytes (between 1126 B and 1127 B)");
  CHECK(diagnostic_codes("value w 0.5 at pinned") == std::vector<std::string>{"E0206"});
  CHECK(diagnostic_codes("value w 20000000.5 TiB at pinned") == std::vector<std::string>{"E0201"});
  // A range is still a range (one setup step acting on two values).
  const CompiledFile range =
      compile_ok("value r[4] 1 MiB replicable source pageable\nensure r[0..2] at cuda:0");
  REQUIRE(range.module.setup.size() == 5);
  CHECK(range.module.setup.back().action.count == 2);
}

TEST_CASE("warnings: unused plans, budgets at undeclared devices, overrides") {
  CompiledFile c = compile_text("plan \"a\" { }\nplan \"b\" { }\nprogram { run \"a\" }\n", "t.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  CHECK(c.source->diagnostics()[0].message == "plan \"b\" is not run by any program");
  CHECK(compile_text("plan \"a\" { }\n", "t.fhr").source->diagnostics().empty()); // no programs: plans are
                                                                                  // the point
  c = compile_text("for i in 0..4 { plan \"l{i}\" { } }\nprogram { run \"l0\" }\n", "t.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  CHECK(c.source->diagnostics()[0].message ==
        "3 plans declared here are not run by any program (\"l1\", \"l2\", ...)");
  c = compile_text("devices 1\nbudget cuda:3 1 GiB\n", "t.fhr");
  CHECK(diag_code_text(c.source->diagnostics()[0].code) == "W0004");
  CHECK(c.ok());

  ParsedOverrides overrides = parse_budget_overrides({"cuda:0=40GiB", "cuda:0=80GiB", "pinned=4096"}, {});
  REQUIRE(overrides.overrides.size() == 3);
  REQUIRE(overrides.diagnostics.size() == 2);
  CHECK(overrides.diagnostics[0].code == DiagCode::RepeatedOverride);
  CHECK(overrides.diagnostics[0].message ==
        "--budget cuda:0=80GiB replaces --budget cuda:0=40GiB: for one location the last --budget applies");
  CHECK(overrides.diagnostics[1].code == DiagCode::BareSize);
  CHECK(parse_budget_overrides({"cuda:0=1.5GiB"}, {}).overrides[0].budget_bytes == 1536 * MiB);

  CompiledFile file = compile_text("devices 1\nbudget cuda:0 1 GiB\n", "t.fhr");
  check_overrides(file, parse_budget_overrides({"cuda:7=10GiB"}, {}));
  REQUIRE_FALSE(file.ok());
  CHECK(file.source->diagnostics()[0].message ==
        "--budget cuda:7=10GiB names cuda:7, but this file declares 1 device");
}

TEST_CASE("fmt: the canonical layout, comments kept, idempotent") {
  auto format = [](const std::string &text) {
    SourceFile source(llvm::MemoryBuffer::getMemBufferCopy(text, "t.fhr"));
    ast::File syntax = parse(source);
    REQUIRE_FALSE(source.has_errors());
    return format_file(source, syntax);
  };
  CHECK(format("budget   pinned   512MiB   # pinned\nconst a=(1+2)*3\n") ==
        "budget pinned 512 MiB      # pinned\nconst a = (1 + 2) * 3\n"); // the comment keeps its column
  CHECK(format("plan \"p\" { enter { ensure a at cuda:0  ensure b at cuda:0 } }") ==
        "plan \"p\" { enter { ensure a at cuda:0  ensure b at cuda:0 } }\n");
  CHECK(format("plan \"p\" {\n    enter { ensure rk[ (l-1)*8 .. l*8 ] at cuda:{ l } }\n\n\n  # c\n}\n") ==
        "plan \"p\" {\n  enter { ensure rk[(l - 1) * 8 .. l * 8] at cuda:{l} }\n\n  # c\n}\n");
  CHECK(format("for i in 0 .. 2 {\nvalue v[2] 1 MiB storage 2 MiB exclusive source pageable-host\n}\n") ==
        "for i in 0..2 {\n  value v[2] 1 MiB storage 2 MiB exclusive source pageable-host\n}\n");
  CHECK(format("lease a, b[*] at cuda:0 pending as l  release l\n") ==
        "lease a, b[*] at cuda:0 pending as l\nrelease l\n");
  std::string text;
  for (int i = 0; i < 20000; ++i)
    text += i ? "+1" : "const deep = 1";
  CHECK(format(text).size() == text.size() + 2 * 19999 + 1); // spaces around every '+', no recursion
}
