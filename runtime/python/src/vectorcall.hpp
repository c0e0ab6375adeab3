#pragma once
/// \file
/// Methods that Python calls through vectorcall (METH_FASTCALL |
/// METH_KEYWORDS) rather than through pybind11's dispatcher, for the few
/// calls whose binding cost matters: acquire, a lease's release and its
/// `with` protocol, the transitions.
///
/// Why: for a call with keyword arguments, the interpreter first packs them
/// into a dict for pybind11; its dispatcher then makes a str of each
/// parameter's C name and looks it up in that dict, copies the dict to
/// delete the keys it used, and fills two vectors, on every call. That was
/// most of a lease's binding cost (docs/python.md, "What a call costs").
/// Here the interpreter passes the arguments as an array and the keyword
/// names as a tuple of strings, and `Parameters` interns its names once:
/// a call site's keyword is then the very same string, so matching it is
/// a pointer comparison.
///
/// The argument rules are Python's (TypeError for an unknown keyword, an
/// argument given twice, a missing one or too many positional ones), and a
/// C++ exception is translated by pybind11's translators (errors.cpp's
/// included), so a method raises what its pybind11 binding raised.

#include <pybind11/pybind11.h>

#include <array>
#include <cstddef>
#include <exception>
#include <string>
#include <utility>

namespace fhr::python {

/// A method's parameters, in order: the first `positional` of them may be
/// passed by position, every one by name, and the first `required` must be
/// passed. Made once (a function's static): the names stay interned for
/// the life of the process.
template <std::size_t N>
class Parameters {
public:
  Parameters(const char *function, const std::array<const char *, N> &names, std::size_t positional,
             std::size_t required)
      : function_(function), text_(names), positional_(positional), required_(required) {
    for (std::size_t i = 0; i < N; ++i) {
      names_[i] = PyUnicode_InternFromString(names[i]); // kept: never released
      if (!names_[i]) throw py::error_already_set();
    }
  }

  /// The arguments of a vectorcall, parameter by parameter (a null handle
  /// where one was not passed), borrowed from the call.
  std::array<py::handle, N> parse(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) const {
    std::array<py::handle, N> out{};
    const auto given = static_cast<std::size_t>(nargs);
    if (given > positional_) too_many_positional(given);
    for (std::size_t i = 0; i < given; ++i)
      out[i] = args[i];
    const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < keywords; ++k) {
      PyObject *name = PyTuple_GET_ITEM(kwnames, k);
      const std::size_t i = index_of(name);
      if (i == N)
        throw py::type_error(std::string(function_) + "() got an unexpected keyword argument " +
                             py::repr(name).cast<std::string>());
      if (out[i])
        throw py::type_error(std::string(function_) + "() got multiple values for argument '" + text_[i] +
                             "'");
      out[i] = args[nargs + k];
    }
    for (std::size_t i = 0; i < required_; ++i)
      if (!out[i])
        throw py::type_error(std::string(function_) + "() missing required argument '" + text_[i] + "'");
    return out;
  }

private:
  std::size_t index_of(PyObject *name) const {
    for (std::size_t i = 0; i < N; ++i)
      if (names_[i] == name) return i;
    // A name built at run time (f(**{"at": ...})): compared by value.
    for (std::size_t i = 0; i < N; ++i)
      if (PyUnicode_Check(name) && PyUnicode_Compare(names_[i], name) == 0) return i;
    return N;
  }

  [[noreturn]] void too_many_positional(std::size_t given) const {
    const std::string function = std::string(function_) + "() takes ";
    const std::string passed = " (" + std::to_string(given) + " given)";
    if (positional_ == 0) throw py::type_error(function + "no positional arguments" + passed);
    throw py::type_error(function + "at most " + std::to_string(positional_) + " positional argument" +
                         (positional_ == 1 ? "" : "s") + passed);
  }

  const char *function_;
  std::array<const char *, N> text_;
  std::array<PyObject *, N> names_{};
  std::size_t positional_;
  std::size_t required_;
};

namespace vectorcall_detail {

/// The exception being translated on this thread (see raise_translated).
inline thread_local std::exception_ptr pending;

/// A pybind11 function that rethrows `pending`: its dispatcher translates
/// the exception as it would one of a bound function's own.
inline PyObject *rethrow_function() {
  static PyObject *const function =
      py::cpp_function([] { std::rethrow_exception(std::exchange(pending, nullptr)); }).release().ptr();
  return function;
}

} // namespace vectorcall_detail

/// Makes the C++ exception being handled the Python error, exactly as
/// pybind11 would for a function it binds; returns null.
inline PyObject *raise_translated() noexcept {
  vectorcall_detail::pending = std::current_exception();
  PyObject *result = PyObject_CallNoArgs(vectorcall_detail::rethrow_function()); // always null
  Py_XDECREF(result);
  vectorcall_detail::pending = nullptr; // a call that failed before it ran leaves it
  return nullptr;
}

/// Runs a method's body (which returns a py::object) for CPython: a new
/// reference, or null with the Python error set.
template <typename Body>
PyObject *guarded(Body &&body) noexcept {
  try {
    return std::forward<Body>(body)().release().ptr();
  } catch (...) {
    return raise_translated();
  }
}

/// The C signature of a METH_FASTCALL | METH_KEYWORDS method.
using FastMethod = PyObject *(*)(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

/// Defines `definition` as a method of the bound class `cls`. It must live
/// as long as the class (a static): CPython keeps a pointer to it. A doc
/// that starts with "name($self, ...)\n--\n\n" gives inspect.signature the
/// method's signature.
inline void add_method(py::handle cls, PyMethodDef &definition) {
  vectorcall_detail::rethrow_function(); // made now, not while an exception is handled
  py::object method = py::reinterpret_steal<py::object>(
      PyDescr_NewMethod(reinterpret_cast<PyTypeObject *>(cls.ptr()), &definition));
  if (!method) throw py::error_already_set();
  py::setattr(cls, definition.ml_name, method);
}

/// A PyMethodDef for a METH_FASTCALL | METH_KEYWORDS method.
inline PyMethodDef fast_method(const char *name, FastMethod method, const char *doc) {
  // PyMethodDef stores every kind of method as a PyCFunction; the flags tell
  // CPython the real signature (the cast through void (*)() is the one that
  // -Wcast-function-type accepts).
  return PyMethodDef{name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(method)),
                     METH_FASTCALL | METH_KEYWORDS, doc};
}

} // namespace fhr::python
