// ResidencyLocation, PAGEABLE_HOST, PINNED_HOST, cuda_location (§1.1) and
// ResidencyHandle (§2.4).
#include "binding.hpp"

#include <array>
#include <charconv>

namespace fhr::python {

namespace {

/// "cuda:N" with N canonical (0 or no leading zero) and at most 127.
std::optional<unsigned> parse_cuda_text(const std::string &text) {
  if (text.rfind("cuda:", 0) != 0) return std::nullopt;
  const std::string digits = text.substr(5);
  if (digits.empty() || digits.size() > 3 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  unsigned index = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return index;
}

/// (type, index) of a device given as text or as an object with .type and
/// .index (torch.device).
std::pair<std::string, std::optional<long>> device_parts(py::handle device) {
  if (py::isinstance<py::str>(device)) {
    const std::string text = device.cast<std::string>();
    const auto colon = text.find(':');
    if (colon == std::string::npos) return {text, std::nullopt};
    long index = -1;
    const std::string digits = text.substr(colon + 1);
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size())
      throw py::value_error("invalid device '" + text + "'");
    return {text.substr(0, colon), index};
  }
  if (py::hasattr(device, "type") && py::hasattr(device, "index")) {
    py::object index = device.attr("index");
    return {py::str(device.attr("type")).cast<std::string>(),
            index.is_none() ? std::nullopt : std::optional<long>(index.cast<long>())};
  }
  throw py::type_error("a residency location's device must be a string or a torch.device");
}

Location cuda_from(py::handle device) {
  if (py::isinstance<py::str>(device)) {
    const std::string text = device.cast<std::string>();
    const std::optional<unsigned> index = parse_cuda_text(text);
    if (!index) {
      if (text.rfind("cuda:", 0) == 0 && text.size() > 5 &&
          text.find_first_not_of("0123456789", 5) == std::string::npos && text[5] != '0')
        throw py::value_error("CUDA residency location index must be between 0 and 127, not '" + text + "'");
      throw py::value_error(
          "a CUDA residency location needs an indexed canonical device such as cuda:0, not '" + text + "'");
    }
    if (*index >= Location::kMaxCudaDevices)
      throw py::value_error("CUDA residency location index must be between 0 and 127, not '" + text + "'");
    return Location::cuda(*index);
  }
  const auto [type, index] = device_parts(device);
  if (type != "cuda" || !index)
    throw py::value_error("a CUDA residency location needs an indexed CUDA device such as cuda:0");
  if (*index < 0 || *index >= static_cast<long>(Location::kMaxCudaDevices))
    throw py::value_error("CUDA residency location index must be between 0 and 127");
  return Location::cuda(static_cast<unsigned>(*index));
}

Location make_location(const std::string &kind, py::handle device) {
  if (kind == "pageable-host" || kind == "pinned-host") {
    const auto [type, index] = device_parts(device);
    if (type != "cpu") throw py::value_error(kind + " location requires a CPU device");
    (void)index; // cpu:N normalises to cpu
    return kind == "pinned-host" ? Location::pinned() : Location::pageable();
  }
  if (kind == "cuda") return cuda_from(device);
  throw py::value_error("unsupported residency location kind '" + kind + "'");
}

std::string kind_text(Location location) {
  return location == Location::pageable() ? "pageable-host"
         : location == Location::pinned() ? "pinned-host"
                                          : "cuda";
}

std::uint64_t parse_id(const std::string &text) {
  std::uint64_t id = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
  return error == std::errc() && end == text.data() + text.size() ? id : 0;
}

void require_text(py::handle value, const char *what) {
  if (!py::isinstance<py::str>(value)) throw py::type_error(std::string(what) + " must be a string");
  if (value.cast<std::string>().find_first_not_of(" \t\n\r") == std::string::npos)
    throw py::value_error(std::string(what) + " must be non-empty");
}

} // namespace

std::string python_name(Location location) {
  return location.is_cuda() ? location.name() : kind_text(location);
}

py::object location_object(Location location) {
  static std::array<PyObject *, Location::kCount> objects{}; // leaked: they live as long as the module
  PyObject *&object = objects[location.index()];
  if (!object) object = py::cast(PyLocation{location}).release().ptr();
  return py::reinterpret_borrow<py::object>(object);
}

py::object optional_location(const std::optional<Location> &location) {
  return location ? location_object(*location) : py::none();
}

Location to_location(py::handle object, const char *what) {
  const PyLocation *location = bound_object<PyLocation>(object);
  if (!location) throw py::type_error(std::string(what) + " must be a ResidencyLocation");
  return location->location;
}

bool is_handle(py::handle object) { return handle_of(object) != nullptr; }
const PyHandle &as_handle(py::handle object) {
  if (const PyHandle *handle = handle_of(object)) return *handle;
  throw py::cast_error("expected a ResidencyHandle, not " + std::string(Py_TYPE(object.ptr())->tp_name));
}

void bind_locations(py::module_ &m) {
  py::class_<PyLocation>(
      m, "ResidencyLocation",
      "Where a replica lives: pageable-host, pinned-host or cuda with a device index (§1.1).")
      .def(py::init([](const std::string &kind, py::object device) {
             return PyLocation{make_location(kind, device)};
           }),
           py::arg("kind"), py::arg("device"))
      .def_property_readonly("kind", [](const PyLocation &l) { return kind_text(l.location); })
      .def_property_readonly(
          "device",
          [](const PyLocation &l) { return l.location.is_cuda() ? l.location.name() : std::string("cpu"); })
      .def_property_readonly("index",
                             [](const PyLocation &l) -> py::object {
                               return l.location.is_cuda() ? py::object(py::int_(l.location.device()))
                                                           : py::object(py::none());
                             })
      .def_property_readonly("name", [](const PyLocation &l) { return python_name(l.location); })
      .def("__str__", [](const PyLocation &l) { return python_name(l.location); })
      .def("__repr__",
           [](const PyLocation &l) {
             return "ResidencyLocation(kind='" + kind_text(l.location) + "', device='" +
                    (l.location.is_cuda() ? l.location.name() : std::string("cpu")) + "')";
           })
      .def("__eq__",
           [](const PyLocation &a, py::handle b) {
             return py::isinstance<PyLocation>(b) && b.cast<const PyLocation &>().location == a.location;
           })
      .def("__hash__",
           [](const PyLocation &l) { return std::hash<unsigned>()(l.location.index() + 0x51ed27u); })
      .def("__reduce__", [](const PyLocation &l) {
        return py::make_tuple(py::module_::import("fhr._fhr").attr("_location_by_index"),
                              py::make_tuple(l.location.index()));
      });
  m.def("_location_by_index", [](unsigned index) {
    if (index >= Location::kCount) throw py::value_error("no such location");
    return location_object(Location::from_index(index));
  });
  m.attr("PAGEABLE_HOST") = location_object(Location::pageable());
  m.attr("PINNED_HOST") = location_object(Location::pinned());
  m.def(
      "cuda_location", [](py::object device) { return location_object(cuda_from(device)); },
      py::arg("device"), "The location of an indexed CUDA device: 'cuda:0', torch.device('cuda', 0).");
}

void bind_handles(py::module_ &m) {
  py::class_<PyHandle>(
      m, "ResidencyHandle",
      "A manager's name for one value: (manager_id, handle_id, value_type), equal field by field.")
      .def(py::init([](py::object manager_id, py::object handle_id, py::object value_type) {
             require_text(manager_id, "ResidencyHandle manager_id");
             require_text(handle_id, "ResidencyHandle handle_id");
             if (!PyType_Check(value_type.ptr()))
               throw py::type_error("ResidencyHandle value_type must be a class");
             PyHandle h;
             h.manager_id = py::reinterpret_borrow<py::str>(manager_id);
             h.handle_id = py::reinterpret_borrow<py::str>(handle_id);
             h.value_type = value_type;
             h.handle = Handle{parse_id(h.manager_id.cast<std::string>()),
                               parse_id(h.handle_id.cast<std::string>())};
             return h;
           }),
           py::arg("manager_id"), py::arg("handle_id"), py::arg("value_type"))
      .def_property_readonly("manager_id", [](const PyHandle &h) { return h.manager_id; })
      .def_property_readonly("handle_id", [](const PyHandle &h) { return h.handle_id; })
      .def_property_readonly("value_type", [](const PyHandle &h) { return h.value_type; })
      .def("__eq__",
           [](const PyHandle &a, py::handle other) {
             if (!is_handle(other)) return false;
             const PyHandle &b = as_handle(other);
             return a.value_type.is(b.value_type) && a.manager_id.equal(b.manager_id) &&
                    a.handle_id.equal(b.handle_id);
           })
      .def(
          "__hash__",
          [](const PyHandle &h) { return py::hash(py::make_tuple(h.manager_id, h.handle_id, h.value_type)); })
      .def("__repr__", [](const PyHandle &h) {
        return "ResidencyHandle(manager_id=" + py::repr(h.manager_id).cast<std::string>() +
               ", handle_id=" + py::repr(h.handle_id).cast<std::string>() +
               ", value_type=" + py::str(h.value_type.attr("__qualname__")).cast<std::string>() + ")";
      });
}

} // namespace fhr::python
