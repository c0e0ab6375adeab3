#include "fhr/cuda/host_blocks.hpp"

#include "fhr/cuda/cuda_calls.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>
#include <sys/mman.h>
#include <thread>
#include <vector>

namespace fhr {

std::byte *map_huge_pages(std::size_t rounded) {
  // One huge page more than asked for, then the ends cut off: the kernel
  // aligns a mapping to pages only.
  const std::size_t span = rounded + kHugePageBytes;
  void *mapped = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  auto *start = static_cast<std::byte *>(mapped);
  const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(start);
  std::byte *block = start + (kHugePageBytes - address % kHugePageBytes) % kHugePageBytes;
  if (block > start) ::munmap(start, static_cast<std::size_t>(block - start));
  if (std::byte *end = block + rounded; end < start + span)
    ::munmap(end, static_cast<std::size_t>(start + span - end));
  ::madvise(block, rounded, MADV_HUGEPAGE); // a hint: without THP the block is on small pages
  return block;
}

void unmap_huge_pages(std::byte *block, std::size_t rounded) noexcept { ::munmap(block, rounded); }

void fault_in_huge_pages(std::byte *block, std::size_t rounded, unsigned threads) noexcept {
  const std::size_t pages = rounded / kHugePageBytes;
  // Pages are claimed one at a time, so a thread the scheduler starts late
  // finds them taken rather than holding a share back.
  std::atomic<std::size_t> next{0};
  auto fault_in = [&] {
    for (std::size_t page = next++; page < pages; page = next++)
      static_cast<volatile std::byte *>(block)[page * kHugePageBytes] = std::byte{0};
  };
  const std::size_t helpers = std::min<std::size_t>(std::max(threads, 1u) - 1, pages == 0 ? 0 : pages - 1);
  std::vector<std::thread> started;
  try {
    started.reserve(helpers);
    for (std::size_t i = 0; i < helpers; ++i)
      started.emplace_back(fault_in);
  } catch (...) {
    // No thread or no memory for one (std::system_error, std::bad_alloc):
    // fewer threads, the caller and those started do every page.
  }
  fault_in();
  for (std::thread &thread : started)
    thread.join();
}

std::byte *make_pinned_block(std::size_t nbytes, bool huge_pages, unsigned fault_threads) {
  if (!huge_pages || nbytes < kHugePageBytes) {
    void *block = nullptr;
    check_cuda(cudaHostAlloc(&block, nbytes == 0 ? 1 : nbytes, cudaHostAllocPortable), "cudaHostAlloc");
    return static_cast<std::byte *>(block);
  }
  const std::size_t rounded = huge_page_multiple(nbytes);
  std::byte *block = map_huge_pages(rounded);
  // Faulted in before registration, a huge page per write (registration
  // faults in whatever is left, small pages where THP gave none).
  fault_in_huge_pages(block, rounded, fault_threads);
  if (const cudaError_t status =
          cudaHostRegister(block, rounded, cudaHostRegisterPortable | cudaHostRegisterMapped);
      status != cudaSuccess) {
    unmap_huge_pages(block, rounded);
    check_cuda(status, "cudaHostRegister");
  }
  return block;
}

void free_pinned_block(std::byte *block, std::size_t nbytes, bool huge_pages) noexcept {
  if (!huge_pages || nbytes < kHugePageBytes) {
    cudaFreeHost(block);
    return;
  }
  cudaHostUnregister(block);
  unmap_huge_pages(block, huge_page_multiple(nbytes));
}

bool pinned_on_huge_pages(bool wanted) {
  if (!wanted) return false;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  for (int device = 0; device < count; ++device) {
    int supported = 0;
    if (cudaDeviceGetAttribute(&supported, cudaDevAttrHostRegisterSupported, device) != cudaSuccess ||
        !supported) {
      cudaGetLastError();
      return false;
    }
  }
  return true;
}

} // namespace fhr
