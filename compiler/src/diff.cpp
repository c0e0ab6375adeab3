#include "fhr/compiler/diff.hpp"

#include "fhr/compiler/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace fhr {

namespace {

using json = nlohmann::ordered_json;

struct UnitFacts {
  std::string kind, name;
  bool feasible = true;
  std::optional<double> predicted_us;
  /// location -> (peak charged, headroom)
  std::vector<std::pair<std::string, std::pair<std::uint64_t, std::optional<std::int64_t>>>> locations;
  std::string signature; ///< phases and step texts: what a rename keeps
  bool matched = false;
};

std::vector<UnitFacts> units_of(const json &document) {
  std::vector<UnitFacts> out;
  for (const json &file : document.at("files")) {
    for (const json &unit : file.at("units")) {
      UnitFacts facts;
      facts.kind = unit.value("kind", std::string());
      facts.name = unit.value("name", std::string());
      facts.feasible = unit.value("feasible", true);
      if (unit.contains("predicted_us")) facts.predicted_us = unit["predicted_us"].get<double>();
      for (const json &location : unit.at("locations")) {
        const json &headroom = location.at("headroom_at_peak_bytes");
        facts.locations.push_back(
            {location.at("location").get<std::string>(),
             {location.at("peak_charged_bytes").get<std::uint64_t>(),
              headroom.is_number() ? std::optional<std::int64_t>(headroom.get<std::int64_t>())
                                   : std::nullopt}});
      }
      for (const json &step : unit.at("steps"))
        facts.signature +=
            step.value("phase", std::string()) + "\t" + step.value("step", std::string()) + "\n";
      out.push_back(std::move(facts));
    }
  }
  return out;
}

std::vector<LocationChange> location_changes(const UnitFacts *old_unit, const UnitFacts *new_unit, bool all) {
  std::vector<LocationChange> out;
  auto find = [](const UnitFacts *unit,
                 const std::string &name) -> const std::pair<std::uint64_t, std::optional<std::int64_t>> * {
    if (!unit) return nullptr;
    for (const auto &[location, figures] : unit->locations)
      if (location == name) return &figures;
    return nullptr;
  };
  std::vector<std::string> names;
  for (const UnitFacts *unit : {new_unit, old_unit})
    if (unit)
      for (const auto &entry : unit->locations)
        if (std::find(names.begin(), names.end(), entry.first) == names.end()) names.push_back(entry.first);
  for (const std::string &name : names) {
    const auto *before = find(old_unit, name);
    const auto *after = find(new_unit, name);
    LocationChange change;
    change.location = name;
    if (before) {
      change.old_peak_bytes = before->first;
      change.old_headroom_bytes = before->second;
    }
    if (after) {
      change.new_peak_bytes = after->first;
      change.new_headroom_bytes = after->second;
    }
    // A location a unit touches with nothing charged, on one side only, is no change.
    const bool same = change.old_peak_bytes.value_or(0) == change.new_peak_bytes.value_or(0) &&
                      change.old_headroom_bytes == change.new_headroom_bytes;
    if (all || !same) out.push_back(std::move(change));
  }
  return out;
}

UnitChange compare(const UnitFacts *old_unit, const UnitFacts *new_unit) {
  UnitChange change;
  const UnitFacts &any = new_unit ? *new_unit : *old_unit;
  change.unit_kind = any.kind;
  if (old_unit) {
    change.old_name = old_unit->name;
    change.old_feasible = old_unit->feasible;
    change.old_predicted_us = old_unit->predicted_us;
  }
  if (new_unit) {
    change.new_name = new_unit->name;
    change.new_feasible = new_unit->feasible;
    change.new_predicted_us = new_unit->predicted_us;
  }
  change.locations = location_changes(old_unit, new_unit, !old_unit || !new_unit);
  if (!old_unit) {
    change.kind = UnitChange::Kind::Added;
  } else if (!new_unit) {
    change.kind = UnitChange::Kind::Removed;
  } else if (old_unit->name != new_unit->name) {
    change.kind = UnitChange::Kind::Renamed;
  } else if (old_unit->feasible != new_unit->feasible || !change.locations.empty() ||
             old_unit->predicted_us != new_unit->predicted_us) {
    change.kind = UnitChange::Kind::Changed;
  }
  return change;
}

std::string percent(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f%%", value);
  return buffer;
}

std::string microseconds(double us) {
  char buffer[32];
  if (us >= 1e6)
    std::snprintf(buffer, sizeof buffer, "%.4g s", us / 1e6);
  else if (us >= 1e3)
    std::snprintf(buffer, sizeof buffer, "%.4g ms", us / 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.4g us", us);
  return buffer;
}

std::string headroom_text(std::optional<std::int64_t> headroom) {
  if (!headroom) return "-";
  if (*headroom < 0) return "over by " + format_size(static_cast<std::uint64_t>(-*headroom));
  return format_size(static_cast<std::uint64_t>(*headroom));
}

std::string verdict_text(std::optional<bool> feasible) {
  if (!feasible) return "-";
  return *feasible ? "feasible" : "INFEASIBLE";
}

std::string unit_title(const UnitChange &unit) {
  const std::string &name = unit.new_name.empty() ? unit.old_name : unit.new_name;
  return unit.unit_kind + " \"" + name + "\"";
}

const char *change_name(UnitChange::Kind kind) {
  switch (kind) {
  case UnitChange::Kind::Unchanged: return "unchanged";
  case UnitChange::Kind::Changed: return "changed";
  case UnitChange::Kind::Renamed: return "renamed";
  case UnitChange::Kind::Added: return "added";
  case UnitChange::Kind::Removed: return "removed";
  }
  return "unchanged";
}

std::string peak_text(const LocationChange &change) {
  std::string out = (change.old_peak_bytes ? format_size(*change.old_peak_bytes) : "-") + " -> " +
                    (change.new_peak_bytes ? format_size(*change.new_peak_bytes) : "-");
  if (const std::optional<double> p = change.peak_change_percent()) out += " (" + percent(*p) + ")";
  return out;
}

std::string time_text(const UnitChange &unit) {
  if (unit.kind == UnitChange::Kind::Added && unit.new_predicted_us)
    return microseconds(*unit.new_predicted_us);
  if (unit.kind == UnitChange::Kind::Removed && unit.old_predicted_us)
    return microseconds(*unit.old_predicted_us);
  if (!unit.old_predicted_us || !unit.new_predicted_us || *unit.old_predicted_us == *unit.new_predicted_us)
    return {};
  std::string out = microseconds(*unit.old_predicted_us) + " -> " + microseconds(*unit.new_predicted_us);
  if (*unit.old_predicted_us > 0)
    out += " (" + percent((*unit.new_predicted_us - *unit.old_predicted_us) / *unit.old_predicted_us * 100) +
           ")";
  return out;
}

std::string headline(const PlanDiff &diff, const GateVerdict &verdict) {
  const std::size_t changed = diff.changed();
  if (changed == 0) return "no change to " + std::to_string(diff.compared) + " plans and programs";
  std::string out =
      std::to_string(changed) + " of " + std::to_string(diff.compared) + " plans and programs changed";
  if (const std::size_t infeasible = diff.became_infeasible())
    out +=
        "; " + std::to_string(infeasible) + (infeasible == 1 ? " became infeasible" : " became infeasible");
  // The largest peak growth, where a reader looks first.
  const UnitChange *largest_unit = nullptr;
  const LocationChange *largest = nullptr;
  for (const UnitChange &unit : diff.units)
    for (const LocationChange &location : unit.locations)
      if (const std::optional<double> p = location.peak_change_percent();
          p && *p > 0 && (!largest || *p > *largest->peak_change_percent())) {
        largest = &location;
        largest_unit = &unit;
      }
  if (largest)
    out += "; largest peak increase " + percent(*largest->peak_change_percent()) + " at " +
           largest->location + " (" + unit_title(*largest_unit) + ")";
  if (verdict.failed) out += "; gate failed";
  return out;
}

} // namespace

std::optional<double> LocationChange::peak_change_percent() const {
  if (!old_peak_bytes || !new_peak_bytes || *old_peak_bytes == 0) return std::nullopt;
  return (static_cast<double>(*new_peak_bytes) - static_cast<double>(*old_peak_bytes)) /
         static_cast<double>(*old_peak_bytes) * 100;
}

std::size_t PlanDiff::changed() const {
  return static_cast<std::size_t>(std::count_if(
      units.begin(), units.end(), [](const UnitChange &u) { return u.kind != UnitChange::Kind::Unchanged; }));
}

std::size_t PlanDiff::became_infeasible() const {
  return static_cast<std::size_t>(
      std::count_if(units.begin(), units.end(), [](const UnitChange &u) { return u.became_infeasible(); }));
}

PlanDiff diff_explanations(const json &old_document, const json &new_document) {
  std::vector<UnitFacts> old_units = units_of(old_document);
  std::vector<UnitFacts> new_units = units_of(new_document);
  std::map<std::pair<std::string, std::string>, std::size_t> old_by_name;
  for (std::size_t i = 0; i < old_units.size(); ++i)
    old_by_name.emplace(std::pair{old_units[i].kind, old_units[i].name}, i);
  std::vector<std::optional<std::size_t>> partner(new_units.size());
  for (std::size_t i = 0; i < new_units.size(); ++i) {
    auto found = old_by_name.find({new_units[i].kind, new_units[i].name});
    if (found != old_by_name.end() && !old_units[found->second].matched) {
      partner[i] = found->second;
      old_units[found->second].matched = true;
    }
  }
  // Renames: an unmatched new unit with the very steps of an unmatched old one.
  for (std::size_t i = 0; i < new_units.size(); ++i) {
    if (partner[i] || new_units[i].signature.empty()) continue;
    for (std::size_t j = 0; j < old_units.size(); ++j) {
      UnitFacts &old_unit = old_units[j];
      if (old_unit.matched || old_unit.kind != new_units[i].kind ||
          old_unit.signature != new_units[i].signature)
        continue;
      if (old_by_name.count({new_units[i].kind, new_units[i].name})) continue;
      partner[i] = j;
      old_unit.matched = true;
      break;
    }
  }
  PlanDiff diff;
  for (std::size_t i = 0; i < new_units.size(); ++i)
    diff.units.push_back(compare(partner[i] ? &old_units[*partner[i]] : nullptr, &new_units[i]));
  for (const UnitFacts &old_unit : old_units)
    if (!old_unit.matched) diff.units.push_back(compare(&old_unit, nullptr));
  diff.compared = diff.units.size();
  return diff;
}

GateVerdict apply_gates(const PlanDiff &diff, const DiffGates &gates) {
  GateVerdict verdict;
  for (const UnitChange &unit : diff.units) {
    if (unit.became_infeasible()) {
      verdict.failed = true;
      verdict.reasons.push_back(unit_title(unit) + (unit.kind == UnitChange::Kind::Added
                                                        ? " is new and infeasible"
                                                        : " became infeasible"));
    }
    if (!gates.max_peak_increase_percent || unit.kind == UnitChange::Kind::Added ||
        unit.kind == UnitChange::Kind::Removed)
      continue;
    for (const LocationChange &location : unit.locations) {
      const std::uint64_t before = location.old_peak_bytes.value_or(0),
                          after = location.new_peak_bytes.value_or(0);
      if (after <= before) continue;
      const std::optional<double> growth = location.peak_change_percent();
      if (growth && *growth <= *gates.max_peak_increase_percent) continue;
      verdict.failed = true;
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g%%", *gates.max_peak_increase_percent);
      verdict.reasons.push_back(unit_title(unit) + ": peak at " + location.location + " " +
                                peak_text(location) + ", more than --max-peak-increase " + limit);
    }
  }
  return verdict;
}

std::string diff_text(const PlanDiff &diff, const GateVerdict &verdict) {
  std::string out = "fhr-plan diff: " + headline(diff, verdict) + "\n";
  for (const UnitChange &unit : diff.units) {
    switch (unit.kind) {
    case UnitChange::Kind::Unchanged: continue;
    case UnitChange::Kind::Added:
      out += "  " + unit_title(unit) + " added: " + verdict_text(unit.new_feasible) + "\n";
      break;
    case UnitChange::Kind::Removed:
      out += "  " + unit.unit_kind + " \"" + unit.old_name + "\" removed (was " +
             verdict_text(unit.old_feasible) + ")\n";
      continue;
    case UnitChange::Kind::Renamed:
      out += "  " + unit.unit_kind + " \"" + unit.old_name + "\" renamed to \"" + unit.new_name +
             "\" (same steps)\n";
      break;
    case UnitChange::Kind::Changed: out += "  " + unit_title(unit) + "\n"; break;
    }
    if (unit.kind != UnitChange::Kind::Added && unit.old_feasible != unit.new_feasible)
      out += "    " + verdict_text(unit.old_feasible) + " -> " + verdict_text(unit.new_feasible) + "\n";
    for (const LocationChange &location : unit.locations) {
      if (unit.kind == UnitChange::Kind::Added) {
        out += "    " + location.location + ": peak " + format_size(location.new_peak_bytes.value_or(0)) +
               ", headroom " + headroom_text(location.new_headroom_bytes) + "\n";
        continue;
      }
      out += "    " + location.location + ": peak " + peak_text(location);
      if (location.old_headroom_bytes || location.new_headroom_bytes)
        out += ", headroom " + headroom_text(location.old_headroom_bytes) + " -> " +
               headroom_text(location.new_headroom_bytes);
      out += "\n";
    }
    if (const std::string time = time_text(unit); !time.empty()) out += "    predicted time " + time + "\n";
  }
  for (const std::string &reason : verdict.reasons)
    out += "error: " + reason + "\n";
  return out;
}

json diff_json(const PlanDiff &diff, const GateVerdict &verdict) {
  auto optional_number = [](const auto &value) { return value ? json(*value) : json(nullptr); };
  json units = json::array();
  for (const UnitChange &unit : diff.units) {
    json locations = json::array();
    for (const LocationChange &location : unit.locations)
      locations.push_back({{"location", location.location},
                           {"old_peak_charged_bytes", optional_number(location.old_peak_bytes)},
                           {"new_peak_charged_bytes", optional_number(location.new_peak_bytes)},
                           {"peak_change_percent", optional_number(location.peak_change_percent())},
                           {"old_headroom_bytes", optional_number(location.old_headroom_bytes)},
                           {"new_headroom_bytes", optional_number(location.new_headroom_bytes)}});
    units.push_back(
        {{"change", change_name(unit.kind)},
         {"kind", unit.unit_kind},
         {"old_name", unit.old_name.empty() && unit.kind == UnitChange::Kind::Added ? json(nullptr)
                                                                                    : json(unit.old_name)},
         {"new_name", unit.kind == UnitChange::Kind::Removed ? json(nullptr) : json(unit.new_name)},
         {"old_feasible", optional_number(unit.old_feasible)},
         {"new_feasible", optional_number(unit.new_feasible)},
         {"locations", std::move(locations)},
         {"old_predicted_us", optional_number(unit.old_predicted_us)},
         {"new_predicted_us", optional_number(unit.new_predicted_us)}});
  }
  return json{{"schema", kDiffSchema},     {"compared", diff.compared},
              {"changed", diff.changed()}, {"became_infeasible", diff.became_infeasible()},
              {"failed", verdict.failed},  {"reasons", verdict.reasons},
              {"units", std::move(units)}};
}

std::string diff_markdown(const PlanDiff &diff, const GateVerdict &verdict) {
  std::string out = std::string("### ") +
                    (verdict.failed   ? ":x: "
                     : diff.changed() ? ":warning: "
                                      : ":white_check_mark: ") +
                    "fhr-plan: " + headline(diff, verdict) + "\n\n";
  if (diff.changed() == 0) return out;
  auto arrows = [](std::string text) {
    for (auto arrow = text.find("->"); arrow != std::string::npos; arrow = text.find("->"))
      text.replace(arrow, 2, "→");
    return text;
  };
  auto escape = [](const std::string &text) {
    std::string escaped;
    for (char c : text) {
      if (c == '<') {
        escaped += "&lt;";
        continue;
      }
      if (c == '|' || c == '`' || c == '*' || c == '_' || c == '[' || c == ']') escaped += '\\';
      escaped += c;
    }
    return escaped;
  };
  out += "| plan or program | change | verdict | location | peak | headroom | predicted time |\n"
         "|---|---|---|---|---|---|---|\n";
  for (const UnitChange &unit : diff.units) {
    if (unit.kind == UnitChange::Kind::Unchanged) continue;
    std::string name = unit.unit_kind + " " + escape(unit.new_name.empty() ? unit.old_name : unit.new_name);
    if (unit.kind == UnitChange::Kind::Renamed)
      name = unit.unit_kind + " " + escape(unit.old_name) + " → " + escape(unit.new_name);
    std::string verdict_cell =
        unit.kind == UnitChange::Kind::Added     ? verdict_text(unit.new_feasible)
        : unit.kind == UnitChange::Kind::Removed ? verdict_text(unit.old_feasible)
        : unit.old_feasible == unit.new_feasible
            ? verdict_text(unit.new_feasible)
            : verdict_text(unit.old_feasible) + " → " + verdict_text(unit.new_feasible);
    if (unit.became_infeasible())
      verdict_cell = unit.kind == UnitChange::Kind::Added
                         ? "**INFEASIBLE**"
                         : verdict_text(unit.old_feasible) + " → **INFEASIBLE**";
    const std::string time = arrows(time_text(unit));
    const std::size_t rows = std::max<std::size_t>(1, unit.locations.size());
    for (std::size_t r = 0; r < rows; ++r) {
      const bool first = r == 0;
      std::string location, peak, headroom;
      if (r < unit.locations.size()) {
        const LocationChange &change = unit.locations[r];
        location = change.location;
        if (unit.kind == UnitChange::Kind::Added || unit.kind == UnitChange::Kind::Removed) {
          const auto bytes =
              unit.kind == UnitChange::Kind::Added ? change.new_peak_bytes : change.old_peak_bytes;
          peak = format_size(bytes.value_or(0));
          headroom = headroom_text(unit.kind == UnitChange::Kind::Added ? change.new_headroom_bytes
                                                                        : change.old_headroom_bytes);
        } else {
          peak = arrows(peak_text(change));
          if (change.old_headroom_bytes || change.new_headroom_bytes)
            headroom =
                headroom_text(change.old_headroom_bytes) + " → " + headroom_text(change.new_headroom_bytes);
        }
      }
      out += "| " + (first ? name : "") + " | " + (first ? change_name(unit.kind) : "") + " | " +
             (first ? verdict_cell : "") + " | " + location + " | " + peak + " | " + headroom + " | " +
             (first ? time : "") + " |\n";
    }
  }
  if (!verdict.reasons.empty()) out += "\n";
  for (const std::string &reason : verdict.reasons)
    out += "- **" + escape(arrows(reason)) + "**\n";
  return out;
}

} // namespace fhr
