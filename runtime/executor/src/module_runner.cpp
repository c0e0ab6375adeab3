#include "fhr/executor/module_runner.hpp"

#include <algorithm>
#include <stdexcept>

namespace fhr {

using bytecode::Instruction;
using bytecode::InstructionRange;
using bytecode::Opcode;

std::string_view step_kind_name(StepKind kind) {
  switch (kind) {
  case StepKind::Preflight: return "preflight";
  case StepKind::Reclaim: return "reclaim";
  case StepKind::Reserve: return "reserve";
  case StepKind::Enter: return "enter";
  case StepKind::Exit: return "exit";
  case StepKind::Execute: return "actions";
  case StepKind::Acquire: return "acquire";
  case StepKind::Hold: return "hold";
  case StepKind::BodyReserve: return "reserve";
  case StepKind::Direct: return "direct";
  case StepKind::Setup: return "setup";
  }
  return "?";
}

namespace {

ActionKind action_kind(Opcode opcode) {
  switch (opcode) {
  case Opcode::Ensure: return ActionKind::Ensure;
  case Opcode::Copy: return ActionKind::Copy;
  case Opcode::Move:
  case Opcode::MoveFrom: return ActionKind::Move;
  case Opcode::Drop: return ActionKind::Drop;
  default: return ActionKind::Discard;
  }
}

bool is_action(Opcode opcode) {
  switch (opcode) {
  case Opcode::Ensure:
  case Opcode::Copy:
  case Opcode::Move:
  case Opcode::MoveFrom:
  case Opcode::Drop:
  case Opcode::Discard: return true;
  default: return false;
  }
}

/// The End that closes the Scope or Actions at `open`.
std::uint32_t matching_end(const std::vector<Instruction> &code, std::uint32_t open) {
  int depth = 0;
  for (std::uint32_t pc = open; pc < code.size(); ++pc) {
    const Opcode op = code[pc].opcode;
    if (op == Opcode::Scope || op == Opcode::Actions) ++depth;
    if (op == Opcode::End && --depth == 0) return pc;
  }
  return static_cast<std::uint32_t>(code.size()); // the verifier guarantees a match
}

/// Ends a lifetime at once: a lease as with wait = true (the model releases
/// its tokens immediately).
void release_now(Lifetime &lifetime) {
  if (auto *lease = dynamic_cast<Lease *>(&lifetime))
    lease->release(/*wait=*/true);
  else
    lifetime.release();
}

/// A step that succeeded without a transition (a registration, a lifetime).
ExecutedStep plain_step(StepKind kind, std::uint32_t index, std::uint32_t line) {
  ExecutedStep step;
  step.kind = kind;
  step.index = index;
  step.line = line;
  if (kind == StepKind::Reserve) step.phase = Phase::Reserve;
  return step;
}

std::uint64_t scaled(std::uint64_t bytes, std::uint64_t divisor) { return (bytes + divisor - 1) / divisor; }

ExecutedStep failed_step(StepKind kind, std::uint32_t index, std::uint32_t line,
                         const std::exception &error) {
  ExecutedStep step = plain_step(kind, index, line);
  step.failed = true;
  step.message = error.what();
  if (const auto *residency = dynamic_cast<const ResidencyError *>(&error))
    step.raised = residency->error_class();
  else if (dynamic_cast<const std::invalid_argument *>(&error))
    step.raised = ErrorClass::InvalidArgument;
  return step;
}

} // namespace

/// One run of setup, a plan or a program: records steps and owns the
/// lifetimes its bodies open.
class ModuleRunner::Execution {
public:
  Execution(ModuleRunner &runner, RunResult &result) : r_(runner), result_(result) {}

  /// Runs the instructions of a program body (or setup, `setup` true).
  bool run_range(std::uint32_t begin, std::uint32_t end, bool setup) {
    std::vector<std::unique_ptr<Lifetime>> lifetimes;
    bool ok = true;
    for (std::uint32_t pc = begin; ok && pc < end;) {
      const Instruction &in = r_.module_.code[pc];
      switch (in.opcode) {
      case Opcode::Declare:
        ok = declare(in);
        ++pc;
        break;
      case Opcode::Scope: {
        const std::uint32_t close = matching_end(r_.module_.code, pc);
        ok = run_scope(in.index(), InstructionRange{pc + 1, close});
        pc = close + 1;
        break;
      }
      case Opcode::Run:
        ok = run_scope(in.index(), std::nullopt);
        ++pc;
        break;
      case Opcode::Actions: {
        const std::uint32_t close = matching_end(r_.module_.code, pc);
        ok = run_actions(r_.module_.strings[in.index()], InstructionRange{pc + 1, close}, in.line);
        pc = close + 1;
        break;
      }
      case Opcode::Acquire:
      case Opcode::Hold:
      case Opcode::Lease:
        ok = protect(pc, setup, lifetimes);
        pc += 1 + in.index();
        break;
      case Opcode::Reserve:
        ok = reserve(pc, setup, lifetimes);
        ++pc;
        break;
      case Opcode::Release:
        release_setup(in.index(), in.line);
        ++pc;
        break;
      default:
        if (is_action(in.opcode)) ok = direct(in, setup ? StepKind::Setup : StepKind::Direct);
        ++pc;
        break;
      }
    }
    // Body lifetimes end with their body (§7): leases as with wait = true,
    // as the model releases them at once.
    for (auto it = lifetimes.rbegin(); it != lifetimes.rend(); ++it)
      release_now(**it);
    result_.completed = result_.completed && ok;
    return ok;
  }

  bool run_scope(std::uint32_t plan_index, std::optional<InstructionRange> body) {
    const PlanSpec spec = r_.plan_spec(plan_index);
    const bytecode::PlanEntry &entry = r_.module_.plans[plan_index];
    const PhaseActions reclaim = r_.phase_actions(entry.reclaim), enter = r_.phase_actions(entry.enter),
                       exit = r_.phase_actions(entry.exit);
    Scope scope = r_.manager_.scope(spec);
    try {
      scope.enter();
    } catch (const ResidencyPlanExecutionError &error) {
      const auto &d = error.details();
      const bool reserve = d.phase == ExecutionPhase::Reserve;
      const std::uint32_t index = static_cast<std::uint32_t>(reserve ? d.failed_reservation_index.value_or(0)
                                                                     : d.failed_action_index.value_or(0));
      const auto all = static_cast<std::uint32_t>(spec.reservations.size());
      record_entry(d.partial_report, reclaim, enter, entry,
                   d.phase == ExecutionPhase::Reclaim ? 0
                   : reserve                          ? index
                                                      : all);
      const StepKind kind = d.phase == ExecutionPhase::Reclaim ? StepKind::Reclaim
                            : reserve                          ? StepKind::Reserve
                                                               : StepKind::Enter;
      const std::uint32_t line = reserve ? r_.module_.code[entry.reserve.begin + index].line
                                 : kind == StepKind::Reclaim ? reclaim.lines[index]
                                                             : enter.lines[index];
      fail(kind, index, line, error, d.cause);
      return false;
    } catch (const ResidencyPlanError &error) {
      return preflight_failed(spec, entry.line, error);
    }
    record_entry(scope.progress(), reclaim, enter, entry,
                 static_cast<std::uint32_t>(spec.reservations.size()));
    if (body && !run_range(body->begin, body->end, false)) return false;
    const std::size_t before_exit = scope.progress().transitions.size();
    try {
      scope.close();
    } catch (const ResidencyPlanExecutionError &error) {
      const auto &d = error.details();
      record_phase(StepKind::Exit, d.partial_report, before_exit, exit);
      fail(StepKind::Exit, static_cast<std::uint32_t>(d.failed_action_index.value_or(0)),
           exit.lines[d.failed_action_index.value_or(0)], error, d.cause);
      return false;
    }
    record_phase(StepKind::Exit, scope.progress(), before_exit, exit);
    return true;
  }

  bool run_actions(const std::string &name, InstructionRange range, std::uint32_t line) {
    const PhaseActions list = r_.phase_actions(range);
    try {
      const PlanReport report = r_.manager_.execute_actions(list.actions, name);
      record_phase(StepKind::Execute, report, 0, list);
      return true;
    } catch (const ResidencyPlanExecutionError &error) {
      const auto &d = error.details();
      record_phase(StepKind::Execute, d.partial_report, 0, list);
      const auto index = static_cast<std::uint32_t>(d.failed_action_index.value_or(0));
      fail(StepKind::Execute, index, list.lines[index], error, d.cause);
      return false;
    } catch (const ResidencyPlanError &error) {
      return preflight_failed(PlanSpec{name, {}, {}, list.actions, {}}, line, error);
    }
  }

  bool direct(const Instruction &in, StepKind kind) {
    for (std::uint32_t v = in.value; v < in.value + in.count; ++v) {
      const Handle handle = r_.handle_of(v);
      try {
        TransitionReport report;
        switch (in.opcode) {
        case Opcode::Ensure: report = r_.manager_.ensure(handle, in.location); break;
        case Opcode::Copy: report = r_.manager_.copy(handle, in.location); break;
        case Opcode::Move: report = r_.manager_.move(handle, in.location); break;
        case Opcode::MoveFrom: report = r_.manager_.move(handle, in.location, in.from); break;
        case Opcode::Drop: report = r_.manager_.drop(handle, in.location); break;
        default: report = r_.manager_.discard(handle); break;
        }
        committed(kind, 0, in.line, report, handle);
      } catch (const std::exception &error) {
        result_.steps.push_back(failed_step(kind, 0, in.line, error));
        result_.steps.back().value = v;
        return false;
      }
    }
    return true;
  }

private:
  bool declare(const Instruction &in) {
    const bytecode::Declaration &d = r_.module_.declarations[in.index()];
    for (std::uint32_t v = d.first_value; v < d.first_value + d.value_count(); ++v) {
      DeclaredValue &value = r_.values_[v];
      value.line = in.line;
      try {
        r_.handles_[v] = r_.binder_.bind(r_.manager_, value);
        r_.value_of_handle_[r_.handles_[v].handle_id] = v;
      } catch (const std::exception &error) {
        result_.steps.push_back(failed_step(StepKind::Setup, 0, in.line, error));
        return false;
      }
      result_.steps.push_back(plain_step(StepKind::Setup, 0, in.line));
    }
    return true;
  }

  bool protect(std::uint32_t pc, bool setup, std::vector<std::unique_ptr<Lifetime>> &lifetimes) {
    const Instruction &in = r_.module_.code[pc];
    const std::vector<Handle> handles = r_.item_handles(pc);
    const StepKind kind = setup                          ? StepKind::Setup
                          : in.opcode == Opcode::Acquire ? StepKind::Acquire
                                                         : StepKind::Hold;
    try {
      std::unique_ptr<Lifetime> lifetime;
      if (in.opcode == Opcode::Hold) {
        lifetime = std::make_unique<Hold>(r_.manager_.hold(handles, in.location));
      } else {
        Stream stream;
        if (in.location.is_cuda()) {
          if (!r_.options_.consumer_stream)
            throw std::invalid_argument("a lease at " + in.location.name() + " needs a consumer stream");
          stream = r_.options_.consumer_stream(in.location);
        }
        auto lease = std::make_unique<Lease>(r_.manager_.acquire(handles, in.location, stream));
        if (in.opcode == Opcode::Lease && in.flag) { // `pending`: released while readers still run
          if (stream && r_.options_.submit_reader) r_.options_.submit_reader(stream);
          lease->release(/*wait=*/false);
        }
        lifetime = std::move(lease);
      }
      result_.steps.push_back(plain_step(kind, 0, in.line));
      if (setup)
        r_.setup_lifetimes_.emplace_back(pc, std::move(lifetime));
      else
        lifetimes.push_back(std::move(lifetime));
      return true;
    } catch (const std::exception &error) {
      result_.steps.push_back(failed_step(kind, 0, in.line, error));
      return false;
    }
  }

  bool reserve(std::uint32_t pc, bool setup, std::vector<std::unique_ptr<Lifetime>> &lifetimes) {
    const Instruction &in = r_.module_.code[pc];
    const StepKind kind = setup ? StepKind::Setup : StepKind::BodyReserve;
    try {
      auto reservation = std::make_unique<ActiveReservation>(r_.manager_.reserve(
          in.location, scaled(in.size, r_.options_.scale_down), r_.module_.strings[in.index()]));
      result_.steps.push_back(plain_step(kind, 0, in.line));
      if (setup)
        r_.setup_lifetimes_.emplace_back(pc, std::move(reservation));
      else
        lifetimes.push_back(std::move(reservation));
      return true;
    } catch (const std::exception &error) {
      result_.steps.push_back(failed_step(kind, 0, in.line, error));
      return false;
    }
  }

  /// A release is a setup step whether or not its lifetime is still open
  /// (releasing is idempotent), as the compiler counts it.
  void release_setup(std::uint32_t target, std::uint32_t line) {
    auto &open = r_.setup_lifetimes_;
    auto it =
        std::find_if(open.begin(), open.end(), [&](const auto &entry) { return entry.first == target; });
    if (it != open.end()) {
      release_now(*it->second);
      open.erase(it);
    }
    result_.steps.push_back(plain_step(StepKind::Setup, 0, line));
  }

  /// The steps of a scope's entry: reclaim transitions, the reservations
  /// made, enter transitions.
  void record_entry(const PlanReport &report, const PhaseActions &reclaim, const PhaseActions &enter,
                    const bytecode::PlanEntry &entry, std::uint32_t reservations_made) {
    const std::size_t reclaimed = std::min(report.transitions.size(), reclaim.actions.size());
    PlanReport part;
    part.transitions.assign(report.transitions.begin(), report.transitions.begin() + reclaimed);
    record_phase(StepKind::Reclaim, part, 0, reclaim);
    for (std::uint32_t i = 0; i < reservations_made; ++i)
      result_.steps.push_back(
          plain_step(StepKind::Reserve, i, r_.module_.code[entry.reserve.begin + i].line));
    record_phase(StepKind::Enter, report, reclaimed, enter);
  }

  void record_phase(StepKind kind, const PlanReport &report, std::size_t from, const PhaseActions &phase) {
    for (std::size_t i = from; i < report.transitions.size() && i - from < phase.actions.size(); ++i)
      committed(kind, static_cast<std::uint32_t>(i - from), phase.lines[i - from], report.transitions[i],
                phase.actions[i - from].handle);
  }

  void committed(StepKind kind, std::uint32_t index, std::uint32_t line, const TransitionReport &report,
                 const Handle &handle) {
    ExecutedStep step = plain_step(kind, index, line);
    step.transition = report;
    step.value = r_.value_of(handle);
    result_.steps.push_back(std::move(step));
    if (r_.options_.after_transition) r_.options_.after_transition(report, handle);
  }

  void fail(StepKind kind, std::uint32_t index, std::uint32_t line, const std::exception &error,
            ErrorClass cause) {
    ExecutedStep step = failed_step(kind, index, line, error);
    step.cause = cause;
    result_.steps.push_back(std::move(step));
  }

  bool preflight_failed(const PlanSpec &spec, std::uint32_t line, const ResidencyPlanError &error) {
    // The manager refused before running anything; explain (same simulator,
    // same state) says which step decided it.
    ExecutedStep step = failed_step(StepKind::Preflight, 0, line, error);
    const Explanation why = r_.manager_.explain(spec);
    if (const SimulatedStep *failed = why.first_failure()) {
      step.phase = failed->phase;
      step.index = failed->index;
    }
    result_.steps.push_back(std::move(step));
    return false;
  }

  ModuleRunner &r_;
  RunResult &result_;
};

ModuleRunner::ModuleRunner(Manager &manager, const bytecode::Module &module, ValueBinder &binder,
                           RunnerOptions options)
    : manager_(manager), module_(module), binder_(binder), options_(std::move(options)) {
  if (options_.scale_down == 0) throw std::invalid_argument("scale_down must be at least 1");
  values_.resize(module.value_count);
  handles_.resize(module.value_count);
  for (const bytecode::Declaration &d : module.declarations)
    for (std::uint32_t i = 0; i < d.value_count(); ++i) {
      DeclaredValue &value = values_[d.first_value + i];
      value.value_id = d.first_value + i;
      value.name = module.strings[d.name];
      if (d.family_size != 0) value.index = i;
      value.spec = d.spec;
      value.spec.logical_nbytes = scaled(d.spec.logical_nbytes, options_.scale_down);
      value.spec.storage_nbytes = scaled(d.spec.storage_nbytes, options_.scale_down);
      value.location = d.location;
    }
}

ModuleRunner::~ModuleRunner() {
  for (auto it = setup_lifetimes_.rbegin(); it != setup_lifetimes_.rend(); ++it) {
    try {
      release_now(*it->second);
    } catch (const std::exception &) {
      // Inside a source callback: the lifetime's destructor defers it.
    }
  }
}

std::vector<std::pair<Location, std::optional<std::uint64_t>>>
ModuleRunner::budgets(const bytecode::Module &module, std::uint64_t scale_down) {
  auto budgets = module.budgets;
  for (auto &[location, budget] : budgets)
    if (budget) budget = scaled(*budget, scale_down);
  return budgets;
}

RunResult ModuleRunner::run_setup() {
  RunResult result;
  result.name = "setup";
  Execution(*this, result).run_range(module_.setup.begin, module_.setup.end, /*setup=*/true);
  return result;
}

Handle ModuleRunner::handle_of(std::uint32_t value_id) const {
  if (value_id >= handles_.size()) throw std::out_of_range("no value " + std::to_string(value_id));
  if (handles_[value_id].handle_id == 0)
    throw std::logic_error("value " + values_[value_id].display_name() + " is not bound yet");
  return handles_[value_id];
}

std::optional<std::uint32_t> ModuleRunner::value_of(const Handle &handle) const {
  if (handle.manager_id != manager_.id()) return std::nullopt;
  auto it = value_of_handle_.find(handle.handle_id);
  if (it == value_of_handle_.end()) return std::nullopt;
  return it->second;
}

Handle ModuleRunner::handle(std::string_view name, std::optional<std::uint32_t> index) const {
  for (const DeclaredValue &value : values_)
    if (value.name == name && value.index == index) return handle_of(value.value_id);
  throw std::out_of_range("the module declares no value " + std::string(name) +
                          (index ? "[" + std::to_string(*index) + "]" : ""));
}

ModuleRunner::PhaseActions ModuleRunner::phase_actions(InstructionRange range) const {
  PhaseActions out;
  for (std::uint32_t pc = range.begin; pc < range.end; ++pc) {
    const Instruction &in = module_.code[pc];
    if (!is_action(in.opcode)) continue;
    for (std::uint32_t v = in.value; v < in.value + in.count; ++v) {
      std::optional<Location> from;
      if (in.opcode == Opcode::MoveFrom) from = in.from;
      out.actions.push_back(ActionSpec{action_kind(in.opcode), handle_of(v), in.location, from});
      out.lines.push_back(in.line);
    }
  }
  return out;
}

std::vector<Handle> ModuleRunner::item_handles(std::uint32_t header) const {
  std::vector<Handle> handles;
  const std::uint32_t items = module_.code[header].index();
  for (std::uint32_t pc = header + 1; pc <= header + items; ++pc)
    for (std::uint32_t v = module_.code[pc].value; v < module_.code[pc].value + module_.code[pc].count; ++v)
      handles.push_back(handle_of(v));
  return handles;
}

PlanSpec ModuleRunner::plan_spec(std::uint32_t plan_index) const {
  const bytecode::PlanEntry &entry = module_.plans[plan_index];
  PlanSpec spec;
  spec.name = module_.strings[entry.name];
  spec.reclaim = phase_actions(entry.reclaim).actions;
  for (std::uint32_t pc = entry.reserve.begin; pc < entry.reserve.end; ++pc) {
    const Instruction &in = module_.code[pc];
    spec.reservations.push_back(
        Reservation{in.location, scaled(in.size, options_.scale_down), module_.strings[in.index()]});
  }
  spec.enter = phase_actions(entry.enter).actions;
  spec.exit = phase_actions(entry.exit).actions;
  return spec;
}

PlanSpec ModuleRunner::plan(std::string_view name) const {
  for (std::uint32_t i = 0; i < module_.plans.size(); ++i)
    if (module_.strings[module_.plans[i].name] == name) return plan_spec(i);
  throw std::invalid_argument("the module has no plan '" + std::string(name) + "'");
}

RunResult ModuleRunner::run_plan(std::string_view name) {
  for (std::uint32_t i = 0; i < module_.plans.size(); ++i)
    if (module_.strings[module_.plans[i].name] == name) return run_plan(i);
  throw std::invalid_argument("the module has no plan '" + std::string(name) + "'");
}

RunResult ModuleRunner::run_plan(std::uint32_t index) {
  if (index >= module_.plans.size()) throw std::invalid_argument("no plan " + std::to_string(index));
  RunResult result;
  result.name = module_.strings[module_.plans[index].name];
  Execution execution(*this, result);
  result.completed = execution.run_scope(index, std::nullopt);
  return result;
}

RunResult ModuleRunner::run_program(std::string_view name) {
  for (std::uint32_t i = 0; i < module_.programs.size(); ++i)
    if (module_.strings[module_.programs[i].name] == name) return run_program(i);
  throw std::invalid_argument("the module has no program '" + std::string(name) + "'");
}

RunResult ModuleRunner::run_program(std::uint32_t index) {
  if (index >= module_.programs.size()) throw std::invalid_argument("no program " + std::to_string(index));
  const bytecode::ProgramEntry &program = module_.programs[index];
  RunResult result;
  result.name = module_.strings[program.name];
  Execution(*this, result).run_range(program.body.begin, program.body.end, /*setup=*/false);
  return result;
}

} // namespace fhr
