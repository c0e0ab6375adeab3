#include "../unit/test_support.hpp"
using namespace fhr;
using namespace fhr::test;
TEST_CASE("grammar/recovery: several errors in one run, resuming at the next statement") {
  CHECK(diagnostic_codes("budget pinned 1 Gib\nvalue 3\nbudget cuda:0 1 GiB\nconst = 2\n") ==
        std::vector<std::string>{"E0009", "E0002", "E0002"});
  CompiledFile c = compile_text("junk here\nbudget cuda:0 1 GiB\n", "t.fhr");
  CHECK(c.source->diagnostics().size() == 1);
  CHECK(c.module.budgets.size() == 1); // the statement after the error still counts
  const auto [line, column] = c.source->line_and_column(c.source->diagnostics()[0].span.begin);
  CHECK(line == 1);
  CHECK(column == 1);
}
TEST_CASE("grammar/recovery: binary garbage is an error, not a crash") {
  std::string garbage("\0\x01\xff\xfe{{{\"\n\x80", 10);
  CompiledFile c = compile_text(garbage, "t.fhr");
  REQUIRE_FALSE(c.source->diagnostics().empty());
  CHECK(c.source->diagnostics()[0].message.find("\\x00") != std::string::npos);
}
TEST_CASE("grammar/recovery: deep nesting of blocks is bounded") {
  std::string nested;
  for (int i = 0; i < 200; ++i)
    nested += "for i" + std::to_string(i) + " in 0..1 { ";
  CHECK(diagnostic_codes(nested).front() == "E0011");
}
