// The overlap window rule and the time predictor, on hand-computed cases:
// one link model with round numbers, so every start and end below is exact.
#include "fhr/model/overlap_window.hpp"
#include "fhr/model/timeline.hpp"

#include <doctest/doctest.h>

#include <array>
#include <vector>

using fhr::copy_step;
using fhr::CopyQueue;
using fhr::LinkKind;
using fhr::LinkModel;
using fhr::Location;
using fhr::LocationAccount;
using fhr::OverlapCandidate;
using fhr::OverlapWindow;
using fhr::StepTransfer;
using fhr::TimelineStep;

namespace {

constexpr std::uint64_t kMB = 1'000'000;
constexpr double kMs = 1e-3;

/// Every link: 1 GB/s; pinned <-> device copies also pay 10 us first.
LinkModel round_model(double duplex = 1.5e9) {
  LinkModel model;
  for (std::size_t i = 0; i < fhr::kLinkKindCount; ++i)
    model.links[i].classes = {{std::nullopt, 0.0, 1e9}};
  model.links[static_cast<std::size_t>(LinkKind::PinnedToDevice)].classes = {{std::nullopt, 10e-6, 1e9}};
  model.duplex_bytes_per_second = duplex;
  model.source_load_bytes_per_second = 2e9;
  return model;
}

/// `value` reloaded from its source at `source` into `destination`.
TimelineStep loaded(fhr::ValueId value, Location source, Location destination, std::uint64_t bytes,
                    std::uint32_t group = 0) {
  TimelineStep step = copy_step(value, source, destination, bytes, false, group);
  step.transfer = StepTransfer::Load;
  return step;
}

const Location pinned = Location::pinned(), pageable = Location::pageable(), gpu0 = Location::cuda(0),
               gpu1 = Location::cuda(1);

/// Steps that follow their own values' DMAs alone (the calibration's
/// windows): no host work before them, every value warm.
fhr::TimelineOptions after_own_dmas() {
  fhr::TimelineOptions options;
  options.host_work_before = false;
  return options;
}

/// Each step's extras beyond its curve (fhr/model/dma_history.hpp): after
/// host work as `after_host_work` lists them, for a cold value as `cold`
/// does, right after its value's DMA that met one of those as `follow_on`
/// does (none when empty).
void check_dma_extras(const fhr::Timeline &t, const std::vector<double> &after_host_work,
                      const std::vector<double> &cold = {}, const std::vector<double> &follow_on = {}) {
  REQUIRE(t.steps.size() == after_host_work.size());
  for (std::size_t k = 0; k < after_host_work.size(); ++k) {
    CAPTURE(k);
    CHECK(t.steps[k].dma_extra.after_host_work_seconds == doctest::Approx(after_host_work[k]).epsilon(1e-12));
    CHECK(t.steps[k].dma_extra.cold_value_seconds ==
          doctest::Approx(cold.empty() ? 0.0 : cold[k]).epsilon(1e-12));
    CHECK(t.steps[k].dma_extra.follow_on_seconds ==
          doctest::Approx(follow_on.empty() ? 0.0 : follow_on[k]).epsilon(1e-12));
  }
}

} // namespace

TEST_CASE("overlap window: distinct values, at most 32 copies, budgets with the window's copies charged") {
  OverlapWindow window;
  LocationAccount unbudgeted;
  const OverlapCandidate first{pinned, 1, gpu0, 100};
  CHECK(window.admits(first, unbudgeted));
  window.add(first);
  // The same value again depends on the first copy.
  CHECK_FALSE(window.admits(OverlapCandidate{pinned, 1, gpu1, 100}, unbudgeted));
  // Not a plain copy (a drop, a load, a no-op): ends the window.
  CHECK_FALSE(window.admits(OverlapCandidate{std::nullopt, 2, gpu0, 100}, unbudgeted));
  // 250 B budget, 60 B used: 60 + 100 (the first copy) + 100 fits, + 91 does not.
  LocationAccount budgeted{250, 60, 0, 0, 0};
  CHECK(window.admits(OverlapCandidate{pinned, 2, gpu0, 90}, budgeted));
  CHECK_FALSE(window.admits(OverlapCandidate{pinned, 2, gpu0, 91}, budgeted));
  // Another destination is not charged with the first copy.
  CHECK(window.admits(OverlapCandidate{pinned, 2, gpu1, 190}, budgeted));
  for (fhr::ValueId v = 2; v <= 32; ++v)
    window.add(OverlapCandidate{pinned, v, gpu1, 1});
  CHECK(window.size() == 32);
  CHECK_FALSE(window.admits(OverlapCandidate{pinned, 40, gpu1, 1}, unbudgeted));
  window.clear();
  CHECK(window.empty());
  CHECK(window.admits(OverlapCandidate{pinned, 1, gpu0, 190}, budgeted));
}

TEST_CASE("timeline: copies on one engine queue; each pays its latency") {
  const std::vector<TimelineStep> steps = {copy_step(0, pinned, gpu0, kMB), copy_step(1, pinned, gpu0, kMB)};
  const fhr::Timeline t = fhr::predict_timeline(steps, round_model());
  REQUIRE(t.steps.size() == 2);
  CHECK(t.windows == 1);
  CHECK(t.steps[0].start_seconds == 0);
  CHECK(t.steps[0].end_seconds == doctest::Approx(1.01 * kMs).epsilon(1e-12));
  // The runtime starts both at once (the span it measures); the second
  // waits for the engine.
  CHECK(t.steps[1].start_seconds == 0);
  CHECK(t.steps[1].copy_start_seconds == doctest::Approx(1.01 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].end_seconds == doctest::Approx(2.02 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].allocation_seconds == 0); // warm pools: no allocation charged
  CHECK(t.total_seconds == doctest::Approx(2.02 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].engine == CopyQueue{CopyQueue::Kind::Inbound, 0});
  CHECK(t.steps[1].window == 0u);
}

TEST_CASE("timeline: an eviction beside a prefetch shares the device's duplex bandwidth") {
  // Outbound 2 MB and inbound 1 MB (no latency on device -> pinned): both
  // stream at 0.75 GB/s (1.5 GB/s together) until the prefetch's 10 us and
  // 1 MB are done; then the eviction's last bytes go at 1 GB/s alone.
  std::vector<TimelineStep> steps = {copy_step(0, gpu0, pinned, 2 * kMB, true),
                                     copy_step(1, pinned, gpu0, kMB)};
  fhr::Timeline t = fhr::predict_timeline(steps, round_model());
  // 0..10 us: the eviction alone at 1 GB/s moves 10 kB. Then both at
  // 0.75 GB/s: the prefetch needs 1 MB / 0.75 GB/s = 1.3333 ms, while the
  // eviction moves 1 MB of its remaining 1.99 MB; its last 0.99 MB take
  // 0.99 ms alone.
  const double prefetch_end = 10e-6 + 1.0 / 0.75 * kMs;
  CHECK(t.steps[1].start_seconds == 0);
  CHECK(t.steps[1].end_seconds == doctest::Approx(prefetch_end).epsilon(1e-12));
  CHECK(t.steps[0].end_seconds == doctest::Approx(prefetch_end + 0.99 * kMs).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(prefetch_end + 0.99 * kMs).epsilon(1e-12));
  // Without a duplex limit both run at their own speed.
  t = fhr::predict_timeline(steps, round_model(2e9));
  CHECK(t.steps[0].end_seconds == doctest::Approx(2 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].end_seconds == doctest::Approx(1.01 * kMs).epsilon(1e-12));
  // A backend without copy engines runs them one after the other.
  fhr::TimelineOptions sequential;
  sequential.overlap = false;
  t = fhr::predict_timeline(steps, round_model(), sequential);
  CHECK(t.windows == 2);
  CHECK(t.steps[1].start_seconds == doctest::Approx(2 * kMs).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(3.01 * kMs).epsilon(1e-12));
}

TEST_CASE(
    "timeline: a prefetch that fits only once the eviction freed its source waits for the next window") {
  std::vector<TimelineStep> steps = {copy_step(0, gpu0, pinned, kMB, true), copy_step(1, pinned, gpu0, kMB)};
  // cuda:0: 1.5 MB budget, the evicted value's 1 MB used before the plan.
  steps[0].destination_account = LocationAccount{};
  steps[1].destination_account = LocationAccount{1'500'000, 0, 0, 0, 0}; // after the move, sequentially
  fhr::Timeline t = fhr::predict_timeline(steps, round_model());
  CHECK(t.windows == 2);
  CHECK(t.steps[0].end_seconds == doctest::Approx(1 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].start_seconds == doctest::Approx(1 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].end_seconds == doctest::Approx(2.01 * kMs).epsilon(1e-12));
  // With 2 MB it fits beside the eviction's source.
  steps[1].destination_account.budget_bytes = 2'000'000;
  t = fhr::predict_timeline(steps, round_model(2e9));
  CHECK(t.windows == 1);
  CHECK(t.total_seconds == doctest::Approx(1.01 * kMs).epsilon(1e-12));
}

TEST_CASE("timeline: a second action on a value, another phase, a load or a drop ends the window") {
  std::vector<TimelineStep> steps = {copy_step(0, pinned, gpu0, kMB), copy_step(0, pinned, gpu1, kMB),
                                     copy_step(1, pinned, gpu1, kMB, false, 1)};
  const TimelineStep load = loaded(2, pageable, gpu0, 2 * kMB, 1);
  TimelineStep drop;
  drop.value = 0;
  drop.group = 1;
  steps.push_back(load);
  steps.push_back(drop);
  steps.push_back(copy_step(3, pinned, gpu1, kMB, false, 1));
  const fhr::Timeline t = fhr::predict_timeline(steps, round_model());
  CHECK(t.windows == 4);
  CHECK(t.steps[1].start_seconds == doctest::Approx(1.01 * kMs).epsilon(1e-12)); // same value: next window
  CHECK(t.steps[2].start_seconds == doctest::Approx(2.02 * kMs).epsilon(1e-12)); // next phase
  // The load: 2 MB filled at 2 GB/s (1 ms), then pageable -> cuda:0 at 1 GB/s (2 ms).
  CHECK(t.steps[3].start_seconds == doctest::Approx(3.03 * kMs).epsilon(1e-12));
  CHECK(t.steps[3].end_seconds == doctest::Approx(6.03 * kMs).epsilon(1e-12));
  CHECK_FALSE(t.steps[3].window);
  CHECK(t.steps[4].start_seconds == t.steps[4].end_seconds); // a drop takes no time
  CHECK(t.steps[5].end_seconds == doctest::Approx(7.04 * kMs).epsilon(1e-12));
}

TEST_CASE("timeline: a staged pageable copy holds back the copies after it; at most 32 copies a window") {
  // 8 MB pageable -> cuda:0 is staged (synchronous): the eviction after it
  // starts only when it finished, although it uses the other engine.
  std::vector<TimelineStep> steps = {copy_step(0, pageable, gpu0, 8 * kMB),
                                     copy_step(1, gpu0, pinned, kMB, true)};
  fhr::Timeline t = fhr::predict_timeline(steps, round_model());
  CHECK(t.windows == 1);
  CHECK(t.steps[1].start_seconds == doctest::Approx(8 * kMs).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(9 * kMs).epsilon(1e-12));
  // In the other order both run at once (sharing the duplex 1.5 GB/s).
  std::swap(steps[0], steps[1]);
  t = fhr::predict_timeline(steps, round_model());
  CHECK(t.steps[1].start_seconds == 0);
  CHECK(t.total_seconds < 9 * kMs);

  std::vector<TimelineStep> many;
  for (fhr::ValueId v = 0; v < 33; ++v)
    many.push_back(copy_step(v, pinned, Location::cuda(v % 4), kMB));
  t = fhr::predict_timeline(many, round_model());
  CHECK(t.windows == 2);
  CHECK(t.steps[31].window == 0u);
  CHECK(t.steps[32].window == 1u);
  // The first window: 8 copies per device engine, 1.01 ms each; it commits
  // when its last copy is in.
  CHECK(t.steps[32].start_seconds == doctest::Approx(8 * 1.01 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].commit_seconds == doctest::Approx(1.01 * kMs).epsilon(1e-12));
  CHECK(t.steps[31].commit_seconds == doctest::Approx(8 * 1.01 * kMs).epsilon(1e-12));
}

TEST_CASE("timeline: a copy between host locations runs inside its start; the copies after it wait") {
  // The runtime copies host to host (a memcpy, on the copy threads from
  // 4 MiB) before it starts the window's next copy: the DMA after the 2 MB
  // host copy starts at 2 ms, although it uses a device engine.
  std::vector<TimelineStep> steps = {copy_step(0, pinned, pageable, 2 * kMB, true),
                                     copy_step(1, pinned, gpu0, kMB)};
  fhr::Timeline t = fhr::predict_timeline(steps, round_model());
  CHECK(t.windows == 1);
  CHECK(t.steps[0].engine == CopyQueue{CopyQueue::Kind::HostThreads, 0});
  CHECK(t.steps[0].end_seconds == doctest::Approx(2 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].start_seconds == doctest::Approx(2 * kMs).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(3.01 * kMs).epsilon(1e-12));
  // In the other order the DMA runs while the host copies.
  std::swap(steps[0], steps[1]);
  t = fhr::predict_timeline(steps, round_model());
  CHECK(t.steps[1].start_seconds == 0);
  CHECK(t.total_seconds == doctest::Approx(2 * kMs).epsilon(1e-12));
}

namespace {
/// round_model() with staged copies at 0.5 GB/s: of a staged 8 MB into
/// cuda:0 (16 ms), 8.01 ms are the DMA (pinned -> device: 10 us + 1 GB/s)
/// and 7.99 ms the host's part before it; of one out of cuda:0, 8 ms the
/// DMA (device -> pinned: 1 GB/s) and 8 ms the host's part after it.
LinkModel slow_staging_model() {
  LinkModel model = round_model();
  for (LinkKind staged : {LinkKind::PageableToDevice, LinkKind::DeviceToPageable})
    model.links[static_cast<std::size_t>(staged)].classes = {{std::nullopt, 0.0, 0.5e9}};
  return model;
}
} // namespace

TEST_CASE("timeline: a staged copy into a device fills its bounce buffer while a DMA holds the engine") {
  // A 10 MB DMA into cuda:0 (10.01 ms), then a staged 8 MB into cuda:0: the
  // host fills the bounce buffer meanwhile (7.99 ms), and the staged DMA
  // takes the engine when the first DMA is done: 10.01 + 8.01 ms, where
  // queueing the whole staged copy would end at 26.01 ms.
  const std::vector<TimelineStep> steps = {copy_step(0, pinned, gpu0, 10 * kMB),
                                           copy_step(1, pageable, gpu0, 8 * kMB)};
  fhr::Timeline t = fhr::predict_timeline(steps, slow_staging_model());
  CHECK(t.windows == 1);
  CHECK(t.steps[1].start_seconds == 0);
  CHECK(t.steps[1].copy_start_seconds == doctest::Approx(10.01 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].end_seconds == doctest::Approx(18.02 * kMs).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(18.02 * kMs).epsilon(1e-12));
  // After a 1 MB DMA the host's part is the longer: the staged copy takes
  // its calibrated 16 ms, its DMA on the engine from 7.99 ms.
  const std::vector<TimelineStep> short_first = {copy_step(0, pinned, gpu0, kMB),
                                                 copy_step(1, pageable, gpu0, 8 * kMB)};
  t = fhr::predict_timeline(short_first, slow_staging_model());
  CHECK(t.steps[1].copy_start_seconds == doctest::Approx(7.99 * kMs).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(16 * kMs).epsilon(1e-12));
}

TEST_CASE("timeline: a staged copy out of a device shares the duplex bandwidth only while its DMA runs") {
  // A 4 MB prefetch into cuda:0 and a staged 8 MB eviction to pageable
  // start together. The eviction's DMA (8 MB at 1 GB/s) and the prefetch
  // share 1.5 GB/s once the prefetch's 10 us are paid: 0.75 GB/s each for
  // 4 MB / 0.75 GB/s; the DMA's last 3.99 MB at 1 GB/s; then 8 ms on the host.
  const std::vector<TimelineStep> steps = {copy_step(0, pinned, gpu0, 4 * kMB),
                                           copy_step(1, gpu0, pageable, 8 * kMB, true)};
  fhr::Timeline t = fhr::predict_timeline(steps, slow_staging_model());
  const double prefetch_end = 10e-6 + 4.0 / 0.75 * kMs;
  CHECK(t.steps[0].end_seconds == doctest::Approx(prefetch_end).epsilon(1e-12));
  CHECK(t.steps[1].copy_start_seconds == 0);
  CHECK(t.steps[1].end_seconds == doctest::Approx(prefetch_end + 3.99 * kMs + 8 * kMs).epsilon(1e-12));
  // A 20 MB prefetch outlives the eviction's DMA (7.99 MB at 0.75 GB/s
  // after its first 10 us alone): through the eviction's host part it has
  // the link alone again, its last 12.01 MB at 1 GB/s.
  const std::vector<TimelineStep> longer = {copy_step(0, pinned, gpu0, 20 * kMB),
                                            copy_step(1, gpu0, pageable, 8 * kMB, true)};
  t = fhr::predict_timeline(longer, slow_staging_model());
  const double dma_end = 10e-6 + 7.99 / 0.75 * kMs;
  CHECK(t.steps[1].end_seconds == doctest::Approx(dma_end + 8 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].end_seconds == doctest::Approx(dma_end + 12.01 * kMs).epsilon(1e-12));
}

namespace {
/// round_model() with allocation costs: a device pool grows in 50 us,
/// cudaHostAlloc costs 1 ns per byte (1 ms per MB).
LinkModel allocating_model() {
  LinkModel model = round_model();
  model.device_allocation_seconds = 50e-6;
  model.pinned_allocation_seconds_per_byte = 1e-9;
  return model;
}

fhr::TimelineOptions cold_pools(fhr::PoolOptions pools = {}) {
  fhr::TimelineOptions options;
  options.pools = pools;
  return options;
}

/// A move: copy_step records its freed source for the pools.
TimelineStep moved(fhr::ValueId value, Location from, Location to, std::uint64_t bytes, std::uint32_t group) {
  return copy_step(value, from, to, bytes, true, group);
}
} // namespace

TEST_CASE("timeline, cold pools: a window allocates each destination before its copy, one after another") {
  const std::vector<TimelineStep> steps = {copy_step(0, pinned, gpu0, kMB), copy_step(1, pinned, gpu0, kMB)};
  const fhr::Timeline t = fhr::predict_timeline(steps, allocating_model(), cold_pools());
  REQUIRE(t.windows == 1);
  // The first grows cuda:0's pool (50 us), then copies: 10 us + 1 ms.
  CHECK(t.steps[0].start_seconds == 0);
  CHECK(t.steps[0].allocation_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  CHECK(t.steps[0].copy_start_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  CHECK(t.steps[0].end_seconds == doctest::Approx(1.06 * kMs).epsilon(1e-12));
  // The second is started once the first was allocated, grows the pool
  // again, and waits for the engine.
  CHECK(t.steps[1].start_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  CHECK(t.steps[1].allocation_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  CHECK(t.steps[1].copy_start_seconds == doctest::Approx(1.06 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].end_seconds == doctest::Approx(2.07 * kMs).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(2.07 * kMs).epsilon(1e-12));
}

TEST_CASE("timeline, cold pools: no step of a window commits before the window's last copy was started") {
  // Two evictions into a cold pinned pool (1 ms per MB to allocate): the
  // runtime allocates and starts both before it commits the first, so the
  // first commits when the second's allocation ends (5 ms), not when its own
  // copy ends (2 ms). Found on the H200: evictions beside cold-pool
  // prefetches were predicted to commit up to 4.4 times earlier than they did.
  const std::vector<TimelineStep> steps = {moved(0, gpu0, pinned, kMB, 0),
                                           moved(1, gpu0, pinned, 4 * kMB, 0)};
  fhr::PoolOptions exact_sizes; // cudaHostAlloc blocks: no rounding to huge pages
  exact_sizes.pinned_huge_pages = false;
  const fhr::Timeline t = fhr::predict_timeline(steps, allocating_model(), cold_pools(exact_sizes));
  REQUIRE(t.windows == 1);
  CHECK(t.steps[0].end_seconds == doctest::Approx(2 * kMs).epsilon(1e-12)); // 1 ms to allocate, 1 ms to copy
  CHECK(t.steps[1].start_seconds == doctest::Approx(1 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].copy_start_seconds == doctest::Approx(5 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].commit_seconds == doctest::Approx(5 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].end_seconds == doctest::Approx(9 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].commit_seconds == doctest::Approx(9 * kMs).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(9 * kMs).epsilon(1e-12));
}

TEST_CASE(
    "timeline, cold pools: freed blocks serve the next allocation of their size; the pinned pool's bound") {
  // One value goes cuda:0 -> pinned -> cuda:0 -> pinned -> cuda:0, a phase each.
  const std::vector<TimelineStep> steps = {moved(0, gpu0, pinned, kMB, 0), moved(0, pinned, gpu0, kMB, 1),
                                           moved(0, gpu0, pinned, kMB, 2), moved(0, pinned, gpu0, kMB, 3)};
  fhr::Timeline t = fhr::predict_timeline(steps, allocating_model(), cold_pools());
  // Cold pinned block: 1 ms, then the copy 1 ms.
  CHECK(t.steps[0].allocation_seconds == doctest::Approx(1 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].end_seconds == doctest::Approx(2 * kMs).epsilon(1e-12));
  // cuda:0's pool grows (50 us); 10 us + 1 ms.
  CHECK(t.steps[1].allocation_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  CHECK(t.steps[1].end_seconds == doctest::Approx(3.06 * kMs).epsilon(1e-12));
  // The pinned block the second move freed, and the device memory the
  // third freed, serve the last two: no allocation cost.
  CHECK(t.steps[2].allocation_seconds == 0);
  CHECK(t.steps[3].allocation_seconds == 0);
  CHECK(t.total_seconds == doctest::Approx(5.07 * kMs).epsilon(1e-12));
  // A pinned pool that keeps nothing: the third pays cudaHostAlloc again.
  fhr::PoolOptions keeps_nothing;
  keeps_nothing.pinned_pool_bytes = 0;
  t = fhr::predict_timeline(steps, allocating_model(), cold_pools(keeps_nothing));
  CHECK(t.steps[2].allocation_seconds == doctest::Approx(1 * kMs).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(6.07 * kMs).epsilon(1e-12));
  // Warm pools (no TimelineOptions::pools): the copies alone.
  CHECK(fhr::predict_timeline(steps, allocating_model()).total_seconds ==
        doctest::Approx(4.02 * kMs).epsilon(1e-12));
}

TEST_CASE("timeline, cold pools: pinned blocks under a huge page cost their own figures, larger ones whole "
          "huge pages") {
  // cudaHostAlloc below 2 MiB: 30 us + 0.5 ns per byte; the huge-page
  // blocks from 2 MiB up keep allocating_model()'s 1 ns per byte, on whole
  // pages.
  LinkModel model = allocating_model();
  model.small_pinned_allocation = fhr::AllocationCost{30e-6, 0.5e-9};
  constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
  const std::vector<TimelineStep> steps = {
      moved(0, gpu0, pinned, kMB, 0), moved(1, gpu0, pinned, 4 * kMB, 1), // 4 MB: a 4 MiB block
      moved(1, pinned, gpu1, 4 * kMB, 2),                                 // gives it back
      moved(2, gpu0, pinned, 3 * kMiB + 1, 3)};                           // its 4 MiB serve 3 MiB + 1
  fhr::Timeline t = fhr::predict_timeline(steps, model, cold_pools());
  CHECK(t.steps[0].allocation_seconds == doctest::Approx(30e-6 + 0.5 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].allocation_seconds == doctest::Approx(4 * kMiB * 1e-9).epsilon(1e-12));
  CHECK(t.steps[3].allocation_seconds == 0);
  REQUIRE(t.cold_allocations.size() == 3); // the two pinned blocks, cuda:1's pool
  // The pool's bound counts whole pages: of two freed 9 MiB + 1 blocks
  // (10 MiB each) a 16 MiB bound keeps one, and the second of two later
  // evictions of that size makes a block again.
  fhr::PoolOptions tight;
  tight.pinned_pool_bytes = 16 * kMiB;
  const std::uint64_t nine = 9 * kMiB + 1;
  const std::vector<TimelineStep> round_trip = {
      moved(0, gpu0, pinned, nine, 0), moved(1, gpu0, pinned, nine, 0), moved(0, pinned, gpu0, nine, 1),
      moved(1, pinned, gpu0, nine, 1), moved(0, gpu0, pinned, nine, 2), moved(1, gpu0, pinned, nine, 2)};
  t = fhr::predict_timeline(round_trip, model, cold_pools(tight));
  CHECK(t.steps[4].allocation_seconds == 0);
  CHECK(t.steps[5].allocation_seconds == doctest::Approx(10 * kMiB * 1e-9).epsilon(1e-12));
  // cudaHostAlloc blocks (huge pages off) are kept by the exact size.
  fhr::PoolOptions exact_sizes;
  exact_sizes.pinned_huge_pages = false;
  t = fhr::predict_timeline(steps, model, cold_pools(exact_sizes));
  CHECK(t.steps[1].allocation_seconds == doctest::Approx(4 * kMs).epsilon(1e-12));
  CHECK(t.steps[3].allocation_seconds == doctest::Approx((3 * kMiB + 1) * 1e-9).epsilon(1e-12));
}

TEST_CASE("timeline, cold pools: the first staged copy makes the staging buffers; a load allocates twice") {
  fhr::PoolOptions small_chunks;
  small_chunks.staging_chunk_bytes = kMB; // two bounce buffers of 1 MB: 2 ms
  std::vector<TimelineStep> steps = {copy_step(0, pageable, gpu0, 8 * kMB),
                                     copy_step(1, pageable, gpu0, 8 * kMB, false, 1)};
  fhr::Timeline t = fhr::predict_timeline(steps, allocating_model(), cold_pools(small_chunks));
  CHECK(t.steps[0].allocation_seconds == doctest::Approx(2.05 * kMs).epsilon(1e-12));
  // The runtime issues the copy once the device block is allocated; the
  // bounce buffers are made inside it.
  CHECK(t.steps[0].copy_issue_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  CHECK(t.steps[0].end_seconds == doctest::Approx(10.05 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].allocation_seconds == doctest::Approx(50e-6).epsilon(1e-12)); // the pool grows again
  CHECK(t.total_seconds == doctest::Approx(18.1 * kMs).epsilon(1e-12));

  // A load into cuda:0 from a source at pinned: a cold pinned block (2 ms)
  // and the device's (50 us), the fill (2 MB at 2 GB/s: 1 ms), the copy
  // (10 us + 2 ms); the temporary pinned block is kept for the next one.
  t = fhr::predict_timeline(
      std::vector<TimelineStep>{loaded(0, pinned, gpu0, 2 * kMB), loaded(1, pinned, gpu0, 2 * kMB, 1)},
      allocating_model(), cold_pools());
  CHECK(t.steps[0].allocation_seconds == doctest::Approx(2.05 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].copy_issue_seconds == doctest::Approx(3.05 * kMs).epsilon(1e-12)); // after the fill
  CHECK(t.steps[0].copy_start_seconds == doctest::Approx(3.05 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].end_seconds == doctest::Approx(5.06 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].allocation_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(5.06 * kMs + 3.06 * kMs).epsilon(1e-12));
}

TEST_CASE("timeline, cold pools: a device pool's growth waits for the copies on the device's other engine") {
  // An eviction of cuda:0 into pinned memory the pool keeps (a block freed
  // by an earlier phase), then two prefetches into cuda:0 that grow its
  // pool, in one window. Found on the H200: the first prefetch's growth
  // returned only when the eviction's copy ended (2.3 ms later, three runs
  // of evict-while-prefetch.fhr from cold pools), while the second's did
  // not wait for the first prefetch, whose copy ran on its own stream.
  const std::vector<TimelineStep> steps = {
      moved(9, pinned, gpu1, 2 * kMB, 0), // phase 0 frees a 2 MB pinned block
      moved(0, gpu0, pinned, 2 * kMB, 1), copy_step(1, pinned, gpu0, kMB, false, 1),
      copy_step(2, pinned, gpu0, kMB, false, 1), copy_step(3, gpu1, pageable, kMB, false, 1)};
  const fhr::Timeline t = fhr::predict_timeline(steps, allocating_model(), cold_pools());
  REQUIRE(t.windows == 2);
  const double begin = t.steps[0].commit_seconds;
  // The eviction finds the kept block: its copy runs at once, 2 ms alone.
  CHECK(t.steps[1].allocation_seconds == 0);
  CHECK(t.steps[1].copy_start_seconds == doctest::Approx(begin).epsilon(1e-12));
  CHECK(t.steps[1].end_seconds == doctest::Approx(begin + 2 * kMs).epsilon(1e-12));
  // The first prefetch's growth (50 us) returns with the eviction's end;
  // its copy then has the link alone: 10 us + 1 ms.
  CHECK(t.steps[2].start_seconds == doctest::Approx(begin).epsilon(1e-12));
  CHECK(t.steps[2].allocation_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  // The runtime issues the copy when the growth returns.
  CHECK(t.steps[2].copy_issue_seconds == doctest::Approx(begin + 2 * kMs).epsilon(1e-12));
  CHECK(t.steps[2].copy_start_seconds == doctest::Approx(begin + 2 * kMs).epsilon(1e-12));
  CHECK(t.steps[2].end_seconds == doctest::Approx(begin + 3.01 * kMs).epsilon(1e-12));
  // The second is started then, and its growth does not wait for the
  // first prefetch on its own engine: 50 us, then it queues behind it.
  CHECK(t.steps[3].start_seconds == doctest::Approx(begin + 2 * kMs).epsilon(1e-12));
  CHECK(t.steps[3].copy_start_seconds == doctest::Approx(begin + 3.01 * kMs).epsilon(1e-12));
  CHECK(t.steps[3].end_seconds == doctest::Approx(begin + 4.02 * kMs).epsilon(1e-12));
  // So the copy after it (cuda:1's outbound engine, idle) is started once
  // the second growth's 50 us are over, not when the first prefetch ends.
  CHECK(t.steps[4].start_seconds == doctest::Approx(begin + 2.05 * kMs).epsilon(1e-12));
  CHECK(t.steps[4].copy_start_seconds == doctest::Approx(begin + 2.05 * kMs).epsilon(1e-12));
  // Warm pools: the prefetches beside the eviction share the duplex rate.
  const fhr::Timeline warm = fhr::predict_timeline(steps, allocating_model());
  CHECK(warm.steps[2].copy_start_seconds < warm.steps[1].end_seconds);
}

TEST_CASE("timeline, cold pools: a growth waits for nothing but the copies on its device's outbound engine") {
  // A peer copy out of cuda:0 (carried by cuda:1's inbound engine), then a
  // peer copy into cuda:0 and a prefetch into cuda:0 that grow its pool:
  // neither growth waits for the first copy, nor the prefetch's for the
  // peer copy on its own engine.
  const std::vector<TimelineStep> steps = {
      copy_step(0, gpu0, gpu1, 2 * kMB), copy_step(1, gpu1, gpu0, 2 * kMB), copy_step(2, pinned, gpu0, kMB)};
  const fhr::Timeline t = fhr::predict_timeline(steps, allocating_model(), cold_pools());
  REQUIRE(t.windows == 1);
  CHECK(t.steps[0].engine == CopyQueue{CopyQueue::Kind::Inbound, 1});
  CHECK(t.steps[0].end_seconds == doctest::Approx(2.05 * kMs).epsilon(1e-12));
  // Each grows a pool (50 us) right after the one before it.
  CHECK(t.steps[1].start_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  CHECK(t.steps[1].copy_start_seconds == doctest::Approx(100e-6).epsilon(1e-12));
  CHECK(t.steps[2].start_seconds == doctest::Approx(100e-6).epsilon(1e-12));
  CHECK(t.steps[2].allocation_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  // The prefetch queues behind the peer copy on cuda:0's inbound engine.
  CHECK(t.steps[2].copy_start_seconds == doctest::Approx(t.steps[1].end_seconds).epsilon(1e-12));
  CHECK(t.steps[1].end_seconds == doctest::Approx(2.1 * kMs).epsilon(1e-12));
}

TEST_CASE("timeline, cold pools: fresh pageable pages and the device pool's growth per byte; what a warm-up "
          "reserves") {
  LinkModel model = allocating_model();
  model.pageable_first_touch_seconds_per_byte = 0.5e-9;
  model.device_growth_seconds_per_byte = 0.1e-9;
  // Two loads of 4 MB from a source in pageable memory into cuda:0, a
  // phase each (under the staged size: one plain copy each).
  const std::vector<TimelineStep> loads = {loaded(0, pageable, gpu0, 4 * kMB),
                                           loaded(1, pageable, gpu0, 4 * kMB, 1)};
  const fhr::Timeline t = fhr::predict_timeline(loads, model, cold_pools());
  // The first grows cuda:0's pool (50 us + 0.4 ms); its source fills 4 MB
  // at 2 GB/s (2 ms) into a fresh pageable block, whose pages its writes
  // fault in (2 ms more, part of the fill, where the runtime measures
  // them), then the copy (4 ms).
  CHECK(t.steps[0].allocation_seconds == doctest::Approx(0.45 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].source_load_seconds == doctest::Approx(4 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].copy_start_seconds == doctest::Approx(4.45 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].end_seconds == doctest::Approx(8.45 * kMs).epsilon(1e-12));
  // The second finds the pageable block the first freed (both 4 MiB once
  // rounded to whole huge pages, as the backend keeps them), and grows the
  // device pool by its own 4 MB.
  CHECK(t.steps[1].allocation_seconds == doctest::Approx(0.45 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].source_load_seconds == doctest::Approx(2 * kMs).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(14.9 * kMs).epsilon(1e-12));
  CHECK(t.allocation_seconds == doctest::Approx(2.9 * kMs).epsilon(1e-12));
  // What the cold pools could not serve, in order: the blocks a warm-up
  // reserves so that the same steps find them.
  REQUIRE(t.cold_allocations.size() == 3);
  CHECK(t.cold_allocations[0].location == pageable);
  CHECK(t.cold_allocations[1].location == gpu0);
  CHECK(t.cold_allocations[2].location == gpu0);
  for (const fhr::ColdAllocation &allocation : t.cold_allocations) {
    CHECK(allocation.bytes == 4 * kMB);
    CHECK_FALSE(allocation.staging);
  }
  // Warm pools: no cost and nothing cold; the fill stays.
  const fhr::Timeline warm = fhr::predict_timeline(loads, model);
  CHECK(warm.cold_allocations.empty());
  CHECK(warm.allocation_seconds == 0);
  CHECK(warm.total_seconds == doctest::Approx(12 * kMs).epsilon(1e-12));
  // Storage under the pageable pool's smallest block costs nothing and is
  // not reserved.
  const fhr::Timeline t2 =
      fhr::predict_timeline(std::vector<TimelineStep>{loaded(0, pageable, gpu0, kMB)}, model, cold_pools());
  REQUIRE(t2.cold_allocations.size() == 1);
  CHECK(t2.cold_allocations[0].location == gpu0);
}

namespace {
constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

/// allocating_model() with the H200 pool's 32 MiB granules and growth
/// charged 0.1 ns per byte.
LinkModel granular_model() {
  LinkModel model = allocating_model();
  model.device_growth_seconds_per_byte = 0.1e-9;
  model.device_pool_granule_bytes = 32 * kMiB;
  return model;
}
} // namespace

TEST_CASE("timeline, cold pools: a device pool reserves whole granules, the backend's start the first") {
  LinkModel model = granular_model();
  // As bench/pool_growth.cpp measured the H200's pool: 10 MiB fits in the
  // 32 MiB the backend's 2 MiB start reserved; 124 MiB beside it takes the
  // pool to 160 MiB, a growth of 128; 10 MiB more fits again.
  const std::vector<TimelineStep> steps = {copy_step(0, pinned, gpu0, 10 * kMiB, false, 0),
                                           copy_step(1, pinned, gpu0, 124 * kMiB, false, 1),
                                           copy_step(2, pinned, gpu0, 10 * kMiB, false, 2)};
  fhr::Timeline t = fhr::predict_timeline(steps, model, cold_pools());
  CHECK(t.steps[0].allocation_seconds == 0);
  CHECK(t.steps[1].allocation_seconds == doctest::Approx(50e-6 + 128 * kMiB * 0.1e-9).epsilon(1e-12));
  CHECK(t.steps[2].allocation_seconds == 0);
  REQUIRE(t.cold_allocations.size() == 1);
  CHECK(t.cold_allocations[0].bytes == 124 * kMiB); // the warm-up asks for the block, not the granules
  // By the byte without a granule (older profiles): each growth its own
  // size, the start reserving nothing.
  model.device_pool_granule_bytes = 0;
  t = fhr::predict_timeline(steps, model, cold_pools());
  CHECK(t.steps[0].allocation_seconds == doctest::Approx(50e-6 + 10 * kMiB * 0.1e-9).epsilon(1e-12));
  CHECK(t.steps[1].allocation_seconds == doctest::Approx(50e-6 + 124 * kMiB * 0.1e-9).epsilon(1e-12));
  CHECK(t.cold_allocations.size() == 3);
}

TEST_CASE("timeline: copies through the host's memory at once share its bandwidth by the bytes each moves "
          "there") {
  // A 2 MB eviction (1 GB/s, one byte of host memory a byte) and a 1 MB
  // host copy after it in one window (1 GB/s, two bytes a byte: read and
  // written), 2 GB/s of host memory: together they would move 3 GB/s
  // through it, so each runs at 2/3 of its rate until the host copy ends.
  LinkModel model = round_model();
  model.host_memory_bytes_per_second = 2e9;
  const std::vector<TimelineStep> steps = {copy_step(0, gpu0, pinned, 2 * kMB, true),
                                           copy_step(1, pageable, pinned, kMB, true)};
  fhr::Timeline t = fhr::predict_timeline(steps, model);
  // The host copy: 1 MB at 2/3 GB/s, 1.5 ms, while the eviction moves 1 MB;
  // its other 1 MB alone at 1 GB/s.
  CHECK(t.steps[1].end_seconds == doctest::Approx(1.5 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].end_seconds == doctest::Approx(2.5 * kMs).epsilon(1e-12));
  // A figure either alone exceeds is the larger one's own demand: a copy
  // is never slower beside another than alone. 1.5 GB/s: the host copy's
  // 2 GB/s of demand is the capacity, each at 2/3 as above.
  model.host_memory_bytes_per_second = 1.5e9;
  t = fhr::predict_timeline(steps, model);
  CHECK(t.steps[1].end_seconds == doctest::Approx(1.5 * kMs).epsilon(1e-12));
  // Without the figure (older profiles) both run at their own rates.
  model.host_memory_bytes_per_second = 0;
  t = fhr::predict_timeline(steps, model);
  CHECK(t.steps[1].end_seconds == doctest::Approx(1 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].end_seconds == doctest::Approx(2 * kMs).epsilon(1e-12));
  // A peer copy moves nothing through the host: beside a host copy, both
  // at their own rates whatever the figure.
  model.host_memory_bytes_per_second = 1e9;
  const std::vector<TimelineStep> peer = {copy_step(0, gpu1, gpu0, 2 * kMB, true),
                                          copy_step(1, pageable, pinned, kMB, true)};
  t = fhr::predict_timeline(peer, model);
  CHECK(t.steps[0].end_seconds == doctest::Approx(2 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].end_seconds == doctest::Approx(1 * kMs).epsilon(1e-12));
}

TEST_CASE("share_host_memory: in proportion, never below alone, only between copies that touch the host") {
  std::array<double, 3> rates = {1e9, 1e9, 5e9};
  const std::array<unsigned, 3> traffic = {1, 2, 0};
  fhr::share_host_memory(rates, traffic, 1.5e9); // demand 3 GB/s, capacity 2 (the larger alone)
  CHECK(rates[0] == doctest::Approx(2.0 / 3 * 1e9).epsilon(1e-12));
  CHECK(rates[1] == doctest::Approx(2.0 / 3 * 1e9).epsilon(1e-12));
  CHECK(rates[2] == 5e9);
  // One copy alone keeps its rate however little the figure.
  std::array<double, 2> alone = {4e9, 3e9};
  const std::array<unsigned, 2> one_touching = {2, 0};
  fhr::share_host_memory(alone, one_touching, 1e9);
  CHECK(alone[0] == 4e9);
  // Under the figure: unchanged.
  std::array<double, 2> under = {1e9, 1e9};
  const std::array<unsigned, 2> both = {1, 2};
  fhr::share_host_memory(under, both, 3e9);
  CHECK(under[0] == 1e9);
  CHECK(under[1] == 1e9);
}

TEST_CASE("timeline, cold pools: replicas resident before the steps fill the device pool; a warm-up reserves "
          "the most each pool held") {
  const LinkModel model = granular_model();
  // inference.fhr's enter: the 15 MiB weight, the 120 MiB key, the 30 MiB
  // query. The weight fits the start's 32 MiB; the key grows the pool to
  // 160 MiB; the query (165 MiB in use) to 192.
  const std::vector<TimelineStep> steps = {copy_step(0, pinned, gpu0, 15 * kMiB, false, 0),
                                           copy_step(1, pinned, gpu0, 120 * kMiB, false, 1),
                                           copy_step(2, pinned, gpu0, 30 * kMiB, false, 2)};
  fhr::Timeline t = fhr::predict_timeline(steps, model, cold_pools());
  CHECK(t.cold_allocations.size() == 2);
  CHECK(t.device_peaks[0] == 165 * kMiB);
  CHECK(t.device_peaks[1] == 0);
  // The warm-up grows the pool by one block of the 165 MiB: the missed
  // blocks alone (150 MiB) would leave the query's growth in the run.
  std::array<std::uint64_t, Location::kCount> resident{};
  CHECK(fhr::warm_up_blocks(t.cold_allocations, resident, t.device_peaks, 4 * kMiB) ==
        std::vector<fhr::WarmUpBlock>{{gpu0, 165 * kMiB}});

  // A 30 MiB replica resident on cuda:0 before the steps (setup's) holds
  // the start's granule: the 15 MiB weight alone now grows the pool.
  fhr::TimelineOptions options = cold_pools();
  options.resident_before[gpu0.index()] = 30 * kMiB;
  const std::vector<TimelineStep> weight = {copy_step(0, pinned, gpu0, 15 * kMiB)};
  t = fhr::predict_timeline(weight, model, options);
  CHECK(t.steps[0].allocation_seconds == doctest::Approx(50e-6 + 32 * kMiB * 0.1e-9).epsilon(1e-12));
  REQUIRE(t.cold_allocations.size() == 1);
  CHECK(t.device_peaks[0] == 45 * kMiB);
  // ... and the warm-up reserves the 15 MiB beyond the resident replica.
  CHECK(fhr::warm_up_blocks(t.cold_allocations, options.resident_before, t.device_peaks, 4 * kMiB) ==
        std::vector<fhr::WarmUpBlock>{{gpu0, 15 * kMiB}});
  // Without it the weight fits the start granule: the model charges no
  // growth, and the warm-up still hands the pool its block (the first
  // block beyond the start block took 20-45 µs on the H200 without).
  t = fhr::predict_timeline(weight, model, cold_pools());
  CHECK(t.cold_allocations.empty());
  CHECK(t.steps[0].allocation_seconds == 0);
  CHECK(fhr::warm_up_blocks(t.cold_allocations, resident, t.device_peaks, 4 * kMiB) ==
        std::vector<fhr::WarmUpBlock>{{gpu0, 15 * kMiB}});
  // Host blocks are asked for as they missed, the bounce buffers as one
  // block of the staged size, before the devices'.
  const std::vector<fhr::ColdAllocation> host = {{pinned, 10 * kMiB}, {pageable, 64 * kMiB, true}};
  fhr::DevicePeaks peaks{};
  peaks[1] = 8 * kMiB;
  CHECK(fhr::warm_up_blocks(host, resident, peaks, 4 * kMiB) ==
        std::vector<fhr::WarmUpBlock>{{pinned, 10 * kMiB}, {pageable, 4 * kMiB}, {gpu1, 8 * kMiB}});
  // A device pool a few bytes beyond its resident replicas: a block the
  // pool serves itself (one of 1 MiB or less would come from the backend's
  // small-block cache); one that held nothing beyond them: none.
  peaks = {32 * kMiB + 4096, 16 * kMiB};
  resident[gpu0.index()] = 32 * kMiB;
  resident[gpu1.index()] = 16 * kMiB;
  CHECK(fhr::warm_up_blocks({}, resident, peaks, 4 * kMiB) ==
        std::vector<fhr::WarmUpBlock>{{gpu0, fhr::kDeviceSmallBlockMaxBytes + 1}});
}

TEST_CASE(
    "timeline: a value charged more than its logical size moves, fills and allocates its logical bytes") {
  // bootstrapping.fhr's keys: 120 MiB of key charged as 124 MiB. The
  // manager allocates and copies 120 MiB, so the copy time, the fill and
  // the blocks a warm-up must reserve (the pools keep blocks by the size
  // asked for, in whole huge pages) go by 120 MiB; the window's budget
  // rule still charges 124.
  LinkModel model = allocating_model();
  TimelineStep key = loaded(0, pageable, gpu0, 120 * kMB);
  key.storage_bytes = 124 * kMB;
  const fhr::Timeline t = fhr::predict_timeline(std::vector<TimelineStep>{key}, model, cold_pools());
  // Fill: 120 MB at 2 GB/s; copy: the model's pageable -> cuda:0 curve at 120 MB.
  CHECK(t.steps[0].source_load_seconds == doctest::Approx(60 * kMs).epsilon(1e-12));
  CHECK(t.steps[0].end_seconds - t.steps[0].copy_start_seconds ==
        doctest::Approx(model.load_transfer_seconds(pageable, gpu0, 120 * kMB)).epsilon(1e-9));
  // The source's block, the device's and (a staged copy) the bounce buffers.
  REQUIRE(t.cold_allocations.size() == 3);
  CHECK(t.cold_allocations[0].location == pageable);
  CHECK(t.cold_allocations[0].bytes == 120 * kMB);
  CHECK(t.cold_allocations[1].location == gpu0);
  CHECK(t.cold_allocations[1].bytes == 120 * kMB);
  CHECK(t.cold_allocations[2].staging);

  // A plain copy of such a value: 120 MB at pinned -> cuda:0's rate.
  TimelineStep copied = copy_step(1, pinned, gpu0, 120 * kMB);
  copied.storage_bytes = 124 * kMB;
  const fhr::Timeline c = fhr::predict_timeline(std::vector<TimelineStep>{copied}, model);
  CHECK(c.total_seconds == doctest::Approx(model.transfer_seconds(pinned, gpu0, 120 * kMB)).epsilon(1e-12));
}

TEST_CASE("timeline: a device's first DMA in after the processor's work on host memory pays the profile's "
          "extra") {
  LinkModel model = round_model();
  model.dma_after_host_work_seconds = 50e-6;
  constexpr std::uint64_t kStaged = 8 * kMB; // staged from 4 MiB
  // One window a step (a group each), in this order:
  const std::vector<TimelineStep> steps = {
      copy_step(0, pinned, gpu0, kMB, true, 0),       // 0: after the setup's fills: pays
      copy_step(0, gpu0, pinned, kMB, true, 1),       // 1: out of the device: never pays
      copy_step(0, pinned, gpu0, kMB, true, 2),       // 2: a DMA in since the host's work
      copy_step(1, pageable, pinned, kMB, true, 3),   // 3: a host copy: the processor's work
      copy_step(1, pinned, gpu1, kMB, true, 4),       // 4: cuda:1's first DMA in: pays
      copy_step(2, pinned, gpu0, kMB, false, 5),      // 5: after the host copy: pays
      loaded(3, pageable, gpu0, kStaged, 6),          // 6: a fill, then a staged copy in: clears cuda:0
      copy_step(4, pinned, gpu0, kMB, false, 7),      // 7: does not pay
      loaded(5, pinned, gpu0, kMB, 8),                // 8: its own fill before its DMA: pays
      copy_step(3, gpu0, pageable, kStaged, true, 9), // 9: a staged copy out writes pageable memory
      copy_step(6, pinned, gpu0, kMB, false, 10),     // 10: pays
  };
  const std::vector<double> pays = {50e-6, 0, 0, 0, 50e-6, 50e-6, 0, 0, 50e-6, 0, 50e-6};
  fhr::Timeline t = fhr::predict_timeline(steps, model);
  check_dma_extras(t, pays);
  // On the engine, as part of the copy: 10 us + 1 ms + 50 us.
  CHECK(t.steps[0].end_seconds == doctest::Approx(1.06 * kMs).epsilon(1e-12));
  CHECK(t.steps[2].end_seconds - t.steps[2].start_seconds == doctest::Approx(1.01 * kMs).epsilon(1e-12));
  // A load's extra comes after its fill (1 MB at 2 GB/s), before its copy.
  CHECK(t.steps[8].end_seconds - t.steps[8].start_seconds == doctest::Approx(1.56 * kMs).epsilon(1e-12));
  const double total = t.total_seconds;

  // Without the setup's work the first DMA in pays nothing; the rest alike.
  const fhr::TimelineOptions options = after_own_dmas();
  t = fhr::predict_timeline(steps, model, options);
  CHECK(t.steps[0].dma_extra.after_host_work_seconds == 0);
  CHECK(t.steps[4].dma_extra.after_host_work_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(total - 50e-6).epsilon(1e-12));

  // A profile without the figure (made before it was measured): no extra.
  t = fhr::predict_timeline(steps, round_model());
  double paid = 0;
  for (double extra : pays)
    paid += extra;
  CHECK(t.total_seconds == doctest::Approx(total - paid).epsilon(1e-12));
  for (const fhr::StepTime &time : t.steps)
    CHECK(time.dma_extra.after_host_work_seconds == 0);
}

TEST_CASE("timeline: a staged copy into a device after the processor's work on other values' bytes pays the "
          "profile's staged extra; after its own value's, or a load's own fill, nothing") {
  LinkModel model = round_model();
  model.staged_after_host_work_seconds = 80e-6;
  model.dma_after_host_work_seconds = 50e-6;
  constexpr std::uint64_t kStaged = 8 * kMB; // staged from 4 MiB
  // One window a step (a group each), in this order:
  const std::vector<TimelineStep> steps = {
      copy_step(0, pageable, gpu0, kStaged, true, 0), // 0: after the setup's fills: pays
      copy_step(1, pageable, gpu0, kStaged, true, 1), // 1: cuda:0 had a DMA in since: nothing
      copy_step(0, gpu0, pageable, kStaged, true, 2), // 2: out: the processor writes value 0's bytes
      copy_step(0, pageable, gpu0, kStaged, true, 3), // 3: after its own value's work (the curve's): nothing
      copy_step(2, pinned, pageable, kMB, true, 4),   // 4: a host copy of another value
      copy_step(0, pageable, gpu0, kStaged, true, 5), // 5: after that work: pays
      loaded(3, pageable, gpu0, kStaged, 6),          // 6: after its own fill (the load curve's): nothing
      copy_step(1, pageable, gpu1, kStaged, true, 7), // 7: cuda:1's first DMA in since value 3's load: pays
      copy_step(2, pinned, gpu1, kMB, true, 8),       // 8: a DMA in since: nothing
  };
  const std::vector<double> pays = {80e-6, 0, 0, 0, 0, 80e-6, 0, 80e-6, 0};
  fhr::Timeline t = fhr::predict_timeline(steps, model);
  check_dma_extras(t, pays);
  using fhr::DmaState;
  const std::vector<DmaState> states = {DmaState::AfterHostWork, DmaState::None,
                                        DmaState::None,          DmaState::None,
                                        DmaState::None,          DmaState::AfterHostWork,
                                        DmaState::None,          DmaState::AfterHostWork,
                                        DmaState::ColdValue}; // 8: its bytes crossed no link since step 4
  for (std::size_t k = 0; k < steps.size(); ++k) {
    CAPTURE(k);
    CHECK(t.steps[k].dma_extra.state == states[k]);
  }
  // The staged curve (8 MB at 1 GB/s, all on the engine: the pinned link
  // would take longer), then the extra.
  CHECK(t.steps[0].end_seconds - t.steps[0].start_seconds == doctest::Approx(8.08 * kMs).epsilon(1e-12));
  const double total = t.total_seconds;

  // Without the setup's work the first copy pays nothing; the others alike.
  t = fhr::predict_timeline(steps, model, after_own_dmas());
  CHECK(t.steps[0].dma_extra.after_host_work_seconds == 0);
  CHECK(t.steps[5].dma_extra.after_host_work_seconds == doctest::Approx(80e-6).epsilon(1e-12));
  CHECK(t.total_seconds == doctest::Approx(total - 80e-6).epsilon(1e-12));

  // A profile without the figure (made before it was measured): no staged
  // copy pays, and each still meets its state.
  LinkModel without = model;
  without.staged_after_host_work_seconds.reset();
  t = fhr::predict_timeline(steps, without);
  check_dma_extras(t, std::vector<double>(steps.size(), 0.0));
  CHECK(t.total_seconds == doctest::Approx(total - 3 * 80e-6).epsilon(1e-12));
  for (std::size_t k = 0; k < steps.size(); ++k) {
    CAPTURE(k);
    CHECK(t.steps[k].dma_extra.state == states[k]);
  }
}

TEST_CASE("timeline: a staged copy's extra after host work goes by the device, as a DMA's does, and not "
          "below the staging threshold") {
  LinkModel model = round_model();
  model.staged_after_host_work_seconds = 80e-6;
  constexpr std::uint64_t kStaged = 8 * kMB;
  auto pays = [&](const std::vector<TimelineStep> &steps) {
    std::vector<double> out;
    for (const fhr::StepTime &time : fhr::predict_timeline(steps, model).steps)
      out.push_back(time.dma_extra.after_host_work_seconds);
    return out;
  };
  // Two staged copies into cuda:0 after the setup: the second follows a DMA
  // into the device (the first's); into cuda:1 it is that device's first.
  CHECK(pays({copy_step(0, pageable, gpu0, kStaged, true, 0),
              copy_step(1, pageable, gpu0, kStaged, true, 1)}) == std::vector<double>{80e-6, 0});
  CHECK(pays({copy_step(0, pageable, gpu0, kStaged, true, 0),
              copy_step(1, pageable, gpu1, kStaged, true, 1)}) == std::vector<double>{80e-6, 80e-6});
  // Another value's load into the device clears it (its copy is the
  // device's DMA in); into pinned memory it is the processor's work.
  CHECK(pays({loaded(0, pageable, gpu0, kStaged, 0), copy_step(1, pageable, gpu0, kStaged, true, 1)}) ==
        std::vector<double>{0, 0});
  CHECK(pays({loaded(0, pageable, pinned, kStaged, 0), copy_step(1, pageable, gpu0, kStaged, true, 1)}) ==
        std::vector<double>{0, 80e-6});
  // Another value's move out of a device into pageable memory is the
  // processor's work on its bytes.
  CHECK(pays({copy_step(0, pinned, gpu0, kMB, true, 0), copy_step(0, gpu0, pageable, kStaged, true, 1),
              copy_step(1, pageable, gpu0, kStaged, true, 2)}) == std::vector<double>{0, 0, 80e-6});
  // Two in one window: the first pays, the second follows its DMA.
  CHECK(pays({copy_step(0, pageable, gpu0, kStaged, true, 0),
              copy_step(1, pageable, gpu0, kStaged, true, 0)}) == std::vector<double>{80e-6, 0});
  // Below the staging threshold (the driver's path): not measured, no state.
  const fhr::Timeline small =
      fhr::predict_timeline(std::vector<TimelineStep>{copy_step(0, pageable, gpu0, kMB)}, model);
  CHECK(small.steps[0].dma_extra.after_host_work_seconds == 0);
  CHECK(small.steps[0].dma_extra.state == fhr::DmaState::None);
}

TEST_CASE("timeline: in a window the DMAs in pay after host work in plan order") {
  LinkModel model = round_model();
  model.dma_after_host_work_seconds = 50e-6;
  // One window: the first DMA into cuda:0 pays, the second into it does
  // not, cuda:1's first does; the extra holds the engine (the second copy
  // into cuda:0 waits for it).
  const std::vector<TimelineStep> steps = {copy_step(0, pinned, gpu0, kMB), copy_step(1, pinned, gpu0, kMB),
                                           copy_step(2, pinned, gpu1, kMB)};
  const fhr::Timeline t = fhr::predict_timeline(steps, model);
  CHECK(t.windows == 1);
  CHECK(t.steps[0].dma_extra.after_host_work_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  CHECK(t.steps[1].dma_extra.after_host_work_seconds == 0);
  CHECK(t.steps[2].dma_extra.after_host_work_seconds == doctest::Approx(50e-6).epsilon(1e-12));
  CHECK(t.steps[1].copy_start_seconds == doctest::Approx(1.06 * kMs).epsilon(1e-12));
  CHECK(t.steps[1].end_seconds == doctest::Approx(2.07 * kMs).epsilon(1e-12));
  CHECK(t.steps[2].end_seconds == doctest::Approx(1.06 * kMs).epsilon(1e-12));
}

TEST_CASE("timeline: what sets, clears and leaves the host work state: host copies both ways, a fill, a "
          "peer copy, a small copy from pageable memory") {
  LinkModel model = round_model();
  model.dma_after_host_work_seconds = 50e-6;
  const fhr::TimelineOptions options = after_own_dmas();
  const std::vector<TimelineStep> steps = {
      copy_step(0, pageable, pinned, kMB, false, 0), // a host copy, then in its window
      copy_step(1, pinned, gpu0, kMB, false, 0),     // a DMA in after it: pays
      copy_step(2, gpu1, gpu0, kMB, false, 1),       // a peer copy: neither pays nor clears
      copy_step(3, pinned, gpu0, kMB, false, 2),     // still clear
      copy_step(4, pinned, pageable, kMB, false, 3), // a host copy the other way
      copy_step(5, pinned, gpu0, kMB, false, 4),     // pays
      loaded(6, pageable, pageable, kMB, 5),         // a fill alone
      copy_step(7, pageable, gpu0, kMB, false, 6),   // below the staging threshold: clears cuda:0 ...
      copy_step(8, pinned, gpu0, kMB, false, 7),     // ... so this does not pay
      copy_step(9, pinned, gpu1, kMB, false, 8),     // cuda:1's first DMA in since the fill: pays
  };
  const fhr::Timeline t = fhr::predict_timeline(steps, model, options);
  CHECK(t.steps[0].window == t.steps[1].window);
  const std::vector<double> pays = {0, 50e-6, 0, 0, 0, 50e-6, 0, 0, 0, 50e-6};
  check_dma_extras(t, pays);
  // The DMA after the host copy starts once the host copy is done (1 ms)
  // and holds its engine 10 us + 50 us + 1 ms.
  CHECK(t.steps[1].end_seconds == doctest::Approx(2.06 * kMs).epsilon(1e-12));
}

TEST_CASE(
    "timeline: a DMA of a value whose bytes have not crossed its device's link since the processor's work "
    "pays the cold value's extra, either way") {
  LinkModel model = round_model();
  model.dma_after_host_work_seconds = 50e-6;
  model.dma_cold_value_seconds = 20e-6;
  model.dma_follow_on_seconds = 5e-6;
  constexpr std::uint64_t kStaged = 8 * kMB; // staged from 4 MiB
  // One window a step (a group each), in this order:
  const std::vector<TimelineStep> steps = {
      copy_step(0, pinned, gpu0, kMB, true, 0), // 0: after the setup's fills: the extra after host work
      copy_step(0, gpu0, pinned, kMB, true,
                1), // 1: its own move back: warm, right after its step 0: follow-on
      copy_step(1, pinned, gpu0, kMB, true, 2), // 2: never crossed since setup: cold
      copy_step(0, pinned, gpu0, kMB, true, 3), // 3: other values' DMAs leave it warm (and not its follow-on)
      loaded(2, pageable, gpu0, kStaged, 4),    // 4: a load: the processor's work, then its copy
      copy_step(0, gpu0, pinned, kMB, true, 5), // 5: out, cold since the load's fill
      copy_step(1, gpu0, pinned, kMB, true, 6), // 6: the same
      copy_step(1, pinned, gpu1, kMB, true, 7), // 7: cuda:1's first DMA in since the fill: after host work
      copy_step(1, gpu1, pinned, kMB, true, 8), // 8: warm on cuda:1, right after its step 7: follow-on
      copy_step(1, pinned, gpu0, kMB, true,
                9), // 9: crossed cuda:0's link in step 6, cuda:0's last: follow-on
      copy_step(3, gpu0, gpu1, kMB, false, 10),        // 10: a peer copy pays nothing ...
      copy_step(3, gpu1, pinned, kMB, true, 11),       // 11: ... and leaves it as cold as it was
      copy_step(2, gpu0, pageable, kStaged, true, 12), // 12: a staged copy out: the processor's work
      copy_step(0, pinned, gpu0, kMB, true, 13),       // 13: after host work
      copy_step(4, gpu1, pinned, kMB, true, 14), // 14: out of cuda:1: cold (no extra after host work out)
  };
  const std::vector<double> after_host_work = {50e-6, 0, 0, 0, 0, 0, 0, 50e-6, 0, 0, 0, 0, 0, 50e-6, 0};
  const std::vector<double> cold = {0, 0, 20e-6, 0, 0, 20e-6, 20e-6, 0, 0, 0, 0, 20e-6, 0, 0, 20e-6};
  const std::vector<double> follow_on = {0, 5e-6, 0, 0, 0, 0, 0, 0, 5e-6, 5e-6, 0, 0, 0, 0, 0};
  fhr::Timeline t = fhr::predict_timeline(steps, model);
  check_dma_extras(t, after_host_work, cold, follow_on);
  // On the engine, as part of the copy: 10 us + 1 ms + 20 us.
  CHECK(t.steps[2].end_seconds - t.steps[2].start_seconds == doctest::Approx(1.03 * kMs).epsilon(1e-12));
  // Out of the device (1 ms + 20 us: the outbound link has no fixed cost here).
  CHECK(t.steps[5].end_seconds - t.steps[5].start_seconds == doctest::Approx(1.02 * kMs).epsilon(1e-12));
  const double total = t.total_seconds;

  // After its own values' DMAs alone (the calibration's windows) nothing
  // is cold until the processor's work: steps 0 and 2 pay nothing, nor
  // step 1 (step 0 met no extra's state).
  const fhr::TimelineOptions options = after_own_dmas();
  t = fhr::predict_timeline(steps, model, options);
  check_dma_extras(t, {0, 0, 0, 0, 0, 0, 0, 50e-6, 0, 0, 0, 0, 0, 50e-6, 0},
                   {0, 0, 0, 0, 0, 20e-6, 20e-6, 0, 0, 0, 0, 20e-6, 0, 0, 20e-6},
                   {0, 0, 0, 0, 0, 0, 0, 0, 5e-6, 5e-6, 0, 0, 0, 0, 0});
  CHECK(t.total_seconds == doctest::Approx(total - 75e-6).epsilon(1e-12));

  // A profile without the figure (made before it was measured): no extra.
  // The follow-ons keep theirs: step 6 still met a cold value's state
  // (step 9's), step 7 the state after host work (step 8's).
  model.dma_cold_value_seconds.reset();
  t = fhr::predict_timeline(steps, model);
  CHECK(t.total_seconds == doctest::Approx(total - 100e-6).epsilon(1e-12));
  for (const fhr::StepTime &time : t.steps)
    CHECK(time.dma_extra.cold_value_seconds == 0);
  check_dma_extras(t, after_host_work, {}, follow_on);
}

TEST_CASE(
    "timeline: a value's DMA right after its own DMA that met an extra's state pays the follow-on figure") {
  LinkModel model = round_model();
  model.dma_after_host_work_seconds = 50e-6;
  model.dma_cold_value_seconds = 20e-6;
  model.dma_follow_on_seconds = 5e-6;
  const std::vector<TimelineStep> steps = {
      copy_step(0, pinned, gpu0, kMB, true, 0),  // 0: after the setup's fills
      copy_step(0, gpu0, pinned, kMB, true, 1),  // 1: straight after it: follow-on
      copy_step(0, pinned, gpu0, kMB, true, 2),  // 2: after a follow-on: warm, nothing (no chain)
      copy_step(1, pinned, gpu0, kMB, true, 3),  // 3: cold
      copy_step(0, gpu0, pinned, kMB, true, 4),  // 4: another value's DMA came last: nothing
      copy_step(1, gpu0, pinned, kMB, true, 5),  // 5: its step 3 met a cold state, but step 4 came between
      loaded(2, pageable, gpu0, 2 * kMB, 6),     // 6: a load: the processor's work, then its copy
      copy_step(1, pinned, gpu0, kMB, true, 7),  // 7: cold
      loaded(3, pageable, gpu0, 2 * kMB, 8),     // 8: another load: its copy is cuda:0's last DMA
      copy_step(1, gpu0, pinned, kMB, true, 9),  // 9: cold again (the fill), not a follow-on
      copy_step(1, pinned, gpu0, kMB, true, 10), // 10: straight after the cold step 9: follow-on
  };
  const fhr::Timeline t = fhr::predict_timeline(steps, model);
  check_dma_extras(t, {50e-6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 20e-6, 0, 0, 0, 20e-6, 0, 20e-6, 0},
                   {0, 5e-6, 0, 0, 0, 0, 0, 0, 0, 0, 5e-6});
  using fhr::DmaState;
  const std::vector<DmaState> states = {DmaState::AfterHostWork, DmaState::FollowOn,  DmaState::None,
                                        DmaState::ColdValue,     DmaState::None,      DmaState::None,
                                        DmaState::None,          DmaState::ColdValue, DmaState::None,
                                        DmaState::ColdValue,     DmaState::FollowOn};
  for (std::size_t k = 0; k < states.size(); ++k) {
    CAPTURE(k);
    CHECK(t.steps[k].dma_extra.state == states[k]);
  }
  // On the engine, as part of the copy (out of the device: 1 ms + 5 us).
  CHECK(t.steps[1].end_seconds - t.steps[1].start_seconds == doctest::Approx(1.005 * kMs).epsilon(1e-12));

  // A profile without the figure: none, the states the same.
  model.dma_follow_on_seconds.reset();
  const fhr::Timeline without = fhr::predict_timeline(steps, model);
  CHECK(without.total_seconds == doctest::Approx(t.total_seconds - 10e-6).epsilon(1e-12));
  for (std::size_t k = 0; k < states.size(); ++k) {
    CHECK(without.steps[k].dma_extra.follow_on_seconds == 0);
    CHECK(without.steps[k].dma_extra.state == states[k]);
  }
}

TEST_CASE("timeline: a peer copy is its devices' last copy, and a follow-on never makes another") {
  LinkModel model = round_model();
  model.dma_cold_value_seconds = 20e-6;
  model.dma_follow_on_seconds = 5e-6;
  const std::vector<TimelineStep> steps = {
      copy_step(0, pinned, gpu0, kMB, true, 0), // 0: after host work (no figure: cold's)
      copy_step(1, gpu0, gpu1, kMB, false, 1),  // 1: another value's peer copy out of cuda:0
      copy_step(0, gpu0, pinned, kMB, true, 2), // 2: cuda:0's last copy was the peer copy: none
      copy_step(0, pinned, gpu1, kMB, true, 3), // 3: cuda:1's first DMA in after host work (cold too)
      copy_step(0, pinned, gpu0, kMB, true, 4), // 4: after its own move out: warm, its last met nothing
      copy_step(0, gpu1, pinned, kMB, true, 5), // 5: straight after step 3 on cuda:1: follow-on
      copy_step(0, gpu0, pinned, kMB, true, 6), // 6: no chain: step 4 met nothing
  };
  const fhr::Timeline t = fhr::predict_timeline(steps, model);
  using fhr::DmaState;
  const std::vector<DmaState> states = {DmaState::AfterHostWork, DmaState::None, DmaState::None,
                                        DmaState::AfterHostWork, DmaState::None, DmaState::FollowOn,
                                        DmaState::None};
  for (std::size_t k = 0; k < states.size(); ++k) {
    CAPTURE(k);
    CHECK(t.steps[k].dma_extra.state == states[k]);
  }
  // Without the figure after host work, the cold value's pays for it.
  check_dma_extras(t, {0, 0, 0, 0, 0, 0, 0}, {20e-6, 0, 0, 20e-6, 0, 0, 0}, {0, 0, 0, 0, 0, 5e-6, 0});
  CHECK(fhr::dma_state_name(DmaState::FollowOn) == "follow-on");
  CHECK(fhr::dma_state_name(DmaState::None) == "none");

  // A value set up on cuda:0, out cold, back in warm as the device's first
  // DMA in after host work: that state, not a follow-on, whether or not
  // the profile has its figure; then its move out is the follow-on.
  const std::vector<TimelineStep> back = {copy_step(0, gpu0, pinned, kMB, true, 0),
                                          copy_step(0, pinned, gpu0, kMB, true, 1),
                                          copy_step(0, gpu0, pinned, kMB, true, 2)};
  const fhr::Timeline returned = fhr::predict_timeline(back, model);
  CHECK(returned.steps[0].dma_extra.state == DmaState::ColdValue);
  CHECK(returned.steps[1].dma_extra.state == DmaState::AfterHostWork);
  CHECK(returned.steps[2].dma_extra.state == DmaState::FollowOn);
  check_dma_extras(returned, {0, 0, 0}, {20e-6, 0, 0}, {0, 0, 5e-6});
}

TEST_CASE("timeline: in a window each cold value's DMA pays on its own engine, in plan order") {
  LinkModel model = round_model();
  model.dma_cold_value_seconds = 20e-6;
  const fhr::TimelineOptions options = after_own_dmas();
  // A host copy makes every value cold; an eviction of one of them; one
  // window of two prefetches of others, cold; the evicted one back, warm.
  const std::vector<TimelineStep> steps = {
      copy_step(9, pageable, pinned, kMB, false, 0), copy_step(0, gpu0, pinned, kMB, true, 1),
      copy_step(1, pinned, gpu0, kMB, true, 2), copy_step(2, pinned, gpu0, kMB, true, 2),
      copy_step(0, pinned, gpu0, kMB, true, 3)};
  const fhr::Timeline t = fhr::predict_timeline(steps, model, options);
  CHECK(t.windows == 4);
  CHECK(t.steps[2].window == t.steps[3].window);
  check_dma_extras(t, {0, 0, 0, 0, 0}, {0, 20e-6, 20e-6, 20e-6, 0});
  // The two cold prefetches queue on cuda:0's inbound engine, each 10 us +
  // 1 ms + 20 us, after the host copy's 1 ms and the eviction's 1 ms + 20 us.
  CHECK(t.steps[3].end_seconds == doctest::Approx((1 + 1.02 + 2 * 1.03) * kMs).epsilon(1e-9));
}
