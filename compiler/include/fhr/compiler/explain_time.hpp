#pragma once
/// \file
/// Time and memory over the steps of an explained plan or program, read
/// from an explain document (`fhr-explain/1` or `/2`) (docs/explain-json.md): what the
/// pictures draw, what `explain --profile` adds and what `diff` compares.
/// Working from the document keeps these consumers independent of how the
/// explanation was computed.
///
/// Two facts the time and the stacks need come from optional step fields
/// when the explanation provides them (docs/explain-json.md, "Time and
/// memory"): `value` (the value a step acts on) and `transfer` (`copy`,
/// `load` or `none`). Without them they are read from the step's text and
/// inferred: an ensure, copy or move that succeeded copies from its source
/// unless that is impossible — the value is known absent there, or what the
/// location held before the unit and the unit did not touch is smaller than
/// the value — and then it is a load (fills a temporary replica at the
/// source first).

#include "fhr/model/link_model.hpp"
#include "fhr/model/timeline.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fhr {

/// One band of a location's stack: bytes it holds after each step.
struct MemoryBand {
  enum class Kind : std::uint8_t {
    Before,      ///< replicas of values resident before the unit that it does not touch
    Value,       ///< one value's replica
    Reservation, ///< a reservation (shaded)
  } kind = Kind::Value;
  std::string name;                 ///< the value, or the reservation's label
  std::vector<std::uint64_t> bytes; ///< index 0: before the first step; k: after step k
};

/// A location's charged bytes over the steps, stacked by value.
struct LocationMemory {
  std::string location;
  std::optional<std::uint64_t> budget_bytes;
  std::uint64_t peak_charged_bytes = 0; ///< the explanation's figure (temporary charges included)
  /// The logical bytes of the replicas there before the unit (documents
  /// without the figure: the charge before it, its storage bytes).
  std::uint64_t resident_logical_before_bytes = 0;
  std::vector<MemoryBand> bands; ///< bottom to top; every band has steps + 1 entries
  /// Charged (used + reserved) after each step: the sum of the bands.
  std::vector<std::uint64_t> charged_bytes;
  /// Charged only while a step ran, on top of the stack before it: a load's
  /// temporary replica at its source, a failing step's request (index k:
  /// step k, 0 unused).
  std::vector<std::uint64_t> temporary_bytes;
  /// What that charge comes on top of: the charge after the step before,
  /// less the reservations released between the two (index k: step k).
  std::vector<std::uint64_t> temporary_base_bytes;
  /// The highest charge the stacks reach, temporary charges included: the
  /// explanation's peak when the inference below holds.
  std::uint64_t derived_peak_bytes() const;
};

struct UnitMemory {
  std::size_t steps = 0;
  std::vector<LocationMemory> locations; ///< the unit's locations, in its order
  /// The 0-based index of the failing step, if any.
  std::optional<std::size_t> failure;
  /// Per step: the value it acts on ("" for reservations and the like) and
  /// what it moves (given or inferred).
  std::vector<std::string> values;
  std::vector<StepTransfer> transfers;
  /// Per step: where it frees the value's replicas (a move's source, a
  /// drop, a discard's replicas as far as the unit knows them).
  std::vector<LocationSet> freed;
};

/// What unit_memory() keeps of each location per step: every band's bytes
/// (the pictures' stacks), or only the charged and temporary totals (the
/// time predictor's: a band per value and location times the steps grew
/// to gigabytes on plans of 100,000 actions).
enum class MemorySeries { Bands, Totals };

/// The memory stacks of one unit of an explain document (fhr-explain/1 or
/// /2); with MemorySeries::Totals every band's `bytes` stays empty.
UnitMemory unit_memory(const nlohmann::ordered_json &unit, MemorySeries series = MemorySeries::Bands);

/// `options` with the unit's resident bytes before its first step
/// (TimelineOptions::resident_before), for the cold pools' prediction.
TimelineOptions unit_timeline_options(const UnitMemory &memory, TimelineOptions options);

/// The steps of one unit as the time predictor needs them (one per step).
std::vector<TimelineStep> unit_timeline_steps(const nlohmann::ordered_json &unit, const UnitMemory &memory);

/// One unit's predicted timeline: its steps on `links`, from the resident
/// bytes before it (the two above, as explain, run and the tests time it).
Timeline unit_timeline(const nlohmann::ordered_json &unit, const UnitMemory &memory, const LinkModel &links,
                       const TimelineOptions &options = {});

/// Writes what a step's DMA pays beyond its curve into its `time` (an
/// explain document's) or `predicted` (a run document's) object, in
/// microseconds: `after_host_work_us`, `cold_value_us`, `follow_on_us` and
/// the state it met, `dma_state` (docs/explain-json.md).
void add_dma_extra_json(nlohmann::ordered_json &time, const DmaExtra &extra);

/// Adds the predicted time to every unit of an explain document (fhr-explain/1 or /2): a
/// `time` object per step, `predicted_us` per unit and `links` (the
/// profile's machine) at the top (docs/explain-json.md).
void add_predicted_time(nlohmann::ordered_json &document, const LinkModel &links,
                        const TimelineOptions &options = {});

/// A unit's `predicted_us` (add_predicted_time) less its loads' source
/// fills: what the planner's schedule clock times (a load from its copy,
/// docs/planner.md "Time"), so the two compare on a printed program. Each
/// figure subtracted is rounded to the nanosecond, as the JSON gives it.
double predicted_us_without_fills(const nlohmann::ordered_json &unit);

} // namespace fhr
