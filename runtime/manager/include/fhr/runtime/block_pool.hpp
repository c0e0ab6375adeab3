#pragma once
/// \file
/// Freed blocks of one costly kind of memory (page-locked host memory:
/// pinning 256 MiB costs about 100 ms) kept by exact size for reuse, up to a
/// bound; beyond it, blocks go back to the system. Counts what it has handed
/// out and what it keeps, for snapshots (PoolFigures). Thread-safe.

#include "fhr/runtime/memory_resource.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

namespace fhr {

template <typename Block>
class BlockPool {
public:
  /// `make` gets fresh memory (may throw), `release` returns it to the system.
  BlockPool(std::uint64_t limit_bytes, std::function<Block(std::size_t)> make,
            std::function<void(Block, std::size_t)> release)
      : limit_(limit_bytes), make_(std::move(make)), release_(std::move(release)) {}
  ~BlockPool() { trim(); }
  BlockPool(const BlockPool &) = delete;
  BlockPool &operator=(const BlockPool &) = delete;

  Block take(std::size_t nbytes) {
    {
      std::lock_guard lock(mutex_);
      if (auto it = free_.find(nbytes); it != free_.end()) {
        Block block = it->second;
        free_.erase(it);
        kept_ -= nbytes;
        in_use_ += nbytes;
        return block;
      }
    }
    Block block = make_(nbytes); // outside the lock: pinning takes long
    std::lock_guard lock(mutex_);
    in_use_ += nbytes;
    return block;
  }

  void give_back(Block block, std::size_t nbytes) {
    {
      std::lock_guard lock(mutex_);
      in_use_ -= nbytes;
      if (kept_ + nbytes <= limit_) {
        free_.emplace(nbytes, block);
        kept_ += nbytes;
        return;
      }
    }
    release_(block, nbytes);
  }

  /// Returns every kept block to the system, and stops keeping new ones.
  void trim() {
    std::multimap<std::size_t, Block> kept;
    {
      std::lock_guard lock(mutex_);
      kept.swap(free_);
      kept_ = 0;
      limit_ = 0;
    }
    for (auto &[size, block] : kept)
      release_(block, size);
  }

  PoolFigures figures() const {
    std::lock_guard lock(mutex_);
    return PoolFigures{in_use_, kept_, std::nullopt};
  }

private:
  mutable std::mutex mutex_;
  std::multimap<std::size_t, Block> free_;
  std::uint64_t kept_ = 0, in_use_ = 0;
  std::uint64_t limit_;
  std::function<Block(std::size_t)> make_;
  std::function<void(Block, std::size_t)> release_;
};

} // namespace fhr
