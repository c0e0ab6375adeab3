#pragma once
// A seeded generator of random valid .fhr programs: budgets, devices, single
// values and families, setup actions, named holds, leases and reservations
// with releases, plans with every block, and programs with nested scopes,
// runs, action lists, lifetimes and direct actions. Used by the bytecode
// round-trip tests; the text always compiles without diagnostics, whether or
// not its plans are feasible.
#include <random>
#include <string>
#include <vector>

namespace fhr::test {

class RandomProgram {
public:
  /// `small`: every size a thousand times smaller (KiB where MiB were,
  /// bytes where KiB were), for tests that execute the programs for real.
  explicit RandomProgram(unsigned seed, bool small = false)
      : rng_(seed), big_(small ? " KiB" : " MiB"), medium_(small ? "" : " KiB") {}

  std::string generate() {
    out_.clear();
    if (chance(50)) line("devices " + std::to_string(pick(1, 4)));
    for (const char *loc : {"pinned", "cuda:0", "cuda:1"})
      if (chance(60)) line(std::string("budget ") + loc + " " + std::to_string(pick(1, 64)) + big_);
    if (chance(30)) line("location pageable");
    if (chance(30)) line("const unit = " + std::to_string(pick(1, 4)) + big_);
    const int values = pick(1, 6);
    for (int v = 0; v < values; ++v)
      value(v);
    const int setup = pick(0, 6);
    for (int s = 0; s < setup; ++s)
      setup_statement();
    const int plans = pick(0, 4);
    for (int p = 0; p < plans; ++p)
      plan(p);
    const int programs = plans > 0 ? pick(0, 2) : 0;
    for (int p = 0; p < programs; ++p)
      program(plans);
    return out_;
  }

private:
  struct Value {
    std::string name;
    int family = 0; // 0: single
  };

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(int percent) { return pick(1, 100) <= percent; }
  void line(const std::string &text, int indent = 0) { out_ += std::string(indent * 2, ' ') + text + "\n"; }

  std::string location() {
    static const char *const locations[] = {"pageable", "pinned", "cuda:0", "cuda:1", "cuda:2"};
    return locations[pick(0, 4)];
  }
  std::string size() {
    return chance(20) ? std::to_string(pick(0, 5000))
                      : std::to_string(pick(1, 16)) + (chance(50) ? big_ : medium_);
  }

  void value(int v) {
    Value value{"v" + std::to_string(v), chance(40) ? pick(1, 8) : 0};
    std::string text = "value " + value.name;
    if (value.family) text += "[" + std::to_string(value.family) + "]";
    text += " " + size();
    if (chance(25)) text += " storage 17" + big_;
    if (chance(50)) text += chance(50) ? " replicable" : " exclusive";
    text += (chance(50) ? " at " : " source ") + location();
    line(text);
    values_.push_back(value);
  }

  std::string operand() {
    const Value &v = values_[pick(0, static_cast<int>(values_.size()) - 1)];
    if (!v.family) return v.name;
    const int kind = pick(0, 2);
    if (kind == 0) return v.name + "[*]";
    const int first = pick(0, v.family - 1);
    if (kind == 1) return v.name + "[" + std::to_string(first) + "]";
    return v.name + "[" + std::to_string(first) + ".." + std::to_string(pick(first + 1, v.family)) + "]";
  }

  std::string action() {
    switch (pick(0, 5)) {
    case 0: return "ensure " + operand() + " at " + location();
    case 1: return "copy " + operand() + " to " + location();
    case 2: return "move " + operand() + " to " + location();
    case 3: return "move " + operand() + " to " + location() + " from " + location();
    case 4: return "drop " + operand() + " at " + location();
    default: return chance(30) ? "discard " + operand() : "ensure " + operand() + " at " + location();
    }
  }

  std::string operand_list() {
    std::string list = operand();
    for (int n = pick(0, 2); n > 0; --n)
      list += ", " + operand();
    return list;
  }

  std::string label() {
    static const char *const labels[] = {"tmp", "workspace", "key-switch \\{buffer\\}", "out \\\"x\\\""};
    return std::string("\"") + labels[pick(0, 3)] + "\"";
  }

  void setup_statement() {
    const int kind = pick(0, 5);
    if (kind <= 1) {
      line(action());
    } else if (kind == 2 && !active_.empty()) {
      line("release " + active_.back());
      active_.pop_back();
    } else {
      const std::string alias = chance(60) ? "life" + std::to_string(lifetime_counter_++) : "";
      std::string text;
      if (kind == 3)
        text = "hold " + operand_list() + " at " + location();
      else if (kind == 4)
        text = "lease " + operand_list() + " at " + location() + (chance(50) ? " pending" : "");
      else
        text = "reserve " + location() + " " + size() + " " + label();
      if (!alias.empty()) {
        text += " as " + alias;
        active_.push_back(alias);
      }
      line(text);
    }
  }

  void action_block(const char *keyword, int indent) {
    line(std::string(keyword) + " {", indent);
    for (int n = pick(0, 4); n > 0; --n) {
      if (chance(15)) {
        // Several actions on one line, and a loop.
        line(action() + "  " + action(), indent + 1);
      } else if (chance(10) && !values_.empty()) {
        line("for k in 0.." + std::to_string(pick(1, 3)) + " { " + action() + " }", indent + 1);
      } else {
        line(action(), indent + 1);
      }
    }
    line("}", indent);
  }

  void plan(int p) {
    line("plan \"plan-" + std::to_string(p) + "\" {");
    if (chance(50)) action_block("reclaim", 1);
    for (int n = pick(0, 2); n > 0; --n)
      line("reserve " + location() + " " + size() + " " + label(), 1);
    if (chance(80)) action_block("enter", 1);
    if (chance(60)) action_block("exit", 1);
    line("}");
  }

  void program_items(int plans, int indent, int depth) {
    for (int n = pick(1, 4); n > 0; --n) {
      const std::string plan = "\"plan-" + std::to_string(pick(0, plans - 1)) + "\"";
      switch (pick(0, 6)) {
      case 0:
        if (depth < 3) {
          line("scope " + plan + " {", indent);
          program_items(plans, indent + 1, depth + 1);
          line("}", indent);
          break;
        }
        [[fallthrough]];
      case 1: line("run " + plan, indent); break;
      case 2: action_block(("actions \"list-" + std::to_string(pick(0, 9)) + "\"").c_str(), indent); break;
      case 3: line("acquire " + operand_list() + " at " + location(), indent); break;
      case 4: line("hold " + operand_list() + " at " + location(), indent); break;
      case 5: line("reserve " + location() + " " + size() + " " + label(), indent); break;
      default: line(action(), indent); break;
      }
    }
  }

  void program(int plans) {
    // Names are unique (E0402): a count after the random number, which
    // keeps the random stream as it was.
    if (chance(50))
      line("program {");
    else
      line("program \"pipeline-" + std::to_string(pick(0, 99)) + "-" + std::to_string(programs_++) + "\" {");
    program_items(plans, 1, 0);
    line("}");
  }

  std::mt19937 rng_;
  std::string out_;
  int programs_ = 0; ///< named programs so far
  std::vector<Value> values_;
  std::vector<std::string> active_;
  int lifetime_counter_ = 0;
  std::string big_, medium_;
};

} // namespace fhr::test
