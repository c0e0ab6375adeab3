#pragma once
/// \file
/// The host's huge pages, in which the CUDA backend makes its large pinned
/// and pageable blocks (fhr/cuda/host_blocks.hpp) and the time model's
/// pools count them (fhr/model/runtime_pools.hpp): one constant for both.

#include <cstddef>
#include <limits>
#include <new>

namespace fhr {

/// Transparent huge pages are 2 MiB on x86-64 and aarch64 with 4 KiB pages.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

/// `nbytes` rounded up to whole huge pages; std::bad_alloc where that
/// would not fit a size (no block that large can be made anyway).
constexpr std::size_t huge_page_multiple(std::size_t nbytes) {
  if (nbytes > std::numeric_limits<std::size_t>::max() - (kHugePageBytes - 1)) throw std::bad_alloc();
  return (nbytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

/// The block a pinned pool keeps for `nbytes`: whole huge pages from
/// kHugePageBytes up when its blocks are made of them (`huge_pages`), else
/// the size itself. The CUDA backend's pool and the time model's both.
constexpr std::size_t pinned_block_bytes(std::size_t nbytes, bool huge_pages) {
  return huge_pages && nbytes >= kHugePageBytes ? huge_page_multiple(nbytes) : nbytes;
}

} // namespace fhr
