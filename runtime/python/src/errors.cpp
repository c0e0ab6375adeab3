// The runtime's exceptions as the classes of fhr.errors (§16), and the
// stash that carries a Python exception raised inside a callback (a
// source's load(), an allocation retry) through the runtime unchanged.
#include "binding.hpp"

#include "fhr/bytecode/module.hpp"

namespace fhr::python {

namespace {

/// The exception a callback raised on this thread, waiting for the call
/// to return to Python.
thread_local py::object stashed;

/// The exception being handled as one object (normalised, traceback attached).
py::object current_exception(py::error_already_set &error) {
  error.restore();
#if PY_VERSION_HEX >= 0x030C0000
  return py::reinterpret_steal<py::object>(PyErr_GetRaisedException());
#else
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (traceback) PyException_SetTraceback(value, traceback);
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  return py::reinterpret_steal<py::object>(value);
#endif
}

const char *class_name(ErrorClass error) {
  switch (error) {
  case ErrorClass::Budget: return "ResidencyBudgetError";
  case ErrorClass::Handle: return "ResidencyHandleError";
  case ErrorClass::Unavailable: return "ResidencyUnavailableError";
  case ErrorClass::InUse: return "ResidencyInUseError";
  case ErrorClass::LifetimeClosed: return "ResidencyLifetimeClosedError";
  case ErrorClass::Materialization: return "ResidencyMaterializationError";
  case ErrorClass::Ownership: return "ResidencyOwnershipError";
  case ErrorClass::Plan: return "ResidencyPlanError";
  case ErrorClass::StaleState: return "ResidencyPlanError";
  case ErrorClass::PlanExecution: return "ResidencyPlanExecutionError";
  case ErrorClass::Closed: return "ResidencyClosedError";
  case ErrorClass::Reentrancy: return "ResidencyReentrancyError";
  case ErrorClass::InvalidArgument:
  case ErrorClass::None: break;
  }
  return "ResidencyError";
}

} // namespace

py::object python_class(const char *module, const char *name) {
  return py::module_::import(module).attr(name);
}

py::object error_class(const char *name) { return python_class("fhr.errors", name); }

void raise_error(const char *name, const std::string &message) {
  py::object error = error_class(name)(message);
  PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(error.ptr())), error.ptr());
  throw py::error_already_set();
}

void stash_and_throw(py::error_already_set &error) {
  std::string what = error.what();
  stashed = current_exception(error);
  throw PythonCallbackError(what);
}

py::object take_stashed_exception() {
  py::object error = std::move(stashed);
  stashed = py::object();
  return error ? error : py::none();
}

void raise_stashed() {
  py::object error = take_stashed_exception();
  if (error.is_none()) throw BackendError("a Python callback failed");
  PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(error.ptr())), error.ptr());
  throw py::error_already_set();
}

void clear_stash() {
  if (stashed) stashed = py::object();
}

py::object python_exception(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const ResidencyBudgetError &e) {
    return error_class("ResidencyBudgetError")(
        py::arg("location") = python_name(e.location()), py::arg("budget_bytes") = e.budget_bytes(),
        py::arg("used_bytes") = e.used_bytes(), py::arg("reserved_bytes") = e.reserved_bytes(),
        py::arg("requested_bytes") = e.requested_bytes(), py::arg("message") = e.what());
  } catch (const ResidencyStaleStateError &e) {
    return error_class("ResidencyStaleStateError")(py::arg("expected_version") = e.expected_version(),
                                                   py::arg("actual_version") = e.actual_version(),
                                                   py::arg("message") = e.what());
  } catch (const ResidencySearchLimitError &e) {
    return error_class("ResidencySearchLimitError")(
        py::arg("request_name") = e.request_name(), py::arg("state_limit") = e.state_limit(),
        py::arg("explored_states") = e.explored_states(), py::arg("detail") = e.detail(),
        py::arg("message") = e.what());
  } catch (const ResidencyPlanExecutionError &e) {
    // Without the plan's Python objects (the callers that have them build
    // a complete one, records.cpp): the report's transitions are left out.
    const auto &d = e.details();
    py::object report = python_class("fhr._records", "ResidencyPlanReport")(
        d.plan_name, py::tuple(), d.partial_report.started_at_ns, d.partial_report.completed_at_ns);
    return error_class("ResidencyPlanExecutionError")(
        py::arg("plan_name") = d.plan_name, py::arg("phase") = std::string(execution_phase_name(d.phase)),
        py::arg("partial_report") = report, py::arg("failed_action") = py::none(),
        py::arg("failed_action_index") = d.failed_action_index, py::arg("detail") = d.detail,
        py::arg("failed_reservation") = py::none(),
        py::arg("failed_reservation_index") = d.failed_reservation_index, py::arg("message") = e.what());
  } catch (const ResidencyError &e) {
    if (e.error_class() == ErrorClass::Budget) // a cause known only by its category and text
      return error_class("ResidencyBudgetError")(
          py::arg("location") = "", py::arg("budget_bytes") = 0, py::arg("used_bytes") = 0,
          py::arg("reserved_bytes") = 0, py::arg("requested_bytes") = 0, py::arg("message") = e.what());
    return error_class(class_name(e.error_class()))(e.what());
  } catch (const PythonCallbackError &) {
    return take_stashed_exception();
  } catch (const BackendError &e) {
    return error_class("BackendError")(e.what());
  } catch (const bytecode::ModuleError &e) {
    return error_class("PlanFileError")(e.what());
  } catch (const std::invalid_argument &e) {
    return py::reinterpret_borrow<py::object>(PyExc_ValueError)(e.what());
  } catch (const std::out_of_range &e) {
    return py::reinterpret_borrow<py::object>(PyExc_KeyError)(e.what());
  } catch (const std::bad_alloc &) {
    return py::reinterpret_borrow<py::object>(PyExc_MemoryError)();
  } catch (const py::error_already_set &e) {
    return py::reinterpret_borrow<py::object>(PyExc_RuntimeError)(e.what());
  } catch (const std::exception &e) {
    return py::reinterpret_borrow<py::object>(PyExc_RuntimeError)(e.what());
  }
}

void register_errors(py::module_ &) {
  py::register_exception_translator([](std::exception_ptr error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const py::error_already_set &) {
      throw; // pybind11 restores it
    } catch (const py::builtin_exception &) {
      throw;
    } catch (const ResidencyError &) {
    } catch (const BackendError &) {
    } catch (const bytecode::ModuleError &) {
    } catch (...) {
      throw; // pybind11's own translations (ValueError, MemoryError, ...)
    }
    py::object exception = python_exception(error);
    PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exception.ptr())), exception.ptr());
  });
}

} // namespace fhr::python
