#pragma once
// Parallel host memcpy for staged transfers: one thread copies pageable
// memory at 8-12 GB/s, below what a PCIe Gen5 link moves, so the copy of
// each chunk is split over a few persistent workers.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace fhr {

class HostCopier {
public:
  explicit HostCopier(unsigned workers) {
    for (unsigned i = 0; i < workers; ++i)
      threads_.emplace_back([this] { work(); });
  }
  ~HostCopier() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : threads_)
      t.join();
  }
  HostCopier(const HostCopier &) = delete;
  HostCopier &operator=(const HostCopier &) = delete;

  /// Copies `n` bytes with the workers and the calling thread; returns when done.
  void copy(std::byte *to, const std::byte *from, std::size_t n) { run(to, from, n); }

  /// Writes one byte of every page of the `n` bytes at `to` (their content
  /// is to be overwritten): fresh pages are faulted in by all the threads
  /// at once, while the caller has nothing else to do.
  void touch(std::byte *to, std::size_t n) { run(to, nullptr, n); }

private:
  /// One piece of a job: a copy, or with no source a touch of its pages.
  static void piece_of(std::byte *to, const std::byte *from, std::size_t n) {
    if (from) {
      std::memcpy(to, from, n);
      return;
    }
    for (std::size_t offset = 0; offset < n; offset += 4096)
      static_cast<volatile std::byte *>(to)[offset] = std::byte{0};
  }

  void run(std::byte *to, const std::byte *from, std::size_t n) {
    const std::size_t parts = threads_.size() + 1;
    const std::size_t piece = (n / parts + 4095) / 4096 * 4096; // page-aligned pieces
    if (n < (std::size_t{1} << 20) || piece == 0) {
      piece_of(to, from, n);
      return;
    }
    {
      std::lock_guard lock(mutex_);
      to_ = to;
      from_ = from;
      n_ = n;
      piece_ = piece;
      next_.store(1); // piece 0 is the caller's
      pending_ = threads_.size();
      ++generation_;
    }
    wake_.notify_all();
    piece_of(to, from, std::min(piece, n));
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
  }

  void work() {
    std::uint64_t seen = 0;
    for (;;) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      std::byte *to = to_;
      const std::byte *from = from_;
      const std::size_t n = n_, piece = piece_;
      lock.unlock();
      for (std::size_t i = next_.fetch_add(1); i * piece < n; i = next_.fetch_add(1))
        piece_of(to + i * piece, from ? from + i * piece : nullptr, std::min(piece, n - i * piece));
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  bool stopping_ = false;
  std::uint64_t generation_ = 0;
  std::byte *to_ = nullptr;
  const std::byte *from_ = nullptr;
  std::size_t n_ = 0, piece_ = 0, pending_ = 0;
  std::atomic<std::size_t> next_{0};
};

} // namespace fhr
