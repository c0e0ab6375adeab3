// PEGTL's grammar analysis: no rule can loop without consuming input.
#include "fhr/dsl/grammar.hpp"

#include <doctest/doctest.h>
#include <tao/pegtl/contrib/analyze.hpp>

TEST_CASE("grammar/analysis: the grammar has no infinite loops") {
  CHECK(tao::pegtl::analyze<fhr::grammar::file>(1) == 0);
}

#include "fhr/bytecode/format.hpp"

#include <string>

// The bytecode verifier keeps its own copy of the keyword list (the runtime
// cannot include the grammar); this keeps the two in step.
TEST_CASE("grammar/keywords: the bytecode reserved words are exactly the grammar's keywords") {
  CHECK(fhr::grammar::keyword::subs_t::size == std::size(fhr::bytecode::kReservedWords));
  for (const char *word : fhr::bytecode::kReservedWords) {
    CAPTURE(word);
    const std::string text(word);
    tao::pegtl::memory_input input(text, "word");
    CHECK(tao::pegtl::parse<tao::pegtl::seq<fhr::grammar::keyword, tao::pegtl::eof>>(input));
  }
}
