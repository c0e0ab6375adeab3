#include "../unit/test_support.hpp"
using namespace fhr;
using namespace fhr::test;
TEST_CASE("grammar/program: nested scopes, run, actions, acquire, hold, reserve, direct actions") {
  CompiledFile c = compile_ok(R"(
    value q 1 MiB at cuda:0
    value k 1 MiB replicable source pageable
    plan "stage-1" { }
    plan "stage-2" { }
    program "pipeline" {
      scope "stage-1" {
        acquire q, k at cuda:0
        reserve cuda:0 64 MiB "tmp"
        hold q at cuda:0
        scope "stage-2" { }
      }
      run "stage-2"
      actions "evict" { drop k at cuda:0 }
      ensure k at cuda:1
    })");
  const ir::Program &p = c.module.programs[0];
  CHECK(p.name == "pipeline");
  REQUIRE(p.items.size() == 4);
  CHECK(p.items[0].kind == ir::ProgramItemKind::Scope);
  REQUIRE(p.items[0].body.size() == 4);
  CHECK(p.items[0].body[0].kind == ir::ProgramItemKind::Acquire);
  CHECK(p.items[0].body[0].values.size() == 2);
  CHECK(p.items[0].body[1].reservation.nbytes == 64 * MiB);
  CHECK(p.items[0].body[3].plan == 1);
  CHECK(p.items[1].kind == ir::ProgramItemKind::Run);
  CHECK(p.items[2].kind == ir::ProgramItemKind::Actions);
  CHECK(p.items[2].name == "evict");
  CHECK(p.items[3].kind == ir::ProgramItemKind::Direct);
}
TEST_CASE("grammar/program: a program may run a plan declared after it") {
  CHECK(compile_ok("program { run \"late\" }\nplan \"late\" { }").module.programs[0].items.size() == 1);
}
TEST_CASE("grammar/program: errors") {
  CompiledFile c = compile_text("plan \"stage-one\" { }\nprogram { run \"stage-on\" }", "t.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  CHECK(diag_code_text(c.source->diagnostics()[0].code) == "E0403");
  CHECK(c.source->diagnostics()[0].hint == "did you mean \"stage-one\"?");
  CHECK(diagnostic_codes("program { plan \"x\" { } }") == std::vector<std::string>{"E0010"});
  CHECK(diagnostic_codes("program { actions \"\" { } }") == std::vector<std::string>{"E0401"});
  CHECK(diagnostic_codes("program { release x }") == std::vector<std::string>{"E0010"});
}
TEST_CASE("grammar/program: two programs may not share a name; a program and a plan may") {
  CompiledFile twice = compile_text("program \"p\" { }\nprogram \"p\" { }\n", "t.fhr");
  REQUIRE(twice.source->diagnostics().size() == 1);
  const Diagnostic &d = twice.source->diagnostics()[0];
  CHECK(diag_code_text(d.code) == "E0402");
  CHECK(d.message == "program \"p\" is already declared");
  CHECK(d.span.begin == 24);
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0].message == "first declared here");
  // An unnamed program is called program-N: a named one may not take its name.
  CompiledFile unnamed = compile_text("program { }\nprogram \"program-1\" { }\n", "t.fhr");
  REQUIRE(unnamed.source->diagnostics().size() == 1);
  CHECK(unnamed.source->diagnostics()[0].message == "program \"program-1\" is already declared");
  CHECK(unnamed.source->diagnostics()[0].notes[0].message.find("an unnamed program is called program-N") !=
        std::string::npos);
  // In a loop: the second iteration, once.
  CompiledFile loop = compile_text("for i in 0..3 { program \"p\" { } }\n", "t.fhr");
  REQUIRE(loop.source->diagnostics().size() == 1);
  CHECK(loop.source->diagnostics()[0].message ==
        "program \"p\" is declared again by the next iteration of its loop");
  CHECK(compile_ok("plan \"p\" { }\nprogram \"p\" { run \"p\" }\nfor i in 0..3 { program \"p-{i}\" { } }")
            .module.programs.size() == 4);
}

TEST_CASE("grammar/program: programs in a loop count against the limit as they are declared") {
  // A 36-byte loop of empty programs queued every iteration before any was
  // counted (3.4 s and 926 MB); it stops at the 100,001st now.
  CompiledFile c = compile_text("for i in 0..10000000 { program { } }\n", "t.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  CHECK(c.source->diagnostics()[0].message ==
        "a file may declare at most 100000 plans and programs together");
  CHECK(c.source->diagnostics()[0].notes[0].message.find("in the iteration i = 100000 of 0..10000000") == 0);
  // Past the limit every loop stops at once (found by fuzz_run: a later
  // loop of plans ran to the expansion limit, ten million silent
  // iterations, 4 s): one error, not a second for the expansion.
  CompiledFile later = compile_text(
      "for i in 0..100001 { plan \"p{i}\" { } }\nfor j in 0..100000000 { plan \"q{j}\" { } }\n", "t.fhr");
  REQUIRE(later.source->diagnostics().size() == 1);
  CHECK(later.source->diagnostics()[0].message ==
        "a file may declare at most 100000 plans and programs together");
}

TEST_CASE("grammar/program: a plan `in program` is explained only inside the programs that run it") {
  // On its own the plan would fail: setup leaves `ct` at pageable, and
  // only the program's direct move brings it to pinned first.
  Explained e = explain(R"(
    budget cuda:0 1 GiB
    budget pinned 1 GiB
    value ct 64 MiB exclusive at pageable
    value big 2 GiB replicable source pageable
    plan "upload" in program { enter { move ct to cuda:0 from pinned } }
    plan "overflow" in program { enter { ensure big at cuda:0 } }
    program "main" {
      move ct to pinned
      run "upload"
      scope "overflow" { }
    })");
  CHECK(e.analysis.plans.empty()); // neither plan is explained against setup alone
  REQUIRE(e.report.units.size() == 1);
  const ReportUnit &main = e.report.units[0];
  CHECK(main.kind == ReportUnit::Kind::Program);
  REQUIRE(main.failure);
  const ReportStep &failed = main.steps[*main.failure];
  CHECK(failed.text == "ensure big at cuda:0");
  CHECK(failed.error == ErrorClass::Budget);
  // Human sizes for people, exact bytes for JSON.
  CHECK(failed.reason ==
        "Transition exceeds budget at cuda:0 (budget 1 GiB, used 64 MiB, reserved 0 B, requested 2 GiB)");
  CHECK(failed.exact_reason == "Transition exceeds budget at cuda:0 (budget 1073741824 B, used 67108864 B, "
                               "reserved 0 B, requested 2147483648 B)");
  // Reached from the program's `scope`: its step (the preflight's row is
  // the third: the move, upload's enter, then the refusal) and its line.
  REQUIRE(main.reached_by);
  CHECK(main.reached_by->text == "scope \"overflow\"");
  CHECK(main.reached_by->step == 3);
  CHECK(main.reached_by->span.line == 11);
  CHECK(reached_by_note(main) == "reached at step 3 of program \"main\": 'scope \"overflow\"'");
}
TEST_CASE("grammar/program: a failure outside any scope names no scope") {
  Explained e = explain(R"(
    value w 1 MiB at pinned
    program { drop w at pinned })");
  REQUIRE(e.report.units.size() == 1);
  CHECK(e.report.units[0].failure);
  CHECK_FALSE(e.report.units[0].reached_by);
}
