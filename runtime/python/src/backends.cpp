// Backend selection (`backend=`), streams as Python passes them, and the
// simulated devices CI tests with.
#include "binding.hpp"

#include "fhr/runtime/fault_injection.hpp"
#include "fhr/runtime/simulated_backend.hpp"

#if defined(FHR_HAVE_CUDA)
#include "fhr/cuda/cuda_backend.hpp"

#include <cuda_runtime_api.h>
#endif

#include <cstring>

namespace fhr::python {

namespace {

/// SimulatedBackend(device_count, overlap_copies=False): cuda:N below the
/// count is host memory; streams and events follow §17's model. Its
/// managers run it behind the fault adaptors (fail_on, count).
struct PySimulatedBackend {
  std::shared_ptr<SimulatedBackend> backend;
  std::shared_ptr<FaultPlan> faults = std::make_shared<FaultPlan>();
};

/// A stream of the simulated backend, passed where a torch.cuda.Stream goes.
struct PySimulatedStream {
  Stream stream;
  Location device;
};

/// CudaBackend(...): the CUDA backend with its pool settings.
struct PyCudaBackend {
  std::uint64_t pinned_pool_bytes;
  std::uint64_t device_pool_release_threshold;
  std::uint64_t device_small_block_cache_bytes;
  bool pinned_huge_pages;
};

BackendOperation to_operation(const std::string &name) {
  if (name == "allocate") return BackendOperation::Allocate;
  if (name == "copy") return BackendOperation::Copy;
  if (name == "load") return BackendOperation::Load;
  if (name == "record_event") return BackendOperation::RecordEvent;
  if (name == "copy_completion") return BackendOperation::CopyCompletion;
  throw py::value_error("unknown backend operation '" + name +
                        "' (allocate, copy, load, record_event, copy_completion)");
}

Stream simulated_stream(py::handle stream) {
  if (!py::isinstance<PySimulatedStream>(stream)) throw py::type_error("expected a SimulatedStream");
  return stream.cast<const PySimulatedStream &>().stream;
}

#if defined(FHR_HAVE_CUDA)
BackendChoice cuda_choice(const PyCudaBackend &settings) {
  CudaBackendOptions options;
  options.pinned_pool_bytes = settings.pinned_pool_bytes;
  options.device_pool_release_threshold = settings.device_pool_release_threshold;
  options.device_small_block_cache_bytes = settings.device_small_block_cache_bytes;
  options.pinned_huge_pages = settings.pinned_huge_pages;
  return BackendChoice{std::shared_ptr<Backend>(make_cuda_backend(options)), true};
}
#endif

/// What a Python manager's CUDA backend keeps by default: freed device
/// memory goes back to the driver at the next synchronisation (release
/// threshold 0), where PyTorch's caching allocator can take it; only the
/// backend's cache of small blocks (64 MiB per device) stays. See
/// docs/python.md, "CUDA memory beside PyTorch".
PyCudaBackend default_cuda_settings() {
  // Pinned blocks on huge pages: CudaBackendOptions::pinned_huge_pages's
  // default (a build without CUDA has no such options to read it from).
  return PyCudaBackend{std::uint64_t{4} << 30, 0, std::uint64_t{64} << 20, true};
}

unsigned device_count() {
#if defined(FHR_HAVE_CUDA)
  return cuda_device_count();
#else
  return 0;
#endif
}

} // namespace

BackendChoice choose_backend(py::handle spec) {
  if (spec.is_none()) {
    if (device_count() > 0) return choose_backend(py::str("cuda"));
    return BackendChoice{std::shared_ptr<Backend>(make_host_backend()), false};
  }
  if (py::isinstance<py::str>(spec)) {
    const std::string name = spec.cast<std::string>();
    if (name == "host") return BackendChoice{std::shared_ptr<Backend>(make_host_backend()), false};
    if (name == "cuda") {
#if defined(FHR_HAVE_CUDA)
      return cuda_choice(default_cuda_settings());
#else
      throw py::value_error("this build of fhr has no CUDA backend");
#endif
    }
    throw py::value_error("unknown backend '" + name + "' (host, cuda, a SimulatedBackend or a CudaBackend)");
  }
  if (py::isinstance<PySimulatedBackend>(spec)) {
    const auto &simulated = spec.cast<const PySimulatedBackend &>();
    return BackendChoice{inject_faults(simulated.backend, simulated.faults), false};
  }
  if (py::isinstance<PyCudaBackend>(spec)) {
#if defined(FHR_HAVE_CUDA)
    return cuda_choice(spec.cast<const PyCudaBackend &>());
#else
    throw py::value_error("this build of fhr has no CUDA backend");
#endif
  }
  throw py::type_error("backend must be None, 'host', 'cuda', a SimulatedBackend or a CudaBackend");
}

Stream to_stream(py::handle object, bool cuda_backend) {
  std::uintptr_t native = 0;
  if (const PySimulatedStream *simulated = bound_object<PySimulatedStream>(object)) {
    native = simulated->stream.native;
  } else if (PyLong_Check(object.ptr()) && !PyBool_Check(object.ptr())) {
    native = object.cast<std::uintptr_t>();
  } else if (py::hasattr(object, "cuda_stream")) {
    native = object.attr("cuda_stream").cast<std::uintptr_t>();
  } else {
    throw py::type_error(
        "a CUDA stream must be a torch.cuda.Stream, a SimulatedStream or a cudaStream_t integer, not " +
        std::string(Py_TYPE(object.ptr())->tp_name));
  }
  // PyTorch's default stream is the legacy default stream, cudaStream_t 0;
  // 0 means "no stream" to the runtime, cudaStreamLegacy (0x1) that stream.
  if (native == 0 && cuda_backend) native = 0x1;
  if (native == 0) throw py::value_error("stream 0 is not a stream of this backend");
  return Stream{native};
}

RunnerOptions runner_streams(py::handle backend_object, bool cuda) {
  RunnerOptions options;
  if (py::isinstance<PySimulatedBackend>(backend_object)) {
    std::shared_ptr<SimulatedBackend> backend = backend_object.cast<const PySimulatedBackend &>().backend;
    auto streams = std::make_shared<std::vector<std::pair<Location, Stream>>>();
    options.consumer_stream = [backend, streams](Location device) {
      for (const auto &[at, stream] : *streams)
        if (at == device) return stream;
      streams->emplace_back(device, backend->create_stream(device));
      return streams->back().second;
    };
    options.submit_reader = [backend](Stream stream) { backend->launch(stream); };
  }
#if defined(FHR_HAVE_CUDA)
  else if (cuda) {
    // One stream per device for the module's CUDA leases, destroyed with the run.
    struct Streams {
      std::vector<std::pair<Location, Stream>> streams;
      ~Streams() {
        for (const auto &[at, stream] : streams)
          destroy_cuda_stream(stream);
      }
    };
    auto streams = std::make_shared<Streams>();
    options.consumer_stream = [streams](Location device) {
      for (const auto &[at, stream] : streams->streams)
        if (at == device) return stream;
      streams->streams.emplace_back(device, create_cuda_stream(device));
      return streams->streams.back().second;
    };
  }
#endif
  (void)cuda;
  return options;
}

bool is_cuda_pinned(std::uintptr_t pointer) {
#if defined(FHR_HAVE_CUDA)
  if (device_count() == 0) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, reinterpret_cast<const void *>(pointer)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
#else
  (void)pointer;
  return false;
#endif
}

void copy_bytes(std::byte *destination, const std::byte *source, std::size_t nbytes, bool device_memory) {
  if (nbytes == 0) return;
  if (!device_memory) {
    std::memcpy(destination, source, nbytes);
    return;
  }
#if defined(FHR_HAVE_CUDA)
  const cudaError_t error = cudaMemcpy(destination, source, nbytes, cudaMemcpyDefault);
  if (error != cudaSuccess) {
    cudaGetLastError();
    throw BackendError(std::string("cudaMemcpy: ") + cudaGetErrorName(error) + " (" +
                       cudaGetErrorString(error) + ")");
  }
#else
  throw BackendError("device memory without CUDA");
#endif
}

void bind_backends(py::module_ &m) {
  py::class_<PySimulatedStream>(m, "SimulatedStream", "A stream of a SimulatedBackend device.")
      .def_property_readonly("cuda_stream", [](const PySimulatedStream &s) { return s.stream.native; })
      .def_property_readonly("device", [](const PySimulatedStream &s) { return s.device.name(); })
      .def("__repr__", [](const PySimulatedStream &s) {
        return "SimulatedStream(" + std::to_string(s.stream.native) + ", device='" + s.device.name() + "')";
      });

  py::class_<PySimulatedBackend>(m, "SimulatedBackend",
                                 "Devices simulated in host memory, with streams, events and fault injection "
                                 "(docs/runtime.md, Backends): for tests without a GPU.")
      .def(py::init([](unsigned device_count, bool overlap_copies) {
             return PySimulatedBackend{std::make_shared<SimulatedBackend>(device_count, overlap_copies)};
           }),
           py::arg("device_count"), py::kw_only(), py::arg("overlap_copies") = false)
      .def(
          "create_stream",
          [](PySimulatedBackend &b, py::handle location) {
            const Location device = to_location(location, "a stream's device");
            return PySimulatedStream{b.backend->create_stream(device), device};
          },
          py::arg("device"))
      .def(
          "launch",
          [](PySimulatedBackend &b, py::handle s, std::uint64_t n) {
            b.backend->launch(simulated_stream(s), n);
          },
          py::arg("stream"), py::arg("kernels") = 1)
      .def(
          "finish", [](PySimulatedBackend &b, py::handle s) { b.backend->finish(simulated_stream(s)); },
          py::arg("stream"))
      .def(
          "fail_on",
          [](PySimulatedBackend &b, const std::string &operation, std::uint64_t nth) {
            b.faults->fail_on(to_operation(operation), nth);
          },
          py::arg("operation"), py::arg("nth"))
      .def(
          "count",
          [](PySimulatedBackend &b, const std::string &operation) {
            return b.faults->count(to_operation(operation));
          },
          py::arg("operation"))
      .def(
          "allocated_bytes",
          [](PySimulatedBackend &b, py::handle location) {
            return b.backend->allocated_bytes(to_location(location, "location"));
          },
          py::arg("location"))
      .def_property_readonly("live_events", [](PySimulatedBackend &b) { return b.backend->live_events(); })
      .def_property_readonly("device_synchronizations",
                             [](PySimulatedBackend &b) { return b.backend->device_synchronizations(); })
      .def_property_readonly("max_copies_in_flight",
                             [](PySimulatedBackend &b) { return b.backend->max_copies_in_flight(); });

  const PyCudaBackend defaults = default_cuda_settings();
  py::class_<PyCudaBackend>(
      m, "CudaBackend",
      "The CUDA backend's settings. The defaults hand freed device memory back to the driver "
      "(docs/python.md, CUDA memory beside PyTorch).")
      .def(py::init([](std::uint64_t pinned, std::uint64_t threshold, std::uint64_t cache, bool huge_pages) {
             return PyCudaBackend{pinned, threshold, cache, huge_pages};
           }),
           py::kw_only(), py::arg("pinned_pool_bytes") = defaults.pinned_pool_bytes,
           py::arg("device_pool_release_threshold") = defaults.device_pool_release_threshold,
           py::arg("device_small_block_cache_bytes") = defaults.device_small_block_cache_bytes,
           py::arg("pinned_huge_pages") = defaults.pinned_huge_pages)
      .def_readonly("pinned_pool_bytes", &PyCudaBackend::pinned_pool_bytes)
      .def_readonly("device_pool_release_threshold", &PyCudaBackend::device_pool_release_threshold)
      .def_readonly("device_small_block_cache_bytes", &PyCudaBackend::device_small_block_cache_bytes)
      .def_readonly("pinned_huge_pages", &PyCudaBackend::pinned_huge_pages);

  m.def("cuda_device_count", &device_count, "CUDA devices this process sees (0 without a CUDA build).");
  m.def("_is_cuda_pinned", &is_cuda_pinned, py::arg("pointer"));
  m.def(
      "_buffer_address",
      [](py::handle object) {
        Py_buffer view;
        if (PyObject_GetBuffer(object.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) throw py::error_already_set();
        const auto address = reinterpret_cast<std::uintptr_t>(view.buf);
        PyBuffer_Release(&view);
        return address;
      },
      py::arg("buffer"), "The address of a C-contiguous buffer's first byte.");
  m.attr("HAS_CUDA") =
#if defined(FHR_HAVE_CUDA)
      true;
#else
      false;
#endif
}

} // namespace fhr::python
