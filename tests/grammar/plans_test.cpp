#include "../unit/test_support.hpp"
using namespace fhr;
using namespace fhr::test;
TEST_CASE("grammar/plan: reclaim, reserve, enter, exit in any order, several blocks append") {
  CompiledFile c = compile_ok(R"(
    value a 1 MiB replicable at pinned
    plan "p" {
      enter { ensure a at cuda:0 }
      reserve cuda:0 2 MiB "w1"
      reclaim { drop a at cuda:1 }
      exit { drop a at cuda:0 }
      enter { ensure a at cuda:1 }
      reserve cuda:1 3 MiB "w2"
    })");
  const ir::Plan &p = c.module.plans[0];
  CHECK(p.name == "p");
  CHECK(p.reclaim.size() == 1);
  CHECK(p.enter.size() == 2);
  CHECK(p.exit.size() == 1);
  REQUIRE(p.reservations.size() == 2);
  CHECK(p.reservations[1].label == "w2");
  CHECK(p.reservations[1].nbytes == 3 * MiB);
}
TEST_CASE("grammar/plan: errors") {
  CHECK(diagnostic_codes("plan \"\" { }") == std::vector<std::string>{"E0401"});
  CHECK(diagnostic_codes("plan \"a\" { }\nplan \"a\" { }") == std::vector<std::string>{"E0402"});
  CHECK(diagnostic_codes("plan p { }") == std::vector<std::string>{"E0006"});
  CHECK(diagnostic_codes("plan \"a\" { hold }") == std::vector<std::string>{"E0010"});
  CHECK(diagnostic_codes("plan \"a\" { enter { hold } }") == std::vector<std::string>{"E0010"});
  CHECK(diagnostic_codes("plan \"a\" { reserve cuda:0 1 \"x\" as r }") == std::vector<std::string>{"E0406"});
  CHECK(diagnostic_codes("plan \"a\" {") == std::vector<std::string>{"E0010"});
}
TEST_CASE("grammar/plan: `in program` marks a plan that runs only inside programs") {
  CompiledFile c = compile_ok(R"(
    plan "alone" { }
    plan "inside" in program { }
    program { run "inside" run "alone" })");
  REQUIRE(c.module.plans.size() == 2);
  CHECK_FALSE(c.module.plans[0].in_program);
  CHECK(c.module.plans[1].in_program);
  // The mark reaches the module and survives its encoding.
  REQUIRE(c.lowered);
  const bytecode::Module &module = *c.lowered->module;
  CHECK_FALSE(module.plans[0].in_program);
  CHECK(module.plans[1].in_program);
  const std::vector<std::byte> bytes(reinterpret_cast<const std::byte *>(c.lowered->bytes.data()),
                                     reinterpret_cast<const std::byte *>(c.lowered->bytes.data()) +
                                         c.lowered->bytes.size());
  CHECK(bytecode::load_module(bytes).plans[1].in_program);
}
TEST_CASE("grammar/plan: a plan for programs that no program runs, and a misspelt mark") {
  CHECK(diagnostic_codes("plan \"p\" in program { }") == std::vector<std::string>{"E0407"});
  CHECK(diagnostic_codes("plan \"p\" in program { }\nprogram { }") == std::vector<std::string>{"E0407"});
  // One error per declaration, however many plans its loop declares.
  CHECK(diagnostic_codes("for i in 0..3 { plan \"p{i}\" in program { } }") ==
        std::vector<std::string>{"E0407"});
  const std::vector<std::string> misspelt = diagnostic_codes("plan \"p\" in programs { }");
  REQUIRE_FALSE(misspelt.empty());
  CHECK(misspelt.front() == "E0004");
  CHECK(first_message("plan \"p\" in programs { }").find("expected 'program' after 'in'") !=
        std::string::npos);
}
