#include "../unit/test_support.hpp"
using namespace fhr;
using namespace fhr::test;
TEST_CASE("grammar/hold, lease, reserve, release") {
  CompiledFile c = compile_ok(R"(
    value a 1 MiB replicable at cuda:0
    value b 1 MiB replicable at cuda:0
    hold a, b, a at cuda:0 as h
    lease b at cuda:0 pending
    reserve cuda:0 8 MiB "scratch \"x\"" as r
    release r
    release h)");
  REQUIRE(c.module.setup.size() == 7);
  CHECK(c.module.setup[2].values == std::vector<ValueId>{0, 1});
  CHECK(c.module.setup[2].alias == "h");
  CHECK(c.module.setup[3].pending);
  CHECK(c.module.setup[4].label == "scratch \"x\"");
  CHECK(c.module.setup[4].nbytes == 8 * MiB);
  CHECK(c.module.setup[5].target == 4);
  CHECK(c.module.setup[6].target == 2);
}
TEST_CASE("grammar/lifetimes: errors") {
  const std::string decl = "value a 1 MiB at pinned\n";
  CHECK(diagnostic_codes(decl + "release nothing") == std::vector<std::string>{"E0404"});
  CHECK(diagnostic_codes(decl + "hold a at pinned as h\nrelease h\nrelease h") ==
        std::vector<std::string>{"E0404"});
  CHECK(diagnostic_codes(decl + "hold a at pinned as h\nhold a at pinned as h") ==
        std::vector<std::string>{"E0102"});
  CHECK(diagnostic_codes(decl + "reserve pinned 1 MiB \"  \"") == std::vector<std::string>{"E0401"});
  CHECK(diagnostic_codes(decl + "reserve pinned 1 MiB") == std::vector<std::string>{"E0006"});
  CHECK(diagnostic_codes(decl + "reserve pinned 1 MiB \"open") == std::vector<std::string>{"E0007"});
  CHECK(diagnostic_codes(decl + "reserve pinned 1 MiB \"bad \\q\"") == std::vector<std::string>{"E0008"});
  CHECK(diagnostic_codes(decl + "hold at pinned") == std::vector<std::string>{"E0012"});
  CHECK(diagnostic_codes(decl + "hold a, at pinned") == std::vector<std::string>{"E0012"});
  CHECK(diagnostic_codes(decl + "hold a pinned") == std::vector<std::string>{"E0004"});
}
