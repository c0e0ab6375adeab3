// `fhr-plan calibrate`'s series and fit on the simulated device backend and
// a simulated clock that charges what a stand-in profile predicts: the fit
// must give the stand-in's figures back.
#include "calibrate.hpp"

#include "fhr/runtime/simulated_backend.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>

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
                                         double window_factor = 1) {
  fhr::ManagerOptions options;
  options.backend = std::make_shared<fhr::SimulatedBackend>(2, /*overlap_copies=*/true);
  fhr::Manager manager(std::move(options));
  SlowWindowsClock clock(stand_in, window_factor);
  fhr::calibrate::Options measure;
  measure.max_bytes = kBytes;
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

TEST_CASE("calibrate: a DMA into cuda:0 after host work gives the extra back, beside its own round trip") {
  LinkModel stand_in = LinkModel::h200();
  stand_in.dma_after_host_work_seconds = 40e-6;
  fhr::calibrate::Result result = calibrate_against(stand_in, LinkModel::h200());
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
  // No slower after host work: a measured 0, not an absent figure.
  stand_in.dma_after_host_work_seconds.reset();
  result = calibrate_against(stand_in, LinkModel::h200());
  REQUIRE(result.model.dma_after_host_work_seconds);
  CHECK(*result.model.dma_after_host_work_seconds == 0);
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
  // No slower: a measured 0, not an absent figure.
  stand_in.dma_cold_value_seconds.reset();
  result = calibrate_against(stand_in, LinkModel::h200());
  REQUIRE(result.model.dma_cold_value_seconds);
  CHECK(*result.model.dma_cold_value_seconds == 0);
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
  // No slower: a measured 0, not an absent figure.
  stand_in.dma_follow_on_seconds.reset();
  result = calibrate_against(stand_in, LinkModel::h200());
  REQUIRE(result.model.dma_follow_on_seconds);
  CHECK(*result.model.dma_follow_on_seconds == 0);
}

TEST_CASE("calibrate: each host pool keeps seven times --max-bytes, never below the backend's default, "
          "without overflow") {
  fhr::calibrate::Options measure;
  constexpr std::uint64_t kDefault = std::uint64_t{4} << 30;
  measure.max_bytes = std::uint64_t{1} << 30;
  CHECK(fhr::calibrate::host_pool_bytes(measure, kDefault) == std::uint64_t{7} << 30);
  measure.max_bytes = 4096;
  CHECK(fhr::calibrate::host_pool_bytes(measure, kDefault) == kDefault);
  measure.max_bytes = std::numeric_limits<std::uint64_t>::max() / 2;
  CHECK(fhr::calibrate::host_pool_bytes(measure, kDefault) == std::numeric_limits<std::uint64_t>::max());
}
