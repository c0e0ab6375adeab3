#include "calibrate_series.hpp"

#include "fhr/harness/synthetic_binder.hpp"
#include "fhr/model/link_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace fhr::calibrate {

namespace {

const Location kPageable = Location::pageable(), kPinned = Location::pinned(), kGpu0 = Location::cuda(0);

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

Handle register_pattern(Manager &manager, const std::shared_ptr<Source> &source, std::uint64_t bytes) {
  return manager.register_source(
      ValueSpec{bytes, bytes, ReplicaMode::Replicable, Recoverability::Reconstructible}, source, kPageable);
}

/// `value`'s source fills pageable memory (a reconstructible value's load
/// there), timed; the replica is dropped again, its block back in the pool.
double time_fill(Manager &manager, Clock &clock, const Handle &value, std::uint64_t bytes) {
  const double seconds = clock.time([&] { manager.ensure(value, kPageable); },
                                    Operation{Operation::Kind::SourceLoad, kPageable, kPageable, bytes});
  manager.drop(value, kPageable);
  return seconds;
}

} // namespace

// ---- loads ---------------------------------------------------------------

LoadSeries::LoadSeries(Manager &manager, Clock &clock, std::vector<std::uint64_t> sizes)
    : manager_(manager), clock_(clock), sizes_(std::move(sizes)), seconds_(sizes_.size()) {
  const auto source = std::make_shared<PatternSource>();
  for (std::uint64_t bytes : sizes_)
    values_.push_back(register_pattern(manager_, source, bytes));
}

void LoadSeries::round(bool timed) {
  for (std::size_t k = 0; k < sizes_.size(); ++k) {
    std::uint64_t fill_ns = 0;
    const double seconds =
        clock_.time([&] { fill_ns = manager_.ensure(values_[k], kGpu0).source_load_ns; },
                    Operation{Operation::Kind::LoadCopy, kPageable, kGpu0, sizes_[k], &fill_ns});
    manager_.drop(values_[k], kGpu0);
    if (timed) seconds_[k].push_back(seconds);
  }
}

void LoadSeries::finish(Result &result) {
  for (const Handle &value : values_)
    manager_.discard(value);
  result.model.load_samples.clear();
  for (std::size_t k = 0; k < sizes_.size(); ++k)
    result.model.load_samples.push_back(LinkSample{sizes_[k], median(seconds_[k])});
  result.model.load_pageable_to_device = fit_link_curve(result.model.load_samples);
  for (const LinkSample &sample : result.model.load_samples) {
    Row row;
    row.from = kPageable;
    row.to = kGpu0;
    row.link = LinkKind::PageableToDevice;
    row.bytes = sample.bytes;
    row.manager_seconds = sample.seconds;
    row.predicted_seconds = result.model.load_transfer_seconds(kPageable, kGpu0, sample.bytes);
    result.load_rows.push_back(row);
  }
}

// ---- moves ---------------------------------------------------------------

MoveSeries::MoveSeries(Manager &manager, Clock &clock, std::vector<std::uint64_t> sizes, unsigned devices)
    : manager_(manager), clock_(clock), sizes_(std::move(sizes)) {
  // From cuda:0 back to cuda:0: between rounds the values rest on the
  // device, out of the host pools the other series' samples use. The order
  // keeps each copy's source in the state
  // a plan leaves it in: the bytes a device reads from pinned memory were
  // written there by its DMA (an eviction), never just by a host copy.
  // Straight after a host copy (the order of the tenth wave), the 4-16 MiB
  // pinned -> cuda:0 moves took 2-4 times as long as the plans' same moves,
  // most likely because the DMA found the lines dirty in the processor's
  // cache (docs/links.md).
  cycle_ = {{kGpu0, kPinned},     {kPinned, kGpu0},     {kGpu0, kPageable},
            {kPageable, kPinned}, {kPinned, kPageable}, {kPageable, kGpu0}};
  if (devices >= 2) cycle_.insert(cycle_.begin(), {{kGpu0, Location::cuda(1)}, {Location::cuda(1), kGpu0}});
  for (std::uint64_t bytes : sizes_) {
    values_.push_back(adopt_value(manager_, bytes, 1));
    manager_.move(values_.back(), kGpu0);
  }
}

void MoveSeries::round(bool timed) {
  // Value by value. The other order, every value a hop before any takes
  // the next (so that a copy follows copies of other values, as a plan's
  // step does), was measured beside this one on the H200 in the
  // fourteenth wave: the pinned <-> cuda:0 DMAs of 4 MiB and more came
  // out within 5%, the staged copies of 8 MiB and more 3-13% faster
  // (their bounce buffers used back to back) and the copies from pageable
  // under 4 MiB 30-100% slower; `inference`'s staged 15 MiB weight, which
  // ran 19% over this order's curve, ran 36% over that one's.
  for (std::size_t k = 0; k < sizes_.size(); ++k) {
    // Two round trips of its own first, untimed: since its last hop the
    // other values' staged and host copies ran (the processor's work),
    // which leaves it cold, and its first move in after that may be the
    // device's first DMA in after host work, which makes the move out
    // straight after it a follow-on (fhr/model/dma_history.hpp). Each
    // timed DMA must follow its own value's copy alone, the state the
    // curves stand for (calibrate_test replays the rule over every sample).
    for (int trip = 0; trip < 2; ++trip) {
      manager_.move(values_[k], kPinned, kGpu0);
      manager_.move(values_[k], kGpu0, kPinned);
    }
    for (const auto &hop : cycle_) {
      const Location from = hop.first,
                     to = hop.second; // named: clang 14 cannot capture structured bindings
      const double seconds = clock_.time([&] { manager_.move(values_[k], to, from); },
                                         Operation{Operation::Kind::Copy, from, to, sizes_[k]});
      if (timed) seconds_[{hop, sizes_[k]}].push_back(seconds);
    }
  }
}

void MoveSeries::finish(Result &result, RawCopies *raw, unsigned repetitions) {
  for (const Handle &value : values_)
    manager_.discard(value);
  // Both directions of a link kind pool their samples (device-device).
  std::map<std::pair<LinkKind, std::uint64_t>, std::vector<double>> by_link;
  for (const auto &[key, list] : seconds_) {
    std::vector<double> &pooled = by_link[{*link_between(key.first.first, key.first.second), key.second}];
    pooled.insert(pooled.end(), list.begin(), list.end());
  }
  result.model.samples = {};
  for (std::size_t k = 0; k < kLinkKindCount; ++k) {
    const LinkKind link = static_cast<LinkKind>(k);
    std::vector<LinkSample> samples;
    for (std::uint64_t bytes : sizes_)
      if (auto found = by_link.find({link, bytes}); found != by_link.end())
        samples.push_back(LinkSample{bytes, median(found->second)});
    if (samples.empty()) {
      result.kept_from_default.push_back(link);
      continue;
    }
    result.model.links[k] = fit_link_curve(samples);
    result.model.samples[k] = samples;
  }
  for (const auto &[key, list] : seconds_) {
    const auto &[pair, bytes] = key;
    Row row;
    row.from = pair.first;
    row.to = pair.second;
    row.link = *link_between(pair.first, pair.second);
    row.bytes = bytes;
    row.manager_seconds = median(list);
    if (raw) row.raw_seconds = raw->median_seconds(pair.first, pair.second, bytes, repetitions);
    row.predicted_seconds = result.model.transfer_seconds(pair.first, pair.second, bytes);
    result.rows.push_back(row);
  }
}

// ---- windows of two values ------------------------------------------------

WindowSeries::WindowSeries(Manager &manager, Clock &clock, std::uint64_t bytes, std::uint32_t first_pattern,
                           std::uint32_t second_pattern, Location second_at)
    : manager_(manager), clock_(clock), bytes_(bytes), first_(adopt_value(manager, bytes, first_pattern)),
      second_(adopt_value(manager, bytes, second_pattern)) {
  manager_.move(first_, kGpu0);
  if (second_at != kPageable) manager_.move(second_, second_at); // adopted in pageable memory
}

void WindowSeries::sample_window(Move first, Move second, const char *name, const Operation &operation,
                                 bool timed, std::vector<double> &seconds) {
  // (ActionSpec: the destination, then the source.)
  const std::vector<ActionSpec> phase = {{ActionKind::Move, first.value, first.to, first.from},
                                         {ActionKind::Move, second.value, second.to, second.from}};
  const double taken = clock_.time([&] { manager_.execute_actions(phase, name); }, operation);
  if (timed) seconds.push_back(taken);
}

void WindowSeries::discard_values() {
  manager_.discard(first_);
  manager_.discard(second_);
}

// ---- an eviction beside a prefetch -------------------------------------

DuplexSeries::DuplexSeries(Manager &manager, Clock &clock, std::uint64_t bytes)
    : WindowSeries(manager, clock, bytes, 2, 3, kPinned) {}

void DuplexSeries::round(bool timed) {
  for (unsigned k = 0; k < kSamplesPerRound; ++k) {
    const bool forward = samples_taken_++ % 2 == 0;
    const Handle &leaving = forward ? first_ : second_, &arriving = forward ? second_ : first_;
    sample_window({leaving, kGpu0, kPinned}, {arriving, kPinned, kGpu0}, "calibrate-duplex",
                  Operation{Operation::Kind::Duplex, kGpu0, kPinned, bytes_}, timed, seconds_);
  }
}

void DuplexSeries::finish(Result &result, double fallback_bytes_per_second) {
  discard_values();
  result.duplex_bytes = bytes_;
  result.duplex_seconds = median(seconds_);
  result.duplex_fastest_seconds = *std::min_element(seconds_.begin(), seconds_.end());
  result.duplex_slowest_seconds = *std::max_element(seconds_.begin(), seconds_.end());
  // Its bytes at a rate shared by the two directions, after the longer
  // latency of the two.
  const SizeClass &in_class = result.model.curve(LinkKind::PinnedToDevice).class_for(bytes_);
  const SizeClass &out_class = result.model.curve(LinkKind::DeviceToPinned).class_for(bytes_);
  const double streaming =
      result.duplex_seconds - std::max(in_class.latency_seconds, out_class.latency_seconds);
  result.model.duplex_bytes_per_second =
      streaming > 0 ? 2 * static_cast<double>(bytes_) / streaming : fallback_bytes_per_second;
  result.duplex_predicted_seconds = predict_duplex(result.model, kGpu0, bytes_);
}

// ---- a DMA beside a host copy -------------------------------------------

HostMemorySeries::HostMemorySeries(Manager &manager, Clock &clock, std::uint64_t bytes)
    : WindowSeries(manager, clock, bytes, 4, 5, kPageable) {}

void HostMemorySeries::round(bool timed) {
  // Out of cuda:0 beside a copy into pinned memory, then back.
  sample_window({first_, kGpu0, kPinned}, {second_, kPageable, kPinned}, "calibrate-host-memory-out",
                Operation{Operation::Kind::BesideHostCopy, kGpu0, kPinned, bytes_}, timed, out_seconds_);
  sample_window({first_, kPinned, kGpu0}, {second_, kPinned, kPageable}, "calibrate-host-memory-in",
                Operation{Operation::Kind::BesideHostCopy, kPinned, kGpu0, bytes_}, timed, in_seconds_);
}

void HostMemorySeries::finish(Result &result, double default_bytes_per_second) {
  discard_values();
  HostMemoryWindows &windows = result.host_memory;
  windows.bytes = bytes_;
  windows.out_seconds = median(out_seconds_);
  windows.in_seconds = median(in_seconds_);
  LinkModel &model = result.model;
  const double measured = windows.out_seconds + windows.in_seconds;
  auto predicted_with = [&](double bytes_per_second) {
    model.host_memory_bytes_per_second = bytes_per_second;
    return predict_beside_host_copy(model, kGpu0, bytes_, true) +
           predict_beside_host_copy(model, kGpu0, bytes_, false);
  };
  // The most a window's larger copy alone moves through the host's memory:
  // at or below it the rule shares that window all it can.
  auto largest_demand = [&](Location dma_from, Location dma_to, Location host_from, Location host_to) {
    auto demand = [&](Location from, Location to) {
      return model.curve(*link_between(from, to)).class_for(bytes_).bytes_per_second *
             host_memory_traffic(from, to);
    };
    return std::max(demand(dma_from, dma_to), demand(host_from, host_to));
  };
  const double most_sharing = std::min(largest_demand(kGpu0, kPinned, kPageable, kPinned),
                                       largest_demand(kPinned, kGpu0, kPinned, kPageable));
  // What the windows take unshared, and shared as much as the rule can.
  const double unshared = predicted_with(0), most_shared = predicted_with(most_sharing);
  constexpr double kAgreement = 0.01;
  if (measured <= unshared * (1 + kAgreement)) {
    // Not shared at this size: keep the default's figure if it predicts
    // these windows no shorter than they took (it binds only at larger
    // sizes), else none.
    windows.kept_default =
        default_bytes_per_second > 0 &&
        predicted_with(default_bytes_per_second) <= std::max(measured, unshared) * (1 + kAgreement);
    model.host_memory_bytes_per_second = windows.kept_default ? default_bytes_per_second : 0;
  } else if (measured >= most_shared) {
    // Longer than the rule can make them: as much sharing as it has.
    windows.beyond_rule = true;
    model.host_memory_bytes_per_second = most_sharing;
  } else {
    // The predicted windows shorten as the figure grows: bisect it (on a
    // log scale, between one byte a second and a figure that never binds).
    double low = 1, high = 1e15;
    for (int step = 0; step < 200 && high / low > 1 + 1e-9; ++step) {
      const double middle = std::sqrt(low * high);
      (predicted_with(middle) > measured ? low : high) = middle;
    }
    model.host_memory_bytes_per_second = high;
  }
  windows.out_predicted_seconds = predict_beside_host_copy(model, kGpu0, bytes_, true);
  windows.in_predicted_seconds = predict_beside_host_copy(model, kGpu0, bytes_, false);
}

// ---- source loads ----------------------------------------------------------

SourceLoadSeries::SourceLoadSeries(Manager &manager, Clock &clock, std::uint64_t bytes)
    : manager_(manager), clock_(clock), bytes_(bytes), source_(std::make_shared<PatternSource>()),
      value_(register_pattern(manager, source_, bytes)) {}

void SourceLoadSeries::sample(bool timed) {
  const double seconds = time_fill(manager_, clock_, value_, bytes_);
  if (timed) seconds_.push_back(seconds);
}

void SourceLoadSeries::finish(Result &result) {
  manager_.discard(value_);
  result.model.source_load_bytes_per_second = static_cast<double>(bytes_) / median(seconds_);
  std::vector<double> first_touch;
  for (unsigned rep = 1; rep <= 3 && (std::uint64_t{2} << 20) * rep < bytes_; ++rep) {
    const std::uint64_t fresh = bytes_ - (std::uint64_t{2} << 20) * rep;
    const Handle cold = register_pattern(manager_, source_, fresh);
    const double seconds =
        clock_.time([&] { manager_.ensure(cold, kPageable); },
                    Operation{Operation::Kind::ColdSourceLoad, kPageable, kPageable, fresh});
    manager_.discard(cold);
    first_touch.push_back(
        std::max(0.0, seconds - static_cast<double>(fresh) / result.model.source_load_bytes_per_second) /
        static_cast<double>(fresh));
  }
  if (!first_touch.empty()) result.model.pageable_first_touch_seconds_per_byte = median(first_touch);
}

// ---- the DMAs' extras -------------------------------------------------------

DmaExtrasSeries::DmaExtrasSeries(Manager &manager, Clock &clock, std::uint64_t bytes,
                                 std::uint64_t host_work_bytes, std::uint64_t staged_bytes)
    : manager_(manager), clock_(clock), bytes_(bytes), host_work_bytes_(host_work_bytes),
      value_(adopt_value(manager, bytes, 6)),
      filled_(register_pattern(manager, std::make_shared<PatternSource>(), host_work_bytes)),
      staged_bytes_(staged_bytes) {
  manager_.move(value_, kPinned); // adopted in pageable memory
  if (staged_bytes_ > 0) {
    staged_ = adopt_value(manager, staged_bytes_, 7);
    manager_.move(*staged_, kGpu0);
  }
}

void DmaExtrasSeries::sample_staged(const Operation &operation, bool timed, std::vector<double> &seconds) {
  const double taken = clock_.time([&] { manager_.move(*staged_, kGpu0, kPageable); }, operation);
  if (timed) seconds.push_back(taken);
}

void DmaExtrasSeries::sample(Location to, const Operation &operation, bool timed,
                             std::vector<double> &seconds) {
  const double taken =
      clock_.time([&] { manager_.move(value_, to, to == kGpu0 ? kPinned : kGpu0); }, operation);
  if (timed) seconds.push_back(taken);
}

void DmaExtrasSeries::load_other() {
  manager_.ensure(filled_, kGpu0);
  manager_.drop(filled_, kGpu0);
}

void DmaExtrasSeries::round(bool timed) {
  const auto with_extra = [&](Location from, Location to, std::optional<double> LinkModel::*extra) {
    return Operation{.kind = Operation::Kind::CopyWithDmaExtra,
                     .from = from,
                     .to = to,
                     .bytes = bytes_,
                     .dma_extra = extra};
  };
  const Operation in{Operation::Kind::Copy, kPinned, kGpu0, bytes_},
      out{Operation::Kind::Copy, kGpu0, kPinned, bytes_},
      in_after_host_work = with_extra(kPinned, kGpu0, &LinkModel::dma_after_host_work_seconds),
      cold_in = with_extra(kPinned, kGpu0, &LinkModel::dma_cold_value_seconds),
      cold_out = with_extra(kGpu0, kPinned, &LinkModel::dma_cold_value_seconds),
      follow_on_out = with_extra(kGpu0, kPinned, &LinkModel::dma_follow_on_seconds),
      staged_in{Operation::Kind::Copy, kPageable, kGpu0, staged_bytes_},
      staged_in_after_host_work = Operation{.kind = Operation::Kind::CopyWithDmaExtra,
                                            .from = kPageable,
                                            .to = kGpu0,
                                            .bytes = staged_bytes_,
                                            .dma_extra = &LinkModel::staged_after_host_work_seconds};
  for (unsigned k = 0; k < kSamplesPerRound; ++k) {
    // Its own round trip first, untimed: the other series ran in between,
    // or the last sample's cold move out, after which a move in would be a
    // follow-on; after this one it is in the curves' state.
    manager_.move(value_, kGpu0, kPinned);
    manager_.move(value_, kPinned, kGpu0);
    sample(kGpu0, in, timed, own_in_);
    sample(kPinned, out, timed, own_out_);
    const double fill = time_fill(manager_, clock_, filled_, host_work_bytes_);
    if (timed) fill_seconds_.push_back(fill);
    sample(kGpu0, in_after_host_work, timed, after_host_work_);
    // Out again straight after that move in, as a plan's value meets it
    // whose first move in after its setup it is.
    sample(kPinned, follow_on_out, timed, follow_on_out_);
    // Cold into the device as a plan's value placed by the processor meets
    // it (bootstrapping's ciphertext after its first key's load): its
    // pinned block written by a host copy, then another value's load.
    manager_.move(value_, kPageable, kPinned);
    manager_.move(value_, kPinned, kPageable);
    load_other();
    sample(kGpu0, cold_in, timed, cold_in_);
    // Cold out of it as a value evicted after loads meets it.
    load_other();
    sample(kPinned, cold_out, timed, cold_out_);
    if (!staged_) continue;
    // A staged copy into the device straight after the processor wrote its
    // own bytes (its move out into pageable memory), then after another
    // value's fill: the first staged copy after a plan's setup.
    manager_.move(*staged_, kPageable, kGpu0);
    sample_staged(staged_in, timed, staged_own_in_);
    manager_.move(*staged_, kPageable, kGpu0);
    const double other_fill = time_fill(manager_, clock_, filled_, host_work_bytes_);
    if (timed) fill_seconds_.push_back(other_fill);
    sample_staged(staged_in_after_host_work, timed, staged_after_host_work_);
  }
}

void DmaExtrasSeries::finish(Result &result) {
  manager_.discard(value_);
  manager_.discard(filled_);
  if (staged_) manager_.discard(*staged_);
  result.dma_extras_bytes = bytes_;
  result.host_work_bytes = host_work_bytes_;
  result.host_work_fill_seconds = median(fill_seconds_);
  result.own_in_seconds = median(own_in_);
  result.after_host_work_seconds = median(after_host_work_);
  result.cold_in_seconds = median(cold_in_);
  result.own_out_seconds = median(own_out_);
  result.cold_out_seconds = median(cold_out_);
  result.follow_on_out_seconds = median(follow_on_out_);
  result.model.dma_after_host_work_seconds =
      std::max(0.0, result.after_host_work_seconds - result.own_in_seconds);
  // One figure for both directions: on the H200 a 10 MiB ciphertext's
  // moves in and out after key loads missed their curves alike.
  const double cold_in = result.cold_in_seconds - result.own_in_seconds,
               cold_out = result.cold_out_seconds - result.own_out_seconds;
  result.model.dma_cold_value_seconds = std::max(0.0, (cold_in + cold_out) / 2);
  result.model.dma_follow_on_seconds = std::max(0.0, result.follow_on_out_seconds - result.own_out_seconds);
  if (!staged_) return; // not measured: the defaults' figure stays
  result.staged_bytes = staged_bytes_;
  result.staged_own_in_seconds = median(staged_own_in_);
  result.staged_after_host_work_seconds = median(staged_after_host_work_);
  result.model.staged_after_host_work_seconds =
      std::max(0.0, result.staged_after_host_work_seconds - result.staged_own_in_seconds);
}

} // namespace fhr::calibrate
