#include "python_backend.hpp"

#include "binding.hpp"

#include <string>

namespace fhr::python {

bool StorageRegistry::overlaps(std::uintptr_t begin, std::uintptr_t end) const {
  if (begin >= end) return false;
  std::lock_guard lock(mutex_);
  auto next = ranges_.lower_bound(begin);
  if (next != ranges_.end() && next->first < end && next->first < next->second.end) return true;
  if (next == ranges_.begin()) return false;
  auto previous = std::prev(next);
  return previous->second.end > begin;
}

void StorageRegistry::add(std::uintptr_t begin, std::uintptr_t end, SharedBlock *block) {
  std::lock_guard lock(mutex_);
  ranges_[begin] = Entry{end, block};
}

void StorageRegistry::remove(std::uintptr_t begin) {
  std::lock_guard lock(mutex_);
  ranges_.erase(begin);
}

SharedBlock *StorageRegistry::share(std::uintptr_t begin) const {
  std::lock_guard lock(mutex_);
  auto it = ranges_.find(begin);
  if (it == ranges_.end() || !it->second.block) return nullptr;
  it->second.block->ref();
  return it->second.block;
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

Storage PythonBackend::allocate_inner(Location location, std::size_t nbytes) {
  if (!cuda_ || !location.is_cuda()) return inner_->allocate(location, nbytes);
  try {
    return inner_->allocate(location, nbytes);
  } catch (const BackendError &error) {
    if (!out_of_device_memory(error) || !release_torch_cache()) throw;
  }
  return inner_->allocate(location, nbytes);
}

Storage PythonBackend::allocate(Location location, std::size_t nbytes) {
  Storage inner = allocate_inner(location, nbytes);
  std::byte *data = inner.bytes().data();
  const std::size_t size = inner.size();
  auto *block = new SharedBlock(std::move(inner), inner_);
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  registry_.add(begin, begin + size, block);
  StorageRegistry *registry = &registry_;
  // Trivially copyable: std::function keeps it without allocating.
  return Storage(data, size, location, [registry, block](std::byte *bytes) {
    registry->remove(reinterpret_cast<std::uintptr_t>(bytes));
    block->unref();
  });
}

} // namespace fhr::python
