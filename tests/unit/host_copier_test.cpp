// The CUDA backend's parallel host copier (runtime/cuda/src/host_copier.hpp):
// host code only, so it is tested here without a GPU.
#include "../../runtime/cuda/src/host_copier.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

std::vector<std::byte> pattern(std::size_t n, std::uint8_t seed) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i)
    bytes[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
  return bytes;
}

} // namespace

TEST_CASE("streaming copy: every byte, at every alignment of either end, and nothing beyond") {
  // Heads and tails shorter than a cache line on either side of the
  // streamed lines, sources unaligned against aligned destinations.
  const std::vector<std::byte> from = pattern(4096 + 256, 7);
  for (std::size_t to_offset : {0, 1, 15, 16, 63, 64, 65})
    for (std::size_t from_offset : {0, 3, 64})
      for (std::size_t n : {0, 1, 63, 64, 65, 127, 128, 1000, 4096}) {
        CAPTURE(to_offset);
        CAPTURE(from_offset);
        CAPTURE(n);
        std::vector<std::byte> to(4096 + 256, std::byte{0xee});
        fhr::copy_streaming(to.data() + to_offset, from.data() + from_offset, n);
        CHECK(std::equal(to.begin() + static_cast<std::ptrdiff_t>(to_offset),
                         to.begin() + static_cast<std::ptrdiff_t>(to_offset + n),
                         from.begin() + static_cast<std::ptrdiff_t>(from_offset)));
        const std::size_t outside = static_cast<std::size_t>(
            std::count(to.begin(), to.end(), std::byte{0xee}) -
            std::count(to.begin() + static_cast<std::ptrdiff_t>(to_offset),
                       to.begin() + static_cast<std::ptrdiff_t>(to_offset + n), std::byte{0xee}));
        CHECK(outside == to.size() - n); // the bytes around the destination untouched
      }
}

TEST_CASE("host copier: every byte of copies of many sizes, one job after another") {
  for (const bool streaming : {false, true}) {
    CAPTURE(streaming);
    fhr::HostCopier copier(7, streaming);
    // Under the parallel size, a whole number of pieces, a ragged last
    // piece, more pieces than threads.
    for (std::size_t n : {std::size_t{4096}, std::size_t{1} << 20, (std::size_t{1} << 20) + 1,
                          std::size_t{5} << 19, (std::size_t{37} << 20) + 4093}) {
      const std::vector<std::byte> from = pattern(n, static_cast<std::uint8_t>(n));
      std::vector<std::byte> to(n);
      copier.copy(to.data(), from.data(), n);
      CHECK(to == from);
    }
    // Many jobs in a row, each its own pattern, into two destinations in
    // turn: a worker waking late must never copy a piece of an older job
    // (into the destination idle now) or of a newer one with an older
    // one's pointers. Either shows as bytes that are not the job's.
    const std::size_t n = (std::size_t{3} << 20) + 512;
    std::vector<std::byte> destinations[2] = {std::vector<std::byte>(n), std::vector<std::byte>(n)};
    std::vector<std::byte> sources[2];
    for (int job = 0; job < 200; ++job) {
      const int now = job % 2, idle = 1 - now;
      sources[now] = pattern(n, static_cast<std::uint8_t>(job));
      copier.copy(destinations[now].data(), sources[now].data(), n);
      REQUIRE(destinations[now] == sources[now]);
      if (job > 0) REQUIRE(destinations[idle] == sources[idle]); // untouched since its own job
    }
  }
}

TEST_CASE("host copier: touch faults in the pages of its range and no other") {
  // Fresh anonymous memory has no page in until it is written. A touch
  // from byte 100 of page 1 to the middle of page P - 3 brings pages 1 to
  // P - 3 in, and leaves page 0 and the last two out, either way.
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t pages = 2304, n = pages * page; // 9 MiB of 4 KiB pages: the workers share it
  for (const auto touch_by : {fhr::HostCopier::TouchBy::populate, fhr::HostCopier::TouchBy::writes}) {
    CAPTURE(touch_by == fhr::HostCopier::TouchBy::writes);
    void *mapped = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mapped != MAP_FAILED);
    auto *bytes = static_cast<std::byte *>(mapped);
    ::madvise(bytes, n, MADV_NOHUGEPAGE); // page by page, so that the ends show
    std::vector<unsigned char> in(pages);
    REQUIRE(::mincore(bytes, n, in.data()) == 0);
    REQUIRE(std::count_if(in.begin(), in.end(), [](unsigned char p) { return p & 1; }) == 0);
    fhr::HostCopier copier(3, true, touch_by);
    copier.touch(bytes + page + 100, (pages - 4) * page + page / 2 - 100);
    REQUIRE(::mincore(bytes, n, in.data()) == 0);
    for (std::size_t p = 0; p < pages; ++p) {
      CAPTURE(p);
      CHECK((in[p] & 1) == (p >= 1 && p <= pages - 3 ? 1 : 0));
    }
    ::munmap(mapped, n);
  }
}

TEST_CASE(
    "host copier: touch changes no byte but, by writes, those at its parts' starts and page boundaries") {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t n = std::size_t{9} << 20, from = page + 100, count = n - 3 * page;
  for (const auto touch_by : {fhr::HostCopier::TouchBy::populate, fhr::HostCopier::TouchBy::writes}) {
    const bool writes = touch_by == fhr::HostCopier::TouchBy::writes;
    CAPTURE(writes);
    std::vector<std::byte> bytes(n, std::byte{0xab});
    fhr::HostCopier copier(3, true, touch_by);
    copier.touch(bytes.data() + from, count);
    const auto base = reinterpret_cast<std::uintptr_t>(bytes.data());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      // touch() hands its range out in parts of kTouchPiece: each part's
      // first byte is written too.
      const bool written = writes && i >= from && i < from + count &&
                           ((i - from) % fhr::HostCopier::kTouchPiece == 0 || (base + i) % page == 0);
      wrong += bytes[i] != (written ? std::byte{0} : std::byte{0xab});
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("host copier: without workers the caller copies alone") {
  fhr::HostCopier copier(0, true);
  const std::vector<std::byte> from = pattern(std::size_t{3} << 20, 1);
  std::vector<std::byte> to(from.size());
  copier.copy(to.data(), from.data(), from.size());
  CHECK(to == from);
}

TEST_CASE("host copier: a started job runs on the workers alone while the caller is free") {
  fhr::HostCopier copier(4, false);
  std::vector<std::atomic<int>> done(300);
  std::atomic<bool> caller_free{false};
  const fhr::HostCopier::Task task = [&](std::size_t i) {
    while (!caller_free.load()) // no piece finishes before start() has returned
      std::this_thread::yield();
    done[i].fetch_add(1);
  };
  copier.start(done.size(), task);
  caller_free = true;
  copier.finish();
  CHECK(
      std::all_of(done.begin(), done.end(), [](const std::atomic<int> &count) { return count.load() == 1; }));
  fhr::HostCopier alone(0, false); // nobody to run it: refused rather than waited for
  CHECK_THROWS_AS(alone.start(1, task), std::logic_error);
}
