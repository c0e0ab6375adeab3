#include "../unit/test_support.hpp"
using namespace fhr;
using namespace fhr::test;
TEST_CASE("grammar/budget, location, devices") {
  CompiledFile c = compile_ok("budget pinned-host 1 GiB\nlocation pageable-host\nbudget cuda:7 0\ndevices 8");
  REQUIRE(c.module.budgets.size() == 3);
  CHECK(c.module.budgets[0].first == Location::pinned());
  CHECK(c.module.budgets[1].first == Location::pageable());
  CHECK_FALSE(c.module.budgets[1].second.has_value());
  CHECK(c.module.budgets[2].first == Location::cuda(7));
  CHECK(*c.module.budgets[2].second == 0);
  CHECK(*c.module.device_count == 8);
}
TEST_CASE("grammar/locations: errors") {
  CHECK(diagnostic_codes("budget cuda 1 GiB") == std::vector<std::string>{"E0301"});
  CHECK(diagnostic_codes("budget cuda:128 1 GiB") == std::vector<std::string>{"E0301"});
  CHECK(diagnostic_codes("budget cuda:01 1 GiB") == std::vector<std::string>{"E0301"});
  CHECK(diagnostic_codes("budget cuda:-1 1 GiB") == std::vector<std::string>{"E0301"});
  CHECK(diagnostic_codes("budget disk 1 GiB") == std::vector<std::string>{"E0005"});
  CHECK(diagnostic_codes("budget pinned 1 GiB\nbudget pinned-host 2 GiB") ==
        std::vector<std::string>{"E0303"});
  CHECK(diagnostic_codes("devices 129") == std::vector<std::string>{"E0302"});
  CHECK(diagnostic_codes("devices 1\ndevices 2") == std::vector<std::string>{"E0102"});
  CHECK(first_message("budget cuda:128 1 GiB") == "location 'cuda:128' is out of range (cuda:0 to cuda:127)");
}
