#pragma once
// A host copy whose stores bypass the processor's caches (non-temporal
// stores), for the pieces of a staged transfer. An ordinary store first
// reads the line it writes (read for ownership), so memcpy moves three
// bytes over the memory bus per byte copied, and its lines are left dirty
// in the cache; the staging buffers are read next by the device's DMA and
// the pageable destinations of large copies are far beyond the cache, so
// neither read nor cached line is of any use. glibc's memcpy switches to
// such stores only for copies beyond a threshold derived from the size of
// the last-level cache, far above the 512 KiB pieces the copier threads
// take.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace fhr {

/// Copies `n` bytes from `from` to `to` (not overlapping) with streaming
/// stores where the processor has them (SSE2: every x86-64), memcpy
/// elsewhere. The stores are fenced before it returns, so whoever learns
/// that the copy is done (the copier's counter) sees its bytes.
inline void copy_streaming(std::byte *to, const std::byte *from, std::size_t n) {
#if defined(__x86_64__)
  constexpr std::size_t kLine = 64;
  // Up to the destination's next cache line with memcpy: streaming stores
  // want 16-byte aligned addresses, and whole lines combine best.
  const std::size_t head = std::min(n, (kLine - reinterpret_cast<std::uintptr_t>(to) % kLine) % kLine);
  std::memcpy(to, from, head);
  std::size_t done = head;
  for (; done + kLine <= n; done += kLine) {
    const auto *source = reinterpret_cast<const __m128i *>(from + done);
    auto *target = reinterpret_cast<__m128i *>(to + done);
    const __m128i a = _mm_loadu_si128(source), b = _mm_loadu_si128(source + 1),
                  c = _mm_loadu_si128(source + 2), d = _mm_loadu_si128(source + 3);
    _mm_stream_si128(target, a);
    _mm_stream_si128(target + 1, b);
    _mm_stream_si128(target + 2, c);
    _mm_stream_si128(target + 3, d);
  }
  _mm_sfence();
  std::memcpy(to + done, from + done, n - done);
#else
  std::memcpy(to, from, n);
#endif
}

} // namespace fhr
