// fhr._fhr: the extension module behind the package fhr (docs/python.md).
#include "binding.hpp"

PYBIND11_MODULE(_fhr, m) {
  using namespace fhr::python;
  m.doc() = "fhr's residency manager runtime, for Python (use the package fhr).";
  register_errors(m);
  bind_locations(m);
  bind_handles(m);
  bind_storage_view(m);
  bind_records(m);
  bind_backends(m);
  bind_lifetimes(m);
  bind_manager(m);
  bind_plan_files(m);
  bind_controller(m);
}
