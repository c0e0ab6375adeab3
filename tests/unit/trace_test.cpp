// Trace Event Format output: every span is a complete event on a named
// track of the predicted or the measured process; copies sit on their
// engine's track.
#include "fhr/compiler/explain_time.hpp"
#include "fhr/compiler/output.hpp"
#include "fhr/compiler/trace.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>

using json = nlohmann::ordered_json;

namespace {

/// (pid, tid) -> thread name, from the metadata events.
std::map<std::pair<int, int>, std::string> thread_names(const json &trace) {
  std::map<std::pair<int, int>, std::string> names;
  for (const json &event : trace["traceEvents"])
    if (event["ph"] == "M" && event["name"] == "thread_name")
      names[{event["pid"].get<int>(), event["tid"].get<int>()}] = event["args"]["name"].get<std::string>();
  return names;
}

} // namespace

TEST_CASE("trace: predicted spans of every step, copies on their engine's track, valid events") {
  fhr::test::Explained explained =
      fhr::test::explain(fhr::test::read_file(FHR_SOURCE_DIR "/examples/inference.fhr"));
  json document = fhr::explain_json({explained.report});
  fhr::add_predicted_time(document, fhr::LinkModel::h200());
  const json trace = fhr::trace_json(fhr::predicted_trace(document));
  REQUIRE(trace["traceEvents"].is_array());
  CHECK(trace["displayTimeUnit"] == "ms");
  const auto names = thread_names(trace);
  std::size_t complete = 0;
  std::map<std::string, std::set<std::string>> steps_on_track;
  for (const json &event : trace["traceEvents"]) {
    REQUIRE(event.contains("ph"));
    if (event["ph"] == "M") continue;
    REQUIRE(event["ph"] == "X");
    ++complete;
    CHECK(event["ts"].get<double>() >= 0);
    CHECK(event["dur"].get<double>() >= 0);
    CHECK(event["pid"] == 1); // all predicted
    const auto track = names.find({event["pid"].get<int>(), event["tid"].get<int>()});
    REQUIRE(track != names.end()); // every track is named
    steps_on_track[track->second].insert(event["name"].get<std::string>());
  }
  // One span for the plan, one per step, one per step that copies.
  const json &steps = document["files"][0]["units"][0]["steps"];
  std::size_t copies = 0;
  for (const json &step : steps)
    if (step["time"]["engine"].is_string()) {
      ++copies;
      CHECK(steps_on_track[step["time"]["engine"].get<std::string>()].count(
                step["step"].get<std::string>()) == 1);
    }
  CHECK(copies == 4);
  CHECK(complete == 1 + steps.size() + copies);
  CHECK(steps_on_track["cuda:0 out"] == std::set<std::string>{"move query to pinned from cuda:0"});
  CHECK(steps_on_track["steps"].size() == steps.size());
}

TEST_CASE("trace: measured spans beside the predicted ones, relative to the run's start") {
  fhr::TraceDocument trace;
  trace.title = "run";
  fhr::add_measured(trace,
                    {{"ensure k at cuda:0", "cuda:0 in", 1'000'500, 1'004'500, 4096, "enter", false},
                     {"drop k at cuda:0", "", 1'004'500, 1'004'600, 4096, "exit", false}},
                    1'000'000);
  REQUIRE(trace.spans.size() == 3); // the copy twice: on the steps and on its engine
  CHECK(trace.spans[0].start_us == 0.5);
  CHECK(trace.spans[0].end_us == 4.5);
  const json out = fhr::trace_json(trace);
  const auto names = thread_names(out);
  std::set<std::string> measured_tracks;
  for (const json &event : out["traceEvents"]) {
    if (event["ph"] != "X") continue;
    CHECK(event["pid"] == 2);
    CHECK(event["cat"] == "measured");
    measured_tracks.insert(names.at({2, event["tid"].get<int>()}));
  }
  CHECK(measured_tracks == std::set<std::string>{"steps", "cuda:0 in"});
  bool named = false;
  for (const json &event : out["traceEvents"])
    if (event["ph"] == "M" && event["name"] == "process_name" && event["pid"] == 2)
      named = event["args"]["name"] == "measured: run";
  CHECK(named);
}

TEST_CASE("trace: a program's acquires are on the leases track") {
  fhr::test::Explained explained =
      fhr::test::explain(fhr::test::read_file(FHR_SOURCE_DIR "/examples/replicated-weights.fhr"));
  json document = fhr::explain_json({explained.report});
  fhr::add_predicted_time(document, fhr::LinkModel::h200());
  const json trace = fhr::trace_json(fhr::predicted_trace(document));
  const auto names = thread_names(trace);
  std::set<std::string> leases;
  for (const json &event : trace["traceEvents"])
    if (event["ph"] == "X" && names.at({1, event["tid"].get<int>()}) == "leases")
      leases.insert(event["name"].get<std::string>());
  CHECK(leases ==
        std::set<std::string>{"acquire w[*], x[0..2] at cuda:0", "acquire w[*], x[2..4] at cuda:1"});
}
