#pragma once
/// \file
/// Shared pieces of the extension `fhr._fhr`: the GIL discipline, the
/// Python-facing location, handle and manager objects, and the
/// conversions between them and the runtime's types.
///
/// The GIL rule (docs/python.md, "Threads and the GIL"): every call into
/// the runtime releases the GIL first, so a thread that holds the manager
/// lock and needs Python (a source's load(), a deleter) can always get it;
/// Python work that the runtime triggers while it holds its lock (freeing
/// an adopted object, a warning) is queued and done once the call has
/// returned and the GIL is held again (deferred.hpp).

#include "fhr/executor/module_runner.hpp"
#include "fhr/runtime/manager.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fhr::python {

namespace py = pybind11;

/// T's type record, looked up once: every isinstance<T> and cast<T> looks
/// it up again by hashing the type's name, which was the largest part of a
/// lease's binding cost. (Classes are registered when the module is
/// imported, before any call can ask.)
template <typename T>
const py::detail::type_info *bound_type() {
  static const py::detail::type_info *const info =
      py::detail::get_type_info(typeid(T), /*throw_if_missing=*/true);
  return info;
}

/// The C++ object of a bound class that `object` is (a T or a subclass's
/// instance), or null; null too for an instance that `__new__` made and no
/// `__init__` filled (pybind11's caster would hand out fresh, unconstructed
/// storage for it).
template <typename T>
T *bound_object(py::handle object) {
  const py::detail::type_info *type = bound_type<T>();
  if (!PyObject_TypeCheck(object.ptr(), type->type)) return nullptr;
  const py::detail::value_and_holder holder = reinterpret_cast<py::detail::instance *>(object.ptr())
                                                  ->get_value_and_holder(type, /*throw_if_missing=*/false);
  if (!holder || !holder.holder_constructed()) return nullptr;
  return static_cast<T *>(holder.value_ptr());
}

/// The Python object of a new instance of a bound class, which takes
/// ownership of it, made with the cached type record (py::cast looks the
/// type up by its name first).
template <typename T>
py::object python_object(std::unique_ptr<T> value) {
  py::handle object = py::detail::type_caster_generic::cast(
      value.get(), py::return_value_policy::take_ownership, py::handle(), bound_type<T>(), nullptr, nullptr);
  if (!object) throw py::error_already_set();
  static_cast<void>(value.release()); // the Python object owns it now
  return py::reinterpret_steal<py::object>(object);
}

// ---- deferred.cpp ---------------------------------------------------------

/// Drops a reference later, with the GIL held (steals `object`).
void defer_decref(PyObject *object) noexcept;
/// Releases a buffer view later, with the GIL held, then frees it.
void defer_buffer_release(Py_buffer *view) noexcept;
/// Issues a runtime warning later (ResourceWarning for abandoned lifetimes).
void defer_warning(std::string message) noexcept;
/// Does the queued work; the GIL must be held. Never throws.
void drain_deferred() noexcept;

// ---- errors.cpp -----------------------------------------------------------

/// Thrown through the runtime where Python code it called back raised; the
/// Python exception waits in the thread's stash and is raised unchanged
/// once the call returns to Python.
class PythonCallbackError : public BackendError {
public:
  using BackendError::BackendError;
};
/// Keeps the exception being handled (GIL held) for the caller's thread and
/// throws PythonCallbackError.
[[noreturn]] void stash_and_throw(py::error_already_set &error);
/// The stashed exception as an object (None if there is none); clears it.
py::object take_stashed_exception();
/// Raises the stashed exception (it must exist).
[[noreturn]] void raise_stashed();
void clear_stash();
/// fhr.errors.<name>.
py::object error_class(const char *name);
/// Raises fhr.errors.<name>(message).
[[noreturn]] void raise_error(const char *name, const std::string &message);
/// A Python exception object for a C++ exception (the cause of a plan
/// execution error, the error a translator raises).
py::object python_exception(std::exception_ptr error);
void register_errors(py::module_ &m);

/// Runs `work` without the GIL; a Python exception raised by a callback
/// inside it is re-raised unchanged, and the deferred work is done after.
template <typename Work>
decltype(auto) without_gil(Work &&work) {
  struct Drain {
    ~Drain() { drain_deferred(); }
  } drain;
  clear_stash();
  try {
    py::gil_scoped_release release;
    return work();
  } catch (const PythonCallbackError &) {
    raise_stashed();
  }
}

// ---- locations.cpp --------------------------------------------------------

/// ResidencyLocation: a location as Python sees it.
struct PyLocation {
  Location location;
};
/// The shared Python object of a location (one per location).
py::object location_object(Location location);
py::object optional_location(const std::optional<Location> &location);
/// The location of a ResidencyLocation; TypeError otherwise.
Location to_location(py::handle object, const char *what);
/// Python's name of a location: pageable-host, pinned-host, cuda:N.
std::string python_name(Location location);
void bind_locations(py::module_ &m);

/// ResidencyHandle: (manager_id, handle_id, value_type), field-wise equal.
struct PyHandle {
  Handle handle; ///< parsed ids (0 where the text is not one of ours)
  py::str manager_id;
  py::str handle_id;
  py::object value_type;
};
void bind_handles(py::module_ &m);
/// The handle `object` is, else null; is_handle and as_handle (which
/// throws py::cast_error for anything else) ask it.
inline const PyHandle *handle_of(py::handle object) { return bound_object<PyHandle>(object); }
bool is_handle(py::handle object);
const PyHandle &as_handle(py::handle object);

// ---- backends (backends.cpp) --------------------------------------------

/// The backend a manager runs on, from the `backend=` argument.
struct BackendChoice {
  BackendInterfaces backend;
  bool cuda = false;
};
BackendChoice choose_backend(py::handle spec);
/// Streams for the leases of a module run: simulated streams on a
/// SimulatedBackend, CUDA streams on the CUDA backend.
RunnerOptions runner_streams(py::handle backend_object, bool cuda);
/// Is host memory at `pointer` page-locked by CUDA? False without CUDA.
bool is_cuda_pinned(std::uintptr_t pointer);
/// Copies `nbytes` into `destination` from `source`, either of which may
/// be device memory (a CUDA build), synchronously.
void copy_bytes(std::byte *destination, const std::byte *source, std::size_t nbytes, bool device_memory);

/// The native stream of a torch.cuda.Stream (its cuda_stream), of a
/// SimulatedStream or of an integer; TypeError for anything else. On the
/// CUDA backend the legacy default stream (0) becomes cudaStreamLegacy.
Stream to_stream(py::handle object, bool cuda_backend);

// ---- the manager (manager.cpp) -------------------------------------------

class PythonMemory;

/// Where the manager keeps the Python side of a value: how to rebuild it
/// over storage, the adopted object while its replica exists.
struct AdoptedObject {
  PyObject *owner = nullptr;                         ///< the adopted value (one reference)
  Py_buffer *buffer = nullptr;                       ///< its buffer view, for buffer-protocol values
  std::uintptr_t data = 0;                           ///< the replica's first byte
  std::uintptr_t storage_begin = 0, storage_end = 0; ///< its whole backing storage
  Location location;
  std::atomic<bool> released{false}; ///< set (under the manager lock) when the replica goes
};
struct AdapterSlot {
  py::object adapter; ///< rebuild(view) -> value; None until a source first loaded
};
struct ValueMeta {
  py::object handle;
  py::object value_type;
  ValueSpec spec;
  std::shared_ptr<AdapterSlot> adapter;
  std::shared_ptr<AdoptedObject> adopted;
};

class PyManager {
public:
  PyManager(const std::vector<std::pair<Location, std::optional<std::uint64_t>>> &budgets,
            std::size_t trace_capacity, py::object backend);
  ~PyManager();

  Manager &runtime() { return *manager_; }
  PythonMemory &memory() { return *memory_; }
  bool cuda_backend() const { return cuda_backend_; }
  const py::str &id_text() const { return id_text_; }

  /// The value a handle names, after the checks of §2.4 that the runtime
  /// cannot make (a Python object that is not a handle, another value type).
  /// Raises ResidencyHandleError (after the closed check, as the order of
  /// §16.1 wants).
  Handle resolve(py::handle handle);
  /// The handle to pass to plans: unresolvable where the value type differs.
  Handle plan_handle(py::handle handle);
  /// Registration index of a handle of this manager, or -1.
  std::ptrdiff_t index_of(const Handle &handle) const;
  ValueMeta &meta(const Handle &handle) { return values_[handle.handle_id - 1]; }
  ValueMeta *meta_of_value(ValueId value) { return value < values_.size() ? &values_[value] : nullptr; }
  /// Raises ResidencyClosedError when closed.
  void check_open();

  /// Gives values registered by the runtime itself (a module run's
  /// synthetic values) their Python side, up to handle id `count`.
  void fill_to(std::uint64_t count);
  /// Records a value the runtime just registered.
  py::object add_value(const Handle &handle, py::object value_type, const ValueSpec &spec,
                       std::shared_ptr<AdapterSlot> adapter, std::shared_ptr<AdoptedObject> adopted);

  /// The Python value of a replica: the adopted object itself while its
  /// replica is the one at `bytes`, else the value rebuilt over the storage.
  py::object value_at(const Handle &handle, Location location, std::span<const std::byte> bytes);

  std::shared_ptr<PythonMemory> memory_; ///< declared first: it outlives the manager's replicas
  std::unique_ptr<Manager> manager_;
  py::object backend_object_;
  std::vector<ValueMeta> values_;
  py::str id_text_;
  bool cuda_backend_ = false;
};

/// A Python action object as an ActionSpec (TypeError for non-actions).
ActionSpec to_action_spec(PyManager &manager, py::handle action);
/// The streams of a transfer_streams mapping (None: none).
TransferStreams to_transfer_streams(PyManager &manager, py::handle mapping);
/// ResidencyPlan -> PlanSpec; `sequence` receives reclaim + enter + exit actions.
PlanSpec to_plan_spec(PyManager &manager, py::handle plan, std::vector<py::object> *sequence);
/// The Python action (EnsureResident, ...) and plan (ResidencyPlan) of the
/// runtime's specs, over the manager's handle objects (plan_files.cpp).
py::object action_object(PyManager &manager, const ActionSpec &action);
py::object plan_object(PyManager &manager, const PlanSpec &spec);

// ---- records.cpp ----------------------------------------------------------

/// ResidencyTransitionReport.
struct PyReport {
  TransitionReport report;
  py::object handle;
  /// The action as requested (None: rebuilt from the report on access).
  py::object action;
  std::optional<Location> requested_from;
  std::optional<Location> allocator_device;
};
py::object make_report(PyManager &manager, const TransitionReport &report, py::object action);
/// A ResidencyPlanReport whose transitions pair with `actions` in order.
py::object make_plan_report(PyManager &manager, const PlanReport &report,
                            const std::vector<py::object> &actions);
/// The Python ResidencyPlanExecutionError for a runtime one.
py::object make_execution_error(PyManager &manager, const ResidencyPlanExecutionError &error,
                                const std::vector<py::object> &sequence, py::handle plan,
                                std::size_t phase_offset);
/// Raises `error` with the stashed callback exception (or one built from the
/// detail) as its cause.
[[noreturn]] void raise_with_cause(py::object error, const ResidencyPlanExecutionError &cpp);
py::object make_explanation(PyManager &manager, py::handle plan, const Explanation &explanation,
                            const PlanSpec &spec, const std::vector<py::object> &sequence);
py::object snapshot_raw(PyManager &manager, const Snapshot &snapshot);
void bind_records(py::module_ &m);

// ---- the rest ---------------------------------------------------------------
void bind_manager(py::module_ &m);
void bind_lifetimes(py::module_ &m);
void bind_backends(py::module_ &m);
void bind_storage_view(py::module_ &m);
void bind_plan_files(py::module_ &m);
void bind_controller(py::module_ &m);

/// The Python class `name` of the package module `module` (cached by Python).
py::object python_class(const char *module, const char *name);

} // namespace fhr::python
