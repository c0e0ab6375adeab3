#include "../unit/test_support.hpp"
using namespace fhr;
using namespace fhr::test;
TEST_CASE("grammar/actions: ensure, copy, move [from], drop, discard") {
  CompiledFile c = compile_ok(R"(
    value a 1 MiB replicable at pinned
    ensure a at cuda:0
    copy a to cuda:1
    move a to pageable from cuda:0
    drop a at cuda:1
    discard a)");
  std::vector<ActionKind> kinds;
  for (const ir::SetupStep &s : c.module.setup)
    if (s.kind == ir::SetupKind::Action) kinds.push_back(s.action.kind);
  CHECK(kinds == std::vector<ActionKind>{ActionKind::Ensure, ActionKind::Copy, ActionKind::Move,
                                         ActionKind::Drop, ActionKind::Discard});
  CHECK(c.module.setup[3].action.from == Location::cuda(0));
}
TEST_CASE("grammar/actions: errors") {
  const std::string decl = "value a 1 MiB at pinned\n";
  CHECK(diagnostic_codes(decl + "ensure a to cuda:0") == std::vector<std::string>{"E0004"});
  CHECK(diagnostic_codes(decl + "copy a at cuda:0") == std::vector<std::string>{"E0004"});
  CHECK(diagnostic_codes(decl + "move a to") == std::vector<std::string>{"E0005"});
  CHECK(diagnostic_codes(decl + "move a to pinned from") == std::vector<std::string>{"E0005"});
  CHECK(diagnostic_codes(decl + "ensure at cuda:0") == std::vector<std::string>{"E0012"});
  CHECK(diagnostic_codes(decl + "ensure b at cuda:0") == std::vector<std::string>{"E0101"});
}
