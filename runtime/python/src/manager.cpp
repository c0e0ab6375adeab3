// The extension's manager: `fhr._fhr._Manager`, the base class of
// fhr.ResidencyManager. The calls that must be cheap (the transitions,
// acquire, hold, reserve, the version) are here in C++; adopt,
// register_source, scope and snapshot are finished in fhr/_manager.py.
#include "binding.hpp"
#include "lifetimes.hpp"
#include "python_backend.hpp"
#include "storage_view.hpp"
#include "vectorcall.hpp"

#include <algorithm>

namespace fhr::python {

namespace {

std::optional<std::uint64_t> expected_version(py::handle value) {
  if (value.is_none()) return std::nullopt;
  if (PyBool_Check(value.ptr()) || !PyLong_Check(value.ptr()))
    throw py::type_error("expected_state_version must be an integer, not " +
                         std::string(Py_TYPE(value.ptr())->tp_name));
  const long long version = value.cast<long long>();
  if (version < 0) throw py::value_error("expected_state_version must be non-negative");
  return static_cast<std::uint64_t>(version);
}

std::uint64_t byte_count(py::handle value, const char *what) {
  if (PyBool_Check(value.ptr()) || !PyLong_Check(value.ptr()))
    throw py::type_error(std::string(what) + " must be an integer, not " + Py_TYPE(value.ptr())->tp_name);
  const long long n = value.cast<long long>();
  if (n < 0) throw py::value_error(std::string(what) + " must be non-negative");
  return static_cast<std::uint64_t>(n);
}

std::string require_name(py::handle name, const char *what) {
  if (!py::isinstance<py::str>(name)) throw py::type_error(std::string(what) + " must be a string");
  std::string text = name.cast<std::string>();
  if (text.find_first_not_of(" \t\n\r") == std::string::npos)
    throw py::value_error(std::string(what) + " must be non-empty");
  return text;
}

ReplicaMode to_replica_mode(py::handle mode) {
  static py::handle type = python_class("fhr._model", "ReplicaMode").release();
  if (!py::isinstance(mode, type)) throw py::type_error("replica_mode must be a ReplicaMode");
  return mode.attr("value").cast<std::string>() == "replicable" ? ReplicaMode::Replicable
                                                                : ReplicaMode::Exclusive;
}

/// The handles of acquire and hold (§7.2 step 1): an iterable of handles,
/// at least one, duplicates collapsed in first-occurrence order.
std::vector<py::object> unique_handles(py::handle handles) {
  std::vector<py::object> unique;
  auto add = [&](py::handle item) {
    const PyHandle *handle = handle_of(item);
    if (!handle) throw py::type_error("residency lifetimes need ResidencyHandle values");
    const PyHandle &h = *handle;
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const py::object &u) {
      const PyHandle &o = as_handle(u);
      return o.handle == h.handle && o.value_type.is(h.value_type) && o.manager_id.equal(h.manager_id) &&
             o.handle_id.equal(h.handle_id);
    });
    if (!seen) unique.push_back(py::reinterpret_borrow<py::object>(item));
  };
  if (PyList_CheckExact(handles.ptr())) { // as its iterator does, without making one
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(handles.ptr()); ++i)
      add(PyList_GET_ITEM(handles.ptr(), i));
  } else if (PyTuple_CheckExact(handles.ptr())) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(handles.ptr()); ++i)
      add(PyTuple_GET_ITEM(handles.ptr(), i));
  } else {
    py::iterator it;
    try {
      it = py::iter(handles);
    } catch (py::error_already_set &) {
      throw py::type_error("residency lifetimes need an iterable of ResidencyHandle values");
    }
    for (py::handle item : it)
      add(item);
  }
  if (unique.empty()) throw py::value_error("residency lifetimes need at least one handle");
  return unique;
}

py::tuple to_tuple(const std::vector<py::object> &objects) {
  py::tuple tuple(objects.size());
  for (std::size_t i = 0; i < objects.size(); ++i)
    tuple[i] = objects[i];
  return tuple;
}

} // namespace

// ---- PyManager --------------------------------------------------------------

PyManager::PyManager(const std::vector<std::pair<Location, std::optional<std::uint64_t>>> &budgets,
                     std::size_t trace_capacity, py::object backend) {
  BackendChoice choice = choose_backend(backend);
  cuda_backend_ = choice.cuda;
  memory_ = std::make_shared<PythonMemory>(std::move(choice.backend.memory), choice.cuda);
  backend_object_ = backend;
  ManagerOptions options;
  options.budgets = budgets;
  options.trace_capacity = trace_capacity;
  options.backend =
      BackendInterfaces(memory_, std::move(choice.backend.copies), std::move(choice.backend.streams));
  options.warning_handler = [](std::string_view message) { defer_warning(std::string(message)); };
  manager_ = std::make_unique<Manager>(std::move(options));
  id_text_ = py::str(std::to_string(manager_->id()));
}

PyManager::~PyManager() {
  {
    // Freeing replicas may wait for the devices; adopted objects go to the
    // deferred queue, drained below with the GIL.
    py::gil_scoped_release release;
    manager_.reset();
  }
  drain_deferred();
}

void PyManager::check_open() {
  if (without_gil([&] { return manager_->closed(); }))
    raise_error("ResidencyClosedError", "the residency manager is closed");
}

std::ptrdiff_t PyManager::index_of(const Handle &handle) const {
  if (handle.manager_id != manager_->id() || handle.handle_id == 0 || handle.handle_id > values_.size())
    return -1;
  return static_cast<std::ptrdiff_t>(handle.handle_id - 1);
}

Handle PyManager::resolve(py::handle object) {
  const PyHandle *handle = handle_of(object);
  if (!handle) {
    check_open();
    raise_error("ResidencyHandleError",
                "expected a ResidencyHandle, not " + std::string(Py_TYPE(object.ptr())->tp_name));
  }
  const PyHandle &h = *handle;
  const std::ptrdiff_t index = index_of(h.handle);
  if (index >= 0 && !values_[static_cast<std::size_t>(index)].value_type.is(h.value_type)) {
    check_open();
    raise_error("ResidencyHandleError",
                "unknown handle " + h.handle_id.cast<std::string>() + " (its value type is " +
                    py::str(values_[static_cast<std::size_t>(index)].value_type).cast<std::string>() + ")");
  }
  return h.handle;
}

Handle PyManager::plan_handle(py::handle object) {
  const PyHandle &h = as_handle(object);
  const std::ptrdiff_t index = index_of(h.handle);
  if (index >= 0 && !values_[static_cast<std::size_t>(index)].value_type.is(h.value_type))
    return Handle{h.handle.manager_id, 0}; // another value type: a different, unknown handle
  return h.handle;
}

void PyManager::fill_to(std::uint64_t count) {
  while (values_.size() < count) {
    const Handle handle{manager_->id(), values_.size() + 1};
    const Snapshot snapshot = without_gil([&] { return manager_->snapshot(); });
    const SnapshotValue &v = snapshot.values.at(values_.size());
    auto slot = std::make_shared<AdapterSlot>();
    slot->adapter = python_class("fhr._values", "BYTES");
    add_value(handle, py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(&PyMemoryView_Type)),
              v.spec, slot, nullptr);
  }
}

py::object PyManager::add_value(const Handle &handle, py::object value_type, const ValueSpec &spec,
                                std::shared_ptr<AdapterSlot> adapter,
                                std::shared_ptr<AdoptedObject> adopted) {
  if (handle.handle_id > values_.size() + 1) fill_to(handle.handle_id - 1);
  PyHandle h;
  h.handle = handle;
  h.manager_id = id_text_;
  h.handle_id = py::str(std::to_string(handle.handle_id));
  h.value_type = value_type;
  py::object object = py::cast(std::move(h));
  values_.push_back(ValueMeta{object, std::move(value_type), spec, std::move(adapter), std::move(adopted)});
  return object;
}

py::object PyManager::value_at(const Handle &handle, Location location, std::span<const std::byte> bytes) {
  ValueMeta &m = meta(handle);
  auto *data = const_cast<std::byte *>(bytes.data());
  if (m.adopted && !m.adopted->released.load() && m.adopted->location == location &&
      m.adopted->data == reinterpret_cast<std::uintptr_t>(data))
    return py::reinterpret_borrow<py::object>(m.adopted->owner); // zero-copy: the very object adopted
  SharedBlock *block = memory_->share(data);
  auto view =
      std::make_unique<StorageView>(block, data, bytes.size(), location, cuda_backend_ && location.is_cuda());
  if (!m.adapter || m.adapter->adapter.is_none())
    raise_error("ResidencyMaterializationError", "the value cannot be rebuilt: no replica was ever seen");
  return m.adapter->adapter.attr("rebuild")(py::cast(std::move(view)));
}

// ---- conversions ------------------------------------------------------------

ActionSpec to_action_spec(PyManager &manager, py::handle action) {
  static py::handle ensure = python_class("fhr._plan", "EnsureResident").release();
  static py::handle move = python_class("fhr._plan", "MoveResident").release();
  static py::handle drop = python_class("fhr._plan", "DropResident").release();
  static py::handle discard = python_class("fhr._plan", "DiscardValue").release();
  ActionSpec spec;
  py::handle type = reinterpret_cast<PyObject *>(Py_TYPE(action.ptr()));
  if (type.is(ensure)) {
    spec.kind = ActionKind::Ensure;
    spec.location = to_location(action.attr("location"), "EnsureResident location");
  } else if (type.is(move)) {
    spec.kind = ActionKind::Move;
    spec.location = to_location(action.attr("to"), "MoveResident to");
    py::object from = action.attr("from_location");
    if (!from.is_none()) spec.from = to_location(from, "MoveResident from_location");
  } else if (type.is(drop)) {
    spec.kind = ActionKind::Drop;
    spec.location = to_location(action.attr("location"), "DropResident location");
  } else if (type.is(discard)) {
    spec.kind = ActionKind::Discard;
  } else {
    throw py::type_error(
        "residency actions must be EnsureResident, MoveResident, DropResident or DiscardValue");
  }
  spec.handle = manager.plan_handle(action.attr("handle"));
  return spec;
}

TransferStreams to_transfer_streams(PyManager &manager, py::handle mapping) {
  TransferStreams streams;
  if (mapping.is_none()) return streams;
  if (!PyMapping_Check(mapping.ptr()) || !py::hasattr(mapping, "items"))
    throw py::type_error("transfer_streams must be a mapping of locations to CUDA streams");
  for (py::handle item : mapping.attr("items")()) {
    py::tuple pair = py::reinterpret_borrow<py::tuple>(item);
    streams.emplace_back(to_location(pair[0], "a transfer_streams key"),
                         to_stream(pair[1], manager.cuda_backend()));
  }
  return streams;
}

PlanSpec to_plan_spec(PyManager &manager, py::handle plan, std::vector<py::object> *sequence) {
  static py::handle plan_type = python_class("fhr._plan", "ResidencyPlan").release();
  if (!py::isinstance(plan, plan_type)) throw py::type_error("a plan must be a ResidencyPlan");
  PlanSpec spec;
  spec.name = plan.attr("name").cast<std::string>();
  auto phase = [&](const char *name, std::vector<ActionSpec> &out) {
    for (py::handle action : plan.attr(name)) {
      out.push_back(to_action_spec(manager, action));
      if (sequence) sequence->push_back(py::reinterpret_borrow<py::object>(action));
    }
  };
  phase("reclaim", spec.reclaim);
  phase("enter", spec.enter);
  phase("exit", spec.exit);
  for (py::handle r : plan.attr("reservations"))
    spec.reservations.push_back(Reservation{to_location(r.attr("location"), "MemoryReservation location"),
                                            r.attr("nbytes").cast<std::uint64_t>(),
                                            r.attr("label").cast<std::string>()});
  return spec;
}

namespace {

// ---- the transitions (§6) ----------------------------------------------------

py::object transition(PyManager &self, ActionKind kind, py::handle handle_object, py::handle to,
                      py::handle from, py::handle stream_object) {
  const Handle handle = self.resolve(handle_object);
  const PyLocation *destination = kind == ActionKind::Discard ? nullptr : bound_object<PyLocation>(to);
  if (kind != ActionKind::Discard && !destination) {
    self.check_open();
    without_gil([&] { return self.runtime().replicas(handle); }); // a handle error wins (§16.1)
    throw py::type_error("residency locations must be ResidencyLocation values");
  }
  const Location location = destination ? destination->location : Location();
  std::optional<Location> from_location;
  if (from && !from.is_none()) from_location = to_location(from, "from_location");
  const Stream stream =
      stream_object && !stream_object.is_none() ? to_stream(stream_object, self.cuda_backend()) : Stream{};
  Manager &m = self.runtime();
  TransitionReport report = without_gil([&] {
    switch (kind) {
    case ActionKind::Ensure: return m.ensure(handle, location, stream);
    case ActionKind::Copy: return m.copy(handle, location, stream);
    case ActionKind::Move: return m.move(handle, location, from_location, stream);
    case ActionKind::Drop: return m.drop(handle, location);
    case ActionKind::Discard: break;
    }
    return m.discard(handle);
  });
  auto py_report = std::make_unique<PyReport>();
  py_report->report = report;
  py_report->handle = py::reinterpret_borrow<py::object>(handle_object);
  py_report->requested_from = from_location;
  for (const std::optional<Location> &l : {py_report->report.destination, py_report->report.source})
    if (l && l->is_cuda() && !py_report->allocator_device) py_report->allocator_device = l;
  return python_object(std::move(py_report));
}

/// acquire (§7.2): the lease of `handles` at `at`, read on `consumer_stream`.
py::object acquire(py::handle self_object, py::handle handles, py::handle at, py::handle consumer_stream) {
  PyManager &self = *bound_object<PyManager>(self_object);
  const std::vector<py::object> unique = unique_handles(handles);
  std::vector<Handle> native;
  native.reserve(unique.size());
  for (const py::object &h : unique)
    native.push_back(self.resolve(h));
  const Location location = to_location(at, "at");
  const Stream stream =
      consumer_stream.is_none() ? Stream{} : to_stream(consumer_stream, self.cuda_backend());
  Lease lease = without_gil([&] { return self.runtime().acquire(native, location, stream); });
  return lease_object(py::reinterpret_borrow<py::object>(self_object), self, std::move(lease),
                      to_tuple(unique), location, py::reinterpret_borrow<py::object>(consumer_stream));
}

// ---- the manager's vectorcall methods (vectorcall.hpp) ----------------------
// `self` is a _Manager: CPython checks it before calling a method.

PyManager &manager_of(PyObject *self) {
  PyManager *manager = bound_object<PyManager>(self);
  // An instance made by ResidencyManager.__new__ alone holds no manager.
  if (!manager) throw py::type_error("ResidencyManager object was not initialised");
  return *manager;
}

PyObject *manager_acquire(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  return guarded([&] {
    static const Parameters<3> parameters("acquire", {"handles", "at", "consumer_stream"}, 1, 2);
    const auto [handles, at, consumer_stream] = parameters.parse(args, nargs, kwnames);
    return acquire(self, handles, at, consumer_stream ? consumer_stream : py::handle(Py_None));
  });
}

PyObject *manager_ensure(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  return guarded([&] {
    static const Parameters<3> parameters("ensure", {"handle", "at", "stream"}, 2, 2);
    const auto [handle, at, stream] = parameters.parse(args, nargs, kwnames);
    return transition(manager_of(self), ActionKind::Ensure, handle, at, py::handle(), stream);
  });
}

PyObject *manager_copy(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  return guarded([&] {
    static const Parameters<3> parameters("copy", {"handle", "to", "stream"}, 2, 2);
    const auto [handle, to, stream] = parameters.parse(args, nargs, kwnames);
    return transition(manager_of(self), ActionKind::Copy, handle, to, py::handle(), stream);
  });
}

PyObject *manager_move(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  return guarded([&] {
    static const Parameters<4> parameters("move", {"handle", "to", "from_location", "stream"}, 2, 2);
    const auto [handle, to, from, stream] = parameters.parse(args, nargs, kwnames);
    return transition(manager_of(self), ActionKind::Move, handle, to, from, stream);
  });
}

PyObject *manager_drop(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  return guarded([&] {
    static const Parameters<2> parameters("drop", {"handle", "at"}, 2, 2);
    const auto [handle, at] = parameters.parse(args, nargs, kwnames);
    return transition(manager_of(self), ActionKind::Drop, handle, at, py::handle(), py::handle());
  });
}

PyObject *manager_discard(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  return guarded([&] {
    static const Parameters<1> parameters("discard", {"handle"}, 1, 1);
    const auto [handle] = parameters.parse(args, nargs, kwnames);
    return transition(manager_of(self), ActionKind::Discard, handle, py::handle(), py::handle(),
                      py::handle());
  });
}

/// A Python source (§3.2): load() returns a value, check() validates it
/// against the spec and the source location (§2.6) and says where its
/// bytes are; they are copied into the storage the runtime provides.
class PythonSource final : public Source {
public:
  PythonSource(py::object source, py::object check, std::shared_ptr<AdapterSlot> adapter, bool device_memory)
      : source_(std::move(source)), check_(std::move(check)), adapter_(std::move(adapter)),
        device_memory_(device_memory) {}
  ~PythonSource() override {
    py::gil_scoped_acquire gil;
    source_ = py::object();
    check_ = py::object();
  }

  void load(std::span<std::byte> destination) override {
    py::gil_scoped_acquire gil;
    try {
      py::object value = source_.attr("load")();
      py::tuple where = check_(value);
      const auto data = where[0].cast<std::uintptr_t>();
      const auto nbytes = where[1].cast<std::size_t>();
      if (adapter_->adapter.is_none()) adapter_->adapter = where[2];
      if (nbytes != destination.size())
        raise_error("ResidencyMaterializationError", "the loaded value has " + std::to_string(nbytes) +
                                                         " bytes, its replica " +
                                                         std::to_string(destination.size()));
      py::gil_scoped_release release; // the copy runs without the GIL; `value` keeps the bytes alive
      copy_bytes(destination.data(), reinterpret_cast<const std::byte *>(data), nbytes, device_memory_);
    } catch (py::error_already_set &error) {
      stash_and_throw(error);
    }
  }

private:
  py::object source_;
  py::object check_;
  std::shared_ptr<AdapterSlot> adapter_;
  bool device_memory_;
};

} // namespace

void bind_manager(py::module_ &m) {
  using Budgets = std::vector<std::pair<Location, std::optional<std::uint64_t>>>;
  py::class_<PyManager> manager(m, "_Manager", "The runtime's side of fhr.ResidencyManager.");
  manager
      .def(py::init([](const std::vector<std::pair<py::object, std::optional<std::uint64_t>>> &budgets,
                       std::size_t trace_capacity, py::object backend) {
             Budgets converted;
             for (const auto &[location, budget] : budgets)
               converted.emplace_back(to_location(location, "a budget's key"), budget);
             return new PyManager(converted, trace_capacity, backend);
           }),
           py::arg("budgets"), py::arg("trace_capacity"), py::arg("backend"))
      .def_property_readonly("manager_id", [](PyManager &self) { return self.id_text(); })
      .def_property_readonly(
          "state_version",
          [](PyManager &self) { return without_gil([&] { return self.runtime().state_version(); }); })
      .def_property_readonly("locations",
                             [](PyManager &self) {
                               const std::vector<Location> locations =
                                   without_gil([&] { return self.runtime().locations(); });
                               py::tuple out(locations.size());
                               for (std::size_t i = 0; i < locations.size(); ++i)
                                 out[i] = location_object(locations[i]);
                               return out;
                             })
      .def(
          "hold",
          [](py::object self_object, py::handle handles, py::handle at) {
            PyManager &self = self_object.cast<PyManager &>();
            const std::vector<py::object> unique = unique_handles(handles);
            std::vector<Handle> native;
            for (const py::object &h : unique)
              native.push_back(self.resolve(h));
            const Location location = to_location(at, "at");
            Hold hold = without_gil([&] { return self.runtime().hold(native, location); });
            return py::cast(new PyHold(self_object, std::move(hold), to_tuple(unique), location),
                            py::return_value_policy::take_ownership);
          },
          py::arg("handles"), py::kw_only(), py::arg("at"))
      .def(
          "reserve",
          [](py::object self_object, py::handle location_object, py::handle nbytes_object,
             py::handle label_object) {
            PyManager &self = self_object.cast<PyManager &>();
            const std::uint64_t nbytes = byte_count(nbytes_object, "reservation nbytes");
            const std::string label = require_name(label_object, "reservation label");
            const Location location = to_location(location_object, "a reservation's location");
            ActiveReservation reservation =
                without_gil([&] { return self.runtime().reserve(location, nbytes, label); });
            return py::cast(new PyReservation(self_object, std::move(reservation), location, nbytes, label),
                            py::return_value_policy::take_ownership);
          },
          py::arg("location"), py::arg("nbytes"), py::kw_only(), py::arg("label"))
      .def(
          "explain",
          [](PyManager &self, py::handle plan, py::handle expected) {
            std::vector<py::object> sequence;
            const PlanSpec spec = to_plan_spec(self, plan, &sequence);
            const std::optional<std::uint64_t> version = expected_version(expected);
            const Explanation explanation =
                without_gil([&] { return self.runtime().explain(spec, version); });
            return make_explanation(self, plan, explanation, spec, sequence);
          },
          py::arg("plan"), py::kw_only(), py::arg("expected_state_version") = py::none())
      .def(
          "execute_actions",
          [](PyManager &self, py::handle actions, py::handle name_object, py::handle streams_object,
             py::handle expected) {
            const std::string name = require_name(name_object, "a plan name");
            std::vector<py::object> sequence;
            std::vector<ActionSpec> specs;
            py::iterator it;
            try {
              it = py::iter(actions);
            } catch (py::error_already_set &) {
              throw py::type_error("actions must be an iterable of residency actions");
            }
            for (py::handle action : it) {
              specs.push_back(to_action_spec(self, action));
              sequence.push_back(py::reinterpret_borrow<py::object>(action));
            }
            const std::optional<std::uint64_t> version = expected_version(expected);
            const TransferStreams streams = to_transfer_streams(self, streams_object);
            try {
              const PlanReport report =
                  without_gil([&] { return self.runtime().execute_actions(specs, name, version, streams); });
              return make_plan_report(self, report, sequence);
            } catch (const ResidencyPlanExecutionError &error) {
              raise_with_cause(make_execution_error(self, error, sequence, py::none(), 0), error);
            }
          },
          py::arg("actions"), py::kw_only(), py::arg("name") = "residency-actions",
          py::arg("transfer_streams") = py::none(), py::arg("expected_state_version") = py::none())
      .def(
          "_scope",
          [](py::object self_object, py::handle plan, py::handle streams_object, py::handle expected) {
            PyManager &self = self_object.cast<PyManager &>();
            std::vector<py::object> sequence;
            PlanSpec spec = to_plan_spec(self, plan, &sequence);
            const std::optional<std::uint64_t> version = expected_version(expected);
            TransferStreams streams = to_transfer_streams(self, streams_object);
            Scope scope = self.runtime().scope(std::move(spec), version, std::move(streams));
            return py::cast(new PyScope(self_object, std::move(scope),
                                        py::reinterpret_borrow<py::object>(plan), std::move(sequence)),
                            py::return_value_policy::take_ownership);
          },
          py::arg("plan"), py::arg("transfer_streams"), py::arg("expected_state_version"))
      .def("_snapshot",
           [](PyManager &self) {
             const Snapshot snapshot = without_gil([&] { return self.runtime().snapshot(); });
             return snapshot_raw(self, snapshot);
           })
      .def("trace",
           [](PyManager &self) {
             const std::vector<TransitionReport> reports =
                 without_gil([&] { return self.runtime().trace(); });
             py::tuple out(reports.size());
             for (std::size_t i = 0; i < reports.size(); ++i)
               out[i] = make_report(self, reports[i], py::none());
             return out;
           })
      .def("clear_trace", [](PyManager &self) { without_gil([&] { self.runtime().clear_trace(); }); })
      .def(
          "close",
          [](PyManager &self, bool wait, bool force) {
            without_gil([&] { self.runtime().close(wait, force); });
          },
          py::kw_only(), py::arg("wait") = true, py::arg("force") = false)
      .def_property_readonly(
          "closed", [](PyManager &self) { return without_gil([&] { return self.runtime().closed(); }); })
      .def("_check_open", &PyManager::check_open)
      .def("_validate_location",
           [](PyManager &self, py::handle location_object) {
             const Location location = to_location(location_object, "a residency location");
             const DeviceConfig devices = self.memory().devices();
             if (!location.is_cuda()) return;
             if (!devices.cuda_available)
               throw py::value_error("CUDA residency locations require available CUDA");
             if (location.device() >= devices.device_count)
               throw py::value_error("residency location " + location.name() +
                                     " is not available in this process");
           })
      .def_property_readonly("_cuda_memory", [](PyManager &self) { return self.cuda_backend(); })
      .def_property_readonly("_device_count",
                             [](PyManager &self) {
                               const DeviceConfig devices = self.memory().devices();
                               return devices.cuda_available ? devices.device_count : 0u;
                             })
      .def("_content_checksum",
           [](PyManager &self, py::handle handle, py::handle at) {
             const Handle h = self.resolve(handle);
             const Location location = to_location(at, "at");
             return without_gil([&] { return self.runtime().content_checksum(h, location); });
           })
      .def(
          "_adopt",
          [](PyManager &self, py::object owner, bool use_buffer, std::uintptr_t data, std::size_t nbytes,
             std::uintptr_t storage_begin, std::uintptr_t storage_end, py::handle at, py::handle mode,
             py::object adapter, py::object value_type) {
            const Location location = to_location(at, "at");
            const ReplicaMode replica_mode = to_replica_mode(mode);
            auto adopted = std::make_shared<AdoptedObject>();
            if (use_buffer) {
              auto *view = new Py_buffer;
              if (PyObject_GetBuffer(owner.ptr(), view, PyBUF_C_CONTIGUOUS) != 0) {
                delete view;
                PyErr_Clear();
                raise_error("ResidencyMaterializationError",
                            "a value must be one C-contiguous block of memory to be adopted without a copy");
              }
              adopted->buffer = view;
              data = reinterpret_cast<std::uintptr_t>(view->buf);
              nbytes = static_cast<std::size_t>(view->len);
              storage_begin = data;
              storage_end = data + nbytes;
            }
            auto give_back = [&] {
              if (adopted->buffer) {
                PyBuffer_Release(adopted->buffer);
                delete adopted->buffer;
                adopted->buffer = nullptr;
              }
            };
            adopted->owner = owner.ptr();
            adopted->data = data;
            adopted->storage_begin = storage_begin;
            adopted->storage_end = storage_end;
            adopted->location = location;
            // The block the runtime charges and indexes (§2.1, §2.7): from the
            // value's first byte to the end of its storage (a view starts
            // inside its tensor's storage; the bytes before it are another
            // view's, which then overlaps this block).
            const std::size_t block_nbytes =
                std::max<std::size_t>(nbytes, storage_end > data ? storage_end - data : 0);
            Storage::Release deleter = [adopted](std::byte *) {
              adopted->released.store(true);
              defer_buffer_release(std::exchange(adopted->buffer, nullptr));
              defer_decref(adopted->owner);
            };
            Handle handle;
            try {
              handle = without_gil([&] {
                return self.runtime().adopt(reinterpret_cast<std::byte *>(data), nbytes, block_nbytes,
                                            location, deleter, replica_mode);
              });
            } catch (...) {
              give_back();
              throw;
            }
            owner.inc_ref(); // the reference the deleter drops
            auto slot = std::make_shared<AdapterSlot>();
            slot->adapter = adapter;
            const ValueSpec spec{nbytes, block_nbytes, replica_mode, Recoverability::MustPreserve};
            return self.add_value(handle, value_type, spec, slot, adopted);
          },
          py::arg("owner"), py::arg("use_buffer"), py::arg("data"), py::arg("nbytes"),
          py::arg("storage_begin"), py::arg("storage_end"), py::arg("at"), py::arg("replica_mode"),
          py::arg("adapter"), py::arg("value_type"))
      .def(
          "_register_source",
          [](PyManager &self, py::object source, py::object check, py::object value_type,
             std::uint64_t logical, std::uint64_t storage, py::handle mode, bool reconstructible,
             py::handle location_object) {
            const Location location = to_location(location_object, "source_location");
            const ReplicaMode replica_mode = to_replica_mode(mode);
            const ValueSpec spec{logical, storage, replica_mode,
                                 reconstructible ? Recoverability::Reconstructible
                                                 : Recoverability::MustPreserve};
            auto slot = std::make_shared<AdapterSlot>();
            slot->adapter = py::none();
            auto python_source = std::make_shared<PythonSource>(std::move(source), std::move(check), slot,
                                                                self.cuda_backend() && location.is_cuda());
            const Handle handle = without_gil([&] {
              std::shared_ptr<Source> shared = std::move(python_source);
              return self.runtime().register_source(spec, std::move(shared), location);
            });
            return self.add_value(handle, value_type, spec, slot, nullptr);
          },
          py::arg("source"), py::arg("check"), py::arg("value_type"), py::arg("logical_nbytes"),
          py::arg("storage_nbytes"), py::arg("replica_mode"), py::arg("reconstructible"),
          py::arg("source_location"));
  // The calls that must be cheapest (docs/python.md, "What a call costs").
  static PyMethodDef manager_methods[] = {
      fast_method("ensure", manager_ensure,
                  "ensure($self, handle, at, *, stream=None)\n--\n\nMakes a replica ready at `at` (§6.1)."),
      fast_method("copy", manager_copy,
                  "copy($self, handle, to, *, stream=None)\n--\n\nAdds a replica at `to` (§6.1)."),
      fast_method("move", manager_move,
                  "move($self, handle, to, *, from_location=None, stream=None)\n--\n\n"
                  "Moves the replica to `to` (§6.2)."),
      fast_method("drop", manager_drop, "drop($self, handle, at)\n--\n\nDrops the replica at `at` (§6.3)."),
      fast_method("discard", manager_discard, "discard($self, handle)\n--\n\nDrops every replica (§6.4)."),
      fast_method("acquire", manager_acquire,
                  "acquire($self, handles, *, at, consumer_stream=None)\n--\n\n"
                  "A lease of ready replicas at `at` (§7.2)."),
  };
  for (PyMethodDef &method : manager_methods)
    add_method(manager, method);
}

} // namespace fhr::python
