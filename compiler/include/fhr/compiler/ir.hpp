#pragma once
/// \file
/// The checked program: every name resolved to a value id, every size a
/// number, loops unrolled; a statement over a family range stays one action
/// over the range. Lowering turns it into bytecode, one instruction per
/// action and lifetime statement; explain runs that bytecode.

#include "fhr/compiler/workload_ir.hpp"
#include "fhr/dsl/ast.hpp"
#include "fhr/model/action.hpp"
#include "fhr/model/plan.hpp"
#include "fhr/model/value_spec.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fhr::ir {

inline constexpr std::uint32_t kNoFamily = ~std::uint32_t{0};

struct Value {
  std::string name; ///< "weight", or "rk[3]" for a family member
  ValueSpec spec;
  /// Adopted values live `at` this location; source-backed ones load here.
  Location location;
  ast::Span span;
  std::uint32_t family = kNoFamily;
  std::uint32_t family_index = 0;

  bool adopted() const { return spec.recoverability == Recoverability::MustPreserve; }
};

struct Family {
  std::string name;
  ValueId first = 0;
  std::uint32_t count = 0;
};

/// One action statement as written (or one iteration of a loop around it):
/// `ensure rk[0..8] at cuda:0` is one action over the 8 consecutive values
/// rk[0]..rk[7]. A range lies within one family; a single value has count 1.
struct ActionRange {
  ActionKind kind = ActionKind::Ensure;
  ValueId value = 0;       ///< the first value
  std::uint32_t count = 1; ///< consecutive values from `value`
  /// Destination for ensure/copy/move, the location for drop; unused by discard.
  Location location;
  /// Explicit move source.
  std::optional<Location> from;

  /// The model's action for the k-th value of the range.
  Action at(std::uint32_t k) const { return Action{kind, value + k, location, from}; }
};

/// Actions with the source span each came from (parallel arrays).
struct ActionList {
  std::vector<ActionRange> actions;
  std::vector<ast::Span> spans;

  void add(const ActionRange &action, ast::Span span) {
    actions.push_back(action);
    spans.push_back(span);
  }
  std::size_t size() const { return actions.size(); }
};

struct Plan {
  std::string name;
  ast::Span span;
  /// `in program`: explained only where a program runs it, never on its own.
  bool in_program = false;
  ActionList reclaim, enter, exit;
  std::vector<Reservation> reservations;
  std::vector<ast::Span> reservation_spans;
};

enum class SetupKind : std::uint8_t { Adopt, RegisterSource, Action, Hold, Lease, Reserve, Release };

/// One top-level statement that changes manager state, in file order.
struct SetupStep {
  SetupKind kind = SetupKind::Action;
  ast::Span span;
  ValueId value = 0;           ///< Adopt, RegisterSource
  ActionRange action;          ///< Action
  std::vector<ValueId> values; ///< Hold, Lease (duplicates collapsed)
  Location location;           ///< Hold, Lease, Reserve
  bool pending = false;        ///< Lease: a released CUDA lease whose events are incomplete
  std::uint64_t nbytes = 0;    ///< Reserve
  std::string label;           ///< Reserve
  std::string alias;           ///< `as NAME`, if any
  std::uint32_t target = 0;    ///< Release: the setup step that created the lifetime
};

enum class ProgramItemKind : std::uint8_t { Scope, Run, Actions, Acquire, Hold, Reserve, Direct };

struct ProgramItem {
  ProgramItemKind kind = ProgramItemKind::Direct;
  ast::Span span;
  std::uint32_t plan = 0;        ///< Scope, Run: index into Module::plans
  std::string name;              ///< Actions: its name
  ActionList actions;            ///< Actions; Direct holds exactly one
  std::vector<ValueId> values;   ///< Acquire, Hold
  Location location;             ///< Acquire, Hold, Reserve
  Reservation reservation;       ///< Reserve
  std::vector<ProgramItem> body; ///< Scope
};

struct Program {
  std::string name;
  ast::Span span;
  std::vector<ProgramItem> items;
};

struct Module {
  /// `budget` lines then `location` lines, in file order: the constructor budgets.
  std::vector<std::pair<Location, std::optional<std::uint64_t>>> budgets;
  std::vector<ast::Span> budget_spans;
  std::optional<unsigned> device_count;
  std::vector<Value> values;
  std::vector<Family> families;
  std::vector<SetupStep> setup;
  std::vector<Plan> plans;
  std::vector<Program> programs;
  /// Workload statements (workload_ir.hpp): a file with steps is a workload.
  std::vector<Tier> tiers;
  std::vector<WorkloadStep> steps;
};

} // namespace fhr::ir
