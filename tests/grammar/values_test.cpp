#include "../unit/test_support.hpp"
using namespace fhr;
using namespace fhr::test;
TEST_CASE("grammar/value: size, storage, mode and placement") {
  CompiledFile c = compile_ok(R"(
    value a 8 MiB at pinned
    value b 8 MiB storage 9 MiB replicable source pageable
    value c 1 KiB exclusive at cuda:3)");
  REQUIRE(c.module.values.size() == 3);
  const ir::Value &a = c.module.values[0];
  CHECK(a.spec.storage_nbytes == 8 * MiB);
  CHECK(a.spec.replica_mode == ReplicaMode::Exclusive);
  CHECK(a.adopted());
  const ir::Value &b = c.module.values[1];
  CHECK(b.spec.logical_nbytes == 8 * MiB);
  CHECK(b.spec.storage_nbytes == 9 * MiB);
  CHECK(b.spec.replica_mode == ReplicaMode::Replicable);
  CHECK(b.spec.recoverability == Recoverability::Reconstructible);
  CHECK(b.location == Location::pageable());
  CHECK(c.module.values[2].location == Location::cuda(3));
  REQUIRE(c.module.setup.size() == 3);
  CHECK(c.module.setup[1].kind == ir::SetupKind::RegisterSource);
}
TEST_CASE("grammar/value: errors") {
  CHECK(diagnostic_codes("value a 8 MiB") == std::vector<std::string>{"E0013"});
  CHECK(diagnostic_codes("value a at pinned") == std::vector<std::string>{"E0003"});
  CHECK(diagnostic_codes("value a 8 MiB storage 4 MiB at pinned") == std::vector<std::string>{"E0204"});
  CHECK(diagnostic_codes("value a 1 at pinned\nvalue a 1 at pinned") == std::vector<std::string>{"E0102"});
  CHECK(diagnostic_codes("const a = 1\nvalue a 1 at pinned") == std::vector<std::string>{"E0102"});
  CHECK(diagnostic_codes("value a 1 at cuda") == std::vector<std::string>{"E0301"});
}
