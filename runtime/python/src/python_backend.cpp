#include "python_backend.hpp"

#include "binding.hpp"

#include <string>

namespace fhr::python {

SharedBlock *PythonMemory::share(const std::byte *begin) const {
  std::lock_guard lock(mutex_);
  auto it = replicas_.find(begin);
  if (it == replicas_.end()) return nullptr;
  it->second->ref();
  return it->second;
}

namespace {

bool out_of_device_memory(const BackendError &error) {
  return std::string(error.what()).find("cudaErrorMemoryAllocation") != std::string::npos;
}

/// torch.cuda.empty_cache() where PyTorch is loaded and has used CUDA:
/// its cached blocks go back to the driver for us to take.
bool release_torch_cache() {
  py::gil_scoped_acquire gil;
  try {
    py::dict modules = py::module_::import("sys").attr("modules");
    if (!modules.contains("torch")) return false;
    py::object cuda = modules["torch"].attr("cuda");
    if (!cuda.attr("is_initialized")().cast<bool>()) return false;
    cuda.attr("empty_cache")();
    return true;
  } catch (py::error_already_set &) {
    return false; // the retry is best effort; the original failure stands
  }
}

} // namespace

Storage PythonMemory::allocate_inner(Location location, std::size_t nbytes) {
  if (!cuda_ || !location.is_cuda()) return inner_->allocate(location, nbytes);
  try {
    return inner_->allocate(location, nbytes);
  } catch (const BackendError &error) {
    if (!out_of_device_memory(error) || !release_torch_cache()) throw;
  }
  return inner_->allocate(location, nbytes);
}

Storage PythonMemory::allocate(Location location, std::size_t nbytes) {
  Storage inner = allocate_inner(location, nbytes);
  std::byte *data = inner.bytes().data();
  const std::size_t size = inner.size();
  const std::size_t block_size = inner.block_size();
  auto *block = new SharedBlock(std::move(inner), inner_);
  {
    std::lock_guard lock(mutex_);
    replicas_[data] = block;
  }
  // Trivially copyable: std::function keeps it without allocating. `this`
  // outlives the storage: the manager frees its replicas before its backend.
  return Storage(
      data, size, location,
      [this, block](std::byte *bytes) {
        {
          std::lock_guard lock(mutex_);
          replicas_.erase(bytes);
        }
        block->unref();
      },
      block_size);
}

} // namespace fhr::python
