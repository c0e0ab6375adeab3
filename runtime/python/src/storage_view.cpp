#include "storage_view.hpp"

#include FHR_DLPACK_HEADER

#include <vector>

namespace fhr::python {

namespace {

/// What a DLPack capsule owns: the tensor's shape and a reference to the storage.
struct DlpackContext {
  DLManagedTensor tensor{};
  std::vector<std::int64_t> shape;
  SharedBlock *block = nullptr;
};

void delete_context(DLManagedTensor *tensor) {
  auto *context = static_cast<DlpackContext *>(tensor->manager_ctx);
  if (context->block) context->block->unref();
  delete context;
}

/// A capsule nobody consumed frees its tensor; a consumed one was renamed.
void capsule_destructor(PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto *tensor = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (tensor && tensor->deleter) tensor->deleter(tensor);
}

/// A DLPack capsule over the view: a compact row-major tensor of `shape`
/// with elements of (code, bits, lanes); its byte count must match.
py::object dlpack(StorageView &view, int code, int bits, int lanes, const std::vector<std::int64_t> &shape) {
  if (code < 0 || code > 255 || bits <= 0 || bits > 255 || bits % 8 != 0 || lanes <= 0 || lanes > 65535)
    throw std::invalid_argument("dlpack: invalid element type");
  std::uint64_t count = 1;
  for (std::int64_t extent : shape) {
    if (extent < 0) throw std::invalid_argument("dlpack: negative extent");
    count *= static_cast<std::uint64_t>(extent);
  }
  if (count * static_cast<std::uint64_t>(bits / 8) * static_cast<std::uint64_t>(lanes) != view.nbytes)
    throw std::invalid_argument("dlpack: the shape does not cover the storage exactly");
  auto *context = new DlpackContext;
  context->shape = shape;
  if (view.block) {
    view.block->ref();
    context->block = view.block;
  }
  DLTensor &t = context->tensor.dl_tensor;
  t.data = view.data;
  t.device.device_type = view.device_memory ? kDLCUDA : kDLCPU;
  t.device.device_id = view.device_memory ? static_cast<std::int32_t>(view.location.device()) : 0;
  t.ndim = static_cast<std::int32_t>(shape.size());
  t.dtype.code = static_cast<std::uint8_t>(code);
  t.dtype.bits = static_cast<std::uint8_t>(bits);
  t.dtype.lanes = static_cast<std::uint16_t>(lanes);
  t.shape = context->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  context->tensor.manager_ctx = context;
  context->tensor.deleter = delete_context;
  PyObject *capsule = PyCapsule_New(&context->tensor, "dltensor", capsule_destructor);
  if (!capsule) {
    delete_context(&context->tensor);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

} // namespace

void bind_storage_view(py::module_ &m) {
  py::class_<StorageView>(m, "StorageView", py::buffer_protocol(),
                          "The bytes of one replica, lent to rebuild a value over them without a copy.")
      .def_buffer([](StorageView &view) -> py::buffer_info {
        if (view.device_memory)
          throw py::buffer_error("the replica at " + python_name(view.location) + " is device memory");
        return py::buffer_info(view.data, 1, py::format_descriptor<std::uint8_t>::format(),
                               static_cast<py::ssize_t>(view.nbytes), /*readonly=*/true);
      })
      .def_property_readonly("data_ptr",
                             [](const StorageView &v) { return reinterpret_cast<std::uintptr_t>(v.data); })
      .def_property_readonly("nbytes", [](const StorageView &v) { return v.nbytes; })
      .def_property_readonly("location", [](const StorageView &v) { return location_object(v.location); })
      .def_property_readonly("device_memory", [](const StorageView &v) { return v.device_memory; })
      .def_property_readonly("__cuda_array_interface__",
                             [](const StorageView &v) -> py::object {
                               if (!v.device_memory) throw py::attribute_error("host memory");
                               py::dict interface;
                               interface["shape"] = py::make_tuple(v.nbytes);
                               interface["typestr"] = "|u1";
                               interface["data"] =
                                   py::make_tuple(reinterpret_cast<std::uintptr_t>(v.data), true);
                               interface["version"] = 3;
                               interface["stream"] = py::none();
                               return interface;
                             })
      .def("dlpack", &dlpack, py::arg("code"), py::arg("bits"), py::arg("lanes"), py::arg("shape"),
           "A DLPack capsule over the bytes as a compact tensor (torch.from_dlpack takes it).");
}

} // namespace fhr::python
