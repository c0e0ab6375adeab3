#include "fhr/runtime/backend.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

namespace fhr {

namespace {

std::size_t page_size() {
  const long size = ::sysconf(_SC_PAGESIZE);
  return size > 0 ? static_cast<std::size_t>(size) : 4096;
}

/// Page-locked blocks kept after their replica goes, by rounded size, so
/// that values moving in and out of pinned memory do not pay for mlock,
/// munlock and fresh page faults every time. Bounded: beyond the limit
/// blocks are unlocked and freed.
class PinnedPool {
public:
  explicit PinnedPool(std::size_t limit_bytes) : limit_(limit_bytes) {}
  ~PinnedPool() {
    for (auto &[size, block] : free_)
      release(block, size);
  }

  struct Block {
    std::byte *data = nullptr;
    bool locked = false;
  };

  Block take(std::size_t rounded) {
    {
      std::lock_guard lock(mutex_);
      if (auto it = free_.find(rounded); it != free_.end()) {
        const Block block = it->second;
        free_.erase(it);
        kept_ -= rounded;
        return block;
      }
    }
    void *memory = std::aligned_alloc(page_size(), rounded);
    if (!memory) throw std::bad_alloc();
    return Block{static_cast<std::byte *>(memory), ::mlock(memory, rounded) == 0};
  }

  void give_back(Block block, std::size_t rounded) {
    {
      std::lock_guard lock(mutex_);
      if (kept_ + rounded <= limit_) {
        free_.emplace(rounded, block);
        kept_ += rounded;
        return;
      }
    }
    release(block, rounded);
  }

private:
  static void release(Block block, std::size_t rounded) {
    if (block.locked) ::munlock(block.data, rounded);
    std::free(block.data);
  }

  std::mutex mutex_;
  std::multimap<std::size_t, Block> free_;
  std::size_t kept_ = 0;
  std::size_t limit_;
};

class HostBackend final : public Backend {
public:
  DeviceConfig devices() const override { return DeviceConfig{false, 0}; }

  Storage allocate(Location location, std::size_t nbytes) override {
    if (location.is_cuda()) throw BackendError("the host backend has no " + location.name());
    // aligned_alloc wants a size that is a multiple of the alignment and
    // non-zero; the value's bytes are the first nbytes.
    if (location == Location::pinned()) {
      const std::size_t rounded = round_up(nbytes, page_size());
      const PinnedPool::Block block = pinned_->take(rounded);
      return Storage(block.data, nbytes, location, [pool = pinned_, block, rounded](std::byte *) {
        pool->give_back(block, rounded);
      });
    }
    void *memory = std::aligned_alloc(64, round_up(nbytes, 64));
    if (!memory) throw std::bad_alloc();
    return Storage(static_cast<std::byte *>(memory), nbytes, location, [](std::byte *data) { std::free(data); });
  }

  void copy(const Storage &from, Storage &to, Stream) override {
    if (from.size() != to.size()) throw BackendError("copy between storages of different sizes");
    if (from.size() != 0) std::memcpy(to.bytes().data(), from.bytes().data(), from.size());
  }

private:
  static std::size_t round_up(std::size_t nbytes, std::size_t alignment) {
    return ((nbytes == 0 ? 1 : nbytes) + alignment - 1) / alignment * alignment;
  }

  /// Shared with the storages, which may outlive the backend.
  std::shared_ptr<PinnedPool> pinned_ = std::make_shared<PinnedPool>(std::size_t{64} << 20);
};

} // namespace

std::unique_ptr<Backend> make_host_backend() { return std::make_unique<HostBackend>(); }

} // namespace fhr
