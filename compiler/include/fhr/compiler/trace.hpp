#pragma once
/// \file
/// Chrome / Perfetto traces (Trace Event Format, JSON) of plans and runs:
/// one track per copy engine ("cuda:0 in", "cuda:0 out"), the host copy
/// threads, event waits and leases, with the predicted spans in one
/// process and the measured ones in another, so that ui.perfetto.dev and
/// chrome://tracing show them side by side (docs/pictures.md).
///
/// A span's time is in microseconds from the start of its plan or run.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace fhr {

struct TraceSpan {
  enum class Origin : std::uint8_t { Predicted, Measured } origin = Origin::Predicted;
  std::string track; ///< "cuda:0 in", "host copy threads", "steps", "leases", "event waits"
  std::string name;  ///< the step as .fhr text
  double start_us = 0, end_us = 0;
  nlohmann::ordered_json args = nlohmann::ordered_json::object(); ///< bytes, phase, line, ...
};

/// A moment without duration: a failure, an event recorded.
struct TraceInstant {
  TraceSpan::Origin origin = TraceSpan::Origin::Measured;
  std::string track, name;
  double at_us = 0;
  nlohmann::ordered_json args = nlohmann::ordered_json::object();
};

struct TraceDocument {
  std::string title; ///< e.g. the file and unit
  std::vector<TraceSpan> spans;
  std::vector<TraceInstant> instants;
};

/// The predicted spans of every unit of an explain document (fhr-explain/1 or /2) with
/// time fields: each step that moves bytes on its engine's track, every
/// step on the unit's "steps" track, acquires and holds on "leases" too.
/// Units follow each other in time.
TraceDocument predicted_trace(const nlohmann::ordered_json &explain_document);

/// What a run measured for one step (phase B: `fhr-plan run --trace` fills
/// these from ExecutedStep's TransitionReport started_at_ns / completed_at_ns).
struct MeasuredStep {
  std::string name;                ///< the step as .fhr text
  std::string track;               ///< its engine ("cuda:0 in"), or "" for steps that move nothing
  std::uint64_t started_at_ns = 0; ///< steady-clock stamps of the manager
  std::uint64_t completed_at_ns = 0;
  std::uint64_t bytes = 0;
  std::string phase;
  bool failed = false;
};

/// Adds measured spans, relative to `origin_ns` (the run's first stamp).
void add_measured(TraceDocument &trace, const std::vector<MeasuredStep> &steps, std::uint64_t origin_ns);

/// The Trace Event Format document: {"traceEvents": [...], "displayTimeUnit": "ms"}.
nlohmann::ordered_json trace_json(const TraceDocument &trace);

} // namespace fhr
