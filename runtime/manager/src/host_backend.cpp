// The host backend: pageable and pinned host memory, no devices (docs/runtime.md).
#include "fhr/runtime/backend.hpp"
#include "fhr/runtime/block_pool.hpp"

#include "block_registry.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace fhr {

namespace {

std::size_t page_size() {
  const long size = ::sysconf(_SC_PAGESIZE);
  return size > 0 ? static_cast<std::size_t>(size) : 4096;
}

/// A page-aligned block, locked with mlock where the process may (a block
/// the process could not lock is pinned in name only: munlock on it is
/// harmless).
std::byte *lock_block(std::size_t rounded) {
  void *memory = std::aligned_alloc(page_size(), rounded);
  if (!memory) throw std::bad_alloc();
  ::mlock(memory, rounded);
  return static_cast<std::byte *>(memory);
}

void unlock_block(std::byte *block, std::size_t rounded) {
  ::munlock(block, rounded);
  std::free(block);
}

using PinnedPool = BlockPool<std::byte *>;

/// The pool, with every block it owns (handed out or kept) in `blocks`:
/// registered when it is made, not on every reuse, so that locate() costs
/// a transition nothing.
PinnedPool::Owner make_pinned_pool(const std::shared_ptr<BlockRegistry> &blocks) {
  return PinnedPool::make(
      std::size_t{64} << 20,
      [blocks](std::size_t rounded) {
        std::byte *block = lock_block(rounded);
        blocks->add(block, rounded, Location::pinned());
        return block;
      },
      [blocks](std::byte *block, std::size_t rounded) {
        blocks->remove(block);
        unlock_block(block, rounded);
      });
}

class HostBackend final : public Backend {
public:
  DeviceConfig devices() const override { return DeviceConfig{false, 0}; }

  Storage allocate(Location location, std::size_t nbytes) override {
    if (location.is_cuda()) throw BackendError("the host backend has no " + location.name());
    // aligned_alloc wants a size that is a multiple of the alignment and
    // non-zero; the value's bytes are the first nbytes.
    if (location == Location::pinned()) {
      const std::size_t rounded = round_up(nbytes, page_size());
      return Storage(pinned_->take(rounded), nbytes, location, pinned_->releaser(rounded));
    }
    void *memory = std::aligned_alloc(64, round_up(nbytes, 64));
    if (!memory) throw std::bad_alloc();
    return Storage(static_cast<std::byte *>(memory), nbytes, location,
                   [](std::byte *data) { std::free(data); });
  }

  /// Warm-up: locks the pinned blocks ahead (pageable memory is not pooled).
  std::uint64_t prepare(Location location, std::span<const std::size_t> block_sizes) override {
    if (location != Location::pinned()) return 0;
    std::vector<std::size_t> rounded;
    rounded.reserve(block_sizes.size());
    for (std::size_t nbytes : block_sizes)
      rounded.push_back(round_up(nbytes, page_size()));
    return pinned_->reserve(rounded);
  }

  /// Pinned blocks in use and kept (in whole pages).
  std::optional<PoolFigures> pool_figures(Location location) const override {
    if (location != Location::pinned()) return std::nullopt;
    return pinned_->figures();
  }

  /// Pinned inside a block of its pinned pool, pageable elsewhere.
  std::optional<Location> locate(const std::byte *data, std::size_t nbytes) const override {
    return pinned_blocks_->locate(data, nbytes);
  }

  void copy(const Storage &from, Storage &to, Stream) override {
    if (from.size() != to.size()) throw BackendError("copy between storages of different sizes");
    if (from.size() != 0) std::memcpy(to.bytes().data(), from.bytes().data(), from.size());
  }

private:
  static std::size_t round_up(std::size_t nbytes, std::size_t alignment) {
    return ((nbytes == 0 ? 1 : nbytes) + alignment - 1) / alignment * alignment;
  }

  /// Freed pinned blocks kept for reuse, up to 64 MiB, so that values moving
  /// in and out of pinned memory do not pay for mlock, munlock and fresh
  /// page faults every time. Both outlive the backend while a storage of
  /// theirs does (block_pool.hpp).
  std::shared_ptr<BlockRegistry> pinned_blocks_ = std::make_shared<BlockRegistry>();
  PinnedPool::Owner pinned_ = make_pinned_pool(pinned_blocks_);
};

} // namespace

std::unique_ptr<Backend> make_host_backend() { return std::make_unique<HostBackend>(); }

} // namespace fhr
