#pragma once
/// \file
/// The memory resource a Python manager allocates through: the chosen
/// backend's memory resource (host, simulated devices, CUDA) behind an
/// adaptor (RMM's pattern) that
///  - counts references to the storage it hands out, so that a value
///    rebuilt over a replica (a NumPy array, a tensor from DLPack) keeps
///    its bytes alive if Python holds it past its lease: the replica's
///    accounting ends with the replica, the memory with the last view;
///  - on a CUDA allocation failure, asks PyTorch to return its cached
///    blocks (torch.cuda.empty_cache) and tries once more.
/// Copies and streams go to the backend unchanged. Overlapping adopted
/// buffers are refused by the runtime's ownership index (§2.7).

#include "fhr/runtime/memory_resource.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace fhr::python {

/// Storage handed out by the inner resource, shared by the manager's
/// replica and any views over it.
class SharedBlock {
public:
  SharedBlock(Storage storage, std::shared_ptr<MemoryResource> resource)
      : storage_(std::move(storage)), resource_(std::move(resource)) {}
  void ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  /// Frees the storage with the last reference.
  void unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

private:
  ~SharedBlock() = default;
  std::atomic<long> refs_{1};
  Storage storage_;
  std::shared_ptr<MemoryResource> resource_; ///< outlives its storage
};

class PythonMemory final : public MemoryResource {
public:
  /// `cuda`: the inner resource is the CUDA backend's (its device locations
  /// are device memory, shared with PyTorch's caching allocator).
  PythonMemory(std::shared_ptr<MemoryResource> inner, bool cuda) : inner_(std::move(inner)), cuda_(cuda) {}

  /// The block of the replica whose first byte is `begin`, with a new
  /// reference; nullptr for adopted memory and unknown addresses.
  SharedBlock *share(const std::byte *begin) const;

  DeviceConfig devices() const override { return inner_->devices(); }
  Storage allocate(Location location, std::size_t nbytes) override;
  std::optional<PoolFigures> pool_figures(Location location) const override {
    return inner_->pool_figures(location);
  }
  std::optional<Location> locate(const std::byte *data, std::size_t nbytes) const override {
    return inner_->locate(data, nbytes);
  }

private:
  Storage allocate_inner(Location location, std::size_t nbytes);
  std::shared_ptr<MemoryResource> inner_;
  bool cuda_;
  mutable std::mutex mutex_;
  std::map<const std::byte *, SharedBlock *> replicas_; ///< by first byte, while the manager holds them
};

} // namespace fhr::python
