// Plan diffs on documents built by hand: matching by name, renames by
// content, the gates.
#include "fhr/compiler/diff.hpp"

#include <doctest/doctest.h>

using json = nlohmann::ordered_json;

namespace {

json unit(const std::string &name, bool feasible, std::uint64_t peak, std::vector<std::string> steps,
          std::optional<std::uint64_t> budget = 1000) {
  json step_list = json::array();
  for (const std::string &text : steps)
    step_list.push_back({{"phase", "enter"}, {"step", text}});
  return json{{"kind", "plan"},
              {"name", name},
              {"feasible", feasible},
              {"steps", step_list},
              {"locations",
               json::array({{{"location", "cuda:0"},
                             {"peak_charged_bytes", peak},
                             {"headroom_at_peak_bytes", budget ? json(static_cast<std::int64_t>(*budget) -
                                                                      static_cast<std::int64_t>(peak))
                                                               : json(nullptr)}}})}};
}

json document(std::vector<json> units) {
  return json{{"schema", "fhr-explain/1"}, {"files", json::array({{{"file", "f.fhr"}, {"units", units}}})}};
}

} // namespace

TEST_CASE("diff: a renamed plan keeps its steps; a changed one under a new name is removed and added") {
  const json old_doc =
      document({unit("a", true, 100, {"ensure x at cuda:0"}), unit("b", true, 50, {"ensure y at cuda:0"})});
  const json new_doc =
      document({unit("a2", true, 100, {"ensure x at cuda:0"}), unit("b2", true, 50, {"ensure z at cuda:0"})});
  const fhr::PlanDiff diff = fhr::diff_explanations(old_doc, new_doc);
  REQUIRE(diff.units.size() == 3);
  CHECK(diff.units[0].kind == fhr::UnitChange::Kind::Renamed);
  CHECK(diff.units[0].old_name == "a");
  CHECK(diff.units[0].locations.empty());
  CHECK(diff.units[1].kind == fhr::UnitChange::Kind::Added);
  CHECK(diff.units[2].kind == fhr::UnitChange::Kind::Removed);
  CHECK(diff.units[2].old_name == "b");
  CHECK(diff.changed() == 3);
  CHECK_FALSE(fhr::apply_gates(diff, {}).failed);
}

TEST_CASE("diff: gates fire on a peak growth above the limit and on a plan that became infeasible") {
  const json old_doc = document({unit("a", true, 100, {"s"}), unit("b", true, 0, {"t"})});
  const json grown = document({unit("a", true, 105, {"s"}), unit("b", true, 0, {"t"})});
  fhr::PlanDiff diff = fhr::diff_explanations(old_doc, grown);
  REQUIRE(diff.units[0].locations.size() == 1);
  CHECK(*diff.units[0].locations[0].peak_change_percent() == doctest::Approx(5.0));
  CHECK(diff.units[0].locations[0].new_headroom_bytes == 895);
  CHECK_FALSE(fhr::apply_gates(diff, {5.0}).failed); // exactly the limit is allowed
  CHECK(fhr::apply_gates(diff, {4.9}).failed);
  // A location charged for the first time grows without bound.
  const json first = document({unit("a", true, 100, {"s"}), unit("b", true, 10, {"t"})});
  diff = fhr::diff_explanations(old_doc, first);
  const fhr::GateVerdict verdict = fhr::apply_gates(diff, {1000.0});
  CHECK(verdict.failed);
  REQUIRE(verdict.reasons.size() == 1);
  CHECK(verdict.reasons[0].find("plan \"b\"") == 0);
  // Infeasible fails without any gate; the JSON says why.
  const json broken = document({unit("a", false, 1100, {"s"}), unit("b", true, 0, {"t"})});
  diff = fhr::diff_explanations(old_doc, broken);
  CHECK(diff.became_infeasible() == 1);
  const fhr::GateVerdict infeasible = fhr::apply_gates(diff, {});
  CHECK(infeasible.failed);
  const json out = fhr::diff_json(diff, infeasible);
  CHECK(out["schema"] == "fhr-diff/1");
  CHECK(out["units"][0]["new_feasible"] == false);
  CHECK(out["units"][0]["locations"][0]["new_headroom_bytes"] == -100);
  CHECK(fhr::diff_markdown(diff, infeasible).find("**INFEASIBLE**") != std::string::npos);
}
