// The gap model (docs/planner.md, "Model"): the exact gaps, savings and
// baseline of small workloads, and infeasibility with where and by how much.
#include "planner_support.hpp"

#include "fhr/planner/gap_model.hpp"
#include "fhr/planner/optimizers.hpp"

#include <doctest/doctest.h>

using namespace fhr;
using namespace fhr::test;
using planner::GapKind;

namespace {

std::string gaps_text(const planner::GapModel &m, const planner::Workload &w) {
  std::string out;
  for (const planner::Gap &g : m.gaps) {
    static const char *kinds[] = {"reuse", "stay", "stay-before", "move-early", "trailing"};
    out += (out.empty() ? "" : "; ") + w.values[g.value].name + " " + kinds[static_cast<int>(g.kind)] +
           " at " + m.locations[g.location].name() + " [" + std::to_string(g.begin) + "," +
           std::to_string(g.end) + ") " + std::to_string(g.bytes) + "/" + std::to_string(g.saving) + " g" +
           std::to_string(g.group);
  }
  return out;
}

const char *kTwoKeys =
    R"({"schema": "fhr-workload/1", "name": "keys", "budgets": [{"at": "cuda:0", "bytes": 250}],
  "values": [{"name": "a", "bytes": 100, "mode": "replicable", "source": "pinned"},
             {"name": "b", "bytes": 100, "mode": "replicable", "source": "pinned"},
             {"name": "w", "bytes": 50, "mode": "replicable", "at": "pageable"}],
  "steps": [{"name": "0", "needs": [{"at": "cuda:0", "values": ["a", "w"]}]},
                        {"name": "1", "needs": [{"at": "cuda:0", "values": ["b"]}],
             "workspace": [{"at": "cuda:0", "bytes": 30, "label": "tmp"}]},
            {"name": "2", "needs": [{"at": "cuda:0", "values": ["a"]}]},
            {"name": "3", "needs": [{"at": "cuda:0", "values": ["a", "b"]}]},
            {"name": "4", "needs": [{"at": "cuda:0", "values": ["w"]}]}]})";

} // namespace

TEST_CASE("model: droppable values have one gap per reuse at a budgeted location") {
  const planner::Workload w = workload(kTwoKeys);
  const planner::GapModel m = planner::build_gap_model(w);
  CHECK_FALSE(m.infeasible);
  // a: used at 0, 2, 3 (a gap at step 1; 2-3 adjacent); b: 1, 3 (gap at 2); w: 0, 4 (gap 1-3).
  CHECK(gaps_text(m, w) == "a reuse at cuda:0 [1,2) 100/100 g0; b reuse at cuda:0 [2,3) 100/100 g1; "
                           "w reuse at cuda:0 [1,4) 50/50 g2");
  CHECK(m.forced_bytes == 250); // the first load of each
  CHECK(m.baseline_bytes == 500);
  // Capacity: the budget less what each step needs.
  CHECK(m.capacity[0] == std::vector<std::int64_t>{100, 120, 150, 50, 200});
  // Keeping a across step 1 leaves no room there for w: a and b are kept.
  const planner::Selection best = planner::solve_heuristic(m);
  CHECK(planner::selection_fits(m, best));
  CHECK(best.kept == std::vector<bool>{true, true, false});
  CHECK(planner::bytes_moved(m, best) == 300);
}

TEST_CASE(
    "model: movable values stay (saving the spill and the return), stay after their last use, or go early") {
  const planner::Workload w = workload(R"({"schema": "fhr-workload/1", "devices": 2,
    "budgets": [{"at": "cuda:0", "bytes": 1000}, {"at": "cuda:1", "bytes": 1000}],
    "values": [{"name": "ct", "bytes": 30, "mode": "exclusive", "at": "pageable"},
               {"name": "home", "bytes": 20, "mode": "exclusive", "at": "cuda:1"}],
    "steps": [{"name": "0", "needs": [{"at": "cuda:0", "values": ["ct"]}]},
              {"name": "1"},
              {"name": "2", "needs": [{"at": "cuda:0", "values": ["ct"]}]},
              {"name": "3", "needs": [{"at": "cuda:1", "values": ["ct"]}]},
              {"name": "4"},
              {"name": "5", "needs": [{"at": "cuda:0", "values": ["ct"]}]},
              {"name": "6"}]})");
  const planner::GapModel m = planner::build_gap_model(w);
  CHECK(gaps_text(m, w) == "ct stay at cuda:0 [1,2) 30/60 g0; "
                           "ct stay-before at cuda:1 [4,5) 30/30 g1; ct move-early at cuda:0 [4,5) 30/30 g1; "
                           "ct trailing at cuda:0 [6,7) 30/30 g2; home trailing at cuda:1 [0,7) 20/20 g3");
  // Forced: into cuda:0 (from pageable), cuda:0 -> cuda:1, cuda:1 -> cuda:0.
  CHECK(m.forced_bytes == 90);
  CHECK(m.baseline_bytes == 90 + 60 + 30 + 30 + 20);
  // Nothing is tight: every gap is kept, only the forced moves remain.
  const planner::Selection best = planner::solve_heuristic(m);
  CHECK(planner::bytes_moved(m, best) == 90);
  CHECK(planner::model_is_exact(m));
}

TEST_CASE("model: the first step that cannot fit, where, and by how many bytes") {
  const planner::Workload w =
      workload(R"({"schema": "fhr-workload/1", "budgets": [{"at": "cuda:0", "bytes": 150}],
    "values": [{"name": "a", "bytes": 100, "mode": "replicable", "source": "pageable"},
               {"name": "b", "bytes": 100, "mode": "replicable", "source": "pageable"}],
    "steps": [{"name": "fits", "needs": [{"at": "cuda:0", "values": ["a"]}]},
              {"name": "too much", "needs": [{"at": "cuda:0", "values": ["a"]}],
               "workspace": [{"at": "cuda:0", "bytes": 70, "label": "tmp"}]},
              {"name": "also", "needs": [{"at": "cuda:0", "values": ["a", "b"]}]}]})");
  const planner::GapModel m = planner::build_gap_model(w);
  REQUIRE(m.infeasible);
  CHECK(m.infeasible->step == 1);
  CHECK(m.infeasible->at == Location::cuda(0));
  CHECK(m.infeasible->short_bytes() == 20);
  CHECK(m.infeasible->text(w) ==
        "step 1 'too much' cannot fit at cuda:0: it needs 170 bytes there (its values and "
        "workspace), the budget is 150: short by 20 bytes");
  CHECK(m.gaps.empty()); // nothing else is built
}

TEST_CASE("model: a budgeted source location keeps room for the largest load from it") {
  const planner::Workload w = workload(R"({"schema": "fhr-workload/1",
    "budgets": [{"at": "cuda:0", "bytes": 400}, {"at": "pinned", "bytes": 250}],
    "values": [{"name": "k", "bytes": 200, "mode": "replicable", "source": "pinned"},
               {"name": "x", "bytes": 100, "mode": "replicable", "source": "pinned"},
               {"name": "p", "bytes": 100, "mode": "replicable", "source": "pageable"}],
    "steps": [{"name": "0", "needs": [{"at": "cuda:0", "values": ["k"]}, {"at": "pinned", "values": ["p"]}]},
              {"name": "1", "needs": [{"at": "pinned", "values": ["p"]}]}]})");
  const planner::GapModel m = planner::build_gap_model(w);
  REQUIRE(m.infeasible); // p (100) and room for k (200) do not fit in 250
  CHECK(m.infeasible->load_room_bytes == 200);
  CHECK(m.infeasible->short_bytes() == 50);
  CHECK_FALSE(planner::build_gap_model(w, false).infeasible); // the relaxation the bound uses
}
