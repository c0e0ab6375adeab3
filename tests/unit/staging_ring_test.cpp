// The ring of staged transfers (runtime/cuda/src/staging_ring.hpp) against a
// stand-in DMA engine: a thread that runs the started slots' copies in
// order, each after a random delay, as a copy engine runs a stream. A
// worker that wrote a slot before its DMA had read it, or a DMA that
// refilled a slot before its bytes were copied out, shows as wrong bytes.
#include "../../runtime/cuda/src/staging_ring.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <future>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

std::vector<std::byte> pattern(std::size_t n, std::uint8_t seed) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i)
    bytes[i] = static_cast<std::byte>((i * 251 + i / 4096 + seed) & 0xff);
  return bytes;
}

/// A copy engine with one queue: slot DMAs run in the order started.
class StandInLink {
public:
  StandInLink(std::byte *device, bool to_device, std::size_t slots, unsigned seed)
      : device_(device), to_device_(to_device), started_(slots, 0), done_(slots, 0), random_(seed),
        engine_([this] { run(); }) {}
  ~StandInLink() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    engine_.join();
  }

  /// Throw from the `n`th start (counting from 0), or from the questions
  /// once that many DMAs are done.
  std::size_t fail_start_at = SIZE_MAX, fail_done_after = SIZE_MAX;

  void start(std::size_t slot, std::byte *slot_bytes, std::size_t offset, std::size_t n) {
    std::lock_guard lock(mutex_);
    if (starts_ == fail_start_at) throw std::runtime_error("start failed");
    ++starts_;
    queue_.push_back(Dma{slot, slot_bytes, offset, n});
    ++started_[slot];
    changed_.notify_all();
  }
  bool done(std::size_t slot) {
    std::lock_guard lock(mutex_);
    if (finished_ >= fail_done_after) throw std::runtime_error("query failed");
    return done_[slot] == started_[slot];
  }
  /// Blocks until every started DMA is done (a stream's synchronize).
  void drain() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
  }
  std::size_t starts() const { return starts_; }

private:
  struct Dma {
    std::size_t slot;
    std::byte *slot_bytes;
    std::size_t offset, n;
  };
  void run() {
    for (;;) {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      const Dma dma = queue_.front();
      queue_.pop_front();
      busy_ = true;
      const auto delay = std::chrono::microseconds(random_() % 200);
      lock.unlock();
      std::this_thread::sleep_for(delay);
      if (to_device_)
        std::memcpy(device_ + dma.offset, dma.slot_bytes, dma.n);
      else
        std::memcpy(dma.slot_bytes, device_ + dma.offset, dma.n);
      lock.lock();
      busy_ = false;
      ++done_[dma.slot];
      ++finished_;
      changed_.notify_all();
    }
  }

  std::byte *device_;
  bool to_device_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Dma> queue_;
  std::vector<std::uint64_t> started_, done_; ///< per slot
  std::size_t starts_ = 0, finished_ = 0;
  bool busy_ = false, stopping_ = false;
  std::minstd_rand random_;
  std::thread engine_;
};

/// A ring of `buffers` blocks of `buffer_bytes`, slots of `slot_bytes`.
struct Ring {
  std::vector<std::vector<std::byte>> memory;
  std::vector<std::byte *> pointers;
  fhr::StagingRing ring;
  Ring(std::size_t buffers, std::size_t buffer_bytes, std::size_t slot_bytes) {
    for (std::size_t b = 0; b < buffers; ++b) {
      memory.emplace_back(buffer_bytes, std::byte{0x5a});
      pointers.push_back(memory.back().data());
    }
    ring = fhr::StagingRing{pointers, buffer_bytes, slot_bytes};
  }
};

constexpr std::size_t kMiB = std::size_t{1} << 20;

} // namespace

TEST_CASE("staging ring: every byte both ways, at every size against the ring, with and without workers") {
  // Two buffers of 2 MiB in slots of 1 MiB (four slots): transfers under a
  // piece, of one slot, ragged, exactly the ring, and many times round it.
  Ring r(2, 2 * kMiB, kMiB);
  unsigned seed = 1;
  // The last copier faults destinations in by writes (a kernel before
  // Linux 5.14): its zeros must land before the copies.
  struct Copier {
    unsigned workers;
    fhr::HostCopier::TouchBy touch_by;
  };
  for (const Copier setting :
       {Copier{0, fhr::HostCopier::TouchBy::populate}, Copier{1, fhr::HostCopier::TouchBy::populate},
        Copier{7, fhr::HostCopier::TouchBy::populate}, Copier{7, fhr::HostCopier::TouchBy::writes}}) {
    const unsigned workers = setting.workers;
    const fhr::HostCopier::TouchBy touch_by = setting.touch_by;
    fhr::HostCopier copier(workers, true, touch_by);
    for (const std::size_t n :
         {std::size_t{0}, std::size_t{4093}, kMiB, kMiB + 1, 3 * kMiB + 12345, 4 * kMiB, 19 * kMiB + 777}) {
      CAPTURE(workers);
      CAPTURE(touch_by == fhr::HostCopier::TouchBy::writes);
      CAPTURE(n);
      const std::vector<std::byte> host = pattern(n, static_cast<std::uint8_t>(n + workers));
      std::vector<std::byte> device(n, std::byte{0});
      {
        StandInLink link(device.data(), true, r.ring.slots(), ++seed);
        fhr::stage_to_device(copier, r.ring, host.data(), n, link);
        link.drain();
        CHECK(link.starts() == (n + kMiB - 1) / kMiB); // one DMA a slot's worth
      }
      CHECK(device == host);
      std::vector<std::byte> back(n, std::byte{0});
      {
        StandInLink link(device.data(), false, r.ring.slots(), ++seed);
        fhr::stage_from_device(copier, r.ring, back.data(), n, link);
        CHECK(link.starts() == (n + kMiB - 1) / kMiB);
      }
      CHECK(back == host);
    }
  }
}

TEST_CASE("staging ring: slots smaller than a copier piece, and one slot per buffer") {
  for (const std::size_t slot : {std::size_t{64} << 10, 2 * kMiB}) {
    CAPTURE(slot);
    Ring r(2, 2 * kMiB, slot);
    fhr::HostCopier copier(5, false);
    const std::size_t n = 9 * kMiB + 3;
    const std::vector<std::byte> host = pattern(n, 3);
    std::vector<std::byte> device(n), back(n);
    {
      StandInLink link(device.data(), true, r.ring.slots(), 11);
      fhr::stage_to_device(copier, r.ring, host.data(), n, link);
      link.drain();
    }
    {
      StandInLink link(device.data(), false, r.ring.slots(), 12);
      fhr::stage_from_device(copier, r.ring, back.data(), n, link);
    }
    CHECK(device == host);
    CHECK(back == host);
  }
}

TEST_CASE("staging ring: a failed start or query stops the transfer with its error, and the copier goes on") {
  Ring r(2, 2 * kMiB, kMiB);
  const std::size_t n = 13 * kMiB;
  const std::vector<std::byte> host = pattern(n, 9);
  for (const unsigned workers : {6u, 0u})
    for (const bool to_device : {true, false}) {
      fhr::HostCopier copier(workers, true);
      CAPTURE(workers);
      CAPTURE(to_device);
      std::vector<std::byte> device(n), out(n);
      if (!to_device) device = host;
      auto transfer = [&](StandInLink &link) {
        if (to_device)
          fhr::stage_to_device(copier, r.ring, host.data(), n, link);
        else
          fhr::stage_from_device(copier, r.ring, out.data(), n, link);
      };
      {
        StandInLink link(device.data(), to_device, r.ring.slots(), 5);
        link.fail_start_at = 6; // the seventh slot's DMA: the ring is full by then
        CHECK_THROWS_WITH_AS(transfer(link), "start failed", std::runtime_error);
        CHECK(link.starts() == 6);
      }
      {
        StandInLink link(device.data(), to_device, r.ring.slots(), 6);
        link.fail_done_after = 2;
        CHECK_THROWS_WITH_AS(transfer(link), "query failed", std::runtime_error);
        CHECK(link.starts() < 13); // stopped before the end
      }
      // The copier's workers were all released: the next transfer is whole.
      std::vector<std::byte> again(n);
      {
        StandInLink link(to_device ? again.data() : device.data(), to_device, r.ring.slots(), 7);
        if (to_device)
          fhr::stage_to_device(copier, r.ring, host.data(), n, link);
        else
          fhr::stage_from_device(copier, r.ring, again.data(), n, link);
        link.drain();
      }
      CHECK(again == host);
    }
}

TEST_CASE("staging ring: a failure's release outlasts a completion reported after it") {
  // The count of DMAs done only grows: a failure's release (the largest
  // count) stands whatever is reported after it. (The ring's first version
  // had workers fail while the caller was about to report; a report that
  // lowered the count left a worker waiting for ever.)
  fhr::staging_detail::Progress progress(8, 0);
  progress.completed(1);
  progress.fail(std::make_exception_ptr(std::runtime_error("query failed")));
  progress.completed(2); // the caller's report, after the failure
  auto waiting = std::async(std::launch::async, [&] { progress.wait_completed(6); });
  if (waiting.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    std::fputs("staging ring: a wait for a DMA outlived the failure\n", stderr);
    std::_Exit(1); // the waiting thread is stuck on this test's objects
  }
  CHECK(progress.failed());
  CHECK_THROWS_WITH_AS(progress.rethrow(), "query failed", std::runtime_error);
  // Without a failure the count still only grows: a late report of an
  // earlier completion leaves the later one.
  fhr::staging_detail::Progress steady(4, 0);
  steady.completed(3);
  steady.completed(1);
  auto after_three = std::async(std::launch::async, [&] { steady.wait_completed(2); });
  CHECK(after_three.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
}

TEST_CASE("staging ring: a worker that waits past its spin sleeps until the DMA is reported") {
  // Beyond kSleepAfter a waiting worker sleeps on the count; the report
  // must wake it. (100 times kSleepAfter: even a worker started late on a
  // loaded machine is asleep by the report.)
  fhr::staging_detail::Progress progress(2, 0);
  auto waiting = std::async(std::launch::async, [&] { progress.wait_completed(0); });
  std::this_thread::sleep_for(fhr::staging_detail::Progress::kSleepAfter * 100);
  CHECK(waiting.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  progress.completed(1);
  if (waiting.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    std::fputs("staging ring: a sleeping worker was not woken\n", stderr);
    std::_Exit(1);
  }
}

TEST_CASE("staging ring: a ring whose slots do not divide its buffers is refused") {
  Ring r(2, 3 * kMiB, 2 * kMiB);
  fhr::HostCopier copier(2, true);
  std::vector<std::byte> host(kMiB), device(kMiB);
  StandInLink link(device.data(), true, 2, 1);
  CHECK_THROWS_AS(fhr::stage_to_device(copier, r.ring, host.data(), host.size(), link),
                  std::invalid_argument);
  CHECK(link.starts() == 0);
}
