// The CUDA backend's parallel host copier (runtime/cuda/src/host_copier.hpp):
// host code only, so it is tested here without a GPU.
#include "../../runtime/cuda/src/host_copier.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace {

std::vector<std::byte> pattern(std::size_t n, std::uint8_t seed) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i)
    bytes[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
  return bytes;
}

} // namespace

TEST_CASE("host copier: every byte of copies of many sizes, one job after another") {
  fhr::HostCopier copier(7);
  // Under the parallel size, a whole number of pieces, a ragged last piece,
  // more pieces than threads.
  for (std::size_t n : {std::size_t{4096}, std::size_t{1} << 20, (std::size_t{1} << 20) + 1,
                        std::size_t{5} << 19, (std::size_t{37} << 20) + 4093}) {
    const std::vector<std::byte> from = pattern(n, static_cast<std::uint8_t>(n));
    std::vector<std::byte> to(n);
    copier.copy(to.data(), from.data(), n);
    CHECK(to == from);
  }
  // Many small jobs in a row: a worker waking late must never take a piece
  // of a newer job with an older one's pointers.
  const std::vector<std::byte> from = pattern(3 << 20, 7);
  for (int job = 0; job < 200; ++job) {
    std::vector<std::byte> to(from.size());
    copier.copy(to.data(), from.data(), from.size());
    REQUIRE(to == from);
  }
}

TEST_CASE("host copier: touch writes one byte a page and leaves the rest") {
  fhr::HostCopier copier(3);
  const std::size_t n = std::size_t{9} << 20;
  std::vector<std::byte> bytes(n, std::byte{0xab});
  copier.touch(bytes.data(), n);
  std::size_t zeroed = 0, kept = 0;
  for (std::size_t i = 0; i < n; ++i)
    (i % 4096 == 0 ? zeroed : kept) += bytes[i] == (i % 4096 == 0 ? std::byte{0} : std::byte{0xab});
  CHECK(zeroed == n / 4096);
  CHECK(kept == n - n / 4096);
}

TEST_CASE("host copier: without workers the caller copies alone") {
  fhr::HostCopier copier(0);
  const std::vector<std::byte> from = pattern(std::size_t{3} << 20, 1);
  std::vector<std::byte> to(from.size());
  copier.copy(to.data(), from.data(), from.size());
  CHECK(to == from);
}
