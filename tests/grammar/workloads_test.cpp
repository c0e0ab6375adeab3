// The workload statements (docs/language.md, "Workloads"): tiers and steps
// with needs, workspace and compute time, in loops and over families.
#include "../unit/test_support.hpp"
using namespace fhr;
using namespace fhr::test;

TEST_CASE("grammar/workload: steps in a loop over a family, tiers in file order") {
  CompiledFile c = compile_ok(R"(
    budget cuda:0 3 GiB
    tier cuda:0 to pinned
    tier cuda:0 to pageable
    value rk[4] 256 MiB replicable source pinned
    value ct 35 MiB exclusive at pinned
    for i in 0..4 {
      step "ks-{i}" { need rk[i], ct at cuda:0; workspace cuda:0 105 MiB "key-switch"; compute 3.9 ms }
    }
    step "tail" {
      need rk[1..3] at cuda:0
      compute 2 s
    })");
  REQUIRE(c.module.tiers.size() == 1);
  CHECK(c.module.tiers[0].from == Location::cuda(0));
  CHECK(c.module.tiers[0].to == std::vector<Location>{Location::pinned(), Location::pageable()});
  REQUIRE(c.module.steps.size() == 5);
  const ir::WorkloadStep &ks2 = c.module.steps[2];
  CHECK(ks2.name == "ks-2");
  REQUIRE(ks2.needs.size() == 2);
  CHECK(c.module.values[ks2.needs[0].value].name == "rk[2]");
  CHECK(c.module.values[ks2.needs[1].value].name == "ct");
  CHECK(ks2.needs[1].at == Location::cuda(0));
  REQUIRE(ks2.workspace.size() == 1);
  CHECK(ks2.workspace[0].bytes == 105 * MiB);
  CHECK(ks2.workspace[0].label == "key-switch");
  REQUIRE(ks2.compute_seconds);
  CHECK(*ks2.compute_seconds == doctest::Approx(3.9e-3));
  const ir::WorkloadStep &tail = c.module.steps[4];
  REQUIRE(tail.needs.size() == 2);
  CHECK(c.module.values[tail.needs[1].value].name == "rk[2]");
  CHECK(*tail.compute_seconds == 2.0);
}

TEST_CASE("grammar/workload: workspace without a label, units, a value needed twice counts once") {
  CompiledFile c = compile_ok(R"(
    value w 1 MiB replicable source pinned
    step "a" { need w, w at cuda:0; need w at cuda:1; workspace cuda:0 4 KiB; compute 1_500 us }
    step "b" { workspace cuda:1 1 MiB; compute 250 ns })");
  REQUIRE(c.module.steps.size() == 2);
  CHECK(c.module.steps[0].needs.size() == 2); // a replicable value at two locations
  CHECK(c.module.steps[0].workspace[0].label == "workspace");
  CHECK(*c.module.steps[0].compute_seconds == doctest::Approx(1.5e-3));
  CHECK(c.module.steps[1].needs.empty());
  CHECK(*c.module.steps[1].compute_seconds == doctest::Approx(250e-9));
  // Plans and steps live side by side; a plan file has no steps.
  CHECK(compile_ok("value v 1 MiB at pinned\nplan \"p\" { enter { ensure v at cuda:0 } }")
            .module.steps.empty());
}

TEST_CASE("grammar/workload: errors") {
  const std::string values = "value ct 1 MiB exclusive at pinned\nvalue k 1 MiB replicable source pinned\n";
  CHECK(diagnostic_codes(values + "step \"s\" { compute 1 ms }") == std::vector<std::string>{"E0702"});
  CHECK(diagnostic_codes(values + "step \"s\" { need k at cuda:0; compute 1 ms; compute 2 ms }") ==
        std::vector<std::string>{"E0703"});
  CHECK(diagnostic_codes(values + "step \"s\" { need ct at cuda:0; need ct at cuda:1 }") ==
        std::vector<std::string>{"E0704"});
  CHECK(diagnostic_codes(values + "step \"s\" { need k at cuda:0; compute 1 min }") ==
        std::vector<std::string>{"E0701"});
  CHECK(diagnostic_codes(values + "step \"s\" { need k at cuda:0; compute ms }") ==
        std::vector<std::string>{"E0701"});
  CHECK(diagnostic_codes(values + "step \"s\" { need k at cuda:0; compute 100000 s }") ==
        std::vector<std::string>{"E0705"});
  CHECK(diagnostic_codes(values + "step \"s\" { need q at cuda:0 }") == std::vector<std::string>{"E0101"});
  CHECK(diagnostic_codes(values + "step \"s\" { ensure k at cuda:0 }") == std::vector<std::string>{"E0010"});
  CHECK(diagnostic_codes(values + "step \"\" { need k at cuda:0 }") == std::vector<std::string>{"E0401"});
  CHECK(diagnostic_codes(values + "step s { need k at cuda:0 }") == std::vector<std::string>{"E0006"});
  CHECK(diagnostic_codes(values + "step \"s\" { workspace cuda:0 }") == std::vector<std::string>{"E0003"});
  CHECK(diagnostic_codes("tier cuda:0 to") == std::vector<std::string>{"E0005"});
  CHECK(diagnostic_codes("tier cuda:0 to cuda:0") == std::vector<std::string>{"E0301"});
  CHECK(diagnostic_codes("tier cuda:0 to pinned\ntier cuda:0 to pinned") ==
        std::vector<std::string>{"E0102"});
  // After a broken step the parser recovers at the next statement.
  CHECK(diagnostic_codes(values + "step \"s\" { need k cuda:0 }\nstep \"t\" { compute 1 ms }") ==
        std::vector<std::string>{"E0004", "E0702"});
  // A need names one location; a second one ends the need.
  CHECK(first_message(values + "step \"s\" { need ct at cuda:0, cuda:1 }") ==
        "expected 'need', 'workspace', 'compute' or '}' in a step, found ','");
}
