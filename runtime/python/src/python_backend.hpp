#pragma once
/// \file
/// The backend a Python manager runs on: the chosen backend (host,
/// simulated devices, CUDA) behind a layer that
///  - keeps every replica's address range, so that adopting a value whose
///    memory intersects managed storage is refused (§2.7), and so that a
///    lease can find the storage behind the bytes it lends;
///  - counts references to the storage it hands out, so that a value
///    rebuilt over a replica (a NumPy array, a tensor from DLPack) keeps
///    its bytes alive if Python holds it past its lease: the replica's
///    accounting ends with the replica, the memory with the last view;
///  - on a CUDA allocation failure, asks PyTorch to return its cached
///    blocks (torch.cuda.empty_cache) and tries once more.

#include "fhr/runtime/backend.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace fhr::python {

/// Storage handed out by the inner backend, shared by the manager's
/// replica and any views over it.
class SharedBlock {
public:
  SharedBlock(Storage storage, std::shared_ptr<Backend> backend)
      : storage_(std::move(storage)), backend_(std::move(backend)) {}
  void ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  /// Frees the storage with the last reference.
  void unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  std::byte *data() { return storage_.bytes().data(); }
  std::size_t size() const { return storage_.size(); }

private:
  ~SharedBlock() = default;
  std::atomic<long> refs_{1};
  Storage storage_;
  std::shared_ptr<Backend> backend_; ///< outlives its storage
};

/// The address ranges of every replica the manager keeps.
class StorageRegistry {
public:
  /// Is any byte of [begin, end) managed? Empty ranges never are.
  bool overlaps(std::uintptr_t begin, std::uintptr_t end) const;
  void add(std::uintptr_t begin, std::uintptr_t end, SharedBlock *block);
  void remove(std::uintptr_t begin);
  /// The block that starts at `begin`, with a new reference; nullptr for
  /// adopted memory and unknown addresses.
  SharedBlock *share(std::uintptr_t begin) const;

private:
  struct Entry {
    std::uintptr_t end;
    SharedBlock *block;
  };
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, Entry> ranges_;
};

class PythonBackend final : public Backend {
public:
  /// `cuda`: the inner backend is the CUDA backend (its device locations
  /// are device memory, not host memory).
  PythonBackend(std::shared_ptr<Backend> inner, bool cuda) : inner_(std::move(inner)), cuda_(cuda) {}

  StorageRegistry &registry() { return registry_; }
  bool cuda() const { return cuda_; }
  Backend &inner() { return *inner_; }

  DeviceConfig devices() const override { return inner_->devices(); }
  Storage allocate(Location location, std::size_t nbytes) override;
  void copy(const Storage &from, Storage &to, Stream stream) override { inner_->copy(from, to, stream); }
  bool overlaps_copies() const override { return inner_->overlaps_copies(); }
  CopyInFlight begin_copy(const Storage &from, Storage &to, Stream stream) override {
    return inner_->begin_copy(from, to, stream);
  }
  void finish_copy(CopyInFlight copy) override { inner_->finish_copy(copy); }
  std::optional<PoolFigures> pool_figures(Location location) const override {
    return inner_->pool_figures(location);
  }
  void read(const Storage &from, std::span<std::byte> out) override { inner_->read(from, out); }
  void before_load() override { inner_->before_load(); }
  std::optional<Location> stream_location(Stream stream) const override {
    return inner_->stream_location(stream);
  }
  Event record_event(Stream stream) override { return inner_->record_event(stream); }
  bool event_complete(Event event) override { return inner_->event_complete(event); }
  void synchronize(Event event) override { inner_->synchronize(event); }
  void destroy_event(Event event) noexcept override { inner_->destroy_event(event); }
  void synchronize_stream(Stream stream) override { inner_->synchronize_stream(stream); }
  void synchronize_device(Location device) override { inner_->synchronize_device(device); }

private:
  Storage allocate_inner(Location location, std::size_t nbytes);
  std::shared_ptr<Backend> inner_;
  bool cuda_;
  StorageRegistry registry_;
};

} // namespace fhr::python
