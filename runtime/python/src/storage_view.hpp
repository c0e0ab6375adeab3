#pragma once
/// \file
/// StorageView: the bytes of one replica, lent to Python to rebuild a value
/// over them without a copy. Host memory is read through the buffer
/// protocol (read-only: leased values are not to be changed); any memory
/// is handed to PyTorch and other frameworks as a DLPack capsule. A view
/// holds a reference to the storage, so the bytes outlive the replica if
/// Python keeps a value past its lease.

#include "binding.hpp"
#include "python_backend.hpp"

namespace fhr::python {

struct StorageView {
  StorageView(SharedBlock *shared, std::byte *bytes, std::size_t size, Location at, bool on_device)
      : block(shared), data(bytes), nbytes(size), location(at), device_memory(on_device) {}
  StorageView(const StorageView &) = delete;
  StorageView &operator=(const StorageView &) = delete;
  ~StorageView() {
    if (block) block->unref();
  }
  SharedBlock *block; ///< one reference, owned
  std::byte *data;
  std::size_t nbytes;
  Location location;
  /// CUDA device memory (not readable by the host); false for host memory,
  /// the simulated backend's devices included.
  bool device_memory;
};

} // namespace fhr::python
