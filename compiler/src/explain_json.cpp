#include "fhr/compiler/output.hpp"

namespace fhr {

namespace {

using json = nlohmann::ordered_json;

json optional_location(const std::optional<Location> &location) {
  return location ? json(location->name()) : json(nullptr);
}

json optional_bytes(const std::optional<std::uint64_t> &bytes) {
  return bytes ? json(*bytes) : json(nullptr);
}

std::string_view verdict_id(Verdict verdict) {
  switch (verdict) {
  case Verdict::Ok: return "ok";
  case Verdict::NoOp: return "no-op";
  case Verdict::Failed: return "failed";
  }
  return "ok";
}

std::string_view unit_kind(ReportUnit::Kind kind) {
  switch (kind) {
  case ReportUnit::Kind::Setup: return "setup";
  case ReportUnit::Kind::Plan: return "plan";
  case ReportUnit::Kind::Program: return "program";
  }
  return "plan";
}

json position(const SourceSpan &span) { return json{{"line", span.line}, {"column", span.column}}; }

json unit_json(const ReportUnit &unit) {
  json out;
  out["kind"] = unit_kind(unit.kind);
  out["name"] = unit.name;
  out["position"] = position(unit.span);
  out["feasible"] = unit.feasible;
  json steps = json::array();
  for (const ReportStep &s : unit.steps) {
    json step;
    step["phase"] = s.context;
    step["index"] = s.index;
    step["step"] = s.text;
    step["position"] = position(s.span);
    step["source"] = optional_location(s.source);
    step["destination"] = optional_location(s.destination);
    step["logical_bytes"] = s.logical_bytes;
    step["storage_bytes"] = s.storage_bytes;
    step["result"] = verdict_id(s.verdict);
    step["reason"] = s.exact_reason.empty() ? json(nullptr) : json(s.exact_reason);
    step["error_class"] = s.verdict == Verdict::Failed ? json(error_class_id(s.error)) : json(nullptr);
    step["raised"] = s.verdict == Verdict::Failed ? json(error_class_name(s.raised)) : json(nullptr);
    // What the model decided the step moves: the time predictor and the
    // pictures read these instead of inferring them from the text.
    step["value"] = s.value.empty() ? json(nullptr) : json(s.value);
    step["transfer"] = step_transfer_name(s.transfer);
    const bool moves = s.transfer != StepTransfer::None && s.source && s.destination;
    step["link"] = moves ? json(transfer_link_name(s.transfer, *s.source, *s.destination)) : json(nullptr);
    // When the charge of a reservation ends: the pictures and the time
    // predictor replay a program's memory by it.
    // Where a discard removed replicas: those resident before the unit are
    // otherwise unknown to a replay of its memory.
    if (s.removed_from) {
      json at = json::array();
      s.removed_from->for_each([&](Location l) { at.push_back(l.name()); });
      step["removed_from"] = std::move(at);
    }
    if (s.admitted_reservation)
      step["released_before_step"] = s.released_before ? json(*s.released_before + 1) : json(nullptr);
    steps.push_back(std::move(step));
  }
  out["steps"] = std::move(steps);
  json locations = json::array();
  for (const LocationPrediction &p : unit.locations) {
    json location;
    location["location"] = p.location.name();
    location["budget_bytes"] = optional_bytes(p.budget_bytes);
    location["used_before_bytes"] = p.used_before;
    location["reserved_before_bytes"] = p.reserved_before;
    location["resident_logical_before_bytes"] = p.resident_logical_before;
    location["peak_charged_bytes"] = p.peak_charged;
    location["peak_used_bytes"] = p.peak_used;
    const std::optional<std::int64_t> headroom = p.headroom_at_peak();
    location["headroom_at_peak_bytes"] = headroom ? json(*headroom) : json(nullptr);
    locations.push_back(std::move(location));
  }
  out["locations"] = std::move(locations);
  if (unit.failure) {
    json failure{{"step", *unit.failure + 1}, {"message", failure_summary(unit, /*exact_bytes=*/true)}};
    // A failure inside a scope: the program step that entered it.
    if (const std::optional<ProgramStepRef> &by = unit.reached_by)
      failure["reached_by"] = json{{"step", by->step},
                                   {"text", by->text},
                                   {"line", by->span.line},
                                   {"column", by->span.column},
                                   {"note", reached_by_note(unit)}};
    // A failure of class InUse: the holds and leases protecting the replica.
    if (!unit.protected_by.empty()) {
      json protectors = json::array();
      for (const ProtectorRef &protector : unit.protected_by)
        protectors.push_back(json{{"text", protector.text},
                                  {"line", protector.span.line},
                                  {"column", protector.span.column},
                                  {"note", protected_by_note(protector)}});
      failure["protected_by"] = std::move(protectors);
    }
    out["failure"] = std::move(failure);
  } else {
    out["failure"] = nullptr;
  }
  return out;
}

} // namespace

std::string json_text(const nlohmann::ordered_json &document) {
  return document.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

json explain_json(const std::vector<FileReport> &reports) {
  json out;
  out["schema"] = kExplainSchema;
  bool feasible = true;
  json files = json::array();
  for (const FileReport &report : reports) {
    json file;
    file["file"] = report.file;
    file["feasible"] = report.feasible;
    file["setup_steps"] = report.setup_steps;
    json units = json::array();
    for (const ReportUnit &unit : report.units)
      units.push_back(unit_json(unit));
    file["units"] = std::move(units);
    files.push_back(std::move(file));
    feasible = feasible && report.feasible;
  }
  out["feasible"] = feasible;
  out["files"] = std::move(files);
  return out;
}

} // namespace fhr
