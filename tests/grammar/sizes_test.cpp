#include "../unit/test_support.hpp"
using namespace fhr;
using namespace fhr::test;
namespace {
std::uint64_t budget_of(const std::string &size) {
  CompiledFile c = compile_ok("budget pinned " + size);
  REQUIRE(c.module.budgets.size() == 1);
  return *c.module.budgets[0].second;
}
} // namespace
TEST_CASE("grammar/sizes: units, separators and arithmetic") {
  CHECK(budget_of("4096") == 4096);
  CHECK(budget_of("1_000_000") == 1000000);
  CHECK(budget_of("3 B") == 3);
  CHECK(budget_of("2 KB") == 2000);
  CHECK(budget_of("2 KiB") == 2048);
  CHECK(budget_of("1 MB") == 1000000);
  CHECK(budget_of("1MiB") == MiB);
  CHECK(budget_of("1 GB") == 1000000000);
  CHECK(budget_of("1 GiB") == GiB);
  CHECK(budget_of("1 TB") == 1000000000000ull);
  CHECK(budget_of("2 TiB") == 2ull << 40);
  CHECK(budget_of("1 GiB + 512 MiB") == GiB + 512 * MiB);
  CHECK(budget_of("2 * (3 + 4) * 1 KiB") == 14 * 1024);
  CHECK(budget_of("10 - 2 - 3") == 5); // left associative
  CHECK(budget_of("100 / 7") == 14);
  CHECK(budget_of("18446744073709551615") == UINT64_MAX);
}
TEST_CASE("grammar/sizes: errors") {
  CHECK(diagnostic_codes("budget pinned 18446744073709551616") == std::vector<std::string>{"E0201"});
  CHECK(diagnostic_codes("budget pinned 16 EiB") == std::vector<std::string>{"E0001"});
  CHECK(diagnostic_codes("budget pinned 16777216 TiB") == std::vector<std::string>{"E0201"});
  CHECK(diagnostic_codes("budget pinned 1 - 2") == std::vector<std::string>{"E0202"});
  CHECK(diagnostic_codes("budget pinned 1 / (2 - 2)") == std::vector<std::string>{"E0203"});
  CHECK(diagnostic_codes("budget pinned 8 Mib") == std::vector<std::string>{"E0009"});
  CompiledFile c = compile_text("budget pinned 8 gb", "t.fhr");
  REQUIRE(c.source->diagnostics().size() == 1);
  CHECK(c.source->diagnostics()[0].hint == "did you mean 'GB'?");
  CHECK(diagnostic_codes("budget pinned (1 + 2") == std::vector<std::string>{"E0004"});
  CHECK(diagnostic_codes("budget pinned 1 +") == std::vector<std::string>{"E0003"});
  CHECK(diagnostic_codes("budget pinned") == std::vector<std::string>{"E0003"});
  std::string deep = "budget pinned " + std::string(100, '(') + "1" + std::string(100, ')');
  CHECK(diagnostic_codes(deep) == std::vector<std::string>{"E0011"});
  std::string long_sum = "budget pinned 0";
  for (int i = 0; i < 100000; ++i)
    long_sum += "+1";
  CHECK(budget_of(long_sum.substr(14)) == 100000);
}
