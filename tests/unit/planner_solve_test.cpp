// The planner end to end (docs/planner.md): the bound, the exact solver,
// the heuristic and the reference LRU policy against a brute-force optimum
// on random small workloads; every schedule verified and every printed
// program accepted by the compiler; prefetch and timing; the LRU baseline
// deciding exactly as a Controller on a Manager does.
#include "planner_support.hpp"
#include "test_support.hpp"

#include "fhr/compiler/explain_time.hpp"
#include "fhr/compiler/output.hpp"
#include "fhr/controller/controller.hpp"
#include "fhr/harness/execution_check.hpp"
#include "fhr/planner/lru_baseline.hpp"
#include "fhr/planner/solve.hpp"
#include "fhr/runtime/simulated_backend.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

using namespace fhr;
using namespace fhr::test;

namespace {

std::uint64_t model_bytes(const planner::Workload &w) {
  const planner::GapModel m = planner::build_gap_model(w);
  return planner::bytes_moved(m, planner::solve_heuristic(m));
}

/// The planner's schedule of `w` on `links`, feasible.
planner::SolveResult solved_with(const planner::Workload &w, const LinkModel &links) {
  planner::SolveOptions options;
  options.links = &links;
  planner::SolveResult r = planner::solve_planner(w, options);
  REQUIRE(r.ok());
  return r;
}

/// The planned schedule timed again on `cheaper` links (a figure left out):
/// shorter, and the clock and explain agree on it too.
void check_agrees_when_cheaper(const planner::Workload &w, const planner::SolveResult &planned,
                               const std::string &program, const LinkModel &cheaper) {
  const planner::Timeline timeline = planner::time_schedule(w, planned.verification, cheaper);
  CHECK(timeline.total_seconds < planned.timeline.total_seconds);
  CHECK(std::abs(timeline.total_seconds * 1e6 - predicted_time(program, cheaper).us) <= kAgreementUs);
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

TEST_CASE("solve: the schedule clock shares the host's memory between copies as the predictor does") {
  // One step whose enter evicts 2 MB from cuda:0 and copies 1 MB from
  // pageable into pinned memory, both issued at once; every link 1 GB/s,
  // the host memory 2 GB/s. The host copy (two bytes of host memory a
  // byte) beside the DMA (one) would move 3 GB/s through it: both run at
  // 2/3 GB/s while they stream together (the model's engines,
  // copy_flows.hpp). The host copy ends at 1.5 ms, the DMA, 1 MB left,
  // at 2.5 ms.
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
  CHECK(t.total_seconds == doctest::Approx(2.5e-3).epsilon(1e-12));
  CHECK(t.transfer_seconds == doctest::Approx(2.5e-3 + 1.5e-3).epsilon(1e-12));
  // Without the figure each runs at its own rate.
  links.host_memory_bytes_per_second = 0;
  t = planner::time_schedule(w, v, links);
  CHECK(t.total_seconds == doctest::Approx(2e-3).epsilon(1e-12));
  CHECK(t.transfer_seconds == doctest::Approx(3e-3).epsilon(1e-12));
  // A copy of 1 MB from pageable memory into cuda:0 beside the eviction,
  // under the CUDA backend's staging threshold (4 MiB): the driver's copy,
  // one byte of host memory a byte, 2 GB/s with the eviction's: its 1 ms.
  links.host_memory_bytes_per_second = 2e9;
  v.transfers[1].from = Location::pageable();
  v.transfers[1].to = Location::cuda(0);
  t = planner::time_schedule(w, v, links);
  CHECK(t.transfer_seconds == doctest::Approx(2e-3 + 1e-3).epsilon(1e-12));
  // 5 MB, staged, its curve 0.5 GB/s (10 ms): the DMA into the device on
  // the pinned link's curve (5 ms) after a host part into a bounce buffer
  // (the other 5 ms, 1 GB/s, two bytes of host memory a byte). The host
  // part beside the eviction asks 3 GB/s of the host's 2: both at 2/3 GB/s
  // until the eviction ends (3 ms), then the host part alone (its last 3 MB
  // by 6 ms), then the DMA (by 11 ms).
  links.links[static_cast<std::size_t>(LinkKind::PageableToDevice)].classes = {{std::nullopt, 0.0, 0.5e9}};
  v.transfers[1].bytes = v.transfers[1].logical_bytes = 5'000'000;
  t = planner::time_schedule(w, v, links);
  CHECK(t.total_seconds == doctest::Approx(11e-3).epsilon(1e-12));
  CHECK(t.transfer_seconds == doctest::Approx(3e-3 + 11e-3).epsilon(1e-12));
  // A value of no bytes pays its link's fixed cost (10 us), not a rate.
  links.links[static_cast<std::size_t>(LinkKind::PageableToDevice)].classes = {{std::nullopt, 10e-6, 1e9}};
  v.transfers[1].bytes = v.transfers[1].logical_bytes = 0;
  t = planner::time_schedule(w, v, links);
  CHECK(t.transfer_seconds == doctest::Approx(2e-3 + 10e-6).epsilon(1e-12));
}

TEST_CASE("solve: prefetch issues a load while an earlier step computes; bytes stay the same") {
  // Three keys of 1 GiB rebuilt from sources in pinned memory, room for
  // all three on the device: the load for each later step can run while
  // the step before it computes (30 ms).
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
  // Each later key is loaded while the step before computes, just early
  // enough.
  REQUIRE(ahead.schedule.steps[0].during.size() == 1);
  CHECK(ahead.schedule.steps[0].during[0].value == 1);
  REQUIRE(ahead.schedule.steps[1].during.size() == 1);
  CHECK(ahead.schedule.steps[1].during[0].value == 2);
  CHECK(ahead.schedule.steps[1].enter.empty());
  CHECK(ahead.schedule.steps[2].enter.empty());
  // A load's copy from pinned memory follows its source's fill (the
  // processor's work, the client's loader, not timed): the device's first
  // DMA in after host work.
  const LinkModel &links = LinkModel::h200();
  REQUIRE(links.dma_after_host_work_seconds);
  const double one = links.transfer_seconds(Location::pinned(), Location::cuda(0), 1ull << 30) +
                     *links.dma_after_host_work_seconds;
  REQUIRE(one < 0.03);
  // Without prefetch every load stalls its step; with it only the first.
  CHECK(plain.timeline.stall_seconds == doctest::Approx(3 * one));
  CHECK(plain.timeline.total_seconds == doctest::Approx(3 * one + 0.09));
  CHECK(ahead.timeline.stall_seconds == doctest::Approx(one));
  CHECK(ahead.timeline.total_seconds == doctest::Approx(one + 0.09));
  CHECK(ahead.timeline.transfer_seconds == doctest::Approx(3 * one));
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

TEST_CASE("timeline: loads run one after the other, steps wait for their values") {
  const planner::Workload w = workload(R"({"schema": "fhr-workload/1", "devices": 1, "budgets": [],
    "values": [{"name": "a", "bytes": 536870912, "mode": "replicable", "source": "pinned"},
               {"name": "b", "bytes": 536870912, "mode": "replicable", "source": "pageable"}],
    "steps": [{"name": "0", "needs": [{"at": "cuda:0", "values": ["a", "b"]}], "compute_seconds": 0.002},
              {"name": "1", "compute_seconds": 0.001}]})");
  const planner::SolveResult r = planner::solve_planner(w);
  REQUIRE(r.ok());
  const LinkModel &links = LinkModel::h200();
  REQUIRE(links.dma_after_host_work_seconds);
  // Each is a load, timed from its copy (its source's fill is the client's
  // loader's): from pageable memory at the load curve, from pinned memory a
  // DMA after the fill, which pays the extra after host work. A load runs
  // alone, one after the other; step 0 waits for both.
  const double a = links.transfer_seconds(Location::pinned(), Location::cuda(0), 512ull << 20) +
                   *links.dma_after_host_work_seconds;
  const double b = links.load_transfer_seconds(Location::pageable(), Location::cuda(0), 512ull << 20);
  REQUIRE(b != links.transfer_seconds(Location::pageable(), Location::cuda(0), 512ull << 20));
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
  REQUIRE(links.dma_after_host_work_seconds);
  const double copy = logical + *links.dma_after_host_work_seconds;
  CHECK(r.timeline.transfer_seconds == doctest::Approx(copy));
  CHECK(r.timeline.stall_seconds == doctest::Approx(copy));
  REQUIRE(r.verification.transfers.size() == 1);
  CHECK(r.verification.transfers[0].bytes == 124ull << 20);
  CHECK(r.verification.transfers[0].logical_bytes == 120ull << 20);
  CHECK(r.verification.bytes_per_link[static_cast<std::size_t>(LinkKind::PinnedToDevice)] == 124ull << 20);
}

TEST_CASE("timeline: a phase's copies in order, as the runtime's window issues them") {
  // Every link 1 GB/s with no fixed cost, nothing shared, no DMA extras:
  // each copy of N MB takes N ms alone.
  const planner::Workload w =
      workload(R"({"schema": "fhr-workload/1", "name": "order", "devices": 2, "budgets": [],
    "values": [{"name": "v", "count": 4, "bytes": 1024, "mode": "replicable", "source": "pinned"}],
    "steps": [{"name": "0", "needs": [], "compute_seconds": 0}]})");
  LinkModel links;
  for (LinkCurve &curve : links.links)
    curve.classes = {{std::nullopt, 0.0, 1e9}};
  REQUIRE(!links.dma_after_host_work_seconds);
  // The copies of one window (the verifier numbers them by the runtime's
  // overlap rule) unless given another; a load is a window of its own.
  const auto copy = [](ValueId v, Location from, Location to, std::uint64_t bytes, bool load = false,
                       std::uint32_t window = 0) {
    return planner::Transfer{0, planner::Transfer::Phase::Enter, v, from, to, bytes, bytes, load, window};
  };
  const auto total = [&](std::vector<planner::Transfer> transfers) {
    planner::Verification v;
    v.transfers = std::move(transfers);
    return planner::time_schedule(w, v, links).total_seconds;
  };
  const Location pinned = Location::pinned(), pageable = Location::pageable();
  const Location gpu0 = Location::cuda(0), gpu1 = Location::cuda(1);
  // Two DMAs on different engines stream at once; two on one engine queue.
  CHECK(total({copy(0, pinned, gpu0, 2'000'000), copy(1, gpu1, pinned, 3'000'000)}) ==
        doctest::Approx(3e-3).epsilon(1e-12));
  CHECK(total({copy(0, pinned, gpu0, 2'000'000), copy(1, pinned, gpu0, 3'000'000)}) ==
        doctest::Approx(5e-3).epsilon(1e-12));
  // A staged copy (pageable -> device, 4 MiB and up) is made inside its
  // start: the DMA after it, on another engine, waits for it.
  CHECK(total({copy(0, pageable, gpu0, 5'000'000), copy(1, gpu1, pinned, 3'000'000)}) ==
        doctest::Approx(8e-3).epsilon(1e-12));
  // Under the threshold the driver's copy does not hold it back.
  CHECK(total({copy(0, pageable, gpu0, 2'000'000), copy(1, gpu1, pinned, 3'000'000)}) ==
        doctest::Approx(3e-3).epsilon(1e-12));
  // A copy made inside its start does not wait for the copies before it.
  CHECK(total({copy(1, gpu1, pinned, 3'000'000), copy(0, pageable, gpu0, 5'000'000)}) ==
        doctest::Approx(5e-3).epsilon(1e-12));
  // A window starts once the one before it is done, whatever the engines.
  CHECK(total({copy(0, pinned, gpu0, 2'000'000), copy(1, gpu1, pinned, 3'000'000, false, 1)}) ==
        doctest::Approx(5e-3).epsilon(1e-12));
  // A load runs alone: after the DMA before it, before the DMA after it,
  // whatever their engines.
  CHECK(total({copy(0, pinned, gpu0, 2'000'000), copy(1, pinned, gpu1, 3'000'000, true, 1)}) ==
        doctest::Approx(5e-3).epsilon(1e-12));
  CHECK(total({copy(1, pinned, gpu1, 3'000'000, true), copy(0, gpu0, pinned, 2'000'000, false, 1)}) ==
        doctest::Approx(5e-3).epsilon(1e-12));
  // A window that takes no time (a load in place) between two: the second
  // still waits for the first.
  CHECK(total({copy(0, pinned, gpu0, 2'000'000), copy(2, pinned, pinned, 1'000'000, true, 1),
               copy(1, gpu1, pinned, 3'000'000, false, 2)}) == doctest::Approx(5e-3).epsilon(1e-12));
  // A load's copy from pageable memory takes the load curve when the
  // profile has one (here twice as slow).
  links.load_pageable_to_device.classes = {{std::nullopt, 0.0, 0.5e9}};
  CHECK(total({copy(2, pageable, gpu0, 1'000'000, true)}) == doctest::Approx(2e-3).epsilon(1e-12));
  CHECK(total({copy(2, pageable, gpu0, 1'000'000)}) == doctest::Approx(1e-3).epsilon(1e-12));
}

TEST_CASE("solve: prefetch prices a rebuilt value's load at the load curve") {
  // A 256 MiB key rebuilt from pageable memory: its load's copy is slower
  // than a copy of resident bytes. Each step computes for a time between
  // the two, so the load for step 2 needs the idle time of two steps.
  const LinkModel &links = LinkModel::h200();
  const std::uint64_t bytes = 256ull << 20;
  const double plain = links.transfer_seconds(Location::pageable(), Location::cuda(0), bytes);
  const double load = links.load_transfer_seconds(Location::pageable(), Location::cuda(0), bytes);
  REQUIRE(plain < load);
  const std::string compute = std::to_string((plain + load) / 2);
  const std::string step = R"(, "compute_seconds": )" + compute + "}";
  const planner::Workload w = workload(R"({"schema": "fhr-workload/1", "name": "curve", "devices": 1,
    "budgets": [{"at": "cuda:0", "bytes": 1073741824}],
    "values": [{"name": "k", "count": 2, "bytes": 268435456, "mode": "replicable", "source": "pageable"}],
    "steps": [{"name": "0", "needs": [{"at": "cuda:0", "values": ["k[0]"]}])" +
                                       step + R"(,
              {"name": "1", "needs": [{"at": "cuda:0", "values": ["k[0]"]}])" +
                                       step + R"(,
              {"name": "2", "needs": [{"at": "cuda:0", "values": ["k[1]"]}])" +
                                       step + "]}");
  const planner::SolveResult r = planner::solve_planner(w);
  REQUIRE(r.ok());
  // At the plain curve step 1's compute would have covered it.
  REQUIRE(r.schedule.steps[0].during.size() == 1);
  CHECK(r.schedule.steps[0].during[0].value == 1);
  CHECK(r.schedule.steps[1].during.empty());
}

TEST_CASE(
    "timeline: the schedule clock and explain's predictor agree on a printed program, DMA extras included") {
  // Steps that compute for no time and phases whose copies run one at a
  // time (loads, single DMAs): the planner's clock and the time predictor
  // that `explain --profile` runs on the printed program must agree, priced
  // by the same pieces of the model: the curves (a load's own from
  // pageable memory, staged), and what each DMA pays beyond its curve by
  // the state it meets (dma_history.hpp). The clock leaves out what the
  // predictor adds for a load's fill (the source's, the client's loader).
  const planner::Workload w = workload(R"({"schema": "fhr-workload/1", "name": "agree", "devices": 1,
    "budgets": [{"at": "cuda:0", "bytes": 256901120}],
    "tiers": [{"from": "cuda:0", "to": ["pinned"]}],
    "values": [{"name": "rk", "count": 2, "bytes": 125829120, "mode": "replicable", "source": "pinned"},
               {"name": "ct", "bytes": 10485760, "mode": "exclusive", "at": "pinned"},
               {"name": "w", "bytes": 15728640, "mode": "replicable", "source": "pageable"}],
    "steps": [{"name": "0", "needs": [{"at": "cuda:0", "values": ["ct"]}]},
              {"name": "1", "needs": [{"at": "cuda:0", "values": ["rk[0]", "rk[1]"]}]},
              {"name": "2", "needs": [{"at": "cuda:0", "values": ["ct", "w"]}]},
              {"name": "3", "needs": [{"at": "cuda:0", "values": ["rk[0]", "rk[1]"]}]},
              {"name": "4", "needs": [{"at": "cuda:0", "values": ["ct"]}]}]})");
  LinkModel links = LinkModel::h200();
  REQUIRE(links.dma_after_host_work_seconds);
  REQUIRE(links.dma_cold_value_seconds);
  REQUIRE(!links.load_pageable_to_device.classes.empty());
  links.dma_follow_on_seconds = 9e-6;
  const planner::SolveResult planned = solved_with(w, links);
  const std::string program = printed_program(w, planned);
  // Every state a DMA can meet is on the way, and each pays its figure.
  const ProgramTime with_extras = predicted_time(program, links);
  CHECK(with_extras.dma_states.at("after-host-work") > 0);
  CHECK(with_extras.dma_states.at("cold-value") > 0);
  CHECK(with_extras.dma_states.at("follow-on") > 0);
  CHECK(std::abs(planned.timeline.total_seconds * 1e6 - with_extras.us) <= kAgreementUs);
  // Without the extras both are shorter, by the same amount.
  LinkModel plain = links;
  plain.dma_after_host_work_seconds = plain.dma_cold_value_seconds = plain.dma_follow_on_seconds =
      std::nullopt;
  check_agrees_when_cheaper(w, planned, program, plain);
}

TEST_CASE(
    "timeline: the schedule clock and explain's predictor agree where a phase's copies share the links") {
  // Step 1 moves ct[0] into cuda:0 and ct[1] out of it in one phase: the
  // printed program's plan makes them one overlap window, whose two
  // directions share the duplex bandwidth while both stream. Step 2 moves
  // ct[2] and ct[3] into cuda:0 and cuda:1 at once. The planner's clock and
  // explain's predictor time them on the same engines (copy_flows.hpp), so
  // the totals agree (explain's loads' fills aside: there are none).
  const planner::Workload w = workload(R"({"schema": "fhr-workload/1", "name": "share", "devices": 2,
    "budgets": [],
    "values": [{"name": "ct", "count": 4, "bytes": 125829120, "mode": "exclusive", "at": "pinned"}],
    "steps": [{"name": "0", "needs": [{"at": "cuda:0", "values": ["ct[1]"]}]},
              {"name": "1", "needs": [{"at": "cuda:0", "values": ["ct[0]"]}, {"at": "pinned", "values": ["ct[1]"]}]},
              {"name": "2", "needs": [{"at": "cuda:0", "values": ["ct[2]"]}, {"at": "cuda:1", "values": ["ct[3]"]}]}]})");
  LinkModel links = LinkModel::h200();
  REQUIRE(links.duplex_bytes_per_second > 0);
  const planner::SolveResult planned = solved_with(w, links);
  const std::string program = printed_program(w, planned);
  const ProgramTime shared = predicted_time(program, links);
  CHECK(shared.shared_windows == 2);
  CHECK(std::abs(planned.timeline.total_seconds * 1e6 - shared.us) <= kAgreementUs);
  // Without the duplex figure the moves in and out no longer share: both
  // are shorter, by the same amount.
  LinkModel unshared = links;
  unshared.duplex_bytes_per_second = 0;
  check_agrees_when_cheaper(w, planned, program, unshared);
}

TEST_CASE("timeline: the schedule clock and explain's predictor agree on random printed programs") {
  // Random workloads of ciphertexts (in pageable memory, staged) and keys
  // (rebuilt from pinned sources), tens of MiB, steps that compute for no
  // time: the planner's and the LRU policy's schedules, printed, explained
  // with the shipped profile, take the time the planner's clock gave them
  // (explain's loads' fills aside): one engine (copy_flows.hpp), one DMA
  // history, one overlap rule.
  LinkModel links = LinkModel::h200();
  links.dma_follow_on_seconds = 9e-6;
  links.staged_after_host_work_seconds = 110e-6; // the ciphertexts' staged copies after other work
  planner::SolveOptions options;
  options.links = &links;
  planner::LruOptions lru_options;
  lru_options.links = &links;
  int compared = 0, windows_shared = 0, staged_after_host_work = 0;
  for (unsigned seed = 1; seed <= 60; ++seed) {
    planner::Workload w = random_workload(seed, 4 + seed % 5, 6 + seed % 7, true);
    for (planner::Value &value : w.values)
      value.logical_bytes = value.storage_bytes = value.storage_bytes * 100 * 1024;
    for (auto &[at, budget] : w.budgets)
      budget *= 100 * 1024;
    // Every third workload keeps half of its ciphertexts in pinned memory,
    // with room for those alone: the LRU controller spills one from cuda:0
    // there by first moving another on to pageable memory, in the same
    // phase, and the runtime's window rule starts the spill only once that
    // move has freed its room.
    if (seed % 3 == 0) {
      std::uint64_t ciphertexts = 0;
      bool in_pinned = true;
      for (planner::Value &value : w.values) {
        // The keys' sources move to pageable memory: a source in budgeted
        // memory keeps room for its load at every step.
        value.home = Location::pageable();
        if (!value.adopted) continue;
        if (in_pinned) {
          value.home = Location::pinned();
          ciphertexts += value.storage_bytes;
        }
        in_pinned = !in_pinned;
      }
      w.budgets.push_back({Location::pinned(), ciphertexts});
      w.tiers.push_back({Location::pinned(), {Location::pageable()}});
    }
    for (planner::Step &step : w.steps) {
      step.compute_seconds = 0.0;
      for (planner::Workspace &ws : step.workspace)
        ws.bytes *= 100 * 1024;
    }
    CAPTURE(seed);
    for (const bool lru : {false, true}) {
      CAPTURE(lru);
      const planner::SolveResult r =
          lru ? planner::solve_lru(w, lru_options) : planner::solve_planner(w, options);
      REQUIRE(r.ok());
      const ProgramTime predicted = predicted_time(printed_program(w, r), links);
      windows_shared += predicted.shared_windows;
      staged_after_host_work += predicted.staged_after_host_work;
      CHECK(std::abs(r.timeline.total_seconds * 1e6 - predicted.us) <= kAgreementUs);
      ++compared;
    }
  }
  CHECK(compared == 120);
  MESSAGE("windows of two copies or more: " << windows_shared
                                            << "; staged copies after host work: " << staged_after_host_work);
  CHECK(windows_shared > 0);
  CHECK(staged_after_host_work > 0);
}

TEST_CASE("timeline: the verifier numbers the runtime's windows: a move waits for the room another frees") {
  // Pinned memory holds one 64 MiB ciphertext, `d`. Step 1 needs `a` on a
  // cuda:0 that holds `b` and `c`: the LRU controller spills `b` to pinned
  // memory after moving `d` on to pageable memory, both in step 1's
  // reclaim. The runtime's window rule (overlap_window.hpp) does not start
  // `b`'s move beside `d`'s: pinned memory has room for it only once `d`'s
  // move commits. The verifier numbers the windows by that rule (here the
  // time would not change: `d`'s move, a host copy, holds back the copies
  // after it in its window anyway; the clock's side of windows is the case
  // "a phase's copies in order").
  const planner::Workload w = workload(R"({"schema": "fhr-workload/1", "name": "chain", "devices": 1,
    "budgets": [{"at": "cuda:0", "bytes": 134217728}, {"at": "pinned", "bytes": 67108864}],
    "tiers": [{"from": "cuda:0", "to": ["pinned", "pageable"]}, {"from": "pinned", "to": ["pageable"]}],
    "values": [{"name": "a", "bytes": 67108864, "mode": "exclusive", "at": "pageable"},
               {"name": "b", "bytes": 67108864, "mode": "exclusive", "at": "pageable"},
               {"name": "c", "bytes": 67108864, "mode": "exclusive", "at": "pageable"},
               {"name": "d", "bytes": 67108864, "mode": "exclusive", "at": "pinned"}],
    "steps": [{"name": "0", "needs": [{"at": "cuda:0", "values": ["b", "c"]}]},
              {"name": "1", "needs": [{"at": "cuda:0", "values": ["a"]}]}]})");
  const LinkModel &links = LinkModel::h200();
  const planner::SolveResult r = planner::solve_lru(w);
  REQUIRE(r.ok());
  std::vector<const planner::Transfer *> reclaim;
  for (const planner::Transfer &x : r.verification.transfers)
    if (x.step == 1 && x.phase == planner::Transfer::Phase::Reclaim) reclaim.push_back(&x);
  REQUIRE(reclaim.size() == 2);
  CHECK(reclaim[0]->value == 3);
  CHECK(reclaim[0]->to == Location::pageable());
  CHECK(reclaim[1]->value == 1);
  CHECK(reclaim[1]->to == Location::pinned());
  CHECK(reclaim[0]->window != reclaim[1]->window);
  CHECK(std::abs(r.timeline.total_seconds * 1e6 - predicted_time(printed_program(w, r), links).us) <=
        kAgreementUs);
}

TEST_CASE("solve: printed programs run on a manager with overlap form the windows explain predicts") {
  // The planner's and the LRU policy's printed programs of random
  // workloads of two budgeted devices, run on simulated devices with
  // separate copy engines: each runs as explained, and every copy opens,
  // joins or stays out of a window where explain's time predictor put it
  // (the manager's windows and the predictor's come from one rule, over
  // the manager's accounts and over explain's replay of the program's
  // memory respectively).
  ExecutionOptions options;
  options.backend = BackendKind::Simulated;
  options.simulated_overlap = true;
  options.simulated_memory = SimulatedMemory::SizesOnly;
  int runs = 0, joined = 0;
  for (unsigned seed = 1; seed <= 60; ++seed) {
    const planner::Workload w = random_two_device_workload(seed);
    CAPTURE(seed);
    for (const bool lru : {false, true}) {
      CAPTURE(lru);
      const planner::SolveResult r = lru ? planner::solve_lru(w) : planner::solve_planner(w);
      if (!r.ok()) continue;
      const std::string program = printed_program(w, r);
      Explained explained = explain(program);
      const ExecutionCheck check = check_program(*explained.compiled.lowered->module, 0, options);
      for (const std::string &difference : check.differences)
        FAIL_CHECK(difference << "\n" << program);
      nlohmann::ordered_json document = explain_json({explained.report});
      for (const auto &unit : document["files"][0]["units"]) {
        if (unit["kind"] != "program") continue;
        const Timeline timeline =
            unit_timeline(unit, unit_memory(unit, MemorySeries::Totals), LinkModel::h200());
        for (const WindowDifference &d : window_differences(timeline, check.run))
          FAIL_CHECK(window_difference_text(d) << "\n" << program);
        for (std::size_t k = 0; k < check.run.steps.size(); ++k)
          joined += ran_step_place(check.run, k) == WindowPlace::Joins;
      }
      ++runs;
    }
  }
  MESSAGE(runs << " programs run, " << joined << " copies joined a window as predicted");
  CHECK(runs >= 100);
  CHECK(joined > 100);
}

TEST_CASE("lru baseline: a search whose reclaims lead back to a state on its path ends") {
  // Found by fuzz_workload: step 2 needs 120 MB at a 100 MB cuda:0. To make
  // room the controller's search moved a ciphertext to pinned memory, and
  // to make room there moved one back to cuda:0, its requested
  // destination: the same state again, one level deeper, until the stack
  // ran out (a segmentation fault in `fhr-plan solve --policy lru`). The
  // search now leaves a state already on its path, and the request fails
  // as exhausted.
  const planner::Workload w = workload(R"({"schema": "fhr-workload/1", "name": "cycle", "devices": 1,
    "budgets": [{"at": "cuda:0", "bytes": 104857600}, {"at": "pinned", "bytes": 83886080}],
    "tiers": [{"from": "cuda:0", "to": ["pinned", "pageable"]}],
    "values": [{"name": "relin", "bytes": 41941020, "mode": "exclusive", "source": "pageable"},
               {"name": "c", "count": 4, "bytes": 41943040, "mode": "exclusive", "at": "pageable"}],
    "steps": [{"name": "mul-0", "needs": [{"at": "cuda:0", "values": ["relin", "c[1]"]}]},
              {"name": "add-0", "needs": [{"at": "cuda:0", "values": ["c[0]", "c[2]"]}]},
              {"name": "mul-2", "needs": [{"at": "cuda:0", "values": ["relin", "c[1]", "c[2]"]}]}]})");
  const planner::SolveResult lru = planner::solve_lru(w);
  CHECK_FALSE(lru.ok());
  CHECK(lru.failure.starts_with("step 2 'mul-2': "));
  CHECK(lru.failure.find("no invariant-valid victim sequence satisfies the whole request") !=
        std::string::npos);
  CHECK(lru.schedule.steps.size() == 2);
  // The planner finds the step infeasible by its bytes alone.
  const planner::SolveResult planned = planner::solve_planner(w);
  REQUIRE(planned.infeasible);
  CHECK(planned.infeasible->step == 2);
}
