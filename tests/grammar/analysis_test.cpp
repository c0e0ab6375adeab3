// PEGTL's grammar analysis: no rule can loop without consuming input.
#include "fhr/dsl/grammar.hpp"

#include <doctest/doctest.h>
#include <tao/pegtl/contrib/analyze.hpp>

TEST_CASE("grammar/analysis: the grammar has no infinite loops") {
  CHECK(tao::pegtl::analyze<fhr::grammar::file>(1) == 0);
}
