// fhr-workload/1 (docs/planner.md, "The workload format"): what parses to
// what, and every error with its JSON path.
#include "planner_support.hpp"

#include "fhr/bytecode/limits.hpp"
#include "fhr/planner/solve.hpp"

#include <doctest/doctest.h>

using namespace fhr;
using namespace fhr::test;

namespace {

std::string with(const std::string &values, const std::string &steps,
                 const std::string &budgets = R"([{"at": "cuda:0", "bytes": 1000}])") {
  return R"({"schema": "fhr-workload/1", "name": "w", "devices": 2, "budgets": )" + budgets +
         R"(, "values": )" + values + R"(, "steps": )" + steps + "}";
}

const std::string kValues =
    R"([{"name": "rk", "count": 4, "bytes": 100, "storage_bytes": 104, "mode": "replicable", "source": "pinned"},
        {"name": "ct", "bytes": 30, "mode": "exclusive", "at": "pageable"}])";

} // namespace

TEST_CASE("workload: values, families, operands and steps parse to the exact IR") {
  const planner::Workload w = workload(with(
      kValues,
      R"([{"name": "a", "needs": [{"at": "cuda:0", "values": ["rk[1..3]", "ct"]}, {"at": "cuda:1", "values": ["rk[*]"]}],
                    "workspace": [{"at": "cuda:0", "bytes": 60, "label": "tmp"}], "compute_seconds": 0.004},
                   {"name": "b"}])"));
  CHECK(w.name == "w");
  CHECK(w.devices == 2u);
  REQUIRE(w.values.size() == 5);
  CHECK(w.values[2].name == "rk[2]");
  CHECK(w.values[2].logical_bytes == 100);
  CHECK(w.values[2].storage_bytes == 104);
  CHECK_FALSE(w.values[2].adopted);
  CHECK(w.values[2].home == Location::pinned());
  CHECK(w.values[4].name == "ct");
  CHECK(w.values[4].adopted);
  CHECK(w.values[4].mode == ReplicaMode::Exclusive);
  REQUIRE(w.families.size() == 1);
  CHECK(w.families[0].count == 4);
  REQUIRE(w.steps.size() == 2);
  std::vector<std::pair<ValueId, std::string>> needs;
  for (const planner::Need &n : w.steps[0].needs)
    needs.emplace_back(n.value, n.at.name());
  CHECK(needs == std::vector<std::pair<ValueId, std::string>>{{1, "cuda:0"},
                                                              {2, "cuda:0"},
                                                              {4, "cuda:0"},
                                                              {0, "cuda:1"},
                                                              {1, "cuda:1"},
                                                              {2, "cuda:1"},
                                                              {3, "cuda:1"}});
  CHECK(w.steps[0].workspace.at(0).bytes == 60);
  CHECK(*w.steps[0].compute_seconds == doctest::Approx(0.004));
  CHECK(w.steps[1].needs.empty());
  CHECK_FALSE(w.steps[1].compute_seconds);
}

TEST_CASE("workload: values and workspace that add up to more than one location can account are refused") {
  // Found by fuzz_workload: 27 values of 5.3 EB each, all needed on an
  // unbudgeted cuda:5, overflowed the controller's search.
  CHECK(
      parse_error(R"({"schema": "fhr-workload/1", "devices": 6, "budgets": [],
    "values": [{"name": "k", "count": 27, "bytes": 5255555555555559120, "mode": "replicable", "source": "pageable"}],
    "steps": [{"name": "s", "needs": [{"at": "cuda:5", "values": ["k[*]"]}]}]})") ==
      "values[k[0]]: the values add up to more than 4611686018427387904 bytes (4 EiB), the most one location "
      "can account");
  CHECK(
      parse_error(R"({"schema": "fhr-workload/1", "budgets": [],
    "values": [{"name": "k", "count": 2, "bytes": 3000000000000000000, "mode": "replicable", "source": "pageable"}],
    "steps": [{"name": "s", "needs": [{"at": "pinned", "values": ["k[*]"]}]}]})") ==
      "values[k[1]]: the values add up to more than 4611686018427387904 bytes (4 EiB), the most one location "
      "can account");
  CHECK(parse_error(R"({"schema": "fhr-workload/1", "budgets": [],
    "values": [{"name": "k", "bytes": 3000000000000000000, "mode": "replicable", "source": "pageable"}],
    "steps": [{"name": "s", "needs": [{"at": "pinned", "values": ["k"]}],
               "workspace": [{"at": "pinned", "bytes": 1000000000000000000, "label": "a"},
                             {"at": "pinned", "bytes": 1000000000000000000, "label": "b"}]}]})") ==
        "steps[0].workspace[1]: the values and the step's workspace add up to more than 4611686018427387904 "
        "bytes (4 EiB), the most one location can account");
  // Up to the limit they are planned.
  CHECK(parse_error(R"({"schema": "fhr-workload/1", "budgets": [],
    "values": [{"name": "k", "bytes": 3000000000000000000, "mode": "replicable", "source": "pageable"}],
    "steps": [{"name": "s", "needs": [{"at": "pinned", "values": ["k"]}],
               "workspace": [{"at": "pinned", "bytes": 1611686018427387904, "label": "a"}]}]})") == "parsed");
}

TEST_CASE("workload: written back, it reads the same") {
  const planner::Workload w = workload(with(
      kValues, R"([{"name": "a", "needs": [{"at": "cuda:0", "values": ["rk[0]", "rk[1]", "rk[2]", "ct"]}]},
                   {"name": "b", "needs": [{"at": "cuda:1", "values": ["rk[*]"]}], "compute_seconds": 0.5}])"));
  const std::string text = planner::workload_to_json(w);
  CHECK(text.find(R"("values":["rk[0..3]","ct"])") != std::string::npos);
  CHECK(text.find(R"("values":["rk[*]"])") != std::string::npos);
  const planner::Workload again = workload(text);
  CHECK(planner::workload_to_json(again) == text);
  CHECK(again.steps[0].needs == w.steps[0].needs);
  CHECK(again.values.size() == w.values.size());
}

TEST_CASE("workload: every problem is reported with its path") {
  const std::string step = R"([{"name": "a", "needs": [{"at": "cuda:0", "values": ["ct"]}]}])";
  CHECK(parse_error("[1, 2").starts_with("not JSON"));
  // A number no double holds (found by fuzz_workload: it was thrown past
  // the parser's handler and aborted `fhr-plan solve`).
  CHECK(parse_error(R"({"schema": "fhr-workload/1", "budgets": [{"at": "cuda:0", "bytes": 10E4857600}]})") ==
        "a number out of range: [json.exception.out_of_range.406] number overflow parsing '10E4857600'");
  CHECK(parse_error(R"({"schema": "fhr-workload/2", "budgets": [], "values": [], "steps": []})") ==
        "schema: must be \"fhr-workload/1\"");
  CHECK(
      parse_error(R"({"schema": "fhr-workload/1", "budgets": [], "values": [], "steps": [], "extra": 1})") ==
      ".extra: unknown field");
  CHECK(parse_error(R"({"schema": "fhr-workload/1", "values": [], "steps": []})") ==
        "missing field 'budgets'");
  CHECK(parse_error(with(kValues, step, R"([{"at": "cuda", "bytes": 1}])")) ==
        "budgets[0].at: location 'cuda' needs a device index, as in cuda:0");
  CHECK(parse_error(with(kValues, step, R"([{"at": "cuda:0", "bytes": -1}])")) ==
        "budgets[0].bytes: must be a whole number of bytes, at least 0");
  CHECK(parse_error(with(kValues, step, R"([{"at": "cuda:2", "bytes": 1}])")) ==
        "budgets[0]: cuda:2 does not exist on a machine of 2 devices");
  CHECK(parse_error(with(kValues, step, R"([{"at": "pageable", "bytes": 1}])")) ==
        "budgets: pageable must stay unbudgeted: it is where evicted replicas can always go");
  CHECK(parse_error(with(R"([{"name": "x", "bytes": 1, "mode": "shared", "at": "pageable"}])", "[]")) ==
        "values[0].mode: must be \"exclusive\" or \"replicable\"");
  CHECK(parse_error(with(R"([{"name": "x", "bytes": 1, "mode": "exclusive"}])", "[]")) ==
        "values[0]: needs exactly one of 'at' (adopted) or 'source'");
  CHECK(parse_error(
            with(R"([{"name": "x", "bytes": 10, "storage_bytes": 5, "mode": "exclusive", "at": "pinned"}])",
                 "[]")) == "values[0].storage_bytes: must be at least bytes");
  CHECK(parse_error(with(R"([{"name": "1x", "bytes": 1, "mode": "exclusive", "at": "pinned"}])", "[]")) ==
        "values[0].name: '1x' is not an identifier");
  // A keyword would make the printed program unreadable (found by
  // fuzz_workload: `value location 40 MiB ...`).
  CHECK(
      parse_error(with(R"([{"name": "location", "bytes": 1, "mode": "exclusive", "at": "pinned"}])", "[]")) ==
      "values[0].name: 'location' is a .fhr keyword, which no value may be named");
  CHECK(parse_error(with(R"([{"name": "plan", "count": 2, "bytes": 1, "mode": "exclusive", "at": "pinned"}])",
                         "[]")) == "values[0].name: 'plan' is a .fhr keyword, which no value may be named");
  CHECK(parse_error(with(R"([{"name": "x", "bytes": 1, "mode": "exclusive", "at": "pinned"},
                             {"name": "x", "bytes": 1, "mode": "exclusive", "at": "pinned"}])",
                         "[]")) == "values[1].name: a second value named 'x'");
  CHECK(parse_error(with(R"([{"name": "x", "bytes": 600, "mode": "exclusive", "at": "cuda:0"},
                             {"name": "y", "bytes": 600, "mode": "exclusive", "at": "cuda:0"}])",
                         "[]")) ==
        "values: the values adopted at cuda:0 need 1200 bytes, over its budget of 1000");
  CHECK(parse_error(with(kValues, R"([{"name": "a", "needs": [{"at": "cuda:0", "values": ["rk[4]"]}]}])")) ==
        "steps[0].needs[0].values[0]: 'rk[4]' is past the end of rk[4]");
  CHECK(parse_error(with(kValues, R"([{"name": "a", "needs": [{"at": "cuda:0", "values": ["rk"]}]}])")) ==
        "steps[0].needs[0].values[0]: 'rk' is a family: name a member, a range or [*]");
  CHECK(parse_error(with(kValues, R"([{"name": "a", "needs": [{"at": "cuda:0", "values": ["ct[0]"]}]}])")) ==
        "steps[0].needs[0].values[0]: 'ct' is not a family");
  CHECK(parse_error(with(kValues, R"([{"name": "a", "needs": [{"at": "cuda:0", "values": ["kk"]}]}])")) ==
        "steps[0].needs[0].values[0]: unknown value 'kk'");
  CHECK(
      parse_error(with(kValues, R"([{"name": "a", "needs": [{"at": "cuda:0", "values": ["rk[2..1]"]}]}])")) ==
      "steps[0].needs[0].values[0]: malformed index in 'rk[2..1]'");
  CHECK(parse_error(with(kValues, R"([{"name": "a", "needs": [{"at": "cuda:0", "values": ["ct"]},
                                                               {"at": "cuda:1", "values": ["ct"]}]}])")) ==
        "steps[0].needs[1]: needs EXCLUSIVE value ct at cuda:0 and cuda:1 at once");
  CHECK(
      parse_error(with(kValues, R"([{"name": "a", "needs": [{"at": "cuda:0", "values": ["ct", "ct"]}]}])")) ==
      "steps[0].needs[1]: needs ct at cuda:0 twice");
  // A repeat found past a first need elsewhere (the check keeps each
  // value's first need and every pair, in one pass).
  CHECK(parse_error(with(kValues, R"([{"name": "a", "needs": [{"at": "cuda:0", "values": ["rk[1]"]},
                                                               {"at": "cuda:1", "values": ["rk[1]", "rk[1]"]}]}])")) ==
        "steps[0].needs[2]: needs rk[1] at cuda:1 twice");
  // A replicable value adopted at a budgeted location is planned as one
  // movable replica: one location per step.
  CHECK(
      parse_error(with(R"([{"name": "w", "bytes": 10, "mode": "replicable", "at": "cuda:0"}])",
                       R"([{"name": "a", "needs": [{"at": "cuda:0", "values": ["w"]},
                                                     {"at": "cuda:1", "values": ["w"]}]}])")) ==
      "steps[0].needs[1]: w is adopted at budgeted cuda:0 and planned as one replica: it cannot be needed at "
      "cuda:0 and cuda:1 at once");
  CHECK(parse_error(with(kValues, R"([{"name": " "}])")) == "steps[0].name: a step needs a non-blank name");
  CHECK(parse_error(with(kValues, R"([{"name": "a", "compute_seconds": -1}])")) ==
        "steps[0].compute_seconds: must be a finite number of seconds, at least 0");
  CHECK(parse_error(
            with(kValues, R"([{"name": "a", "workspace": [{"at": "cuda:0", "bytes": 1, "label": ""}]}])")) ==
        "steps[0].workspace[0]: a workspace needs a non-blank label");
  // Names the printed program could not spell (found by fuzz_workload: a
  // step name with a carriage return made `fhr-plan solve` print a program
  // that did not compile).
  CHECK(parse_error(with(kValues, R"([{"name": "a\rb"}])")) ==
        "steps[0].name: must not contain a carriage return: a .fhr string cannot spell it");
  CHECK(parse_error(with(
            kValues, R"([{"name": "a", "workspace": [{"at": "cuda:0", "bytes": 1, "label": "x\ry"}]}])")) ==
        "steps[0].workspace[0].label: must not contain a carriage return: a .fhr string cannot spell it");
  // The workload's name is its printed program's (found by fuzz_workload).
  std::string named = with(kValues, "[]");
  named.replace(named.find(R"("name": "w")"), 11, R"("name": "w\rx")");
  CHECK(parse_error(named) == "name: must not contain a carriage return: a .fhr string cannot spell it");
}

TEST_CASE("workload: step names and labels with escapes come back from the printed program") {
  // Tabs, line breaks, quotes, backslashes and braces: .fhr strings escape
  // each of them, so the printed program compiles and checks.
  const planner::Workload w = workload(
      with(kValues, R"([{"name": "a\tb\nc \"q\" \\ {x}", "needs": [{"at": "cuda:0", "values": ["ct"]}],
                    "workspace": [{"at": "cuda:0", "bytes": 60, "label": "t\nmp{}"}]}])"));
  const planner::SolveResult planned = planner::solve_planner(w);
  REQUIRE(planned.ok());
  CHECK(check_printed(planner::emit_program(w, planned.schedule, "escapes"), w) == "ok");
  // The header (`fhr-plan solve` names the workload there) is comment lines,
  // one per line of it: a workload name may hold line breaks.
  CHECK(check_printed(planner::emit_program(w, planned.schedule, "workload 'two\nlines\r\nand\rmore'"), w) ==
        "ok");
}

TEST_CASE("workload: steps that share a name get plan names no other step has") {
  // Found by fuzz_workload: two steps "ks" and a third called "ks #0" were
  // printed as two plans "ks #0", a program that did not compile.
  const planner::Workload w =
      workload(with(kValues, R"([{"name": "ks", "needs": [{"at": "cuda:0", "values": ["ct"]}]},
                    {"name": "ks", "needs": [{"at": "cuda:0", "values": ["ct"]}]},
                    {"name": "ks #0", "needs": [{"at": "cuda:0", "values": ["ct"]}]},
                    {"name": "ks #1.1"}])"));
  const planner::SolveResult planned = planner::solve_planner(w);
  REQUIRE(planned.ok());
  const std::string program = planner::emit_program(w, planned.schedule, "names");
  CHECK(check_printed(program, w) == "ok");
  for (const char *plan :
       {"plan \"ks #0.1\" {", "plan \"ks #1\" {", "plan \"ks #0\" {", "plan \"ks #1.1\" {"})
    CHECK_MESSAGE(program.find(plan) != std::string::npos, plan);
  CHECK(program.find("run \"ks #0.1\"\n  run \"ks #1\"\n  run \"ks #0\"\n  run \"ks #1.1\"") !=
        std::string::npos);
}

TEST_CASE("workload: spill tiers are checked like the policy's") {
  const auto tiers = [](const std::string &t) {
    return R"({"schema": "fhr-workload/1", "budgets": [], "tiers": )" + t + R"(, "values": [], "steps": []})";
  };
  CHECK(parse_error(tiers(R"([{"from": "cuda:0", "to": ["cuda:0"]}])")) ==
        "tiers[0].to[0]: a tier of cuda:0 cannot be itself");
  CHECK(parse_error(tiers(R"([{"from": "cuda:0", "to": ["pinned", "pinned"]}])")) ==
        "tiers[0].to[1]: pinned is listed twice");
  CHECK(parse_error(tiers(R"([{"from": "cuda:0", "to": []}, {"from": "cuda:0", "to": []}])")) ==
        "tiers[1]: a second tier list for cuda:0");
  CHECK(parse_error(tiers(R"([{"from": "cuda:0", "to": ["pinned", "pageable"]}])")) == "parsed");
}

TEST_CASE("workload: at most 99,999 steps, so that its printed program is a file the compiler takes") {
  // A plan per step and one program: the .fhr limit on plans and programs together.
  CHECK(planner::kMaxWorkloadSteps + 1 == bytecode::kMaxPlansAndPrograms);
  const std::string one = R"({"name": "s", "needs": [{"at": "cuda:0", "values": ["ct"]}]})";
  auto steps = [&](std::size_t n) {
    std::string out = "[";
    for (std::size_t k = 0; k < n; ++k)
      out += (k ? "," : "") + one;
    return out + "]";
  };
  CHECK(std::holds_alternative<planner::Workload>(
      planner::parse_workload_json(with(kValues, steps(planner::kMaxWorkloadSteps)))));
  CHECK(parse_error(with(kValues, steps(planner::kMaxWorkloadSteps + 1))) ==
        "steps[99999]: a workload has at most 99999 steps (its printed program has a plan for each)");
}
