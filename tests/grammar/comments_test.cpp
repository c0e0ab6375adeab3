#include "../unit/test_support.hpp"
using namespace fhr::test;
TEST_CASE("grammar/comments: to end of line, anywhere whitespace may be") {
  CHECK(diagnostic_codes("# only a comment").empty());
  CHECK(diagnostic_codes("const a = 1 # trailing\n# next\nconst b = a").empty());
  CHECK(diagnostic_codes("plan \"p\" { # open\n enter { # inner\n } }").empty());
  CHECK(diagnostic_codes("const a = 1 // not a comment") == std::vector<std::string>{"E0003"});
}
