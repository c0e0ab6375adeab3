// `fhr-plan calibrate`'s series and fit on the simulated device backend and
// a simulated clock that charges what a stand-in profile predicts: the fit
// must give the stand-in's figures back.
#include "calibrate.hpp"
#include "calibrate_series.hpp"

#include "fhr/model/timeline.hpp"
#include "fhr/runtime/simulated_backend.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

using fhr::LinkKind;
using fhr::LinkModel;
using fhr::Location;

namespace {

constexpr std::uint64_t kBytes = std::uint64_t{1} << 20;

/// A simulated clock that charges the windows of a DMA beside a host copy
/// `factor` times what the stand-in predicts.
class SlowWindowsClock final : public fhr::calibrate::Clock {
public:
  SlowWindowsClock(const LinkModel &stand_in, double factor) : inner_(stand_in), factor_(factor) {}
  double time(const std::function<void()> &call, const fhr::calibrate::Operation &operation) override {
    const double seconds = inner_.time(call, operation);
    return operation.kind == fhr::calibrate::Operation::Kind::BesideHostCopy ? seconds * factor_ : seconds;
  }

private:
  fhr::calibrate::SimulatedClock inner_;
  double factor_;
};

/// The calibration of a two-device simulated backend up to 1 MiB, one
/// timed round, on a clock charging `stand_in`'s predictions (the windows
/// of a DMA beside a host copy `window_factor` times them).
fhr::calibrate::Result calibrate_against(const LinkModel &stand_in, const LinkModel &defaults,
                                         double window_factor = 1, std::uint64_t max_bytes = kBytes) {
  fhr::ManagerOptions options;
  options.backend = std::make_shared<fhr::SimulatedBackend>(2, /*overlap_copies=*/true);
  fhr::Manager manager(std::move(options));
  SlowWindowsClock clock(stand_in, window_factor);
  fhr::calibrate::Options measure;
  measure.max_bytes = max_bytes;
  measure.repetitions = 1;
  measure.devices = 2;
  fhr::calibrate::FixedCosts fixed;
  return fhr::calibrate::calibrate(manager, clock, measure, fixed, nullptr, defaults);
}

/// Bytes of host memory a second the copy from `from` to `to` of kBytes
/// moves alone (its rate, by what it reads and writes there).
double demand(const LinkModel &links, Location from, Location to) {
  return links.curve(*fhr::link_between(from, to)).class_for(kBytes).bytes_per_second *
         fhr::host_memory_traffic(from, to);
}

} // namespace

TEST_CASE("calibrate: a DMA beside a host copy gives the host memory figure back") {
  const Location gpu0 = Location::cuda(0), pinned = Location::pinned(), pageable = Location::pageable();
  LinkModel stand_in = LinkModel::h200();
  // A figure that binds in the window out of cuda:0: between the larger
  // demand alone and both together.
  const double dma = demand(stand_in, gpu0, pinned), host = demand(stand_in, pageable, pinned);
  stand_in.host_memory_bytes_per_second = std::max(dma, host) + 0.5 * std::min(dma, host);
  const fhr::calibrate::Result result = calibrate_against(stand_in, LinkModel::h200());
  const fhr::calibrate::HostMemoryWindows &windows = result.host_memory;
  CHECK(windows.bytes == kBytes);
  CHECK_FALSE(windows.kept_default);
  // The fitted curves are exact at the measured sizes, so the fitted
  // figure predicts both windows as the stand-in charged them.
  CHECK(windows.out_predicted_seconds + windows.in_predicted_seconds ==
        doctest::Approx(windows.out_seconds + windows.in_seconds).epsilon(1e-6));
  CHECK(
      windows.out_seconds ==
      doctest::Approx(fhr::calibrate::predict_beside_host_copy(stand_in, gpu0, kBytes, true)).epsilon(1e-12));
  CHECK(result.model.host_memory_bytes_per_second ==
        doctest::Approx(stand_in.host_memory_bytes_per_second).epsilon(0.01));
  // Shared, the window is longer than either copy alone.
  CHECK(windows.out_seconds > stand_in.transfer_seconds(gpu0, pinned, kBytes));
  CHECK(windows.out_seconds > stand_in.transfer_seconds(pageable, pinned, kBytes));
}

TEST_CASE("calibrate: windows that do not share the host's memory keep a default that predicts them, else "
          "none") {
  LinkModel stand_in = LinkModel::h200();
  stand_in.host_memory_bytes_per_second = 1e15; // binds at no size
  LinkModel defaults = LinkModel::h200();
  defaults.host_memory_bytes_per_second = 1e12; // binds only far above 1 MiB
  fhr::calibrate::Result result = calibrate_against(stand_in, defaults);
  CHECK(result.host_memory.kept_default);
  CHECK(result.model.host_memory_bytes_per_second == 1e12);
  // A default that would bind here contradicts the windows: none.
  defaults.host_memory_bytes_per_second = 1e6;
  result = calibrate_against(stand_in, defaults);
  CHECK_FALSE(result.host_memory.kept_default);
  CHECK(result.model.host_memory_bytes_per_second == 0);
}

TEST_CASE("calibrate: windows longer than any figure can make them get the most sharing the rule has") {
  const Location gpu0 = Location::cuda(0), pinned = Location::pinned(), pageable = Location::pageable();
  LinkModel stand_in = LinkModel::h200();
  stand_in.host_memory_bytes_per_second = 0;
  const fhr::calibrate::Result result = calibrate_against(stand_in, LinkModel::h200(), 3.0);
  CHECK(result.host_memory.beyond_rule);
  CHECK_FALSE(result.host_memory.kept_default);
  // The figure at which both windows share all they can: the smaller of
  // the two windows' larger demands.
  const double out_largest = std::max(demand(stand_in, gpu0, pinned), demand(stand_in, pageable, pinned));
  const double in_largest = std::max(demand(stand_in, pinned, gpu0), demand(stand_in, pinned, pageable));
  CHECK(result.model.host_memory_bytes_per_second == doctest::Approx(std::min(out_largest, in_largest)));
  CHECK(result.host_memory.out_predicted_seconds < result.host_memory.out_seconds);
}

namespace {

/// A stand-in no slower in the state of one of the DMAs' extras (its
/// figure absent): the calibration gives a measured 0, not an absent figure.
void check_measured_zero(LinkModel stand_in, std::optional<double> LinkModel::*extra,
                         std::uint64_t max_bytes = kBytes) {
  stand_in.*extra = std::nullopt;
  const fhr::calibrate::Result result = calibrate_against(stand_in, LinkModel::h200(), 1, max_bytes);
  REQUIRE(result.model.*extra);
  CHECK(*(result.model.*extra) == 0);
}

} // namespace

TEST_CASE("calibrate: a DMA into cuda:0 after host work gives the extra back, beside its own round trip") {
  LinkModel stand_in = LinkModel::h200();
  stand_in.dma_after_host_work_seconds = 40e-6;
  const fhr::calibrate::Result result = calibrate_against(stand_in, LinkModel::h200());
  CHECK(result.dma_extras_bytes == kBytes); // the 16 MiB value, capped at --max-bytes
  // The host work ran before each DMA: a source's fill of 128 MiB, capped.
  CHECK(result.host_work_bytes == kBytes);
  CHECK(result.host_work_fill_seconds ==
        doctest::Approx(static_cast<double>(kBytes) / stand_in.source_load_bytes_per_second).epsilon(1e-12));
  const double round_trip = stand_in.transfer_seconds(Location::pinned(), Location::cuda(0), kBytes);
  CHECK(result.own_in_seconds == doctest::Approx(round_trip).epsilon(1e-12));
  CHECK(result.after_host_work_seconds == doctest::Approx(round_trip + 40e-6).epsilon(1e-12));
  REQUIRE(result.model.dma_after_host_work_seconds);
  CHECK(*result.model.dma_after_host_work_seconds == doctest::Approx(40e-6).epsilon(1e-9));
  CHECK(fhr::calibrate::result_text(result).find("a DMA into cuda:0 after host work (a 1048576 B fill, ") !=
        std::string::npos);
  check_measured_zero(stand_in, &LinkModel::dma_after_host_work_seconds);
}

TEST_CASE("calibrate: a cold value's DMAs either way give their extra back, beside its own moves") {
  LinkModel stand_in = LinkModel::h200();
  stand_in.dma_cold_value_seconds = 25e-6;
  stand_in.dma_after_host_work_seconds = 40e-6;
  fhr::calibrate::Result result = calibrate_against(stand_in, LinkModel::h200());
  const Location pinned = Location::pinned(), gpu0 = Location::cuda(0);
  const double in = stand_in.transfer_seconds(pinned, gpu0, kBytes),
               out = stand_in.transfer_seconds(gpu0, pinned, kBytes);
  CHECK(result.own_in_seconds == doctest::Approx(in).epsilon(1e-12));
  CHECK(result.own_out_seconds == doctest::Approx(out).epsilon(1e-12));
  CHECK(result.cold_in_seconds == doctest::Approx(in + 25e-6).epsilon(1e-12));
  CHECK(result.cold_out_seconds == doctest::Approx(out + 25e-6).epsilon(1e-12));
  REQUIRE(result.model.dma_cold_value_seconds);
  CHECK(*result.model.dma_cold_value_seconds == doctest::Approx(25e-6).epsilon(1e-9));
  CHECK(*result.model.dma_after_host_work_seconds == doctest::Approx(40e-6).epsilon(1e-9)); // apart
  CHECK(fhr::calibrate::result_text(result).find(
            "a DMA of a cold value (after another value's 1048576 B load), "
            "1048576 B: into cuda:0 ") != std::string::npos);
  check_measured_zero(stand_in, &LinkModel::dma_cold_value_seconds);
}

TEST_CASE("calibrate: a DMA out straight after a move in after host work gives the follow-on extra back") {
  LinkModel stand_in = LinkModel::h200();
  stand_in.dma_follow_on_seconds = 7e-6;
  stand_in.dma_cold_value_seconds = 25e-6;
  stand_in.dma_after_host_work_seconds = 40e-6;
  fhr::calibrate::Result result = calibrate_against(stand_in, LinkModel::h200());
  const double out = stand_in.transfer_seconds(Location::cuda(0), Location::pinned(), kBytes);
  CHECK(result.own_out_seconds == doctest::Approx(out).epsilon(1e-12));
  CHECK(result.follow_on_out_seconds == doctest::Approx(out + 7e-6).epsilon(1e-12));
  REQUIRE(result.model.dma_follow_on_seconds);
  CHECK(*result.model.dma_follow_on_seconds == doctest::Approx(7e-6).epsilon(1e-9));
  // Apart from the other two.
  CHECK(*result.model.dma_cold_value_seconds == doctest::Approx(25e-6).epsilon(1e-9));
  CHECK(*result.model.dma_after_host_work_seconds == doctest::Approx(40e-6).epsilon(1e-9));
  CHECK(fhr::calibrate::result_text(result).find(
            "a DMA out of cuda:0 straight after its move in after host work, 1048576 B: ") !=
        std::string::npos);
  check_measured_zero(stand_in, &LinkModel::dma_follow_on_seconds);
}

TEST_CASE("calibrate: a staged copy into cuda:0 after another value's fill gives its extra back, beside "
          "the one after its own move out; below the staging threshold it is not measured") {
  LinkModel stand_in = LinkModel::h200();
  stand_in.staged_after_host_work_seconds = 60e-6;
  stand_in.dma_after_host_work_seconds = 40e-6;
  constexpr std::uint64_t kStaged = std::uint64_t{4} << 20; // the staging threshold
  fhr::calibrate::Result result = calibrate_against(stand_in, LinkModel::h200(), 1, kStaged);
  CHECK(result.staged_bytes == kStaged);
  const double in = stand_in.transfer_seconds(Location::pageable(), Location::cuda(0), kStaged);
  CHECK(result.staged_own_in_seconds == doctest::Approx(in).epsilon(1e-12));
  CHECK(result.staged_after_host_work_seconds == doctest::Approx(in + 60e-6).epsilon(1e-12));
  REQUIRE(result.model.staged_after_host_work_seconds);
  CHECK(*result.model.staged_after_host_work_seconds == doctest::Approx(60e-6).epsilon(1e-9));
  CHECK(*result.model.dma_after_host_work_seconds == doctest::Approx(40e-6).epsilon(1e-9)); // apart
  CHECK(fhr::calibrate::result_text(result).find(
            "a staged copy into cuda:0 after another value's 4194304 B fill, 4194304 B: ") !=
        std::string::npos);
  check_measured_zero(stand_in, &LinkModel::staged_after_host_work_seconds, kStaged);

  // At 1 MiB no copy is staged: the figure stays the defaults' (the
  // shipped profile's, not the stand-in's).
  result = calibrate_against(stand_in, LinkModel::h200());
  CHECK(result.staged_bytes == 0);
  REQUIRE(LinkModel::h200().staged_after_host_work_seconds);
  REQUIRE(result.model.staged_after_host_work_seconds);
  CHECK(*result.model.staged_after_host_work_seconds == *LinkModel::h200().staged_after_host_work_seconds);
  CHECK(fhr::calibrate::result_text(result).find("a staged copy's extra after host work: not measured") !=
        std::string::npos);
}

namespace {

/// A simulated clock that also writes down every transition of the
/// calibration in order (the manager's trace, drained around each timed
/// call) and which of them each timed call made.
class StateRecordingClock final : public fhr::calibrate::Clock {
public:
  struct Timed {
    fhr::calibrate::Operation operation;
    std::size_t first = 0, end = 0; ///< its transitions: transitions[first, end)
  };

  StateRecordingClock(const LinkModel &stand_in, fhr::Manager &manager)
      : inner_(stand_in), manager_(manager) {}
  double time(const std::function<void()> &call, const fhr::calibrate::Operation &operation) override {
    drain(); // the untimed work since the last timed call
    const std::size_t first = transitions.size();
    const double seconds = inner_.time(call, operation);
    drain();
    timed.push_back({operation, first, transitions.size()});
    return seconds;
  }

  std::vector<fhr::TransitionReport> transitions;
  std::vector<Timed> timed;

private:
  void drain() {
    for (const fhr::TransitionReport &report : manager_.trace())
      transitions.push_back(report);
    manager_.clear_trace();
  }
  fhr::calibrate::SimulatedClock inner_;
  fhr::Manager &manager_;
};

/// The time model's steps of a run of transitions, one window each: a
/// load (its source filled by the processor, then copied unless in place),
/// a copy or move, or nothing (a drop, a no-op).
std::vector<fhr::TimelineStep> timeline_steps(const std::vector<fhr::TransitionReport> &transitions) {
  std::vector<fhr::TimelineStep> steps;
  for (std::size_t k = 0; k < transitions.size(); ++k) {
    const fhr::TransitionReport &r = transitions[k];
    const auto group = static_cast<std::uint32_t>(k);
    fhr::TimelineStep step;
    step.group = group;
    if (!r.no_op && r.source && r.destination && (r.source_load_ns > 0 || *r.source != *r.destination)) {
      step = fhr::copy_step(r.value, *r.source, *r.destination, r.logical_nbytes,
                            r.action == fhr::ActionKind::Move, group);
      if (r.source_load_ns > 0) step.transfer = fhr::StepTransfer::Load;
    }
    steps.push_back(step);
  }
  return steps;
}

} // namespace

TEST_CASE(
    "calibrate: every timed sample meets the state its figure is measured in, by the time model's rule") {
  // The DMA rule (fhr/model/dma_history.hpp) replayed over every
  // transition of a calibration, as `run` predicts a plan's: each curve's
  // sample must pay no DMA extra, each extra's sample that extra alone.
  // (The rule is the one the figures go into; a calibration that measured
  // a curve in an extra's state would count the extra twice.) On one
  // device, as the H200 machine has, and on two (peer hops between).
  for (const unsigned devices : {1u, 2u}) {
    CAPTURE(devices);
    fhr::ManagerOptions options;
    options.backend = std::make_shared<fhr::SimulatedBackend>(devices, /*overlap_copies=*/true);
    options.trace_capacity = std::size_t{1} << 20;
    fhr::Manager manager(std::move(options));
    StateRecordingClock clock(LinkModel::h200(), manager);
    fhr::calibrate::Options measure;
    measure.max_bytes = std::uint64_t{4} << 20; // the staging threshold: the staged copy's extra too
    measure.repetitions = 2;
    measure.devices = devices;
    fhr::calibrate::calibrate(manager, clock, measure, fhr::calibrate::FixedCosts{}, nullptr,
                              LinkModel::h200());

    LinkModel figures = LinkModel::h200();
    figures.dma_after_host_work_seconds = 100e-6;
    figures.dma_cold_value_seconds = 10e-6;
    figures.dma_follow_on_seconds = 1e-6;
    figures.staged_after_host_work_seconds = 1000e-6;
    fhr::TimelineOptions replay;
    replay.host_work_before = true; // a fresh process: nothing has crossed a link
    const fhr::Timeline timeline = fhr::predict_timeline(timeline_steps(clock.transitions), figures, replay);
    using Kind = fhr::calibrate::Operation::Kind;
    std::size_t curves = 0, extras = 0;
    for (const StateRecordingClock::Timed &timed : clock.timed) {
      const fhr::calibrate::Operation &operation = timed.operation;
      if (operation.kind != Kind::Copy && operation.kind != Kind::LoadCopy &&
          operation.kind != Kind::CopyWithDmaExtra)
        continue; // the windows and fills are predicted with their states by the calibration itself
      CAPTURE(static_cast<int>(operation.kind));
      CAPTURE(operation.from.name());
      CAPTURE(operation.to.name());
      REQUIRE(timed.end > timed.first);
      for (std::size_t k = timed.first; k < timed.end; ++k) {
        CAPTURE(k);
        const fhr::DmaExtra &extra = timeline.steps[k].dma_extra;
        if (operation.kind != Kind::CopyWithDmaExtra) {
          CHECK(extra.seconds() == 0);
          ++curves;
          continue;
        }
        ++extras;
        CHECK(extra.after_host_work_seconds ==
              (operation.dma_extra == &LinkModel::dma_after_host_work_seconds      ? 100e-6
               : operation.dma_extra == &LinkModel::staged_after_host_work_seconds ? 1000e-6
                                                                                   : 0));
        CHECK(extra.cold_value_seconds ==
              (operation.dma_extra == &LinkModel::dma_cold_value_seconds ? 10e-6 : 0));
        CHECK(extra.follow_on_seconds ==
              (operation.dma_extra == &LinkModel::dma_follow_on_seconds ? 1e-6 : 0));
      }
    }
    // Every series took its samples: the untimed round and 2 timed ones.
    CHECK(curves > 100);
    CHECK(extras == 3 * fhr::calibrate::DmaExtrasSeries::kSamplesPerRound * 5);
  }
}

TEST_CASE("calibrate: each host pool keeps eight times --max-bytes, never below the backend's default, "
          "without overflow") {
  fhr::calibrate::Options measure;
  constexpr std::uint64_t kDefault = std::uint64_t{4} << 30;
  measure.max_bytes = std::uint64_t{1} << 30;
  CHECK(fhr::calibrate::host_pool_bytes(measure, kDefault) == std::uint64_t{8} << 30);
  measure.max_bytes = 4096;
  CHECK(fhr::calibrate::host_pool_bytes(measure, kDefault) == kDefault);
  measure.max_bytes = std::numeric_limits<std::uint64_t>::max() / 2;
  CHECK(fhr::calibrate::host_pool_bytes(measure, kDefault) == std::numeric_limits<std::uint64_t>::max());
}
