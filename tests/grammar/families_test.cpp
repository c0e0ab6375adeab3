#include "../unit/test_support.hpp"
using namespace fhr;
using namespace fhr::test;
TEST_CASE("grammar/families: index, half-open range, star") {
  CompiledFile c = compile_ok(R"(
    value rk[32] 64 MiB replicable source pageable
    plan "p" { enter { ensure rk[3] at cuda:0  ensure rk[0..8] at cuda:1  drop rk[*] at cuda:0 } })");
  CHECK(c.module.values.size() == 32);
  CHECK(c.module.values[5].name == "rk[5]");
  REQUIRE(c.module.families.size() == 1);
  CHECK(c.module.families[0].count == 32);
  // Each statement stays one action over its range of the family.
  const ir::Plan &p = c.module.plans[0];
  REQUIRE(p.enter.size() == 3);
  CHECK(p.enter.actions[0].value == 3);
  CHECK(p.enter.actions[0].count == 1);
  CHECK(p.enter.actions[1].value == 0);
  CHECK(p.enter.actions[1].count == 8);
  CHECK(p.enter.actions[1].location == Location::cuda(1));
  CHECK(p.enter.actions[2].kind == ActionKind::Drop);
  CHECK(p.enter.actions[2].value == 0);
  CHECK(p.enter.actions[2].count == 32);
}
TEST_CASE("grammar/families: errors") {
  const std::string decl = "value rk[4] 1 MiB replicable source pageable\nvalue one 1 MiB at pinned\n";
  CHECK(diagnostic_codes(decl + "ensure rk[4] at cuda:0") == std::vector<std::string>{"E0105"});
  CHECK(diagnostic_codes(decl + "ensure rk[2..5] at cuda:0") == std::vector<std::string>{"E0105"});
  CHECK(diagnostic_codes(decl + "ensure rk[2..2] at cuda:0") == std::vector<std::string>{"E0106"});
  CHECK(diagnostic_codes(decl + "ensure rk at cuda:0") == std::vector<std::string>{"E0104"});
  CHECK(diagnostic_codes(decl + "ensure one[0] at cuda:0") == std::vector<std::string>{"E0103"});
  CHECK(diagnostic_codes(decl + "ensure rk[] at cuda:0") == std::vector<std::string>{"E0003"});
  CHECK(diagnostic_codes(decl + "ensure rk[1 at cuda:0") == std::vector<std::string>{"E0004"});
  CHECK(diagnostic_codes("value rk[0] 1 at pinned") == std::vector<std::string>{"E0106"});
  CHECK(diagnostic_codes("value rk[100000000000] 1 at pinned") == std::vector<std::string>{"E0205"});
}
