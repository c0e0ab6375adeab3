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
