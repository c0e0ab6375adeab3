#pragma once
/// \file
/// The immutable description of a managed value (docs/semantics.md §2.1–2.3).

#include <cstdint>
#include <string_view>

namespace fhr {

enum class ReplicaMode : std::uint8_t { Exclusive, Replicable };
enum class Recoverability : std::uint8_t { MustPreserve, Reconstructible };

struct ValueSpec {
  std::uint64_t logical_nbytes = 0;
  /// The fixed charge of every replica at every location (>= logical).
  std::uint64_t storage_nbytes = 0;
  ReplicaMode replica_mode = ReplicaMode::Exclusive;
  Recoverability recoverability = Recoverability::MustPreserve;
};

inline std::string_view to_string(ReplicaMode mode) {
  return mode == ReplicaMode::Exclusive ? "exclusive" : "replicable";
}

} // namespace fhr
