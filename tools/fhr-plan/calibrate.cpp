#include "calibrate.hpp"

#include "calibrate_series.hpp"

#include "fhr/model/timeline.hpp"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

namespace fhr::calibrate {

namespace {
/// copy_step's `frees_source`: the calibration's windows are moves.
constexpr bool kMove = true;
/// How the calibration's windows are predicted: as they run
/// (fhr/model/dma_history.hpp). The duplex window's values go back and
/// forth three times a round, so most of its samples follow their own
/// DMAs: predicted warm, without either extra. The windows beside a host
/// copy follow other series' host copies, and the window into the device
/// follows the window out of it, whose host copy is the processor's work:
/// predicted after host work, the value out of the device cold and the
/// DMA into it paying the extra after host work (DmaExtrasSeries has
/// measured both by then: left out, they would be taken for a slower host
/// memory, and at a small --max-bytes mislead the figure's fit).
TimelineOptions window_options(bool after_host_work) {
  TimelineOptions options;
  options.host_work_before = after_host_work;
  return options;
}
/// The DMAs' extras (DmaExtrasSeries), at most `--max-bytes` each: a value
/// of the smallest size the 10% target covers, after a fill or a load the
/// size of a rotation key (FHE-SIZES.md: 120 MiB at logN 16).
constexpr std::uint64_t kDmaExtrasBytes = std::uint64_t{16} << 20;
constexpr std::uint64_t kHostWorkBytes = std::uint64_t{128} << 20;
} // namespace

double predict_duplex(const LinkModel &links, Location device, std::uint64_t bytes) {
  // Two moves in one window, as a plan phase issues them.
  const std::vector<TimelineStep> steps = {copy_step(0, device, Location::pinned(), bytes, kMove),
                                           copy_step(1, Location::pinned(), device, bytes, kMove)};
  return predict_timeline(steps, links, window_options(false)).total_seconds;
}

double predict_beside_host_copy(const LinkModel &links, Location device, std::uint64_t bytes,
                                bool out_of_device) {
  const Location pinned = Location::pinned(), pageable = Location::pageable();
  const std::vector<TimelineStep> steps =
      out_of_device ? std::vector<TimelineStep>{copy_step(0, device, pinned, bytes, kMove),
                                                copy_step(1, pageable, pinned, bytes, kMove)}
                    : std::vector<TimelineStep>{copy_step(0, pinned, device, bytes, kMove),
                                                copy_step(1, pinned, pageable, bytes, kMove)};
  return predict_timeline(steps, links, window_options(true)).total_seconds;
}

double WallClock::time(const std::function<void()> &call, const Operation &operation) {
  const auto start = std::chrono::steady_clock::now();
  call();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return operation.untimed_ns ? seconds - static_cast<double>(*operation.untimed_ns) * 1e-9 : seconds;
}

double SimulatedClock::time(const std::function<void()> &call, const Operation &operation) {
  call();
  switch (operation.kind) {
  case Operation::Kind::Copy:
    return stand_in_.transfer_seconds(operation.from, operation.to, operation.bytes);
  case Operation::Kind::Duplex: return predict_duplex(stand_in_, operation.from, operation.bytes);
  case Operation::Kind::BesideHostCopy:
    return operation.from.is_cuda()
               ? predict_beside_host_copy(stand_in_, operation.from, operation.bytes, true)
               : predict_beside_host_copy(stand_in_, operation.to, operation.bytes, false);
  case Operation::Kind::SourceLoad: return stand_in_.source_fill_seconds(operation.bytes);
  case Operation::Kind::LoadCopy:
    return stand_in_.load_transfer_seconds(operation.from, operation.to, operation.bytes);
  case Operation::Kind::CopyWithDmaExtra:
    assert(operation.dma_extra && "a CopyWithDmaExtra names its figure");
    return stand_in_.transfer_seconds(operation.from, operation.to, operation.bytes) +
           (stand_in_.*operation.dma_extra).value_or(0);
  case Operation::Kind::ColdSourceLoad:
    return static_cast<double>(operation.bytes) *
           (1 / stand_in_.source_load_bytes_per_second + stand_in_.pageable_first_touch_seconds_per_byte);
  }
  return 0;
}

std::uint64_t host_pool_bytes(const Options &options, std::uint64_t backend_default) {
  constexpr std::uint64_t kValues = 8; // per pool, the larger count: calibrate.hpp
  const std::uint64_t cap = std::numeric_limits<std::uint64_t>::max() / kValues;
  return std::max(backend_default, options.max_bytes > cap ? std::numeric_limits<std::uint64_t>::max()
                                                           : kValues * options.max_bytes);
}

Result calibrate(Manager &manager, Clock &clock, const Options &options, const FixedCosts &fixed,
                 RawCopies *raw, const LinkModel &defaults) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t bytes = options.min_bytes; bytes < options.max_bytes; bytes *= 2)
    sizes.push_back(bytes);
  sizes.push_back(options.max_bytes);

  // Every series takes one sample of each of its sizes a round (the duplex
  // window three of its one size), the first round untimed
  // (calibrate_series.hpp says why rounds). The loads have
  // rounds of their own, first, on a process that has moved nothing yet:
  // so measured, their curve matched the runs' loads within 2% on two
  // machines (calls 1 and 2 of the eleventh wave), while in rounds with
  // the moves it came out 8-12% slower than the runs (call 5).
  LoadSeries loads(manager, clock, sizes);
  for (unsigned round = 0; round <= options.repetitions; ++round)
    loads.round(round > 0);
  MoveSeries moves(manager, clock, sizes, options.devices);
  DuplexSeries duplex(manager, clock, options.max_bytes);
  HostMemorySeries host_memory(manager, clock, options.max_bytes);
  SourceLoadSeries source_loads(manager, clock, options.max_bytes);
  // The staged copy's extra on a copy that is staged (fhr/model/dma_history.hpp).
  const std::uint64_t extras_bytes = std::min(kDmaExtrasBytes, options.max_bytes);
  DmaExtrasSeries dma_extras(manager, clock, extras_bytes, std::min(kHostWorkBytes, options.max_bytes),
                             extras_bytes >= TimelineOptions{}.staged_min_bytes ? extras_bytes : 0);
  for (unsigned round = 0; round <= options.repetitions; ++round) {
    moves.round(round > 0);
    duplex.round(round > 0);
    host_memory.round(round > 0);
    source_loads.sample(round > 0);
    dma_extras.round(round > 0);
  }

  Result result;
  result.model = defaults;
  moves.finish(result, raw, options.repetitions);
  duplex.finish(result, defaults.duplex_bytes_per_second); // after the pinned <-> device curves
  dma_extras.finish(result);
  // After every curve, the duplex and the DMAs' extras.
  host_memory.finish(result, defaults.host_memory_bytes_per_second);
  loads.finish(result);
  source_loads.finish(result);
  result.model.device_allocation_seconds = fixed.device_allocation_seconds;
  result.model.device_growth_seconds_per_byte = fixed.device_growth_seconds_per_byte;
  result.model.device_pool_granule_bytes = fixed.device_pool_granule_bytes;
  result.model.pinned_allocation_fixed_seconds = fixed.pinned_allocation.seconds;
  result.model.pinned_allocation_seconds_per_byte = fixed.pinned_allocation.seconds_per_byte;
  result.model.small_pinned_allocation = fixed.small_pinned_allocation;
  result.model.pinned_registration_seconds_per_byte = fixed.pinned_registration_seconds_per_byte;
  result.model.event_record_seconds = fixed.event_record_seconds;
  result.model.event_query_seconds = fixed.event_query_seconds;
  return result;
}

std::string result_text(const Result &result) {
  std::string out = "link profile of " + result.model.machine + " (" + result.model.measured + ")\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-20s %12s %14s %14s %8s %14s %8s\n", "copy", "bytes", "manager", "raw",
                "ratio", "profile", "error");
  out += line;
  auto print_row = [&](const Row &row, const std::string &label) {
    const double gbps = static_cast<double>(row.bytes) / row.manager_seconds / 1e9;
    char raw[32] = "-", ratio[32] = "-";
    if (row.raw_seconds) {
      std::snprintf(raw, sizeof raw, "%.2f us", *row.raw_seconds * 1e6);
      std::snprintf(ratio, sizeof ratio, "%.3f", *row.raw_seconds / row.manager_seconds);
    }
    double error_percent = (row.predicted_seconds - row.manager_seconds) / row.manager_seconds * 100;
    if (std::abs(error_percent) < 0.005) error_percent = 0; // no "-0.00%" from rounding
    char manager[48];
    std::snprintf(manager, sizeof manager, "%.2f us", row.manager_seconds * 1e6);
    std::snprintf(line, sizeof line, "  %-20s %12llu %14s %14s %8s %11.2f us %+7.2f%%  (%.2f GB/s)\n",
                  label.c_str(), static_cast<unsigned long long>(row.bytes), manager, raw, ratio,
                  row.predicted_seconds * 1e6, error_percent, gbps);
    out += line;
  };
  for (const Row &row : result.rows)
    print_row(row, row.from.name() + " -> " + row.to.name());
  for (const Row &row : result.load_rows)
    print_row(row, "load " + row.from.name() + " -> " + row.to.name());
  std::snprintf(
      line, sizeof line,
      "  eviction beside a prefetch, %llu B each way: %.2f us measured (%.2f GB/s together; samples "
      "%.2f-%.2f us), %.2f us predicted\n",
      static_cast<unsigned long long>(result.duplex_bytes), result.duplex_seconds * 1e6,
      2 * static_cast<double>(result.duplex_bytes) / result.duplex_seconds / 1e9,
      result.duplex_fastest_seconds * 1e6, result.duplex_slowest_seconds * 1e6,
      result.duplex_predicted_seconds * 1e6);
  out += line;
  const HostMemoryWindows &host = result.host_memory;
  char shared[160] = "not shared at this size";
  if (result.model.host_memory_bytes_per_second > 0)
    std::snprintf(shared, sizeof shared, "%.2f GB/s%s", result.model.host_memory_bytes_per_second / 1e9,
                  host.kept_default  ? " (the default's: not shared at this size)"
                  : host.beyond_rule ? " (the most sharing the model has: the windows took longer still)"
                                     : "");
  std::snprintf(
      line, sizeof line,
      "  a DMA beside a host copy, %llu B each: out of cuda:0 %.2f us measured, %.2f us predicted; into "
      "it %.2f us, %.2f us; host memory %s\n",
      static_cast<unsigned long long>(host.bytes), host.out_seconds * 1e6, host.out_predicted_seconds * 1e6,
      host.in_seconds * 1e6, host.in_predicted_seconds * 1e6, shared);
  out += line;
  std::snprintf(line, sizeof line,
                "  source loads %.2f GB/s (fresh pages +%.3f ns/B); device allocation %.2f us + %.4f ns per "
                "byte of growth, in units of %llu MiB; events %.3f / %.3f us\n",
                result.model.source_load_bytes_per_second / 1e9,
                result.model.pageable_first_touch_seconds_per_byte * 1e9,
                result.model.device_allocation_seconds * 1e6,
                result.model.device_growth_seconds_per_byte * 1e9,
                static_cast<unsigned long long>(result.model.device_pool_granule_bytes >> 20),
                result.model.event_record_seconds * 1e6, result.model.event_query_seconds * 1e6);
  out += line;
  std::snprintf(line, sizeof line, "  cold pinned blocks: %.2f us + %.4f ns/B",
                result.model.pinned_allocation_fixed_seconds.value_or(0) * 1e6,
                result.model.pinned_allocation_seconds_per_byte * 1e9);
  out += line;
  if (const std::optional<AllocationCost> &small = result.model.small_pinned_allocation) {
    std::snprintf(line, sizeof line, "; under %zu MiB %.2f us + %.4f ns/B", kHugePageBytes >> 20,
                  small->seconds * 1e6, small->seconds_per_byte * 1e9);
    out += line;
  }
  out += "\n";
  if (result.dma_extras_bytes > 0) {
    std::snprintf(
        line, sizeof line,
        "  a DMA into cuda:0 after host work (a %llu B fill, %.2f us), %llu B: %.2f us measured, "
        "%.2f us after its own round trip: +%.2f us\n",
        static_cast<unsigned long long>(result.host_work_bytes), result.host_work_fill_seconds * 1e6,
        static_cast<unsigned long long>(result.dma_extras_bytes), result.after_host_work_seconds * 1e6,
        result.own_in_seconds * 1e6, result.model.dma_after_host_work_seconds.value_or(0) * 1e6);
    out += line;
    std::snprintf(line, sizeof line,
                  "  a DMA of a cold value (after another value's %llu B load), %llu B: into cuda:0 %.2f us "
                  "(%.2f us after its own), out %.2f us (%.2f us): +%.2f us\n",
                  static_cast<unsigned long long>(result.host_work_bytes),
                  static_cast<unsigned long long>(result.dma_extras_bytes), result.cold_in_seconds * 1e6,
                  result.own_in_seconds * 1e6, result.cold_out_seconds * 1e6, result.own_out_seconds * 1e6,
                  result.model.dma_cold_value_seconds.value_or(0) * 1e6);
    out += line;
    std::snprintf(line, sizeof line,
                  "  a DMA out of cuda:0 straight after its move in after host work, %llu B: %.2f us "
                  "(%.2f us after its own move in): +%.2f us\n",
                  static_cast<unsigned long long>(result.dma_extras_bytes),
                  result.follow_on_out_seconds * 1e6, result.own_out_seconds * 1e6,
                  result.model.dma_follow_on_seconds.value_or(0) * 1e6);
    out += line;
    if (result.staged_bytes > 0) {
      std::snprintf(line, sizeof line,
                    "  a staged copy into cuda:0 after another value's %llu B fill, %llu B: %.2f us (%.2f us "
                    "after its own move out): +%.2f us\n",
                    static_cast<unsigned long long>(result.host_work_bytes),
                    static_cast<unsigned long long>(result.staged_bytes),
                    result.staged_after_host_work_seconds * 1e6, result.staged_own_in_seconds * 1e6,
                    result.model.staged_after_host_work_seconds.value_or(0) * 1e6);
      out += line;
    } else {
      out += "  a staged copy's extra after host work: not measured (--max-bytes below the staging "
             "threshold)\n";
    }
  }
  for (LinkKind link : result.kept_from_default)
    out += "  " + std::string(link_kind_name(link)) + ": not measured here, kept from the default profile\n";
  return out;
}

} // namespace fhr::calibrate
