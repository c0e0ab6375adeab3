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
