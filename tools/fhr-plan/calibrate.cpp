#include "calibrate.hpp"

#include "fhr/harness/synthetic_binder.hpp"
#include "fhr/model/link_fit.hpp"
#include "fhr/model/timeline.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace fhr::calibrate {

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// The window of an eviction (device -> pinned) beside a prefetch (pinned
/// -> device) of `bytes` each, as the predictor sees it.
double predict_duplex(const LinkModel &links, Location device, std::uint64_t bytes) {
  TimelineStep evict, prefetch;
  evict.transfer = prefetch.transfer = StepTransfer::Copy;
  evict.frees_source = prefetch.frees_source = true;
  evict.value = 0;
  prefetch.value = 1;
  evict.source = prefetch.destination = device;
  evict.destination = prefetch.source = Location::pinned();
  evict.storage_bytes = prefetch.storage_bytes = evict.logical_bytes = prefetch.logical_bytes = bytes;
  const std::vector<TimelineStep> steps = {evict, prefetch};
  return predict_timeline(steps, links).total_seconds;
}

/// A value the calibration owns: adopted host memory with a pattern.
Handle adopt_value(Manager &manager, std::uint64_t bytes, std::uint32_t id) {
  auto *data = static_cast<std::byte *>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096));
  if (!data) throw std::bad_alloc();
  fill_synthetic({data, static_cast<std::size_t>(bytes)}, id, 0);
  return manager.adopt(data, static_cast<std::size_t>(bytes), Location::pageable(),
                       [](std::byte *p) { std::free(p); });
}

/// The synthetic source of `fhr-plan run`: loads cost what they cost there.
class PatternSource final : public Source {
public:
  void load(std::span<std::byte> destination) override { fill_synthetic(destination, 7, 0); }
};

/// Loads into cuda:0 from a source in pageable memory, as a plan step runs
/// them (the source fills pooled pageable storage, the staged copy
/// follows), the fill left out: the copy after a fill runs slower than a
/// move of resident bytes (docs/links.md). The sizes take turns, one load
/// of each per repetition: the staged copies run at the host's memory
/// bandwidth, which drifts over seconds on a shared machine, and a size's
/// repetitions in a row put one moment's rate into its median.
void measure_loads(Manager &manager, Clock &clock, const Options &options,
                   const std::vector<std::uint64_t> &sizes, Result &result) {
  const Location pageable = Location::pageable(), gpu0 = Location::cuda(0);
  const auto source = std::make_shared<PatternSource>();
  std::vector<Handle> values;
  for (std::uint64_t bytes : sizes)
    values.push_back(manager.register_source(
        ValueSpec{bytes, bytes, ReplicaMode::Replicable, Recoverability::Reconstructible}, source, pageable));
  std::vector<std::vector<double>> times(sizes.size());
  for (unsigned rep = 0; rep <= options.repetitions; ++rep)
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      std::uint64_t fill_ns = 0;
      const double seconds =
          clock.time([&] { fill_ns = manager.ensure(values[k], gpu0).source_load_ns; },
                     Operation{Operation::Kind::LoadCopy, pageable, gpu0, sizes[k], &fill_ns});
      manager.drop(values[k], gpu0);
      if (rep > 0) times[k].push_back(seconds); // the first: pools and first touches
    }
  for (const Handle &value : values)
    manager.discard(value);
  result.model.load_samples.clear();
  for (std::size_t k = 0; k < sizes.size(); ++k)
    result.model.load_samples.push_back(LinkSample{sizes[k], median(times[k])});
  result.model.load_pageable_to_device = fit_link_curve(result.model.load_samples);
  for (const LinkSample &sample : result.model.load_samples) {
    Row row;
    row.from = pageable;
    row.to = gpu0;
    row.link = LinkKind::PageableToDevice;
    row.bytes = sample.bytes;
    row.manager_seconds = sample.seconds;
    row.predicted_seconds = result.model.load_transfer_seconds(pageable, gpu0, sample.bytes);
    result.load_rows.push_back(row);
  }
}

} // namespace

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
  case Operation::Kind::SourceLoad:
    return static_cast<double>(operation.bytes) / stand_in_.source_load_bytes_per_second;
  case Operation::Kind::LoadCopy:
    return stand_in_.load_transfer_seconds(operation.from, operation.to, operation.bytes);
  case Operation::Kind::ColdSourceLoad:
    return static_cast<double>(operation.bytes) *
           (1 / stand_in_.source_load_bytes_per_second + stand_in_.pageable_first_touch_seconds_per_byte);
  }
  return 0;
}

Result calibrate(Manager &manager, Clock &clock, const Options &options, const FixedCosts &fixed,
                 RawCopies *raw, const LinkModel &defaults) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t bytes = options.min_bytes; bytes < options.max_bytes; bytes *= 2)
    sizes.push_back(bytes);
  sizes.push_back(options.max_bytes);

  const Location pageable = Location::pageable(), pinned = Location::pinned(), gpu0 = Location::cuda(0);
  Result result;
  result.model = defaults;
  result.model.samples = {};
  // The loads first, on a process that has moved nothing yet, as a plan's
  // first loads find it.
  measure_loads(manager, clock, options, sizes, result);

  // One value per size goes round every link kind by moves: each move is
  // what a plan step costs (allocate the destination, copy, free the
  // source). The order keeps each copy's source in the state a plan leaves
  // it in: the bytes a device reads from pinned memory were written there
  // by its DMA (an eviction), never just by a host copy. Straight after a
  // host copy (the order before), the 4-16 MiB pinned -> cuda:0 moves took
  // 2-4 times as long as the plans' same moves, most likely because the
  // DMA found the lines dirty in the processor's cache (docs/links.md).
  std::vector<std::pair<Location, Location>> cycle = {{pageable, gpu0},   {gpu0, pinned},
                                                      {pinned, gpu0},     {gpu0, pageable},
                                                      {pageable, pinned}, {pinned, pageable}};
  if (options.devices >= 2)
    cycle.insert(cycle.begin() + 1, {{gpu0, Location::cuda(1)}, {Location::cuda(1), gpu0}});
  std::vector<Handle> values;
  for (std::uint64_t bytes : sizes)
    values.push_back(adopt_value(manager, bytes, 1));
  std::map<std::pair<LinkKind, std::uint64_t>, std::vector<double>> times;
  std::map<std::pair<std::pair<Location, Location>, std::uint64_t>, std::vector<double>> pair_times;
  // The sizes take turns, a round of every size per repetition, so that
  // the host's drift over the seconds the moves take is in every size's
  // median alike instead of in a few sizes' (a size's repetitions in a
  // row, before).
  for (unsigned rep = 0; rep <= options.repetitions; ++rep)
    for (std::size_t k = 0; k < sizes.size(); ++k)
      for (const auto &hop : cycle) {
        const Location from = hop.first,
                       to = hop.second; // named: clang 14 cannot capture structured bindings
        const std::uint64_t bytes = sizes[k];
        const double seconds = clock.time([&] { manager.move(values[k], to, from); },
                                          Operation{Operation::Kind::Copy, from, to, bytes});
        if (rep == 0) continue; // warm-up: pools and first touches
        times[{*link_between(from, to), bytes}].push_back(seconds);
        pair_times[{hop, bytes}].push_back(seconds);
      }
  for (const Handle &value : values)
    manager.discard(value);
  std::map<std::pair<std::pair<Location, Location>, std::uint64_t>, double> by_pair;
  for (const auto &[key, list] : pair_times)
    by_pair[key] = median(list);

  for (std::size_t k = 0; k < kLinkKindCount; ++k) {
    const LinkKind link = static_cast<LinkKind>(k);
    std::vector<LinkSample> samples;
    for (std::uint64_t bytes : sizes)
      if (auto found = times.find({link, bytes}); found != times.end())
        samples.push_back(LinkSample{bytes, median(found->second)});
    if (samples.empty()) {
      result.kept_from_default.push_back(link);
      continue;
    }
    result.model.links[k] = fit_link_curve(samples);
    result.model.samples[k] = samples;
  }
  for (const auto &[key, seconds] : by_pair) {
    const auto &[pair, bytes] = key;
    Row row;
    row.from = pair.first;
    row.to = pair.second;
    row.link = *link_between(pair.first, pair.second);
    row.bytes = bytes;
    row.manager_seconds = seconds;
    if (raw) row.raw_seconds = raw->median_seconds(pair.first, pair.second, bytes, options.repetitions);
    row.predicted_seconds = result.model.transfer_seconds(pair.first, pair.second, bytes);
    result.rows.push_back(row);
  }

  // Both directions of a device at once: an eviction beside a prefetch in
  // one plan phase (one overlap window), at the largest size.
  {
    const std::uint64_t bytes = options.max_bytes;
    const Handle out = adopt_value(manager, bytes, 2), in = adopt_value(manager, bytes, 3);
    manager.move(out, gpu0);
    manager.move(in, pinned);
    std::vector<double> list;
    for (unsigned rep = 0; rep <= options.repetitions; ++rep) {
      const bool forward = rep % 2 == 0;
      const Handle &leaving = forward ? out : in, &arriving = forward ? in : out;
      const std::vector<ActionSpec> phase = {{ActionKind::Move, leaving, pinned, gpu0},
                                             {ActionKind::Move, arriving, gpu0, pinned}};
      const double seconds = clock.time([&] { manager.execute_actions(phase, "calibrate-duplex"); },
                                        Operation{Operation::Kind::Duplex, gpu0, pinned, bytes});
      if (rep > 0) list.push_back(seconds);
    }
    manager.discard(out);
    manager.discard(in);
    result.duplex_bytes = bytes;
    result.duplex_seconds = median(list);
    // The duplex figure: what makes the predictor give back the measured
    // window (its bytes at a rate shared by the two directions).
    const SizeClass &in_class = result.model.curve(LinkKind::PinnedToDevice).class_for(bytes);
    const SizeClass &out_class = result.model.curve(LinkKind::DeviceToPinned).class_for(bytes);
    const double streaming =
        result.duplex_seconds - std::max(in_class.latency_seconds, out_class.latency_seconds);
    result.model.duplex_bytes_per_second =
        streaming > 0 ? 2 * static_cast<double>(bytes) / streaming : defaults.duplex_bytes_per_second;
    result.duplex_predicted_seconds = predict_duplex(result.model, gpu0, bytes);
  }

  // Loads from a source into pageable memory (the synthetic pattern).
  {
    const std::uint64_t bytes = options.max_bytes;
    const auto source = std::make_shared<PatternSource>();
    const Handle value = manager.register_source(
        ValueSpec{bytes, bytes, ReplicaMode::Replicable, Recoverability::Reconstructible}, source, pageable);
    std::vector<double> list;
    for (unsigned rep = 0; rep <= options.repetitions; ++rep) {
      const double seconds = clock.time([&] { manager.ensure(value, pageable); },
                                        Operation{Operation::Kind::SourceLoad, pageable, pageable, bytes});
      manager.drop(value, pageable);
      if (rep > 0) list.push_back(seconds);
    }
    manager.discard(value);
    result.model.source_load_bytes_per_second = static_cast<double>(bytes) / median(list);
    // The same into fresh pages: sizes no pageable block of the pool has
    // (each a further 2 MiB below the largest), so that the backend faults
    // a new block in; what it costs beyond the warm load, per byte.
    std::vector<double> first_touch;
    for (unsigned rep = 1; rep <= 3 && (std::uint64_t{2} << 20) * rep < bytes; ++rep) {
      const std::uint64_t fresh = bytes - (std::uint64_t{2} << 20) * rep;
      const Handle cold = manager.register_source(
          ValueSpec{fresh, fresh, ReplicaMode::Replicable, Recoverability::Reconstructible}, source,
          pageable);
      const double seconds =
          clock.time([&] { manager.ensure(cold, pageable); },
                     Operation{Operation::Kind::ColdSourceLoad, pageable, pageable, fresh});
      manager.discard(cold);
      first_touch.push_back(
          std::max(0.0, seconds - static_cast<double>(fresh) / result.model.source_load_bytes_per_second) /
          static_cast<double>(fresh));
    }
    if (!first_touch.empty()) result.model.pageable_first_touch_seconds_per_byte = median(first_touch);
  }

  result.model.device_allocation_seconds = fixed.device_allocation_seconds;
  result.model.device_growth_seconds_per_byte = fixed.device_growth_seconds_per_byte;
  result.model.pinned_allocation_seconds_per_byte = fixed.pinned_allocation_seconds_per_byte;
  result.model.pinned_registration_seconds_per_byte = fixed.pinned_registration_seconds_per_byte;
  result.model.event_record_seconds = fixed.event_record_seconds;
  result.model.event_query_seconds = fixed.event_query_seconds;
  return result;
}

std::string result_text(const Result &result) {
  std::string out = "link profile of " + result.model.machine + " (" + result.model.measured + ")\n";
  char line[256];
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
      "  eviction beside a prefetch, %llu B each way: %.2f us measured (%.2f GB/s together), %.2f us "
      "predicted\n",
      static_cast<unsigned long long>(result.duplex_bytes), result.duplex_seconds * 1e6,
      2 * static_cast<double>(result.duplex_bytes) / result.duplex_seconds / 1e9,
      result.duplex_predicted_seconds * 1e6);
  out += line;
  std::snprintf(line, sizeof line,
                "  source loads %.2f GB/s (fresh pages +%.3f ns/B); device allocation %.2f us + %.4f ns per "
                "byte of growth; events %.3f / %.3f us\n",
                result.model.source_load_bytes_per_second / 1e9,
                result.model.pageable_first_touch_seconds_per_byte * 1e9,
                result.model.device_allocation_seconds * 1e6,
                result.model.device_growth_seconds_per_byte * 1e9, result.model.event_record_seconds * 1e6,
                result.model.event_query_seconds * 1e6);
  out += line;
  for (LinkKind link : result.kept_from_default)
    out += "  " + std::string(link_kind_name(link)) + ": not measured here, kept from the default profile\n";
  return out;
}

} // namespace fhr::calibrate
