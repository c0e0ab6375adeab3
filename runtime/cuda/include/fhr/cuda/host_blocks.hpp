#pragma once
/// \file
/// The host memory of the CUDA backend: large pageable blocks on huge
/// pages, and pinned blocks made either from such memory registered with
/// the driver or by cudaHostAlloc. Apart from the backend so that
/// `fhr-plan calibrate` and the benchmarks time the blocks the backend
/// makes, and so that the mapping can be tested without a GPU.

#include "fhr/model/huge_pages.hpp"

#include <cstddef>

namespace fhr {

/// `rounded` bytes (a multiple of kHugePageBytes) of fresh anonymous memory
/// on a huge-page boundary, advised to huge pages (madvise(MADV_HUGEPAGE))
/// and not yet faulted in. Mapped directly rather than by malloc, whose
/// heap would hand a later block memory an earlier one faulted in (glibc
/// raises its mmap threshold as such blocks are freed): every block is cold
/// when made, as the time model's pools assume. Throws std::bad_alloc.
std::byte *map_huge_pages(std::size_t rounded);
/// Unmaps a block of map_huge_pages (the same `rounded`).
void unmap_huge_pages(std::byte *block, std::size_t rounded) noexcept;

/// Faults the huge pages of a block of map_huge_pages in, one write to
/// each, on up to `threads` threads (the caller and threads it starts for
/// the call; no more than the pages): the kernel zeroes each fresh page in
/// its fault, at one thread's memory rate, and page faults of one process
/// run in parallel. One page a thread is worth it: a fault took 160-410 us
/// on one thread on the H200's virtual machine, starting a thread tens.
/// Where a thread cannot be started, the others do its pages.
void fault_in_huge_pages(std::byte *block, std::size_t rounded, unsigned threads) noexcept;

/// A pinned host block as the backend makes one: with `huge_pages`
/// (CudaBackendOptions::pinned_huge_pages) and 2 MiB or more, huge pages
/// (map_huge_pages, rounded up) faulted in on `fault_threads` threads
/// (fault_in_huge_pages; as many as the backend has copy threads, and its
/// caller) and
/// registered with the driver, portable and mapped; else cudaHostAlloc
/// (portable). Throws BackendError when the driver refuses.
std::byte *make_pinned_block(std::size_t nbytes, bool huge_pages, unsigned fault_threads);
/// Frees a block of make_pinned_block (the same `nbytes` and `huge_pages`).
void free_pinned_block(std::byte *block, std::size_t nbytes, bool huge_pages) noexcept;

/// Whether pinned blocks are to be made on huge pages: `wanted`
/// (CudaBackendOptions::pinned_huge_pages, resolved) and every device of
/// this process can register host memory (cudaDevAttrHostRegisterSupported);
/// where one cannot, cudaHostAlloc whatever the option says. The backend
/// and `calibrate` both decide with it.
bool pinned_on_huge_pages(bool wanted);

} // namespace fhr
