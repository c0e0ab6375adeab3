#include "../unit/test_support.hpp"
using namespace fhr;
using namespace fhr::test;
TEST_CASE("grammar/const: names usable in later sizes") {
  CompiledFile c = compile_ok("const ct = 8 MiB\nconst w = 3 * ct\nbudget cuda:0 w + ct");
  CHECK(*c.module.budgets[0].second == 32 * MiB);
}
TEST_CASE("grammar/const: errors") {
  CHECK(diagnostic_codes("const = 3") == std::vector<std::string>{"E0002"});
  CHECK(diagnostic_codes("const a 3") == std::vector<std::string>{"E0004"});
  CHECK(diagnostic_codes("const a = 1\nconst a = 2") == std::vector<std::string>{"E0102"});
  CHECK(diagnostic_codes("const plan = 1") == std::vector<std::string>{"E0002"});
  CompiledFile c = compile_text("const workspace = 1\nbudget pinned workspce", "t.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  CHECK(diag_code_text(c.source->diagnostics()[0].code) == "E0101");
  CHECK(c.source->diagnostics()[0].hint == "did you mean 'workspace'?");
  CHECK(diagnostic_codes("value v 1 at pinned\nbudget pinned v") == std::vector<std::string>{"E0107"});
}
