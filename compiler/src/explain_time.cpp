#include "fhr/compiler/explain_time.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace fhr {

namespace {

using json = nlohmann::ordered_json;

std::string string_or_empty(const json &object, const char *key) {
  auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

/// The keyword, value and reservation label of a step's `.fhr` text:
/// "ensure rk[3] at cuda:0", "move ct to pinned from cuda:0",
/// "reserve cuda:0 30 MiB \"workspace\"".
struct StepWords {
  std::string keyword, value, label;
};

StepWords step_words(const json &step) {
  const std::string text = string_or_empty(step, "step");
  StepWords words;
  const std::size_t space = text.find(' ');
  words.keyword = text.substr(0, space);
  if (space == std::string::npos) return words;
  const std::string rest = text.substr(space + 1);
  if (words.keyword == "reserve") {
    const std::size_t quote = rest.find('"');
    words.label = quote == std::string::npos ? rest : rest.substr(quote);
    return words;
  }
  words.value = string_or_empty(step, "value");
  if (words.value.empty()) words.value = rest.substr(0, rest.find(' '));
  return words;
}

std::optional<Location> location_of(const json &step, const char *key) {
  const std::string name = string_or_empty(step, key);
  return name.empty() ? std::nullopt : parse_location(name);
}

/// Stacks of one location while the steps are replayed.
class LocationStacks {
public:
  LocationStacks(LocationMemory &memory, MemorySeries series) : memory_(memory), series_(series) {}

  void add(MemoryBand::Kind kind, const std::string &name, std::uint64_t bytes) {
    current_[band(kind, name)] += bytes;
  }
  /// Removes a value's replica: from its band, else from what was there before.
  void remove_value(const std::string &name, std::uint64_t bytes) {
    if (auto found = index_.find(key(MemoryBand::Kind::Value, name));
        found != index_.end() && current_[found->second] >= bytes) {
      current_[found->second] -= bytes;
      return;
    }
    if (auto before = index_.find(key(MemoryBand::Kind::Before, {})); before != index_.end())
      current_[before->second] -= std::min(current_[before->second], bytes);
  }
  /// Empties a band: a reservation released between two steps.
  void clear(MemoryBand::Kind kind, const std::string &name) {
    if (auto found = index_.find(key(kind, name)); found != index_.end())
      released_ += std::exchange(current_[found->second], 0);
  }
  /// Appends the current stacks as the figures after one more step.
  void record() {
    // A step's temporary charge comes on top of the stack before it, less
    // what was released just before it.
    const std::uint64_t before = memory_.charged_bytes.empty() ? 0 : memory_.charged_bytes.back();
    memory_.temporary_base_bytes.push_back(before - std::min(before, std::exchange(released_, 0)));
    memory_.temporary_bytes.push_back(std::exchange(temporary_, 0));
    std::uint64_t charged = 0;
    for (std::size_t b = 0; b < memory_.bands.size(); ++b) {
      if (series_ == MemorySeries::Bands) memory_.bands[b].bytes.push_back(current_[b]);
      charged += current_[b];
    }
    memory_.charged_bytes.push_back(charged);
  }
  /// Bytes of values resident before the unit and not touched since.
  std::uint64_t before_bytes() const {
    auto found = index_.find(key(MemoryBand::Kind::Before, {}));
    return found == index_.end() ? 0 : current_[found->second];
  }
  /// A charge of the step being recorded that ends with it.
  void add_temporary(std::uint64_t bytes) { temporary_ += bytes; }

private:
  static std::string key(MemoryBand::Kind kind, const std::string &name) {
    return std::to_string(static_cast<int>(kind)) + ":" + name;
  }
  std::size_t band(MemoryBand::Kind kind, const std::string &name) {
    auto [found, inserted] = index_.emplace(key(kind, name), memory_.bands.size());
    if (inserted) {
      // A band that appears later held nothing before.
      memory_.bands.push_back(MemoryBand{
          kind, name,
          std::vector<std::uint64_t>(series_ == MemorySeries::Bands ? memory_.charged_bytes.size() : 0, 0)});
      current_.push_back(0);
    }
    return found->second;
  }

  LocationMemory &memory_;
  MemorySeries series_;
  std::map<std::string, std::size_t> index_;
  std::vector<std::uint64_t> current_;
  std::uint64_t temporary_ = 0;
  std::uint64_t released_ = 0; ///< released since the last record()
};

/// "Transition exceeds budget at cuda:0 (budget B, used B, reserved B,
/// requested 251658240 B)": the location and request of a budget failure.
std::optional<std::pair<Location, std::uint64_t>> budget_request(const std::string &reason) {
  const std::size_t at = reason.find("budget at ");
  const std::size_t requested = reason.find("requested ");
  if (at == std::string::npos || requested == std::string::npos) return std::nullopt;
  const std::size_t name_begin = at + 10;
  const std::optional<Location> location =
      parse_location(reason.substr(name_begin, reason.find(' ', name_begin) - name_begin));
  if (!location) return std::nullopt;
  return std::pair{*location, std::stoull(reason.substr(requested + 10))};
}

} // namespace

UnitMemory unit_memory(const json &unit, MemorySeries series) {
  UnitMemory out;
  const json &steps = unit.at("steps");
  out.steps = steps.size();
  std::map<std::string, std::size_t> location_index;
  for (const json &location : unit.at("locations")) {
    LocationMemory memory;
    memory.location = location.at("location").get<std::string>();
    if (location.at("budget_bytes").is_number())
      memory.budget_bytes = location.at("budget_bytes").get<std::uint64_t>();
    memory.peak_charged_bytes = location.at("peak_charged_bytes").get<std::uint64_t>();
    memory.resident_logical_before_bytes = location.value(
        "resident_logical_before_bytes", location.at("used_before_bytes").get<std::uint64_t>());
    location_index.emplace(memory.location, out.locations.size());
    out.locations.push_back(std::move(memory));
  }
  std::vector<LocationStacks> stacks;
  stacks.reserve(out.locations.size());
  for (LocationMemory &memory : out.locations)
    stacks.emplace_back(memory, series);
  {
    std::size_t l = 0;
    for (const json &location : unit.at("locations")) {
      stacks[l].add(MemoryBand::Kind::Before, {}, location.at("used_before_bytes").get<std::uint64_t>());
      if (const std::uint64_t reserved = location.at("reserved_before_bytes").get<std::uint64_t>();
          reserved > 0)
        stacks[l].add(MemoryBand::Kind::Reservation, "reserved before", reserved);
      ++l;
    }
  }
  auto stack_at = [&](const std::optional<Location> &location) -> LocationStacks * {
    if (!location) return nullptr;
    auto found = location_index.find(location->name());
    return found == location_index.end() ? nullptr : &stacks[found->second];
  };
  for (LocationStacks &stack : stacks)
    stack.record();

  // What the steps tell of each value's replicas (before the unit nothing is known).
  std::map<std::string, std::set<Location>> resident, absent;
  struct OpenReservation {
    std::string band;
    std::optional<Location> location;
  };
  // Open reservations by the 0-based step they are released before
  // (steps.size(): held to the end), so each step looks only at its own;
  // and their bands, which stay apart.
  std::multimap<std::size_t, OpenReservation> reservations;
  std::set<std::string> open_bands;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const json &step = steps[k];
    const StepWords words = step_words(step);
    // A program's reservation ends with its body or scope, between two
    // steps, as the step that admitted it says.
    for (auto r = reservations.begin(); r != reservations.end() && r->first == k; r = reservations.erase(r)) {
      if (LocationStacks *stack = stack_at(r->second.location))
        stack->clear(MemoryBand::Kind::Reservation, r->second.band);
      open_bands.erase(r->second.band);
    }
    const bool ok = string_or_empty(step, "result") == "ok";
    if (string_or_empty(step, "result") == "failed" && !out.failure) out.failure = k;
    const std::uint64_t bytes = step.value("storage_bytes", std::uint64_t{0});
    const std::optional<Location> source = location_of(step, "source");
    const std::optional<Location> destination = location_of(step, "destination");
    StepTransfer transfer = StepTransfer::None;
    const std::string &value = words.value;
    auto add_replica = [&](Location at) {
      if (LocationStacks *stack = stack_at(at)) stack->add(MemoryBand::Kind::Value, value, bytes);
      resident[value].insert(at);
      absent[value].erase(at);
    };
    LocationSet freed;
    auto remove_replica = [&](Location at) {
      freed.insert(at);
      if (LocationStacks *stack = stack_at(at)) stack->remove_value(value, bytes);
      resident[value].erase(at);
      absent[value].insert(at);
    };
    auto copy_or_load = [&] {
      const std::string given = string_or_empty(step, "transfer");
      if (given == "load") return StepTransfer::Load;
      if (given == "copy") return StepTransfer::Copy;
      if (given == "none") return StepTransfer::None;
      if (resident[value].count(*source)) return StepTransfer::Copy;
      // A copy needs a replica at the source: one resident before the unit
      // is part of what the location held then and the unit left alone.
      LocationStacks *at_source = stack_at(*source);
      if (absent[value].count(*source) || (at_source && at_source->before_bytes() < bytes))
        return StepTransfer::Load;
      return StepTransfer::Copy;
    };
    auto note_load = [&](StepTransfer chosen) {
      if (chosen != StepTransfer::Load) return;
      if (LocationStacks *stack = stack_at(*source)) stack->add_temporary(bytes);
    };
    auto note_copy_source = [&](StepTransfer chosen) {
      // The replica came from the untouched rest: it is this value's now.
      if (chosen != StepTransfer::Copy || resident[value].count(*source)) return;
      if (LocationStacks *stack = stack_at(*source)) {
        stack->remove_value(value, bytes);
        stack->add(MemoryBand::Kind::Value, value, bytes);
      }
      resident[value].insert(*source);
    };
    if (string_or_empty(step, "result") == "failed" && string_or_empty(step, "error_class") == "budget") {
      if (const auto request = budget_request(string_or_empty(step, "reason")))
        if (LocationStacks *stack = stack_at(request->first)) stack->add_temporary(request->second);
    }
    if (ok && (words.keyword == "ensure" || words.keyword == "copy") && source && destination) {
      transfer = copy_or_load();
      note_load(transfer);
      note_copy_source(transfer);
      add_replica(*destination);
    } else if (ok && words.keyword == "move" && source && destination) {
      // The destination already held it: only the source goes. The model
      // says so by moving nothing; a document without `transfer` only as far
      // as the steps here show the destination's replica.
      const std::string given = string_or_empty(step, "transfer");
      if (given.empty() ? resident[value].count(*destination) > 0 : given == "none") {
        remove_replica(*source);
      } else {
        transfer = copy_or_load();
        note_load(transfer);
        note_copy_source(transfer);
        add_replica(*destination);
        if (transfer == StepTransfer::Copy) remove_replica(*source);
      }
    } else if (ok && words.keyword == "drop" && source) {
      remove_replica(*source);

    } else if (ok && words.keyword == "discard") {
      // Every replica goes: those the step names (the model's record, which
      // knows the ones resident before the unit), else those seen here.
      std::set<Location> removed = resident[value];
      if (auto named = step.find("removed_from"); named != step.end() && named->is_array()) {
        removed.clear();
        for (const json &name : *named)
          if (const std::optional<Location> at =
                  name.is_string() ? parse_location(name.get<std::string>()) : std::nullopt)
            removed.insert(*at);
      }
      for (Location at : removed)
        remove_replica(at);
    } else if (ok && words.keyword == "reserve" && destination) {
      // Two open reservations with one label get a band each.
      std::string band = words.label;
      if (open_bands.count(band)) band += " (step " + std::to_string(k + 1) + ")";
      open_bands.insert(band);
      if (LocationStacks *stack = stack_at(destination))
        stack->add(MemoryBand::Kind::Reservation, band, bytes);
      // A reservation released before a step not in the document, or
      // one from a document without the key, stays to the end.
      std::size_t released_before = steps.size();
      if (auto found = step.find("released_before_step"); found != step.end() && found->is_number_unsigned())
        released_before = std::clamp<std::size_t>(found->get<std::size_t>(), k + 2, steps.size() + 1) - 1;
      reservations.emplace(released_before, OpenReservation{band, destination});
    }
    out.values.push_back(value);
    out.transfers.push_back(transfer);
    out.freed.push_back(freed);
    for (LocationStacks &stack : stacks)
      stack.record();
  }
  return out;
}

std::uint64_t LocationMemory::derived_peak_bytes() const {
  std::uint64_t peak = 0;
  for (std::size_t k = 0; k < charged_bytes.size(); ++k) {
    peak = std::max(peak, charged_bytes[k]);
    // A step's temporary charge comes on top of the state before it.
    if (k > 0) peak = std::max(peak, temporary_base_bytes[k] + temporary_bytes[k]);
  }
  return peak;
}

TimelineOptions unit_timeline_options(const UnitMemory &memory, TimelineOptions options) {
  for (const LocationMemory &location : memory.locations)
    if (const std::optional<Location> at = parse_location(location.location))
      options.resident_before[at->index()] = location.resident_logical_before_bytes;
  return options;
}

std::vector<TimelineStep> unit_timeline_steps(const json &unit, const UnitMemory &memory) {
  std::vector<TimelineStep> out;
  const json &steps = unit.at("steps");
  std::map<std::string, ValueId> value_ids;
  std::map<std::string, const LocationMemory *> locations;
  for (const LocationMemory &location : memory.locations)
    locations.emplace(location.location, &location);
  std::uint32_t group = 0;
  std::string previous_phase;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const json &step = steps[k];
    const std::string phase = string_or_empty(step, "phase");
    // Steps of one phase of one plan run (or of one action list) may share
    // windows; direct primitives, body lifetimes and setup run alone. A run
    // of a phase or a list starts at index 0: two runs of one plan, or two
    // lists of one name, in a row are two calls (a document without the
    // index can only tell them apart by their phase).
    const bool runs_alone =
        phase == "direct" || phase == "acquire" || phase == "hold" || phase == "reserve" || phase == "setup";
    const auto index = step.find("index");
    const bool starts_run =
        index != step.end() && index->is_number_unsigned() && index->get<std::uint64_t>() == 0;
    if (k == 0 || phase != previous_phase || runs_alone || starts_run) ++group;
    previous_phase = phase;
    TimelineStep timeline;
    timeline.group = group;
    timeline.transfer = memory.transfers[k];
    timeline.value =
        value_ids.emplace(memory.values[k], static_cast<ValueId>(value_ids.size())).first->second;
    const std::optional<Location> source = location_of(step, "source");
    const std::optional<Location> destination = location_of(step, "destination");
    if (!source || !destination) timeline.transfer = StepTransfer::None;
    timeline.freed = memory.freed[k];
    timeline.storage_bytes = step.value("storage_bytes", std::uint64_t{0});
    timeline.logical_bytes = step.value("logical_bytes", timeline.storage_bytes);
    if (timeline.transfer != StepTransfer::None) {
      timeline.source = *source;
      timeline.destination = *destination;
      timeline.frees_source = step_words(step).keyword == "move" && timeline.transfer == StepTransfer::Copy;
      if (auto found = locations.find(destination->name()); found != locations.end()) {
        timeline.destination_account.budget_bytes = found->second->budget_bytes;
        timeline.destination_account.used_bytes = found->second->charged_bytes[k];
      }
    }
    out.push_back(timeline);
  }
  return out;
}

namespace {
/// Seconds as microseconds with nanosecond resolution: stable output.
double microseconds(double seconds) { return std::round(seconds * 1e9) / 1e3; }
} // namespace

void add_dma_extra_json(json &time, const DmaExtra &extra) {
  time["after_host_work_us"] = microseconds(extra.after_host_work_seconds);
  time["cold_value_us"] = microseconds(extra.cold_value_seconds);
  time["follow_on_us"] = microseconds(extra.follow_on_seconds);
  time["dma_state"] = dma_state_name(extra.state);
}

Timeline unit_timeline(const json &unit, const UnitMemory &memory, const LinkModel &links,
                       const TimelineOptions &options) {
  return predict_timeline(unit_timeline_steps(unit, memory), links, unit_timeline_options(memory, options));
}

void add_predicted_time(json &document, const LinkModel &links, const TimelineOptions &options) {
  for (json &file : document.at("files")) {
    for (json &unit : file.at("units")) {
      const Timeline timeline = unit_timeline(unit, unit_memory(unit, MemorySeries::Totals), links, options);
      json &step_list = unit.at("steps");
      for (std::size_t k = 0; k < step_list.size(); ++k) {
        const StepTime &time = timeline.steps[k];
        json out{{"start_us", microseconds(time.start_seconds)},
                 {"copy_start_us", microseconds(time.copy_start_seconds)},
                 {"allocation_us", microseconds(time.allocation_seconds)}};
        add_dma_extra_json(out, time.dma_extra);
        out["end_us"] = microseconds(time.end_seconds);
        out["commit_us"] = microseconds(time.commit_seconds);
        out["engine"] = time.engine ? json(engine_name(*time.engine)) : json(nullptr);
        out["window"] = time.window ? json(*time.window) : json(nullptr);
        step_list[k]["time"] = std::move(out);
      }
      unit["predicted_us"] = microseconds(timeline.total_seconds);
    }
  }
  document["links"] = json{{"machine", links.machine}, {"measured", links.measured}};
}

double predicted_us_without_fills(const json &unit) {
  double us = unit.at("predicted_us").get<double>();
  for (const json &step : unit.at("steps")) {
    if (step.at("transfer") != "load") continue;
    const json &time = step.at("time");
    us -= time.at("copy_start_us").get<double>() - time.at("start_us").get<double>() -
          time.at("allocation_us").get<double>();
  }
  return us;
}

} // namespace fhr
