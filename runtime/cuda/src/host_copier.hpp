#pragma once
// Parallel host memcpy for staged transfers: one thread copies pageable
// memory at 8-12 GB/s, below what a PCIe Gen5 link moves, so the copy of
// each chunk is split over a few persistent workers. One caller at a time:
// the CUDA backend holds its staging mutex around every use.
#include "streaming_copy.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace fhr {

class HostCopier {
public:
  /// `streaming`: copies write with non-temporal stores (streaming_copy.hpp).
  HostCopier(unsigned workers, bool streaming) : streaming_(streaming) {
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
  void piece_of(std::byte *to, const std::byte *from, std::size_t n) const {
    if (from) {
      if (streaming_)
        copy_streaming(to, from, n);
      else
        std::memcpy(to, from, n);
      return;
    }
    for (std::size_t offset = 0; offset < n; offset += 4096)
      static_cast<volatile std::byte *>(to)[offset] = std::byte{0};
  }

  /// Copies (touches) in pieces that the caller and the workers claim one
  /// at a time, and returns once every piece is done, not once every worker
  /// has woken: a worker the scheduler wakes late (16 threads on 16 cores)
  /// finds the pieces taken instead of holding the whole chunk back, which
  /// made a staged 124 MiB transfer take 4.8-17.6 ms on the H200 machine.
  void run(std::byte *to, const std::byte *from, std::size_t n) {
    // Touches go by huge page (a page two threads fault at once is faulted
    // once, the other waits); copies in smaller pieces, to balance.
    const std::size_t piece = from ? kCopyPiece : kTouchPiece;
    if (n < (std::size_t{1} << 20) || threads_.empty()) {
      piece_of(to, from, n);
      return;
    }
    const Job job{to, from, n, piece, (n + piece - 1) / piece};
    std::uint32_t generation = 0;
    {
      std::lock_guard lock(mutex_);
      job_ = job;
      finished_ = 0;
      generation = ++generation_;
      claim_.store(std::uint64_t{generation} << 32);
    }
    wake_.notify_all();
    work_on(generation, job);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return finished_ == job.pieces; });
  }

  struct Job {
    std::byte *to = nullptr;
    const std::byte *from = nullptr;
    std::size_t n = 0, piece = 0, pieces = 0;
  };

  /// Claims pieces of job `generation` and does them until none is left.
  /// A claim is the job's generation and the next piece in one word, so a
  /// worker still holding an older job's pointers never takes a piece of a
  /// newer one.
  void work_on(std::uint32_t generation, const Job &job) {
    std::size_t finished = 0;
    std::uint64_t claim = claim_.load();
    for (;;) {
      if (claim >> 32 != generation || (claim & 0xffffffffu) >= job.pieces) break;
      if (!claim_.compare_exchange_weak(claim, claim + 1)) continue;
      const std::size_t offset = static_cast<std::size_t>(claim & 0xffffffffu) * job.piece;
      piece_of(job.to + offset, job.from ? job.from + offset : nullptr, std::min(job.piece, job.n - offset));
      ++finished;
      claim = claim_.load();
    }
    if (finished == 0) return;
    // Pieces of this job were claimed, so its caller still waits for them:
    // the count is this job's.
    std::lock_guard lock(mutex_);
    finished_ += finished;
    if (finished_ == job.pieces) done_.notify_one();
  }

  void work() {
    std::uint32_t seen = 0;
    for (;;) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      const Job job = job_;
      lock.unlock();
      work_on(seen, job);
    }
  }

  static constexpr std::size_t kCopyPiece = std::size_t{512} << 10;
  static constexpr std::size_t kTouchPiece = std::size_t{2} << 20;

  const bool streaming_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  bool stopping_ = false;
  std::uint32_t generation_ = 0;
  Job job_;
  std::size_t finished_ = 0; ///< pieces of the current job done
  std::atomic<std::uint64_t> claim_{0};
};

} // namespace fhr
