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

TEST_CASE("host copier: touch faults every page in and changes no byte outside the range") {
  // Fresh anonymous memory has no page in until it is written; a touch
  // brings every page of its range in, by madvise(MADV_POPULATE_WRITE)
  // where the kernel has it (the bytes unchanged), else by a write of a
  // zero at the range's start and at each page boundary in it.
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t pages = 2304, n = pages * page; // 9 MiB of 4 KiB pages: the workers share it
  void *mapped = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mapped != MAP_FAILED);
  auto *bytes = static_cast<std::byte *>(mapped);
  ::madvise(bytes, n, MADV_NOHUGEPAGE); // page by page, so that the ends show
  auto resident = [&] {
    std::vector<unsigned char> in(pages);
    REQUIRE(::mincore(bytes, n, in.data()) == 0);
    std::size_t count = 0;
    for (unsigned char p : in)
      count += p & 1;
    return count;
  };
  REQUIRE(resident() == 0);
  for (std::size_t p = pages - 4; p < pages; ++p)
    bytes[p * page + 7] = std::byte{0xab}; // the last four pages in, with a byte each
  fhr::HostCopier copier(3, true);
  // From byte 100 of page 1 to the middle of page pages - 3: pages 1 to
  // pages - 3 come in, page 0 stays out.
  const std::size_t from = page + 100, count = (pages - 4) * page + page / 2 - 100;
  copier.touch(bytes + from, count);
  std::vector<unsigned char> in(pages);
  REQUIRE(::mincore(bytes, n, in.data()) == 0);
  CHECK((in[0] & 1) == 0);
  std::size_t touched = 0;
  for (std::size_t p = 1; p < pages; ++p)
    touched += in[p] & 1;
  CHECK(touched == pages - 1);
  // No byte but the range's first and those at page boundaries in it is
  // ever written, and those only by the fallback: the marks keep their
  // value, in the range (pages - 4 and - 3) and after it.
  for (std::size_t p = pages - 4; p < pages; ++p)
    CHECK(bytes[p * page + 7] == std::byte{0xab});
  ::munmap(mapped, n);
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
