#include "../unit/test_support.hpp"
using namespace fhr;
using namespace fhr::test;
TEST_CASE("grammar/for: plans per level with interpolated names, loops in actions and programs") {
  CompiledFile c = compile_ok(R"(
    value rk[8] 1 MiB replicable source pageable
    for level in 0..4 {
      plan "level-{level}" {
        enter { for k in 0..2 { ensure rk[level * 2 + k] at cuda:{level} } }
      }
    }
    program "all" { for level in 0..4 { run "level-{level}" } })");
  REQUIRE(c.module.plans.size() == 4);
  CHECK(c.module.plans[2].name == "level-2");
  REQUIRE(c.module.plans[3].enter.size() == 2);
  CHECK(c.module.plans[3].enter.actions[1].value == 7);
  CHECK(c.module.plans[3].enter.actions[1].location == Location::cuda(3));
  REQUIRE(c.module.programs[0].items.size() == 4);
  CHECK(c.module.programs[0].items[3].plan == 3);
  CHECK(compile_ok("for i in 3..3 { const never = 1 }").module.values.empty());
}
TEST_CASE("grammar/for: errors") {
  CHECK(diagnostic_codes("for i in 0..2 { plan \"same\" { } }") == std::vector<std::string>{"E0402"});
  // The loop stops at its first error.
  CHECK(diagnostic_codes("for i in 0..2 { plan \"p{j}\" { } }") == std::vector<std::string>{"E0405"});
  CHECK(diagnostic_codes("for i 0..2 { }") == std::vector<std::string>{"E0004"});
  CHECK(diagnostic_codes("for i in 0 2 { }") == std::vector<std::string>{"E0004"});
  CHECK(diagnostic_codes("const i = 1\nfor i in 0..2 { }") == std::vector<std::string>{"E0102"});
  CHECK(diagnostic_codes("for i in 0..100000000000 { }").front() == "E0205");
  CHECK(diagnostic_codes("plan \"{\" { }") == std::vector<std::string>{"E0405"});
  CHECK(compile_ok("plan \"literal \\{brace\\}\" { }").module.plans[0].name == "literal {brace}");
}
