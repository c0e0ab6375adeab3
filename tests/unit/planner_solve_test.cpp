// The planner end to end (docs/planner.md): the bound, the exact solver,
// the heuristic and the reference LRU policy against a brute-force optimum
// on random small workloads; every schedule verified and every printed
// program accepted by the compiler; prefetch and timing; the LRU baseline
// deciding exactly as a Controller on a Manager does.
#include "planner_support.hpp"

#include "fhr/controller/controller.hpp"
#include "fhr/planner/lru_baseline.hpp"
#include "fhr/planner/solve.hpp"
#include "fhr/runtime/simulated_backend.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

using namespace fhr;
using namespace fhr::test;

namespace {

std::uint64_t model_bytes(const planner::Workload &w) {
  const planner::GapModel m = planner::build_gap_model(w);
  return planner::bytes_moved(m, planner::solve_heuristic(m));
}

} // namespace

TEST_CASE("solve: bound <= exact = brute force <= heuristic <= LRU on random small workloads") {
  REQUIRE(planner::exact_solver_available());
  int checked_programs = 0;
  double worst = 1.0;
  for (unsigned seed = 1; seed <= 240; ++seed) {
    const bool movable = seed % 2 == 0;
    const planner::Workload w = random_workload(seed, 4 + seed % 4, 6 + seed % 5, movable);
    CAPTURE(seed);
    const std::uint64_t optimum = brute_force_optimum(w);
    planner::SolveOptions exact_options;
    exact_options.exact = true;
    const planner::SolveResult exact = planner::solve_planner(w, exact_options);
    const planner::SolveResult heuristic = planner::solve_planner(w);
    const planner::SolveResult lru = planner::solve_lru(w);
    REQUIRE(exact.ok());
    REQUIRE(heuristic.ok());
    REQUIRE(lru.ok());
    REQUIRE(exact.exact);
    CHECK(exact.exact->status == planner::ExactResult::Status::Optimal);
    CHECK(exact.bytes_moved == optimum);
    CHECK(exact.bound->bytes <= optimum);
    CHECK(heuristic.bound->bytes <= optimum);
    CHECK(heuristic.bytes_moved >= optimum);
    CHECK(heuristic.bytes_moved <= lru.bytes_moved);
    CHECK(lru.bytes_moved >= optimum);
    // The realised schedule moves exactly what the model says.
    CHECK(heuristic.bytes_moved == model_bytes(w));
    worst = std::max(worst, double(heuristic.bytes_moved) / double(std::max<std::uint64_t>(optimum, 1)));
    if (seed % 8 == 0) {
      ++checked_programs;
      CHECK(check_printed(planner::emit_program(w, heuristic.schedule, "test"), w) == "ok");
      CHECK(check_printed(planner::emit_program(w, lru.schedule, "test"), w) == "ok");
    }
  }
  CHECK(checked_programs == 30);
  MESSAGE("worst heuristic / optimum on the random workloads: " << worst);
}

TEST_CASE("solve: an infeasible workload is answered with its first step that cannot fit") {
  planner::Workload w = random_workload(3, 5, 8, false);
  w.steps[5].workspace.push_back({Location::cuda(0), *w.budget(Location::cuda(0)), "too big"});
  const planner::SolveResult r = planner::solve_planner(w);
  REQUIRE(r.infeasible);
  CHECK(r.infeasible->step == 5);
  CHECK(r.infeasible->at == Location::cuda(0));
  CHECK_FALSE(r.ok());
  CHECK(planner::solve_lru(w).failure.starts_with("step 5 's5'"));
}

TEST_CASE("solve: the schedule clock slows a later copy by the model's host memory rule") {
  // One step whose enter evicts 2 MB from cuda:0 and copies 1 MB from
  // pageable into pinned memory, both issued at once; every link 1 GB/s,
  // the host memory 2 GB/s. The host copy (two bytes of host memory a
  // byte) beside the DMA (one) would move 3 GB/s through it: it runs at
  // 2/3 GB/s, 1.5 ms; the DMA, issued first, keeps its 2 ms.
  const planner::Workload w =
      workload(R"({"schema": "fhr-workload/1", "name": "host", "devices": 1, "budgets": [],
    "values": [{"name": "v", "bytes": 1024, "mode": "replicable", "source": "pinned"}],
    "steps": [{"name": "0", "needs": [], "compute_seconds": 0}]})");
  planner::Verification v;
  v.transfers = {
      {0, planner::Transfer::Phase::Enter, 0, Location::cuda(0), Location::pinned(), 2'000'000, 2'000'000},
      {0, planner::Transfer::Phase::Enter, 1, Location::pageable(), Location::pinned(), 1'000'000,
       1'000'000}};
  LinkModel links;
  for (LinkCurve &curve : links.links)
    curve.classes = {{std::nullopt, 0.0, 1e9}};
  links.host_memory_bytes_per_second = 2e9;
  planner::Timeline t = planner::time_schedule(w, v, links);
  CHECK(t.total_seconds == doctest::Approx(2e-3).epsilon(1e-12));
  CHECK(t.transfer_seconds == doctest::Approx(3.5e-3).epsilon(1e-12));
  // Without the figure each runs at its own rate.
  links.host_memory_bytes_per_second = 0;
  t = planner::time_schedule(w, v, links);
  CHECK(t.transfer_seconds == doctest::Approx(3e-3).epsilon(1e-12));
  // A copy from pageable memory into cuda:0 beside the eviction: three
  // bytes of host memory a byte (its DMA and the memcpy through its bounce
  // buffers), 3 GB/s with the eviction's 1 over a capacity of 3 (its own
  // demand): 0.75 GB/s, 1.3333 ms.
  links.host_memory_bytes_per_second = 2e9;
  v.transfers[1].from = Location::pageable();
  v.transfers[1].to = Location::cuda(0);
  t = planner::time_schedule(w, v, links);
  CHECK(t.transfer_seconds == doctest::Approx(2e-3 + 1e-3 / 0.75).epsilon(1e-12));
  // A value of no bytes pays its link's fixed cost (10 us), not a rate.
  links.links[static_cast<std::size_t>(LinkKind::PageableToDevice)].classes = {{std::nullopt, 10e-6, 1e9}};
  v.transfers[1].bytes = v.transfers[1].logical_bytes = 0;
  t = planner::time_schedule(w, v, links);
  CHECK(t.transfer_seconds == doctest::Approx(2e-3 + 10e-6).epsilon(1e-12));
}

TEST_CASE("solve: prefetch issues a load while an earlier step computes; bytes stay the same") {
  // Four keys of 1 GiB in pinned memory, room for three on the device: the
  // load for step 2 can run while step 1 computes (10 ms each).
  const planner::Workload w = workload(R"({"schema": "fhr-workload/1", "name": "prefetch", "devices": 1,
    "budgets": [{"at": "cuda:0", "bytes": 3221225472}],
    "values": [{"name": "k", "count": 3, "bytes": 1073741824, "mode": "replicable", "source": "pinned"}],
    "steps": [{"name": "0", "needs": [{"at": "cuda:0", "values": ["k[0]"]}], "compute_seconds": 0.03},
              {"name": "1", "needs": [{"at": "cuda:0", "values": ["k[1]"]}], "compute_seconds": 0.03},
              {"name": "2", "needs": [{"at": "cuda:0", "values": ["k[2]"]}], "compute_seconds": 0.03}]})");
  planner::SolveOptions none;
  none.prefetch = false;
  const planner::SolveResult plain = planner::solve_planner(w, none), ahead = planner::solve_planner(w);
  REQUIRE(plain.ok());
  REQUIRE(ahead.ok());
  CHECK(plain.bytes_moved == 3ull << 30);
  CHECK(ahead.bytes_moved == plain.bytes_moved);
  // Each later key is loaded while the step before computes (30 ms covers a
  // 1 GiB copy from pinned memory), just early enough.
  REQUIRE(ahead.schedule.steps[0].during.size() == 1);
  CHECK(ahead.schedule.steps[0].during[0].value == 1);
  REQUIRE(ahead.schedule.steps[1].during.size() == 1);
  CHECK(ahead.schedule.steps[1].during[0].value == 2);
  CHECK(ahead.schedule.steps[1].enter.empty());
  CHECK(ahead.schedule.steps[2].enter.empty());
  const double one = LinkModel::h200().transfer_seconds(Location::pinned(), Location::cuda(0), 1ull << 30);
  REQUIRE(one < 0.03);
  // Without prefetch every load stalls its step; with it only the first.
  CHECK(plain.timeline.stall_seconds == doctest::Approx(3 * one));
  CHECK(plain.timeline.total_seconds == doctest::Approx(3 * one + 0.09));
  CHECK(ahead.timeline.stall_seconds == doctest::Approx(one));
  CHECK(ahead.timeline.total_seconds == doctest::Approx(one + 0.09));
  CHECK(ahead.timeline.overlapped_seconds == doctest::Approx(2 * one));
  const std::string program = planner::emit_program(w, ahead.schedule, "prefetch");
  CHECK(program.find(
            "  scope \"0\" {\n    actions \"0: prefetch\" {\n      ensure k[1] at cuda:0\n    }\n  }") !=
        std::string::npos);
  CHECK(check_printed(program, w) == "ok");
}

TEST_CASE("solve: the suite's workloads verify, and their printed programs pass check") {
  for (const char *name : {"mixed-levels-8ct-0p5g", "hoisted-32rot-1p5g", "resnet20-2gpu-2g-4img"}) {
    CAPTURE(name);
    std::ifstream in(std::string(FHR_SOURCE_DIR) + "/bench/workloads/" + name + ".json");
    std::stringstream text;
    text << in.rdbuf();
    const planner::Workload w = workload(text.str());
    const planner::SolveResult planned = planner::solve_planner(w), lru = planner::solve_lru(w);
    REQUIRE(planned.ok());
    REQUIRE(lru.ok());
    CHECK(planned.bytes_moved <= lru.bytes_moved);
    CHECK(planned.bound->bytes <= planned.bytes_moved);
    CHECK(check_printed(planner::emit_program(w, planned.schedule, "suite"), w) == "ok");
    CHECK(check_printed(planner::emit_program(w, lru.schedule, "suite"), w) == "ok");
  }
}

TEST_CASE("lru baseline: decides every step exactly as a Controller on a Manager") {
  // Droppable keys, a replicable value adopted on the host and movable
  // ciphertexts, with a pinned tier of its own budget.
  const planner::Workload w = workload(R"({"schema": "fhr-workload/1", "name": "lru", "devices": 1,
    "budgets": [{"at": "cuda:0", "bytes": 500}, {"at": "pinned", "bytes": 200}],
    "tiers": [{"from": "cuda:0", "to": ["pinned", "pageable"]}, {"from": "pinned", "to": ["pageable"]}],
    "values": [{"name": "k", "count": 4, "bytes": 100, "mode": "replicable", "source": "pageable"},
               {"name": "w", "bytes": 100, "mode": "replicable", "at": "pageable"},
               {"name": "c", "count": 3, "bytes": 100, "mode": "exclusive", "at": "pageable"}],
    "steps": [{"name": "0", "needs": [{"at": "cuda:0", "values": ["k[0]", "c[0]", "w"]}]},
              {"name": "1", "needs": [{"at": "cuda:0", "values": ["k[1]", "c[1]"]}],
               "workspace": [{"at": "cuda:0", "bytes": 100, "label": "tmp"}]},
              {"name": "2", "needs": [{"at": "cuda:0", "values": ["k[2]", "c[2]", "w"]}]},
              {"name": "3", "needs": [{"at": "cuda:0", "values": ["k[3]", "c[0]"]}],
               "workspace": [{"at": "cuda:0", "bytes": 100, "label": "tmp"}]},
              {"name": "4", "needs": [{"at": "cuda:0", "values": ["k[0]", "c[1]", "c[2]"]}]},
              {"name": "5", "needs": [{"at": "cuda:0", "values": ["k[1]", "w", "c[0]"]}]}]})");
  const planner::SolveResult lru = planner::solve_lru(w);
  REQUIRE(lru.ok());

  // The same workload on a real manager, decided by a Controller's use().
  ManagerOptions options;
  auto backend = std::make_shared<SimulatedBackend>(1);
  options.backend = backend;
  for (const auto &[at, bytes] : w.budgets)
    options.budgets.emplace_back(at, bytes);
  Manager manager(std::move(options));
  struct ZeroSource final : Source {
    void load(std::span<std::byte> out) override { std::fill(out.begin(), out.end(), std::byte{0}); }
  };
  std::vector<Handle> handles;
  for (const planner::Value &v : w.values) {
    if (v.adopted) {
      auto *data = static_cast<std::byte *>(std::malloc(v.storage_bytes));
      handles.push_back(manager.adopt(data, v.storage_bytes, v.home, std::free, v.mode));
    } else {
      handles.push_back(manager.register_source(
          ValueSpec{v.logical_bytes, v.storage_bytes, v.mode, Recoverability::Reconstructible},
          std::make_shared<ZeroSource>(), v.home));
    }
  }
  DeterministicTieredLRU::Tiers tiers;
  for (const planner::Tier &t : w.tiers)
    tiers.emplace_back(t.from, t.to);
  Controller controller(manager, std::make_shared<DeterministicTieredLRU>(tiers));
  const Stream stream = backend->create_stream(Location::cuda(0));
  const auto same = [&](const std::vector<ActionSpec> &decided, const std::vector<Action> &baseline) {
    REQUIRE(decided.size() == baseline.size());
    for (std::size_t i = 0; i < decided.size(); ++i) {
      CHECK(decided[i].kind == baseline[i].kind);
      CHECK(decided[i].handle.handle_id == baseline[i].value + 1);
      CHECK(decided[i].location == baseline[i].location);
      CHECK(decided[i].from == baseline[i].from);
    }
  };
  for (std::size_t t = 0; t < w.steps.size(); ++t) {
    CAPTURE(t);
    std::vector<Requirement> requirements;
    for (const planner::Need &n : w.steps[t].needs)
      requirements.push_back(Requirement{handles[n.value], n.at});
    std::vector<Reservation> reservations;
    for (const planner::Workspace &ws : w.steps[t].workspace)
      reservations.push_back(Reservation{ws.at, ws.bytes, ws.label});
    Use use =
        controller.use(Request(w.steps[t].name, requirements, reservations), {{Location::cuda(0), stream}});
    use.enter();
    same(use.decision().plan.reclaim, lru.schedule.steps[t].reclaim);
    same(use.decision().plan.enter, lru.schedule.steps[t].enter);
    use.close();
  }
  // Something was evicted, moved and spilled along the way.
  std::size_t moves = 0, drops = 0;
  for (const planner::StepPlan &p : lru.schedule.steps)
    for (const Action &a : p.reclaim)
      (a.kind == ActionKind::Move ? moves : drops) += 1;
  CHECK(moves > 0);
  CHECK(drops > 0);
  manager.close(true, true);
}

TEST_CASE("timeline: copies on one engine queue, steps wait for their values") {
  const planner::Workload w = workload(R"({"schema": "fhr-workload/1", "devices": 1, "budgets": [],
    "values": [{"name": "a", "bytes": 536870912, "mode": "replicable", "source": "pinned"},
               {"name": "b", "bytes": 536870912, "mode": "replicable", "source": "pageable"}],
    "steps": [{"name": "0", "needs": [{"at": "cuda:0", "values": ["a", "b"]}], "compute_seconds": 0.002},
              {"name": "1", "compute_seconds": 0.001}]})");
  const planner::SolveResult r = planner::solve_planner(w);
  REQUIRE(r.ok());
  const LinkModel &links = LinkModel::h200();
  const double a = links.transfer_seconds(Location::pinned(), Location::cuda(0), 512ull << 20);
  const double b = links.transfer_seconds(Location::pageable(), Location::cuda(0), 512ull << 20);
  // Both copies use the inbound engine, one after the other; step 0 waits for both.
  CHECK(r.timeline.stall_seconds == doctest::Approx(a + b));
  CHECK(r.timeline.total_seconds == doctest::Approx(a + b + 0.003));
  CHECK(r.timeline.transfer_seconds == doctest::Approx(a + b));
  CHECK(r.timeline.overlapped_seconds == doctest::Approx(0.0));
  CHECK(r.verification.bytes_per_link[static_cast<std::size_t>(LinkKind::PinnedToDevice)] == 512ull << 20);
  CHECK(r.verification.bytes_per_link[static_cast<std::size_t>(LinkKind::PageableToDevice)] == 512ull << 20);
}

TEST_CASE("timeline: a copy takes the time of its logical bytes and is charged its storage bytes") {
  // 120 MiB keys charged as 124 MiB (allocator slack): the runtime copies
  // 120 MiB, so that is what the planner's clock times.
  const planner::Workload w = workload(R"({"schema": "fhr-workload/1", "devices": 1, "budgets": [],
    "values": [{"name": "key", "bytes": 125829120, "storage_bytes": 130023424, "mode": "replicable",
                "source": "pinned"}],
    "steps": [{"name": "0", "needs": [{"at": "cuda:0", "values": ["key"]}], "compute_seconds": 0.001}]})");
  const planner::SolveResult r = planner::solve_planner(w);
  REQUIRE(r.ok());
  const LinkModel &links = LinkModel::h200();
  const double logical = links.transfer_seconds(Location::pinned(), Location::cuda(0), 120ull << 20);
  const double storage = links.transfer_seconds(Location::pinned(), Location::cuda(0), 124ull << 20);
  REQUIRE(logical < storage);
  CHECK(r.timeline.transfer_seconds == doctest::Approx(logical));
  CHECK(r.timeline.stall_seconds == doctest::Approx(logical));
  REQUIRE(r.verification.transfers.size() == 1);
  CHECK(r.verification.transfers[0].bytes == 124ull << 20);
  CHECK(r.verification.transfers[0].logical_bytes == 120ull << 20);
  CHECK(r.verification.bytes_per_link[static_cast<std::size_t>(LinkKind::PinnedToDevice)] == 124ull << 20);
}
