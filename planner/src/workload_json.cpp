// fhr-workload/1: every field is checked, unknown fields are errors (a
// misspelt field must not be silently ignored), and a problem names its
// JSON path.
#include "fhr/planner/workload_json.hpp"

#include "fhr/dsl/parser.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <sstream>
#include <unordered_map>

namespace fhr::planner {

namespace {

using json = nlohmann::ordered_json;

struct Failure {
  WorkloadError error;
};

[[noreturn]] void fail(const std::string &path, const std::string &message) {
  throw Failure{{path, message}};
}

void only_keys(const json &object, const std::string &path, std::initializer_list<std::string_view> allowed) {
  if (!object.is_object()) fail(path, "must be an object");
  for (const auto &[key, value] : object.items())
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      fail(path + "." + key, "unknown field");
}

const json &field(const json &object, const std::string &path, const char *key) {
  const auto it = object.find(key);
  if (it == object.end()) fail(path, std::string("missing field '") + key + "'");
  return *it;
}

std::string text_field(const json &object, const std::string &path, const char *key) {
  const json &value = field(object, path, key);
  if (!value.is_string()) fail(path + "." + key, "must be a string");
  return value.get<std::string>();
}

std::uint64_t bytes_of(const json &value, const std::string &path) {
  if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<std::int64_t>() >= 0))
    fail(path, "must be a whole number of bytes, at least 0");
  return value.get<std::uint64_t>();
}

Location location_of(const json &value, const std::string &path) {
  if (!value.is_string()) fail(path, "must be a location string");
  LocationParseError error;
  const std::optional<Location> at = parse_location(value.get<std::string>(), &error);
  if (!at) fail(path, error.message);
  return *at;
}

struct Names {
  /// A plain value, or a family: first ValueId and count.
  struct Entry {
    std::uint32_t first = 0, count = 1;
    bool family = false;
  };
  std::unordered_map<std::string, Entry> entries;
};

std::optional<std::uint64_t> number(std::string_view text) {
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return n;
}

/// "ct", "rk[3]", "rk[0..8]" (half-open), "rk[*]": the values an operand names, in index order.
void expand_operand(const Names &names, std::string_view operand, const std::string &path,
                    std::vector<ValueId> &out) {
  const std::size_t open = operand.find('[');
  const std::string base(operand.substr(0, open));
  const auto it = names.entries.find(base);
  if (it == names.entries.end()) fail(path, "unknown value '" + std::string(operand) + "'");
  const Names::Entry &entry = it->second;
  if (open == std::string_view::npos) {
    if (entry.family) fail(path, "'" + base + "' is a family: name a member, a range or [*]");
    out.push_back(entry.first);
    return;
  }
  if (!entry.family) fail(path, "'" + base + "' is not a family");
  if (operand.back() != ']') fail(path, "malformed operand '" + std::string(operand) + "'");
  const std::string_view inside = operand.substr(open + 1, operand.size() - open - 2);
  std::uint64_t first = 0, last = entry.count;
  if (inside != "*") {
    const std::size_t dots = inside.find("..");
    const std::optional<std::uint64_t> a = number(inside.substr(0, dots));
    const std::optional<std::uint64_t> b = dots == std::string_view::npos
                                               ? (a ? std::optional(*a + 1) : std::nullopt)
                                               : number(inside.substr(dots + 2));
    if (!a || !b || *a >= *b) fail(path, "malformed index in '" + std::string(operand) + "'");
    first = *a;
    last = *b;
  }
  if (last > entry.count)
    fail(path, "'" + std::string(operand) + "' is past the end of " + base + "[" +
                   std::to_string(entry.count) + "]");
  for (std::uint64_t i = first; i < last; ++i)
    out.push_back(static_cast<ValueId>(entry.first + i));
}

Workload parse(const json &root) {
  only_keys(root, "", {"schema", "name", "devices", "budgets", "tiers", "values", "steps"});
  if (text_field(root, "", "schema") != "fhr-workload/1") fail("schema", "must be \"fhr-workload/1\"");
  Workload w;
  if (root.contains("name")) w.name = text_field(root, "", "name");
  if (root.contains("devices")) {
    const std::uint64_t devices = bytes_of(root["devices"], "devices");
    if (devices > Location::kMaxCudaDevices) fail("devices", "at most 128 devices");
    w.devices = static_cast<unsigned>(devices);
  }
  const json &budgets = field(root, "", "budgets");
  if (!budgets.is_array()) fail("budgets", "must be an array");
  for (std::size_t i = 0; i < budgets.size(); ++i) {
    const std::string path = "budgets[" + std::to_string(i) + "]";
    only_keys(budgets[i], path, {"at", "bytes"});
    w.budgets.emplace_back(location_of(field(budgets[i], path, "at"), path + ".at"),
                           bytes_of(field(budgets[i], path, "bytes"), path + ".bytes"));
  }
  if (root.contains("tiers")) {
    const json &tiers = root["tiers"];
    if (!tiers.is_array()) fail("tiers", "must be an array");
    for (std::size_t i = 0; i < tiers.size(); ++i) {
      const std::string path = "tiers[" + std::to_string(i) + "]";
      only_keys(tiers[i], path, {"from", "to"});
      Tier tier{location_of(field(tiers[i], path, "from"), path + ".from"), {}};
      const json &to = field(tiers[i], path, "to");
      if (!to.is_array()) fail(path + ".to", "must be an array of locations");
      for (std::size_t j = 0; j < to.size(); ++j)
        tier.to.push_back(location_of(to[j], path + ".to[" + std::to_string(j) + "]"));
      w.tiers.push_back(std::move(tier));
    }
  }
  Names names;
  const json &values = field(root, "", "values");
  if (!values.is_array()) fail("values", "must be an array");
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::string path = "values[" + std::to_string(i) + "]";
    const json &v = values[i];
    only_keys(v, path, {"name", "count", "bytes", "storage_bytes", "mode", "at", "source"});
    const std::string name = text_field(v, path, "name");
    // The printed program names it in .fhr (docs/language.md).
    if (!is_identifier(name)) fail(path + ".name", "'" + name + "' is not an identifier");
    if (is_keyword(name))
      fail(path + ".name", "'" + name + "' is a .fhr keyword, which no value may be named");
    Value value;
    value.logical_bytes = bytes_of(field(v, path, "bytes"), path + ".bytes");
    value.storage_bytes = v.contains("storage_bytes") ? bytes_of(v["storage_bytes"], path + ".storage_bytes")
                                                      : value.logical_bytes;
    if (value.storage_bytes < value.logical_bytes) fail(path + ".storage_bytes", "must be at least bytes");
    const std::string mode = text_field(v, path, "mode");
    if (mode != "exclusive" && mode != "replicable")
      fail(path + ".mode", "must be \"exclusive\" or \"replicable\"");
    value.mode = mode == "exclusive" ? ReplicaMode::Exclusive : ReplicaMode::Replicable;
    if (v.contains("at") == v.contains("source"))
      fail(path, "needs exactly one of 'at' (adopted) or 'source'");
    value.adopted = v.contains("at");
    value.home =
        location_of(v.contains("at") ? v["at"] : v["source"], path + (value.adopted ? ".at" : ".source"));
    const auto first = static_cast<std::uint32_t>(w.values.size());
    if (names.entries.contains(name)) fail(path + ".name", "a second value named '" + name + "'");
    if (v.contains("count")) {
      const std::uint64_t count = bytes_of(v["count"], path + ".count");
      if (count == 0 || count > 1'000'000) fail(path + ".count", "must be between 1 and 1000000");
      const auto family = static_cast<std::uint32_t>(w.families.size());
      w.families.push_back(Family{name, first, static_cast<std::uint32_t>(count)});
      names.entries[name] = {first, static_cast<std::uint32_t>(count), true};
      for (std::uint64_t k = 0; k < count; ++k) {
        Value member = value;
        member.name = name + "[" + std::to_string(k) + "]";
        member.family = family;
        w.values.push_back(std::move(member));
      }
    } else {
      names.entries[name] = {first, 1, false};
      value.name = name;
      w.values.push_back(std::move(value));
    }
    if (w.values.size() > 1'000'000) fail(path, "a workload declares at most 1000000 values");
  }
  const json &steps = field(root, "", "steps");
  if (!steps.is_array()) fail("steps", "must be an array");
  w.steps.reserve(steps.size());
  std::vector<ValueId> expanded;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const std::string path = "steps[" + std::to_string(s) + "]";
    const json &j = steps[s];
    only_keys(j, path, {"name", "needs", "workspace", "compute_seconds"});
    Step step;
    step.name = text_field(j, path, "name");
    if (j.contains("needs")) {
      const json &needs = j["needs"];
      if (!needs.is_array()) fail(path + ".needs", "must be an array");
      for (std::size_t n = 0; n < needs.size(); ++n) {
        const std::string need_path = path + ".needs[" + std::to_string(n) + "]";
        only_keys(needs[n], need_path, {"at", "values"});
        const Location at = location_of(field(needs[n], need_path, "at"), need_path + ".at");
        const json &operands = field(needs[n], need_path, "values");
        if (!operands.is_array() || operands.empty())
          fail(need_path + ".values", "must be a non-empty array");
        for (std::size_t k = 0; k < operands.size(); ++k) {
          const std::string operand_path = need_path + ".values[" + std::to_string(k) + "]";
          if (!operands[k].is_string()) fail(operand_path, "must be a value name");
          expanded.clear();
          expand_operand(names, operands[k].get<std::string>(), operand_path, expanded);
          for (ValueId value : expanded)
            step.needs.push_back(Need{value, at});
        }
      }
    }
    if (j.contains("workspace")) {
      const json &workspace = j["workspace"];
      if (!workspace.is_array()) fail(path + ".workspace", "must be an array");
      for (std::size_t k = 0; k < workspace.size(); ++k) {
        const std::string ws_path = path + ".workspace[" + std::to_string(k) + "]";
        only_keys(workspace[k], ws_path, {"at", "bytes", "label"});
        step.workspace.push_back(
            Workspace{location_of(field(workspace[k], ws_path, "at"), ws_path + ".at"),
                      bytes_of(field(workspace[k], ws_path, "bytes"), ws_path + ".bytes"),
                      text_field(workspace[k], ws_path, "label")});
      }
    }
    if (j.contains("compute_seconds")) {
      if (!j["compute_seconds"].is_number()) fail(path + ".compute_seconds", "must be a number of seconds");
      step.compute_seconds = j["compute_seconds"].get<double>();
    }
    w.steps.push_back(std::move(step));
  }
  return w;
}

std::string operand_text(const Workload &w, const std::vector<ValueId> &values, std::size_t begin,
                         std::size_t end) {
  // A run of consecutive family members prints as a range.
  const Value &first = w.values[values[begin]];
  if (end - begin == 1) return first.name;
  const Family &family = w.families[*first.family];
  const std::uint32_t a = values[begin] - family.first, b = values[end - 1] - family.first + 1;
  if (a == 0 && b == family.count) return family.name + "[*]";
  return family.name + "[" + std::to_string(a) + ".." + std::to_string(b) + "]";
}

} // namespace

std::variant<Workload, WorkloadError> parse_workload_json(std::string_view text) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::parse_error &e) {
    return WorkloadError{"", std::string("not JSON: ") + e.what()};
  } catch (const json::out_of_range &e) {
    // A number no double holds (406): valid JSON, out of the parser's range.
    return WorkloadError{"", std::string("a number out of range: ") + e.what()};
  }
  try {
    Workload w = parse(root);
    if (std::optional<WorkloadError> e = check_workload(w)) return *e;
    return w;
  } catch (const Failure &f) {
    return f.error;
  }
}

std::string workload_to_json(const Workload &w) {
  std::ostringstream out;
  json head;
  head["schema"] = "fhr-workload/1";
  head["name"] = w.name;
  if (w.devices) head["devices"] = *w.devices;
  head["budgets"] = json::array();
  for (const auto &[at, bytes] : w.budgets)
    head["budgets"].push_back(json{{"at", at.name()}, {"bytes", bytes}});
  if (!w.tiers.empty()) {
    head["tiers"] = json::array();
    for (const Tier &tier : w.tiers) {
      json to = json::array();
      for (Location l : tier.to)
        to.push_back(l.name());
      head["tiers"].push_back(json{{"from", tier.from.name()}, {"to", std::move(to)}});
    }
  }
  head["values"] = json::array();
  for (std::size_t i = 0; i < w.values.size();) {
    const Value &v = w.values[i];
    json value;
    std::size_t next = i + 1;
    if (v.family) {
      const Family &family = w.families[*v.family];
      value["name"] = family.name;
      value["count"] = family.count;
      next = i + family.count;
    } else {
      value["name"] = v.name;
    }
    value["bytes"] = v.logical_bytes;
    if (v.storage_bytes != v.logical_bytes) value["storage_bytes"] = v.storage_bytes;
    value["mode"] = std::string(to_string(v.mode));
    value[v.adopted ? "at" : "source"] = v.home.name();
    head["values"].push_back(std::move(value));
    i = next;
  }
  std::string text = head.dump(1);
  // The steps, one per line: a trace of 10^5 steps stays readable and diffable.
  text.erase(text.size() - 2); // "\n}"
  out << text << ",\n \"steps\": [";
  for (std::size_t s = 0; s < w.steps.size(); ++s) {
    const Step &step = w.steps[s];
    json j;
    j["name"] = step.name;
    // Needs grouped by location in first-seen order, families as ranges.
    std::vector<Location> order;
    for (const Need &n : step.needs)
      if (std::find(order.begin(), order.end(), n.at) == order.end()) order.push_back(n.at);
    json needs = json::array();
    for (Location at : order) {
      std::vector<ValueId> values;
      for (const Need &n : step.needs)
        if (n.at == at) values.push_back(n.value);
      json operands = json::array();
      for (std::size_t a = 0; a < values.size();) {
        std::size_t b = a + 1;
        const Value &first = w.values[values[a]];
        while (first.family && b < values.size() && values[b] == values[b - 1] + 1 &&
               w.values[values[b]].family == first.family)
          ++b;
        operands.push_back(operand_text(w, values, a, b));
        a = b;
      }
      needs.push_back(json{{"at", at.name()}, {"values", std::move(operands)}});
    }
    if (!needs.empty()) j["needs"] = std::move(needs);
    if (!step.workspace.empty()) {
      json workspace = json::array();
      for (const Workspace &ws : step.workspace)
        workspace.push_back(json{{"at", ws.at.name()}, {"bytes", ws.bytes}, {"label", ws.label}});
      j["workspace"] = std::move(workspace);
    }
    if (step.compute_seconds) j["compute_seconds"] = *step.compute_seconds;
    out << (s == 0 ? "\n  " : ",\n  ") << j.dump();
  }
  out << "\n ]\n}\n";
  return out.str();
}

} // namespace fhr::planner
