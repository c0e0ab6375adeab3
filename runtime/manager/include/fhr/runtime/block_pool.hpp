#pragma once
/// \file
/// Freed blocks of one costly kind of memory (page-locked host memory:
/// pinning 256 MiB costs about 100 ms) kept by the size asked for (the
/// caller rounds it to its blocks' granularity) for reuse, up to a
/// bound; beyond it, blocks go back to the system. Counts what it has handed
/// out and what it keeps, for snapshots (PoolFigures). Thread-safe.
///
/// A Storage over a pool's block may outlive the memory resource that made
/// it (memory_resource.hpp), so the pool lives until both its owner (make()'s
/// handle) and every block it handed out are gone: the last of them deletes
/// it. That lets a Storage's release function hold the pool by plain pointer
/// (releaser()): small enough for std::function's inline buffer, so taking a
/// pooled block allocates nothing on the heap, where a captured shared_ptr
/// cost an allocation and two atomic counts per transition.

#include "fhr/runtime/memory_resource.hpp"
#include "fhr/runtime/storage.hpp"

#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace fhr {

template <typename Block>
class BlockPool {
  /// The owner's end of the pool's life (see the file comment).
  struct Retire {
    void operator()(BlockPool *pool) const { pool->retire(); }
  };

public:
  /// The handle its owner keeps; dropping it trims the pool, which then
  /// lives on only until the last block it handed out comes back.
  using Owner = std::unique_ptr<BlockPool, Retire>;

  /// `make` gets fresh memory (may throw), `release` returns it to the system.
  static Owner make(std::uint64_t limit_bytes, std::function<Block(std::size_t)> make,
                    std::function<void(Block, std::size_t)> release) {
    return Owner(new BlockPool(limit_bytes, std::move(make), std::move(release)));
  }
  BlockPool(const BlockPool &) = delete;
  BlockPool &operator=(const BlockPool &) = delete;

  Block take(std::size_t nbytes) {
    {
      std::lock_guard lock(mutex_);
      if (auto it = free_.find(nbytes); it != free_.end() && !it->second.empty()) {
        Block block = it->second.back();
        it->second.pop_back();
        kept_ -= nbytes;
        in_use_ += nbytes;
        ++handed_out_;
        return block;
      }
    }
    Block block = make_(nbytes); // outside the lock: pinning takes long
    std::lock_guard lock(mutex_);
    in_use_ += nbytes;
    ++handed_out_;
    return block;
  }

  void give_back(Block block, std::size_t nbytes) {
    {
      std::lock_guard lock(mutex_);
      if (!retired_ && kept_ + nbytes <= limit_) {
        in_use_ -= nbytes;
        --handed_out_;
        free_[nbytes].push_back(block);
        kept_ += nbytes;
        return;
      }
    }
    // The block counts as handed out until it is back with the system: the
    // pool (and release_) stays alive until then, whoever retires it.
    release_(block, nbytes);
    bool last = false;
    {
      std::lock_guard lock(mutex_);
      in_use_ -= nbytes;
      last = --handed_out_ == 0 && !owned_;
    }
    if (last) delete this;
  }

  /// A Storage's release function for a block of `nbytes` this pool handed
  /// out: gives it back. Trivially copyable and two words, so it lives in
  /// std::function's inline buffer.
  Storage::Release releaser(std::size_t nbytes) requires std::same_as<Block, std::byte *> {
    return [this, nbytes](std::byte *block) { give_back(block, nbytes); };
  }

  /// Warm-up: makes blocks so that one of each of `sizes` (a size may
  /// repeat) is kept, counting the blocks already kept, as far as the bound
  /// allows. Returns the bytes it made. Throws what `make` throws; the
  /// blocks made before stay kept.
  std::uint64_t reserve(std::span<const std::size_t> sizes) {
    std::map<std::size_t, std::size_t> wanted;
    for (std::size_t nbytes : sizes)
      ++wanted[nbytes];
    std::uint64_t made = 0;
    for (const auto &[nbytes, count] : wanted) {
      std::size_t have = 0;
      {
        std::lock_guard lock(mutex_);
        if (auto it = free_.find(nbytes); it != free_.end()) have = it->second.size();
      }
      for (std::size_t k = have; k < count; ++k) {
        {
          std::lock_guard lock(mutex_);
          if (kept_ + nbytes > limit_) return made;
        }
        Block block = make_(nbytes); // outside the lock: pinning takes long
        std::lock_guard lock(mutex_);
        free_[nbytes].push_back(block);
        kept_ += nbytes;
        made += nbytes;
      }
    }
    return made;
  }

  /// Returns every kept block to the system, and stops keeping new ones.
  void trim() { release_kept(/*retiring=*/false); }

  PoolFigures figures() const {
    std::lock_guard lock(mutex_);
    return PoolFigures{in_use_, kept_, std::nullopt};
  }

private:
  BlockPool(std::uint64_t limit_bytes, std::function<Block(std::size_t)> make,
            std::function<void(Block, std::size_t)> release)
      : limit_(limit_bytes), make_(std::move(make)), release_(std::move(release)) {}
  ~BlockPool() = default;

  /// The owner let go: the kept blocks go back to the system, and the pool
  /// is deleted now if no block is out, else by the last give_back(). The
  /// pool stops keeping blocks and takes the kept ones in one critical
  /// section (give_back keeps only while not retired), and stays owned
  /// until they are released, so that no give_back can delete it meanwhile.
  void retire() {
    release_kept(/*retiring=*/true);
    bool last = false;
    {
      std::lock_guard lock(mutex_);
      owned_ = false;
      last = handed_out_ == 0;
    }
    if (last) delete this;
  }

  /// trim(): the kept blocks taken in one critical section (with the pool
  /// retired in it when `retiring`), then given back to the system.
  void release_kept(bool retiring) {
    std::map<std::size_t, std::vector<Block>> kept;
    {
      std::lock_guard lock(mutex_);
      retired_ = retired_ || retiring;
      kept.swap(free_);
      kept_ = 0;
      limit_ = 0;
    }
    for (auto &[size, blocks] : kept)
      for (Block block : blocks)
        release_(block, size);
  }

  mutable std::mutex mutex_;
  /// Kept blocks by size: a size's list keeps its capacity, so that taking
  /// and giving back a block of a size seen before allocates nothing.
  std::map<std::size_t, std::vector<Block>> free_;
  std::uint64_t kept_ = 0, in_use_ = 0;
  /// Blocks handed out and not given back yet.
  std::uint64_t handed_out_ = 0;
  /// Keeps no more blocks (the owner is letting go).
  bool retired_ = false;
  /// The owner still holds the pool: until then, no give_back deletes it.
  bool owned_ = true;
  std::uint64_t limit_;
  std::function<Block(std::size_t)> make_;
  std::function<void(Block, std::size_t)> release_;
};

} // namespace fhr
