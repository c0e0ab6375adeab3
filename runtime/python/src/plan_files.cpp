// Plans from text (docs/python.md, "Plans from text"): a verified bytecode
// module, its declared values bound to a manager's handles, and its plans
// and programs run on that manager by the runtime's ModuleRunner.
#include "binding.hpp"

#include "fhr/bytecode/module.hpp"

#include <cstring>
#include <future>
#include <unordered_map>

namespace fhr::python {

namespace {

struct PyPlanModule {
  std::shared_ptr<const bytecode::Module> module;
};

/// Zeros written by a declared reconstructible value's source, into host
/// memory or (a CUDA source location) device memory.
class ZeroSource final : public Source {
public:
  explicit ZeroSource(bool device_memory) : device_memory_(device_memory) {}
  void load(std::span<std::byte> destination) override {
    if (!device_memory_) {
      std::memset(destination.data(), 0, destination.size());
      return;
    }
    const std::vector<std::byte> zeros(destination.size());
    copy_bytes(destination.data(), zeros.data(), zeros.size(), true);
  }

private:
  bool device_memory_;
};

/// Binds declared values to the handles the caller gave (by value id); the
/// rest, when allowed, to synthetic values of the declared sizes: zero
/// bytes adopted from the manager's own memory resource at the declared
/// location (so that their memory is of the location's kind, §2.6), or a
/// source of zeros for reconstructible ones.
class MappedBinder final : public ValueBinder {
public:
  MappedBinder(std::unordered_map<std::uint32_t, Handle> handles, bool synthetic, bool cuda_backend)
      : handles_(std::move(handles)), synthetic_(synthetic), cuda_backend_(cuda_backend) {}
  Handle bind(Manager &manager, const DeclaredValue &value) override {
    if (auto it = handles_.find(value.value_id); it != handles_.end()) return it->second;
    if (!synthetic_) throw std::invalid_argument("no handle is bound to '" + value.display_name() + "'");
    const bool device_memory = cuda_backend_ && value.location.is_cuda();
    if (value.spec.recoverability == Recoverability::Reconstructible)
      return manager.register_source(value.spec, std::make_shared<ZeroSource>(device_memory), value.location);
    Storage storage = manager.backend().memory->allocate(value.location, value.spec.storage_nbytes);
    ZeroSource(device_memory).load(storage.bytes());
    auto [data, release] = storage.detach();
    try {
      return manager.adopt(data, value.spec.logical_nbytes, value.spec.storage_nbytes, value.location,
                           release, value.spec.replica_mode);
    } catch (...) {
      release(data); // a failed adopt leaves the buffer with us
      throw;
    }
  }

private:
  std::unordered_map<std::uint32_t, Handle> handles_;
  bool synthetic_;
  bool cuda_backend_;
};

/// The transitions a run committed, in order, with the handle each concerned
/// (RunnerOptions::after_transition), paired afterwards with the steps that
/// committed them.
using CommittedTransitions = std::vector<std::pair<TransitionReport, Handle>>;

struct PyPlanRun {
  py::object manager;
  std::shared_ptr<const bytecode::Module> module;
  std::unique_ptr<MappedBinder> binder;
  std::shared_ptr<CommittedTransitions> committed = std::make_shared<CommittedTransitions>();
  std::unique_ptr<ModuleRunner> runner;
  /// A program run a statement at a time: the current scope's body when it
  /// runs on its own thread (ProgramSteps with background bodies).
  std::future<bool> body;
  ~PyPlanRun() {
    py::gil_scoped_release release;
    if (body.valid()) body.wait();
    runner->abandon_program();
    runner.reset();
  }
  /// Waits for a body running on its own thread; false when it failed.
  bool wait_body() {
    if (!body.valid()) return true;
    return without_gil([&] { return body.get(); });
  }
  template <typename Run>
  py::object run(Run &&work);
};

std::string kind_name(StepKind kind) { return std::string(step_kind_name(kind)); }

py::object error_name(ErrorClass error) {
  return error == ErrorClass::None ? py::object(py::none()) : py::object(py::str(error_class_name(error)));
}

/// Steps as (kind, index, phase, line, failed, raised, cause, message,
/// transition, value id): a step committed a transition when its timing is
/// the next committed report's and it concerns that report's handle.
py::object run_result(PyManager &manager, const ModuleRunner &runner, const RunResult &result,
                      const CommittedTransitions &committed) {
  py::list steps;
  std::size_t next = 0;
  for (std::size_t i = 0; i < result.steps.size(); ++i) {
    const StepRecord &s = result.steps[i];
    py::object transition = py::none();
    if (next < committed.size() && !s.failed() && i < result.timings.size()) {
      const TransitionReport &report = committed[next].first;
      const Handle &handle = committed[next].second; // not a structured binding: the lambda below captures it
      const bool same_handle = [&] {
        try {
          return runner.handle_of(s.value) == handle;
        } catch (const std::exception &) {
          return false;
        }
      }();
      if (same_handle && result.timings[i].started_at_ns == report.started_at_ns &&
          result.timings[i].completed_at_ns == report.completed_at_ns) {
        transition = make_report(manager, report, py::none());
        ++next;
      }
    }
    const bool last_failed = s.failed() && i + 1 == result.steps.size();
    const ErrorClass cause = s.raised != s.outcome.error ? s.outcome.error : ErrorClass::None;
    const bool names_value = s.kind != StepKind::Reserve && s.kind != StepKind::BodyReserve;
    steps.append(py::make_tuple(kind_name(s.kind), s.index, kind_name(s.phase), runner.line(s), s.failed(),
                                error_name(s.raised), error_name(cause),
                                last_failed ? result.failure_message : std::string(), transition,
                                names_value ? py::object(py::int_(s.value)) : py::object(py::none())));
  }
  return py::make_tuple(result.name, result.completed, steps);
}

template <typename Run>
py::object PyPlanRun::run(Run &&work) {
  committed->clear();
  const RunResult result = without_gil([&] { return work(*runner); });
  return run_result(manager.cast<PyManager &>(), *runner, result, *committed);
}

} // namespace

py::object action_object(PyManager &manager, const ActionSpec &a) {
  py::object handle = manager.meta(a.handle).handle;
  switch (a.kind) {
  case ActionKind::Ensure:
  case ActionKind::Copy:
    return python_class("fhr._plan", "EnsureResident")(handle, location_object(a.location));
  case ActionKind::Move:
    return python_class("fhr._plan", "MoveResident")(handle, location_object(a.location),
                                                     optional_location(a.from));
  case ActionKind::Drop:
    return python_class("fhr._plan", "DropResident")(handle, location_object(a.location));
  case ActionKind::Discard: break;
  }
  return python_class("fhr._plan", "DiscardValue")(handle);
}

py::object plan_object(PyManager &manager, const PlanSpec &spec) {
  auto actions = [&](const std::vector<ActionSpec> &phase) {
    py::list out;
    for (const ActionSpec &a : phase)
      out.append(action_object(manager, a));
    return py::tuple(out);
  };
  py::list reservations;
  for (const Reservation &r : spec.reservations)
    reservations.append(
        python_class("fhr._plan", "MemoryReservation")(location_object(r.location), r.nbytes, r.label));
  return python_class("fhr._plan", "ResidencyPlan")(
      py::arg("name") = spec.name, py::arg("enter") = actions(spec.enter),
      py::arg("exit") = actions(spec.exit), py::arg("reservations") = py::tuple(reservations),
      py::arg("reclaim") = actions(spec.reclaim));
}

void bind_plan_files(py::module_ &m) {
  py::class_<PyPlanModule>(m, "_PlanModule", "A loaded and verified bytecode module.")
      .def_static(
          "from_bytes",
          [](py::bytes data) {
            const std::string bytes = data;
            auto module = std::make_shared<const bytecode::Module>(
                bytecode::load_module(std::as_bytes(std::span(bytes.data(), bytes.size()))));
            return PyPlanModule{std::move(module)};
          },
          py::arg("data"))
      .def_property_readonly("values",
                             [](const PyPlanModule &p) {
                               py::list out;
                               const bytecode::Module &mod = *p.module;
                               for (const bytecode::Declaration &d : mod.declarations)
                                 for (std::uint32_t i = 0; i < d.value_count(); ++i)
                                   out.append(py::make_tuple(
                                       d.first_value + i, mod.strings[d.name],
                                       d.family_size == 0 ? py::object(py::none()) : py::object(py::int_(i)),
                                       d.spec.logical_nbytes, d.spec.storage_nbytes,
                                       d.spec.replica_mode == ReplicaMode::Replicable,
                                       d.spec.recoverability == Recoverability::Reconstructible,
                                       location_object(d.location)));
                               return out;
                             })
      .def_property_readonly("plans",
                             [](const PyPlanModule &p) {
                               py::list out;
                               for (const bytecode::PlanEntry &e : p.module->plans)
                                 out.append(p.module->strings[e.name]);
                               return py::tuple(out);
                             })
      .def_property_readonly("programs",
                             [](const PyPlanModule &p) {
                               py::list out;
                               for (const bytecode::ProgramEntry &e : p.module->programs)
                                 out.append(p.module->strings[e.name]);
                               return py::tuple(out);
                             })
      .def_property_readonly("budgets",
                             [](const PyPlanModule &p) {
                               py::list out;
                               for (const auto &[location, budget] : p.module->budgets)
                                 out.append(py::make_tuple(location_object(location), budget));
                               return py::tuple(out);
                             })
      .def_property_readonly("device_count",
                             [](const PyPlanModule &p) -> py::object {
                               return p.module->device_count ? py::object(py::int_(*p.module->device_count))
                                                             : py::object(py::none());
                             })
      .def(
          "bind",
          [](const PyPlanModule &p, py::object manager_object,
             const std::unordered_map<std::uint32_t, py::object> &handles, bool synthetic) {
            PyManager &manager = manager_object.cast<PyManager &>();
            std::unordered_map<std::uint32_t, Handle> native;
            for (const auto &[value, handle] : handles)
              native.emplace(value, manager.resolve(handle));
            auto run = std::make_unique<PyPlanRun>();
            run->manager = manager_object;
            run->module = p.module;
            run->binder =
                std::make_unique<MappedBinder>(std::move(native), synthetic, manager.cuda_backend());
            RunnerOptions options = runner_streams(manager.backend_object_, manager.cuda_backend());
            options.after_transition = [committed = run->committed](const TransitionReport &report,
                                                                    const Handle &handle) {
              committed->emplace_back(report, handle);
            };
            run->runner = std::make_unique<ModuleRunner>(manager.runtime(), *run->module, *run->binder,
                                                         std::move(options));
            run->committed->clear();
            const RunResult setup = without_gil([&] { return run->runner->run_setup(); });
            if (setup.completed || !run->runner->values().empty()) {
              std::uint64_t last = 0;
              for (const DeclaredValue &v : run->runner->values())
                try {
                  last = std::max(last, run->runner->handle_of(v.value_id).handle_id);
                } catch (const std::exception &) { // not bound: setup stopped before it
                }
              manager.fill_to(last);
            }
            py::object result = run_result(manager, *run->runner, setup, *run->committed);
            return py::make_tuple(py::cast(std::move(run)), result);
          },
          py::arg("manager"), py::arg("handles"), py::arg("synthetic"));

  py::class_<PyPlanRun>(m, "_PlanRun", "A module bound to a manager.")
      .def("run_plan",
           [](PyPlanRun &r, const std::string &name) {
             return r.run([&](ModuleRunner &runner) { return runner.run_plan(name); });
           })
      .def("run_program",
           [](PyPlanRun &r, const std::string &name) {
             return r.run([&](ModuleRunner &runner) { return runner.run_program(name); });
           })
      .def("plan",
           [](PyPlanRun &r, const std::string &name) {
             return plan_object(r.manager.cast<PyManager &>(), r.runner->plan(name));
           })
      .def("begin_program",
           [](PyPlanRun &r, const std::string &name) {
             r.committed->clear();
             without_gil([&] { r.runner->begin_program(name); });
           })
      .def(
          "next_statement",
          [](PyPlanRun &r, bool background) -> py::object {
            // The previous body first: the statements run in program order.
            r.wait_body();
            if (!without_gil([&] { return r.runner->enter_next_statement(); })) return py::none();
            py::str plan(std::string(*r.runner->current_plan()));
            // A `run` statement has no body; a scope's runs here or beside the caller.
            if (r.runner->current_body_pending() && background) {
              // Materialization is synchronous (§17): a body's prefetch copies
              // would hold this thread until they landed. On a thread of its
              // own the body copies while the caller goes on with its work.
              ModuleRunner *runner = r.runner.get();
              r.body = std::async(std::launch::async, [runner] { return runner->run_current_body(); });
            } else if (r.runner->current_body_pending()) {
              without_gil([&] { return r.runner->run_current_body(); });
            }
            return plan;
          },
          py::arg("background"))
      .def("wait_body", [](PyPlanRun &r) { return r.wait_body(); })
      .def("abandon_program",
           [](PyPlanRun &r) {
             r.wait_body();
             without_gil([&] { r.runner->abandon_program(); });
           })
      .def("finish_program",
           [](PyPlanRun &r) {
             r.wait_body();
             // Not r.run: the transitions committed since begin_program pair with the steps.
             const RunResult result = without_gil([&] { return r.runner->finish_program(); });
             return run_result(r.manager.cast<PyManager &>(), *r.runner, result, *r.committed);
           })
      .def("handle", [](PyPlanRun &r, std::uint32_t value_id) {
        return r.manager.cast<PyManager &>().meta(r.runner->handle_of(value_id)).handle;
      });
}

} // namespace fhr::python
