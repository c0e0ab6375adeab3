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
#include <functional>
#include <mutex>
#include <stdexcept>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace fhr {

class HostCopier {
public:
  /// What a job does with its piece number `i`.
  using Task = std::function<void(std::size_t i)>;

  /// How touch() faults pages in: madvise(MADV_POPULATE_WRITE), falling
  /// back to writes where the kernel refuses it, or writes alone (what a
  /// kernel before Linux 5.14 gets; for tests).
  enum class TouchBy { populate, writes };

  /// `streaming`: copies write with non-temporal stores (streaming_copy.hpp).
  HostCopier(unsigned workers, bool streaming, TouchBy touch_by = TouchBy::populate)
      : streaming_(streaming), touch_by_(touch_by) {
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

  /// The worker threads (the caller of copy() and touch() copies too).
  unsigned workers() const { return static_cast<unsigned>(threads_.size()); }

  /// Copies `n` bytes with the workers and the calling thread; returns when done.
  void copy(std::byte *to, const std::byte *from, std::size_t n) {
    if (n < kParallelMinimum || threads_.empty()) return copy_piece(to, from, n);
    const Task task = [&](std::size_t i) {
      const std::size_t offset = i * kCopyPiece;
      copy_piece(to + offset, from + offset, std::min(kCopyPiece, n - offset));
    };
    run((n + kCopyPiece - 1) / kCopyPiece, task);
  }

  /// Faults in every page of the `n` bytes at `to` for writing (their
  /// content is to be overwritten): fresh pages are faulted in by all the
  /// threads at once, while the caller has nothing else to do. By huge
  /// page: a page two threads fault at once is faulted once, the other
  /// waits.
  void touch(std::byte *to, std::size_t n) {
    if (n < kParallelMinimum || threads_.empty()) return touch_piece(to, n);
    const Task task = [&](std::size_t i) {
      const std::size_t offset = i * kTouchPiece;
      touch_piece(to + offset, std::min(kTouchPiece, n - offset));
    };
    run((n + kTouchPiece - 1) / kTouchPiece, task);
  }

  /// Faults in the pages of the `count` bytes at `at` for writing, on the
  /// calling thread: madvise(MADV_POPULATE_WRITE) over the pages they lie
  /// on, which leaves every byte as it is and costs a page-table walk where
  /// the pages are in already; where the kernel refuses it (before Linux
  /// 5.14), or with TouchBy::writes, a write of a zero at `at` and at each
  /// page boundary after it, inside the `count` bytes alone.
  void touch_piece(std::byte *at, std::size_t count) const {
    if (count == 0) return;
    static const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(at);
    const std::uintptr_t first = address / page * page;
    const std::uintptr_t end = (address + count + page - 1) / page * page;
    if (touch_by_ == TouchBy::populate &&
        ::madvise(reinterpret_cast<void *>(first), end - first, kPopulateWrite) == 0)
      return;
    for (std::uintptr_t next = address; next < address + count; next = (next / page + 1) * page)
      *reinterpret_cast<volatile std::byte *>(next) = std::byte{0};
  }

  /// One piece of a copy, on the calling thread, with the copier's stores.
  void copy_piece(std::byte *to, const std::byte *from, std::size_t n) const {
    if (streaming_)
      copy_streaming(to, from, n);
    else
      std::memcpy(to, from, n);
  }

  /// Hands pieces 0 to `pieces` - 1 of `task` to the workers alone and
  /// returns at once, so that the caller can do something else meanwhile
  /// (drive the DMAs of a staged transfer, staging_ring.hpp); finish()
  /// waits for them. One job at a time: each start() is followed by its
  /// finish() before the next job. `task` must live until finish() and
  /// must not throw (it runs on the workers' threads). Needs workers.
  void start(std::size_t pieces, const Task &task) {
    if (threads_.empty()) throw std::logic_error("host copier: start() needs workers");
    post(Job{&task, pieces});
  }
  /// Returns once every piece of the started job is done.
  void finish() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return finished_ == job_.pieces; });
  }

  /// The pieces the copier hands out: 512 KiB for copies, to balance; huge
  /// pages for touches.
  static constexpr std::size_t kCopyPiece = std::size_t{512} << 10;
  static constexpr std::size_t kTouchPiece = std::size_t{2} << 20;

private:
  /// A job: `pieces` calls of `*task`, claimed one at a time.
  struct Job {
    const Task *task = nullptr;
    std::size_t pieces = 0;
  };

  /// Publishes `job` to the workers and wakes them.
  std::uint32_t post(const Job &job) {
    std::uint32_t generation = 0;
    {
      std::lock_guard lock(mutex_);
      job_ = job;
      finished_ = 0;
      generation = ++generation_;
      claim_.store(std::uint64_t{generation} << 32);
    }
    wake_.notify_all();
    return generation;
  }

  /// Runs the pieces of `task` on the caller and the workers, which claim
  /// them one at a time, and returns once every piece is done, not once
  /// every worker has woken: a worker the scheduler wakes late (16 threads
  /// on 16 cores) finds the pieces taken instead of holding the whole
  /// chunk back, which made a staged 124 MiB transfer take 4.8-17.6 ms on
  /// the H200 machine.
  void run(std::size_t pieces, const Task &task) {
    const Job job{&task, pieces};
    work_on(post(job), job);
    finish();
  }

  /// Claims pieces of job `generation` and does them until none is left.
  /// A claim is the job's generation and the next piece in one word, so a
  /// worker still holding an older job's task never takes a piece of a
  /// newer one (and never calls a task that has returned).
  void work_on(std::uint32_t generation, const Job &job) {
    std::size_t finished = 0;
    std::uint64_t claim = claim_.load();
    for (;;) {
      if (claim >> 32 != generation || (claim & 0xffffffffu) >= job.pieces) break;
      if (!claim_.compare_exchange_weak(claim, claim + 1)) continue;
      (*job.task)(static_cast<std::size_t>(claim & 0xffffffffu));
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

  /// madvise's advice to fault pages in writable (Linux 5.14; older C
  /// libraries do not name it).
#ifdef MADV_POPULATE_WRITE
  static constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
  static constexpr int kPopulateWrite = 23;
#endif

  /// Below this a copy (touch) runs on the caller alone.
  static constexpr std::size_t kParallelMinimum = std::size_t{1} << 20;

  const bool streaming_;
  const TouchBy touch_by_;
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
