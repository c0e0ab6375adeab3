// A schedule printed as the explicit `.fhr` program it stands for
// (docs/language.md): what `fhr-plan check` accepts and `run` executes.
#include "fhr/model/simulator.hpp"
#include "fhr/model/state.hpp"
#include "fhr/planner/schedule.hpp"

#include <algorithm>
#include <unordered_map>

namespace fhr::planner {

std::string size_text(std::uint64_t bytes) {
  static constexpr std::pair<std::uint64_t, const char *> kUnits[] = {
      {1ull << 40, "TiB"}, {1ull << 30, "GiB"}, {1ull << 20, "MiB"}, {1ull << 10, "KiB"}};
  for (const auto &[unit, name] : kUnits)
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + " " + name;
  return std::to_string(bytes) + " B";
}

namespace {

/// A .fhr string literal that reads back as `text` (braces would interpolate).
std::string literal(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '{': out += "\\{"; break;
    case '}': out += "\\}"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    default: out += c;
    }
  }
  return out + "\"";
}

/// Moves are printed without their source: every value a schedule moves
/// has one replica, so the implicit source is the same one, and a plan
/// explained on its own (from the setup state) moves it from wherever it is.
void action_text(std::string &out, const Workload &w, const Action &a) {
  const std::string &v = w.values[a.value].name;
  switch (a.kind) {
  case ActionKind::Ensure: out += "ensure " + v + " at " + a.location.name(); break;
  case ActionKind::Copy: out += "copy " + v + " to " + a.location.name(); break;
  case ActionKind::Move: out += "move " + v + " to " + a.location.name(); break;
  case ActionKind::Drop: out += "drop " + v + " at " + a.location.name(); break;
  case ActionKind::Discard: out += "discard " + v; break;
  }
}

void block(std::string &out, const Workload &w, const std::string &indent, const std::string &head,
           const std::vector<Action> &actions) {
  if (actions.empty()) return;
  out += indent + head + " {";
  for (const Action &a : actions) {
    out += "\n" + indent + "  ";
    action_text(out, w, a);
  }
  out += "\n" + indent + "}\n";
}

std::vector<Action> without_sources(std::vector<Action> actions) {
  for (Action &a : actions)
    if (a.kind == ActionKind::Move) a.from.reset();
  return actions;
}

/// The state `fhr-plan check` explains every plan against: the setup.
State setup_state(const Workload &w) {
  DeviceConfig config;
  if (w.devices) {
    config.cuda_available = *w.devices > 0;
    config.device_count = *w.devices;
  }
  State state(config);
  for (const auto &[at, bytes] : w.budgets)
    state.set_budget(at, bytes);
  for (ValueId v = 0; v < w.values.size(); ++v) {
    const Value &value = w.values[v];
    const ValueSpec spec{value.logical_bytes, value.storage_bytes, value.mode,
                         value.adopted ? Recoverability::MustPreserve : Recoverability::Reconstructible};
    if (value.adopted)
      state.adopt(v, spec, value.home);
    else
      state.register_source(v, spec, value.home);
  }
  return state;
}

/// How a step is printed. `check` explains every plan on its own from the
/// setup state as well as in the program; where a step's plan would not
/// be feasible on its own (values adopted in budgeted memory, a tight
/// spill tier), its reclaim, or all of it, runs as action lists of the
/// program instead, around a plan that is.
enum class Form { Plan, ReclaimApart, AllApart };

Form form_of(const State &setup, const StepPlan &plan) {
  const std::vector<Action> reclaim = without_sources(plan.reclaim), enter = without_sources(plan.enter);
  if (Simulator(setup).explain(PlanView{reclaim, plan.reservations, enter, {}}).feasible) return Form::Plan;
  if (Simulator(setup).explain(PlanView{{}, plan.reservations, enter, {}}).feasible)
    return Form::ReclaimApart;
  return Form::AllApart;
}

void value_declarations(std::string &out, const Workload &w) {
  for (std::size_t i = 0; i < w.values.size();) {
    const Value &v = w.values[i];
    std::string name = v.name;
    std::size_t next = i + 1;
    if (v.family) {
      const Family &family = w.families[*v.family];
      name = family.name + "[" + std::to_string(family.count) + "]";
      next = i + family.count;
    }
    out += "value " + name + " " + size_text(v.logical_bytes);
    if (v.storage_bytes != v.logical_bytes) out += " storage " + size_text(v.storage_bytes);
    out += v.mode == ReplicaMode::Exclusive ? " exclusive" : " replicable";
    out += (v.adopted ? " at " : " source ") + v.home.name() + "\n";
    i = next;
  }
}

/// One plan name per step: its name, or where steps share one, the name
/// and the step's index ("ks #3"); never a name another step already has
/// (a step may be called "ks #3" itself: then "ks #3.1").
std::vector<std::string> plan_names(const std::vector<Step> &steps) {
  // Every name in use, with how many steps have it (a made-up name: 0).
  std::unordered_map<std::string, std::size_t> taken;
  for (const Step &s : steps)
    ++taken[s.name];
  std::vector<std::string> names;
  names.reserve(steps.size());
  for (std::size_t t = 0; t < steps.size(); ++t) {
    const std::string &name = steps[t].name;
    if (taken.at(name) == 1) {
      names.push_back(name);
      continue;
    }
    std::string unique = name + " #" + std::to_string(t);
    for (std::size_t k = 1; taken.contains(unique); ++k)
      unique = name + " #" + std::to_string(t) + "." + std::to_string(k);
    taken.emplace(unique, 0);
    names.push_back(std::move(unique));
  }
  return names;
}

} // namespace

std::string emit_program(const Workload &w, const Schedule &schedule, const std::string &header) {
  std::string out;
  std::size_t start = 0;
  while (start < header.size()) {
    const std::size_t end = std::min(header.find('\n', start), header.size());
    out += "# " + header.substr(start, end - start) + "\n";
    start = end + 1;
  }
  for (const auto &[at, bytes] : w.budgets)
    out += "budget " + at.name() + " " + size_text(bytes) + "\n";
  if (w.devices) out += "devices " + std::to_string(*w.devices) + "\n";
  out += "\n";
  value_declarations(out, w);
  const std::vector<std::string> names = plan_names(w.steps);
  const State setup = setup_state(w);
  std::vector<Form> forms;
  forms.reserve(schedule.steps.size());
  for (const StepPlan &plan : schedule.steps)
    forms.push_back(form_of(setup, plan));
  for (std::size_t t = 0; t < schedule.steps.size(); ++t) {
    const StepPlan &plan = schedule.steps[t];
    out += "\nplan " + literal(names[t]) + " {\n";
    if (forms[t] == Form::Plan) block(out, w, "  ", "reclaim", plan.reclaim);
    if (forms[t] != Form::AllApart) {
      for (const Reservation &r : plan.reservations)
        out += "  reserve " + r.location.name() + " " + size_text(r.nbytes) + " " + literal(r.label) + "\n";
      block(out, w, "  ", "enter", plan.enter);
    }
    out += "}\n";
  }
  out += "\nprogram " + literal(w.name.empty() ? std::string("workload") : w.name) + " {\n";
  for (std::size_t t = 0; t < schedule.steps.size(); ++t) {
    const StepPlan &plan = schedule.steps[t];
    if (forms[t] != Form::Plan)
      block(out, w, "  ", "actions " + literal(names[t] + ": reclaim"), plan.reclaim);
    if (forms[t] == Form::Plan || forms[t] == Form::ReclaimApart) {
      if (plan.during.empty()) {
        out += "  run " + literal(names[t]) + "\n";
        continue;
      }
      out += "  scope " + literal(names[t]) + " {\n";
    } else {
      // The plan is empty: its scope only bounds the step's reservations.
      out += "  scope " + literal(names[t]) + " {\n";
      for (const Reservation &r : plan.reservations)
        out += "    reserve " + r.location.name() + " " + size_text(r.nbytes) + " " + literal(r.label) + "\n";
      block(out, w, "    ", "actions " + literal(names[t] + ": enter"), plan.enter);
    }
    // What is issued while the step computes: its scope's body.
    block(out, w, "    ", "actions " + literal(names[t] + ": prefetch"), plan.during);
    out += "  }\n";
  }
  out += "}\n";
  return out;
}

} // namespace fhr::planner
