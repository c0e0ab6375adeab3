// Memory stacks, predicted time and pictures from explain documents: the
// stacks reach exactly the explained peaks, time fields follow the
// predictor, and the pages are self-contained.
#include "fhr/compiler/explain_time.hpp"
#include "fhr/compiler/output.hpp"
#include "fhr/compiler/pictures.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>

using fhr::MemoryBand;
using json = nlohmann::ordered_json;

namespace {

json document_of(const std::string &text) {
  fhr::test::Explained explained = fhr::test::explain(text);
  return fhr::explain_json({explained.report});
}

const fhr::LocationMemory &at(const fhr::UnitMemory &memory, const std::string &location) {
  for (const fhr::LocationMemory &l : memory.locations)
    if (l.location == location) return l;
  FAIL("no location " << location);
  return memory.locations.front();
}

std::uint64_t band_bytes(const fhr::LocationMemory &location, const std::string &name, std::size_t state) {
  for (const MemoryBand &band : location.bands)
    if (band.name == name) return band.bytes.at(state);
  return 0;
}

fhr::LinkModel round_model() {
  fhr::LinkModel model;
  for (std::size_t i = 0; i < fhr::kLinkKindCount; ++i)
    model.links[i].classes = {{std::nullopt, 0.0, 1e9}};
  model.duplex_bytes_per_second = 2e9;
  model.source_load_bytes_per_second = 1e9;
  return model;
}

constexpr std::uint64_t MiB = fhr::test::MiB;

} // namespace

TEST_CASE("memory stacks: every example's stacks reach exactly the explained peak at every location") {
  for (const std::string &path : fhr::test::example_paths()) {
    const json document = document_of(fhr::test::read_file(path));
    for (const json &unit : document["files"][0]["units"]) {
      const fhr::UnitMemory memory = fhr::unit_memory(unit);
      for (const fhr::LocationMemory &location : memory.locations) {
        INFO(path << ": " << unit["name"].get<std::string>() << " at " << location.location);
        CHECK(location.derived_peak_bytes() == location.peak_charged_bytes);
        for (const MemoryBand &band : location.bands)
          CHECK(band.bytes.size() == memory.steps + 1);
      }
      // The time predictor's totals alone: the same totals, no band series.
      const fhr::UnitMemory totals = fhr::unit_memory(unit, fhr::MemorySeries::Totals);
      REQUIRE(totals.locations.size() == memory.locations.size());
      for (std::size_t l = 0; l < totals.locations.size(); ++l) {
        CHECK(totals.locations[l].charged_bytes == memory.locations[l].charged_bytes);
        CHECK(totals.locations[l].temporary_bytes == memory.locations[l].temporary_bytes);
        CHECK(totals.locations[l].derived_peak_bytes() == memory.locations[l].peak_charged_bytes);
        for (const MemoryBand &band : totals.locations[l].bands)
          CHECK(band.bytes.empty());
      }
      CHECK(totals.transfers == memory.transfers);
      CHECK(totals.values == memory.values);
    }
  }
}

TEST_CASE("memory stacks: values, reservations, loads and moves, step by step") {
  const json document = document_of(fhr::test::read_file(FHR_SOURCE_DIR "/examples/inference.fhr"));
  const json &unit = document["files"][0]["units"][0];
  const fhr::UnitMemory memory = fhr::unit_memory(unit);
  REQUIRE(memory.steps == 7);
  const fhr::LocationMemory &gpu = at(memory, "cuda:0");
  // reserve 90 MiB, ensure weight (15), ensure rotkey (124, loaded), move query in (30).
  CHECK(gpu.charged_bytes == std::vector<std::uint64_t>{0, 90 * MiB, 105 * MiB, 229 * MiB, 259 * MiB,
                                                        229 * MiB, 105 * MiB, 90 * MiB});
  CHECK(band_bytes(gpu, "rotkey", 3) == 124 * MiB);
  CHECK(band_bytes(gpu, "query", 4) == 30 * MiB);
  CHECK(band_bytes(gpu, "\"rotate/multiply outputs and key-switch workspace\"", 7) == 90 * MiB);
  // rotkey is not resident anywhere: it is loaded, its source replica
  // charged at pageable while the step runs; weight is copied from there.
  CHECK(memory.transfers[1] == fhr::StepTransfer::Copy);
  CHECK(memory.transfers[2] == fhr::StepTransfer::Load);
  CHECK(memory.transfers[3] == fhr::StepTransfer::Copy);
  const fhr::LocationMemory &pageable = at(memory, "pageable");
  CHECK(pageable.temporary_bytes[3] == 124 * MiB);
  CHECK(band_bytes(pageable, "weight", 2) == 15 * MiB); // the untouched rest became weight's
  // The query left pinned at step 4 and came back at step 5.
  const fhr::LocationMemory &pinned = at(memory, "pinned");
  CHECK(pinned.charged_bytes[3] == 45 * MiB);
  CHECK(pinned.charged_bytes[4] == 15 * MiB);
  CHECK(band_bytes(pinned, "query", 5) == 30 * MiB);
}

TEST_CASE("resident bytes before a unit: the logical bytes, the charge where a document lacks them") {
  // b: 16 MiB logical, 20 MiB charged, on cuda:0 before the plan.
  json document = document_of(R"(
    budget cuda:0 1 GiB
    value b 16 MiB storage 20 MiB exclusive at cuda:0
    value c 8 MiB exclusive at pinned
    plan "p" { enter { move c to cuda:0 } }
  )");
  json &unit = document["files"][0]["units"][0];
  fhr::TimelineOptions options = fhr::unit_timeline_options(fhr::unit_memory(unit), {});
  CHECK(options.resident_before[fhr::Location::cuda(0).index()] == 16 * MiB);
  CHECK(options.resident_before[fhr::Location::pinned().index()] == 8 * MiB);
  // A document written before the field (fhr-explain/2 of earlier waves).
  for (json &location : unit["locations"])
    location.erase("resident_logical_before_bytes");
  options = fhr::unit_timeline_options(fhr::unit_memory(unit), {});
  CHECK(options.resident_before[fhr::Location::cuda(0).index()] == 20 * MiB);
}

TEST_CASE("memory stacks: a refused request is drawn on top of the failing step") {
  const json document = document_of(fhr::test::read_file(FHR_SOURCE_DIR "/examples/infeasible.fhr"));
  const json &unit = document["files"][0]["units"][0];
  const fhr::UnitMemory memory = fhr::unit_memory(unit);
  REQUIRE(memory.failure);
  const fhr::LocationMemory &gpu = at(memory, "cuda:0");
  CHECK(gpu.temporary_bytes[*memory.failure + 1] == 240 * MiB);
  CHECK(gpu.charged_bytes[*memory.failure] + 240 * MiB > *gpu.budget_bytes);
}

TEST_CASE("predicted time in the document: windows per phase, loads alone, fields in microseconds") {
  json document = document_of(R"(
budget cuda:0 1 GiB
value a 10 MiB replicable at pinned
value b 20 MiB exclusive at cuda:0
value k 30 MiB replicable source pageable
plan "p" {
  enter {
    ensure a at cuda:0
    move b to pinned
    ensure k at cuda:0
  }
  exit { drop a at cuda:0 }
}
)");
  fhr::add_predicted_time(document, round_model());
  const json &steps = document["files"][0]["units"][0]["steps"];
  // a (10 MiB in) and b (20 MiB out) share a window on the two engines; k
  // is a load: 30 MiB filled at 1 GB/s, then copied at 1 GB/s, alone.
  const double mib = 1048576.0 / 1e3; // microseconds per MiB at 1 GB/s
  CHECK(steps[0]["time"]["start_us"] == 0.0);
  CHECK(steps[0]["time"]["engine"] == "cuda:0 in");
  CHECK(steps[0]["time"]["end_us"].get<double>() == doctest::Approx(10 * mib));
  CHECK(steps[1]["time"]["engine"] == "cuda:0 out");
  CHECK(steps[1]["time"]["window"] == 0);
  CHECK(steps[1]["time"]["end_us"].get<double>() == doctest::Approx(20 * mib));
  CHECK(steps[2]["time"]["window"].is_null());
  CHECK(steps[2]["time"]["start_us"].get<double>() == doctest::Approx(20 * mib));
  CHECK(steps[2]["time"]["end_us"].get<double>() == doctest::Approx(80 * mib));
  CHECK(steps[3]["time"]["engine"].is_null());
  CHECK(document["files"][0]["units"][0]["predicted_us"].get<double>() == doctest::Approx(80 * mib));
  CHECK(document["links"]["machine"] == "");
}

TEST_CASE("memory stacks: a program's reservations end with their body or scope, nested or not") {
  // The body's workspace ends before the scope's exit, so b and c later
  // fit one overlap window; the outer scope's workspace outlives the inner
  // scope nested in its body, so x's move out (whose room is freed only
  // when its window commits) and b's copy in do not fit one.
  json document = document_of(R"(
budget cuda:0 200 MiB
value a 60 MiB replicable at pinned
value b 60 MiB replicable at pinned
value c 60 MiB replicable at pinned
value x 60 MiB replicable at cuda:0
plan "work" in program { enter { ensure a at cuda:0 } exit { drop a at cuda:0 } }
plan "inner" in program { reserve cuda:0 20 MiB "inner workspace" }
plan "outer" in program { reserve cuda:0 100 MiB "outer workspace" }
program "body" {
  scope "work" { reserve cuda:0 80 MiB "body workspace" }
  actions "load" {
    ensure b at cuda:0
    ensure c at cuda:0
  }
}
program "nested" {
  scope "outer" {
    run "inner"
    actions "swap" {
      move x to pinned from cuda:0
      ensure b at cuda:0
    }
  }
}
)");
  json &units = document["files"][0]["units"];
  const fhr::UnitMemory body = fhr::unit_memory(units[0]);
  CHECK(units[0]["steps"][1]["released_before_step"] == 3);
  // x 60; a 60 in; the body's 80; released, then a dropped; b, c in.
  CHECK(at(body, "cuda:0").charged_bytes ==
        std::vector<std::uint64_t>{60 * MiB, 120 * MiB, 200 * MiB, 60 * MiB, 120 * MiB, 180 * MiB});
  CHECK(band_bytes(at(body, "cuda:0"), "\"body workspace\"", 3) == 0);
  const fhr::UnitMemory nested = fhr::unit_memory(units[1]);
  CHECK(units[1]["steps"][0]["released_before_step"].is_null()); // held past the last step
  CHECK(units[1]["steps"][1]["released_before_step"] == 3);
  // x 60; the outer's 100, the inner's 20, released; x out; b in.
  CHECK(at(nested, "cuda:0").charged_bytes ==
        std::vector<std::uint64_t>{60 * MiB, 160 * MiB, 180 * MiB, 100 * MiB, 160 * MiB});
  fhr::add_predicted_time(document, round_model());
  const json &loads = units[0]["steps"];
  CHECK(loads[3]["time"]["window"] == loads[4]["time"]["window"]);
  const json &swap = units[1]["steps"];
  CHECK(swap[2]["time"]["window"] != swap[3]["time"]["window"]);

  // A document without the key (written by something else) holds every
  // reservation to the end of the unit.
  for (json &step : units[0]["steps"])
    step.erase("released_before_step");
  CHECK(at(fhr::unit_memory(units[0]), "cuda:0").charged_bytes.back() == 260 * MiB);
}

TEST_CASE("memory stacks: a discard removes the replicas resident before the unit too") {
  // x's replica on cuda:0 comes from setup: the program's discard frees it,
  // so y and z fit one window after it (a replay that knew only the
  // replicas the unit made kept x's 60 MiB there and split the window).
  json document = document_of(R"(
budget cuda:0 100 MiB
value x 60 MiB replicable source pageable
value y 50 MiB replicable at pinned
value z 30 MiB replicable at pinned
ensure x at cuda:0
plan "evict" { enter { discard x } }
program "p" {
  discard x
  actions "l" {
    ensure y at cuda:0
    ensure z at cuda:0
  }
}
)");
  json &units = document["files"][0]["units"];
  for (json &unit : units) {
    INFO(unit["name"].get<std::string>());
    CHECK(unit["steps"][0]["removed_from"] == json::array({"cuda:0"}));
    CHECK(at(fhr::unit_memory(unit), "cuda:0").charged_bytes.at(1) == 0);
  }
  CHECK(at(fhr::unit_memory(units[1]), "cuda:0").charged_bytes.back() == 80 * MiB);
  fhr::add_predicted_time(document, round_model());
  const json &steps = units[1]["steps"];
  CHECK(steps[1]["time"]["window"] == steps[2]["time"]["window"]);
}

TEST_CASE("memory stacks: a load right after a release comes on top of the stack without it") {
  // The 32 MiB reservation ends with the scope (after `run`, or with the
  // body before the exit): v's load then charges its 16 MiB at pinned
  // alone, and the stacks reach the model's peak of 32 MiB, not 48.
  const std::string values = "value v 16 MiB replicable source pinned\n";
  for (const std::string &text : {values + R"(plan "P" in program { reserve pinned 32 MiB "ws" }
program "p" {
  run "P"
  ensure v at cuda:0
})",
                                  values + R"(plan "Q" in program { exit { ensure v at cuda:0 } }
program "p" { scope "Q" { reserve pinned 32 MiB "body" } })"}) {
    INFO(text);
    const json document = document_of(text);
    const json &unit = document["files"][0]["units"][0];
    const fhr::UnitMemory memory = fhr::unit_memory(unit);
    const fhr::LocationMemory &pinned = at(memory, "pinned");
    CHECK(pinned.peak_charged_bytes == 32 * MiB);
    CHECK(pinned.derived_peak_bytes() == 32 * MiB);
    CHECK(pinned.temporary_bytes.back() == 16 * MiB);
    CHECK(pinned.temporary_base_bytes.back() == 0);
  }
}

TEST_CASE("predicted time: two action lists of one name in a row are two calls") {
  json document = document_of(R"(
budget cuda:0 1 GiB
value x 20 MiB replicable at cuda:0
value y 10 MiB replicable at pinned
program "lists" {
  actions "swap" { move x to pinned from cuda:0 }
  actions "swap" { ensure y at cuda:0 }
}
)");
  fhr::add_predicted_time(document, round_model());
  const double mib = 1048576.0 / 1e3; // microseconds per MiB at 1 GB/s
  const json &unit = document["files"][0]["units"][0];
  const json &steps = unit["steps"];
  REQUIRE(steps.size() == 2);
  CHECK(steps[0]["index"] == 0);
  CHECK(steps[1]["index"] == 0);
  // The manager waits for the first call's window before the second's:
  // x's 20 MiB out, then y's 10 MiB in, not beside it.
  CHECK(steps[0]["time"]["window"] != steps[1]["time"]["window"]);
  CHECK(steps[1]["time"]["start_us"].get<double>() == doctest::Approx(20 * mib));
  CHECK(unit["predicted_us"].get<double>() == doctest::Approx(30 * mib));
}

TEST_CASE("pictures: one self-contained page and one SVG document with every chart") {
  const json document = document_of(fhr::test::read_file(FHR_SOURCE_DIR "/examples/infeasible.fhr"));
  const std::string page = fhr::render_html(document, fhr::LinkModel::h200());
  CHECK(page.find("<!DOCTYPE html>") == 0);
  CHECK(page.find("src=") == std::string::npos);
  CHECK(page.find("href=") == std::string::npos);
  CHECK(page.find("http://") == page.find("http://www.w3.org/2000/svg")); // only the SVG namespace
  CHECK(page.find("id=\"fhr-data\"") != std::string::npos);
  CHECK(page.find("class=\"failure\"") != std::string::npos);
  CHECK(page.find("class=\"budget\"") != std::string::npos);
  CHECK(page.find("url(#fhr-hatch)") != std::string::npos);
  std::size_t units = document["files"][0]["units"].size(), sections = 0;
  for (std::size_t at = page.find("<section class=\"unit\""); at != std::string::npos;
       at = page.find("<section class=\"unit\"", at + 1))
    ++sections;
  CHECK(sections == units);
  const std::string svg = fhr::render_svg(document, fhr::LinkModel::h200());
  CHECK(svg.find("<?xml") == 0);
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(svg.find("class=\"failure\"") != std::string::npos);
}
