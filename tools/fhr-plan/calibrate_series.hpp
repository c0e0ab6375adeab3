#pragma once
/// \file
/// The measurements of `fhr-plan calibrate`, one series each, sampled in
/// rounds (calibrate.cpp): every round takes one sample of every size of
/// a series (three of the duplex window's one size), the loads' rounds
/// first, then rounds of the other three together, the first round
/// untimed (pools and first touches). The staged copies run at the
/// host's memory bandwidth, which drifts over
/// seconds on a shared machine: one series' samples in a row caught one
/// moment (the staged-load curve at 256 MiB came out 28–43 GB/s on three
/// machines whose plans ran their loads at 36–37.5 GB/s), samples in
/// rounds spread the drift over every median alike.

#include "calibrate.hpp"

#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace fhr::calibrate {

/// Loads into cuda:0 from a source in pageable memory, as a plan step runs
/// them (the source fills pooled pageable storage, the staged copy
/// follows), the fill left out: the copy after a fill runs slower than a
/// move of resident bytes (docs/links.md). One value per size.
class LoadSeries {
public:
  LoadSeries(Manager &manager, Clock &clock, std::vector<std::uint64_t> sizes);
  void round(bool timed);
  /// The load curve and its rows; discards the values.
  void finish(Result &result);

private:
  Manager &manager_;
  Clock &clock_;
  std::vector<std::uint64_t> sizes_;
  std::vector<Handle> values_;
  std::vector<std::vector<double>> seconds_; ///< per size
};

/// Moves round every link kind, one value per size, each move a plan
/// step's whole cost (allocate the destination, copy, free the source).
class MoveSeries {
public:
  MoveSeries(Manager &manager, Clock &clock, std::vector<std::uint64_t> sizes, unsigned devices);
  void round(bool timed);
  /// Every link's curve and samples (the links no move took kept from
  /// `result.model`, listed in kept_from_default), and a row per
  /// direction and size with the raw copy beside it; discards the values.
  void finish(Result &result, RawCopies *raw, unsigned repetitions);

private:
  Manager &manager_;
  Clock &clock_;
  std::vector<std::uint64_t> sizes_;
  std::vector<std::pair<Location, Location>> cycle_;
  std::vector<Handle> values_;
  std::map<std::pair<std::pair<Location, Location>, std::uint64_t>, std::vector<double>> seconds_;
};

/// What the two window series below share: two values of `bytes` the
/// calibration owns (the first put on cuda:0 at the start), moved together
/// in one plan phase (one overlap window, both copies issued at once, the
/// first move's first) and timed as a whole.
class WindowSeries {
protected:
  /// Adopts the two values (patterns `first_pattern` and `second_pattern`)
  /// and puts the first on cuda:0, the second at `second_at`.
  WindowSeries(Manager &manager, Clock &clock, std::uint64_t bytes, std::uint32_t first_pattern,
               std::uint32_t second_pattern, Location second_at);

  /// One move of a window.
  struct Move {
    Handle value;
    Location from, to;
  };
  /// Runs the phase `name` of `first` and `second`, charged as `operation`;
  /// its seconds go to `seconds` when `timed`.
  void sample_window(Move first, Move second, const char *name, const Operation &operation, bool timed,
                     std::vector<double> &seconds);
  /// Discards both values (a series' finish, first).
  void discard_values();

  Manager &manager_;
  Clock &clock_;
  std::uint64_t bytes_;
  Handle first_, second_;
};

/// An eviction of cuda:0 to pinned beside a prefetch of pinned to cuda:0
/// in one plan phase (one overlap window, both copy engines), two values
/// of `bytes` trading places every sample. The one figure the window's
/// rate comes from: three samples a round (kSamplesPerRound), where the
/// curves have one a size, so that its median does not rest on five.
class DuplexSeries : private WindowSeries {
public:
  static constexpr unsigned kSamplesPerRound = 3;
  DuplexSeries(Manager &manager, Clock &clock, std::uint64_t bytes);
  /// kSamplesPerRound samples, each moving the values the other way.
  void round(bool timed);
  /// The duplex figure that makes the predictor give back the measured
  /// window, from the fitted pinned <-> device curves (MoveSeries::finish
  /// first); `fallback` where the window left no time to stream in.
  void finish(Result &result, double fallback_bytes_per_second);

private:
  // first_: the value the even samples evict (on cuda:0 at the start);
  // second_: the one they prefetch (in pinned memory).
  unsigned samples_taken_ = 0; ///< its parity says which way the next sample moves
  std::vector<double> seconds_;
};

/// A DMA between cuda:0 and pinned memory beside a host copy between
/// pageable and pinned memory, in one plan phase (one overlap window: the
/// DMA issued first, the host copy while it runs), two
/// values of `bytes`: out of the device beside a copy into pinned memory,
/// then back in beside one out of it. Each alone is on a curve the moves
/// measure; together they share the host's memory, and the figure that
/// makes the predictor give back both windows is the profile's
/// `host_memory_gbps`.
class HostMemorySeries : private WindowSeries {
public:
  HostMemorySeries(Manager &manager, Clock &clock, std::uint64_t bytes);
  /// Both windows, once each.
  void round(bool timed);
  /// The host memory figure, from the fitted curves (MoveSeries::finish
  /// first); the default's where the windows did not share it at this size
  /// and that figure gives them back too, none where it does not.
  void finish(Result &result, double default_bytes_per_second);

private:
  // first_: the DMA's value (on cuda:0 between samples); second_: the host
  // copy's (in pageable memory between samples).
  std::vector<double> out_seconds_, in_seconds_;
};

/// A source filling pageable memory (the synthetic pattern of `fhr-plan
/// run`), and after the rounds the same into fresh pages.
class SourceLoadSeries {
public:
  SourceLoadSeries(Manager &manager, Clock &clock, std::uint64_t bytes);
  void sample(bool timed);
  /// The fill rate, then three loads of sizes the pageable pool keeps no
  /// block of (each 2 MiB below the last), so that the backend faults a new
  /// block in: what that costs beyond the warm load, per byte.
  void finish(Result &result);

private:
  Manager &manager_;
  Clock &clock_;
  std::uint64_t bytes_;
  std::shared_ptr<Source> source_;
  Handle value_;
  std::vector<double> seconds_;
};

/// What a DMA between pinned memory and cuda:0 pays beyond its curve
/// (fhr/model/dma_history.hpp), on a value of `bytes`, kSamplesPerRound
/// samples of each state a round:
///  - into the device straight after its own round trip and out straight
///    after that move in (the state the moves' curves are measured in);
///  - into the device straight after the processor filled
///    `host_work_bytes` of pageable memory (a source's fill): the
///    difference of the medians is the profile's `dma_after_host_work_us`.
///    With one sample a round (five or seven in all) seven calibrations on
///    the H200 gave 18-122 µs, with three 33-57 µs (six);
///  - either way straight after another value's load of
///    `host_work_bytes` into the device (its fill, then its copy: no host
///    work pending, the value cold), into the device with its pinned
///    block written by a host copy before that load (a value the
///    processor placed, as a plan's setup does): the mean of the two
///    directions' differences is `dma_cold_value_us`. In this state the
///    value's moves took 5-13 µs more on the H200, where the plans' cold
///    steps took 9-33 µs more (docs/benchmarks.md, twenty-second wave);
///  - out of the device straight after its move in after host work (the
///    value's DMA right after its own that met an extra's state): the
///    difference from its move out after its own round trip is
///    `dma_follow_on_us` (twenty-third wave);
///  - a second value of `staged_bytes`, from pageable memory into the
///    device: straight after its own move out into pageable memory (the
///    processor wrote its own bytes, as before the staged curve's samples,
///    which follow the value's own host copy into pageable memory), and
///    after that move out and a fill of `host_work_bytes` of other memory:
///    the difference of the medians is `staged_after_host_work_us`
///    (thirtieth wave). `staged_bytes` 0 (a `--max-bytes` below the
///    staging threshold, where no copy is staged): not measured.
class DmaExtrasSeries {
public:
  static constexpr unsigned kSamplesPerRound = 3;
  DmaExtrasSeries(Manager &manager, Clock &clock, std::uint64_t bytes, std::uint64_t host_work_bytes,
                  std::uint64_t staged_bytes);
  void round(bool timed);
  /// The extras (0 where the state was no slower); discards the values.
  void finish(Result &result);

private:
  /// Moves the value to `to`, timed as `operation`.
  void sample(Location to, const Operation &operation, bool timed, std::vector<double> &seconds);
  /// The other value's load into cuda:0, dropped again.
  void load_other();
  /// The staged value's copy from pageable memory into cuda:0, timed as
  /// `operation` (it is on cuda:0 before and after).
  void sample_staged(const Operation &operation, bool timed, std::vector<double> &seconds);
  Manager &manager_;
  Clock &clock_;
  std::uint64_t bytes_, host_work_bytes_;
  Handle value_;  ///< in pinned memory between samples
  Handle filled_; ///< the host work: a source that fills pageable memory, and the other value
  std::uint64_t staged_bytes_;
  std::optional<Handle> staged_; ///< the staged copies' value, on cuda:0 between samples
  std::vector<double> own_in_, after_host_work_, cold_in_, own_out_, cold_out_, follow_on_out_;
  std::vector<double> staged_own_in_, staged_after_host_work_;
  std::vector<double> fill_seconds_; ///< the host work's, timed as a source's fill
};

} // namespace fhr::calibrate
