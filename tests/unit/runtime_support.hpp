#pragma once
// Helpers shared by the runtime tests: sizes, locations, and value bytes
// with a recognisable pattern and their checksum.
#include "fhr/model/location.hpp"
#include "fhr/runtime/snapshot.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace fhr::test {

constexpr std::uint64_t KiB = 1024;
inline const Location pageable = Location::pageable();
inline const Location pinned = Location::pinned();
inline const Location gpu0 = Location::cuda(0);
inline const Location gpu1 = Location::cuda(1);

/// Fills `bytes` with the pattern of `seed` (what sources and adopted buffers hold).
inline void fill_pattern(std::span<std::byte> bytes, unsigned seed) {
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
}

/// The XXH64 the manager's content_checksum reports for these bytes.
inline std::uint64_t checksum_of(std::span<const std::byte> bytes) {
  return XXH64(bytes.data(), bytes.size(), 0);
}

/// What the snapshot's replicas at `at` are charged: a location's used bytes
/// must equal it (the books agree with the storage).
inline std::uint64_t charged_by_replicas(const Snapshot &snapshot, Location at) {
  std::uint64_t charged = 0;
  for (const SnapshotValue &v : snapshot.values)
    for (const SnapshotMaterialization &m : v.materializations)
      if (m.location == at) charged += m.charged_nbytes;
  return charged;
}

} // namespace fhr::test
