#include "fhr/compiler/trace.hpp"

#include <map>

namespace fhr {

namespace {
using json = nlohmann::ordered_json;

/// Tracks in a stable order: steps first, then engines as they appear.
class Tracks {
public:
  int id(TraceSpan::Origin origin, const std::string &track) {
    auto &ids = origin == TraceSpan::Origin::Predicted ? predicted_ : measured_;
    return ids.emplace(track, static_cast<int>(ids.size()) + 1).first->second;
  }
  const std::map<std::string, int> &of(TraceSpan::Origin origin) const {
    return origin == TraceSpan::Origin::Predicted ? predicted_ : measured_;
  }

private:
  std::map<std::string, int> predicted_, measured_;
};

int process_of(TraceSpan::Origin origin) { return origin == TraceSpan::Origin::Predicted ? 1 : 2; }
} // namespace

TraceDocument predicted_trace(const json &document) {
  TraceDocument trace;
  double offset = 0; // units one after another
  for (const json &file : document.at("files")) {
    for (const json &unit : file.at("units")) {
      const std::string unit_name =
          unit.value("kind", std::string()) + " " + unit.value("name", std::string());
      if (trace.title.empty()) trace.title = file.value("file", std::string());
      const double total = unit.value("predicted_us", 0.0);
      TraceSpan whole;
      whole.track = "plans and programs";
      whole.name = unit_name;
      whole.start_us = offset;
      whole.end_us = offset + total;
      whole.args["feasible"] = unit.value("feasible", true);
      trace.spans.push_back(whole);
      std::size_t index = 0;
      for (const json &step : unit.at("steps")) {
        ++index;
        if (!step.contains("time")) continue;
        const json &time = step["time"];
        TraceSpan span;
        span.name = step.value("step", std::string());
        span.start_us = offset + time.value("start_us", 0.0);
        span.end_us = offset + time.value("commit_us", time.value("end_us", 0.0));
        span.track = "steps";
        span.args =
            json{{"step", index},
                 {"phase", step.value("phase", std::string())},
                 {"result", step.value("result", std::string())},
                 // What crosses the link: the logical bytes (docs/links.md).
                 {"bytes", step.value("logical_bytes", step.value("storage_bytes", std::uint64_t{0}))}};
        trace.spans.push_back(span);
        if (time.at("engine").is_string()) {
          TraceSpan copy = span;
          copy.track = time["engine"].get<std::string>();
          // On its engine from when the engine takes it (after its allocation
          // and the copies queued ahead of it).
          copy.start_us = offset + time.value("copy_start_us", time.value("start_us", 0.0));
          copy.end_us = offset + time.value("end_us", 0.0);
          copy.args["window"] = time.value("window", json(nullptr));
          trace.spans.push_back(std::move(copy));
        }
        // Leases and holds of a program: their own track, where the run's
        // leases and event waits go too.
        const std::string keyword = span.name.substr(0, span.name.find(' '));
        if (keyword == "acquire" || keyword == "hold") {
          TraceSpan lease = span;
          lease.track = "leases";
          trace.spans.push_back(std::move(lease));
        }
        if (step.value("result", std::string()) == "failed")
          trace.instants.push_back(TraceInstant{TraceSpan::Origin::Predicted, "steps", "FAILED: " + span.name,
                                                span.start_us,
                                                json{{"reason", step.value("reason", json(nullptr))}}});
      }
      offset += total;
    }
  }
  return trace;
}

void add_measured(TraceDocument &trace, const std::vector<MeasuredStep> &steps, std::uint64_t origin_ns) {
  for (const MeasuredStep &step : steps) {
    auto us = [&](std::uint64_t ns) { return static_cast<double>(ns - std::min(ns, origin_ns)) / 1e3; };
    TraceSpan span;
    span.origin = TraceSpan::Origin::Measured;
    span.track = "steps";
    span.name = step.name;
    span.start_us = us(step.started_at_ns);
    span.end_us = us(step.completed_at_ns);
    span.args = json{{"phase", step.phase}, {"bytes", step.bytes}, {"failed", step.failed}};
    trace.spans.push_back(span);
    if (!step.track.empty()) {
      span.track = step.track;
      trace.spans.push_back(std::move(span));
    }
  }
}

json trace_json(const TraceDocument &trace) {
  Tracks tracks;
  // "steps" and the unit track first, so that they sit on top.
  for (TraceSpan::Origin origin : {TraceSpan::Origin::Predicted, TraceSpan::Origin::Measured}) {
    tracks.id(origin, "plans and programs");
    tracks.id(origin, "steps");
  }
  json events = json::array();
  for (const TraceSpan &span : trace.spans)
    events.push_back(json{{"name", span.name},
                          {"cat", span.origin == TraceSpan::Origin::Predicted ? "predicted" : "measured"},
                          {"ph", "X"},
                          {"ts", span.start_us},
                          {"dur", std::max(0.0, span.end_us - span.start_us)},
                          {"pid", process_of(span.origin)},
                          {"tid", tracks.id(span.origin, span.track)},
                          {"args", span.args}});
  for (const TraceInstant &instant : trace.instants)
    events.push_back(json{{"name", instant.name},
                          {"cat", instant.origin == TraceSpan::Origin::Predicted ? "predicted" : "measured"},
                          {"ph", "i"},
                          {"s", "t"},
                          {"ts", instant.at_us},
                          {"pid", process_of(instant.origin)},
                          {"tid", tracks.id(instant.origin, instant.track)},
                          {"args", instant.args}});
  json metadata = json::array();
  for (TraceSpan::Origin origin : {TraceSpan::Origin::Predicted, TraceSpan::Origin::Measured}) {
    const int pid = process_of(origin);
    metadata.push_back(
        json{{"name", "process_name"},
             {"ph", "M"},
             {"pid", pid},
             {"args",
              {{"name", std::string(origin == TraceSpan::Origin::Predicted ? "predicted" : "measured") +
                            (trace.title.empty() ? "" : ": " + trace.title)}}}});
    metadata.push_back(
        json{{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
    for (const auto &[name, tid] : tracks.of(origin)) {
      metadata.push_back(
          json{{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
      metadata.push_back(json{{"name", "thread_sort_index"},
                              {"ph", "M"},
                              {"pid", pid},
                              {"tid", tid},
                              {"args", {{"sort_index", tid}}}});
    }
  }
  for (json &event : metadata)
    events.push_back(std::move(event));
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

} // namespace fhr
