// Python work that the runtime triggers while it holds its lock, done once
// the GIL is held again: dropping adopted objects, releasing their buffer
// views, issuing warnings. Doing it on the spot could deadlock (the
// runtime's lock held while waiting for the GIL, another thread holding
// the GIL while waiting for the runtime's lock).
#include "binding.hpp"

#include <atomic>
#include <mutex>
#include <utility>

namespace fhr::python {

namespace {

struct Queue {
  std::mutex mutex;
  std::vector<PyObject *> references;
  std::vector<Py_buffer *> buffers;
  std::vector<std::string> warnings;
  std::atomic<bool> pending{false};
};

Queue &queue() {
  static Queue *instance = new Queue; // never destroyed: deleters may run at exit
  return *instance;
}

} // namespace

void defer_decref(PyObject *object) noexcept {
  if (!object) return;
  Queue &q = queue();
  std::lock_guard lock(q.mutex);
  q.references.push_back(object);
  q.pending.store(true, std::memory_order_release);
}

void defer_buffer_release(Py_buffer *view) noexcept {
  if (!view) return;
  Queue &q = queue();
  std::lock_guard lock(q.mutex);
  q.buffers.push_back(view);
  q.pending.store(true, std::memory_order_release);
}

void defer_warning(std::string message) noexcept {
  try {
    Queue &q = queue();
    std::lock_guard lock(q.mutex);
    q.warnings.push_back(std::move(message));
    q.pending.store(true, std::memory_order_release);
  } catch (...) { // a lost warning is better than an exception out of a destructor
  }
}

void drain_deferred() noexcept {
  Queue &q = queue();
  if (!q.pending.load(std::memory_order_acquire)) return;
  std::vector<PyObject *> references;
  std::vector<Py_buffer *> buffers;
  std::vector<std::string> warnings;
  {
    std::lock_guard lock(q.mutex);
    references.swap(q.references);
    buffers.swap(q.buffers);
    warnings.swap(q.warnings);
    q.pending.store(false, std::memory_order_release);
  }
  // An exception being raised stays raised: the work below must not clobber it.
#if PY_VERSION_HEX >= 0x030C0000
  PyObject *raised = PyErr_GetRaisedException();
#else
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
#endif
  for (Py_buffer *view : buffers) {
    PyBuffer_Release(view);
    delete view;
  }
  for (PyObject *object : references)
    Py_DECREF(object);
  for (const std::string &message : warnings) {
    // Lifetimes destroyed while active are Python's resource leaks; the
    // rest (an event that could not be recorded) are runtime warnings.
    const bool abandoned = message.find("abandon") != std::string::npos ||
                           message.find("destroyed while active") != std::string::npos;
    PyObject *category = abandoned ? PyExc_ResourceWarning : PyExc_RuntimeWarning;
    if (PyErr_WarnEx(category, message.c_str(), 1) < 0) PyErr_WriteUnraisable(nullptr);
  }
#if PY_VERSION_HEX >= 0x030C0000
  PyErr_SetRaisedException(raised);
#else
  PyErr_Restore(type, value, traceback);
#endif
}

} // namespace fhr::python
