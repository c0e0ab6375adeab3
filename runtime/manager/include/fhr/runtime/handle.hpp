#pragma once
/// \file
/// The name of one managed value (§2.4).

#include <cstdint>

namespace fhr {

/// Names one managed value of one manager: the manager's process-unique id
/// and a handle id that manager never gives out twice. Copying or moving
/// the value never changes its handle.
struct Handle {
  std::uint64_t manager_id = 0;
  std::uint64_t handle_id = 0;
  friend bool operator==(const Handle &, const Handle &) = default;
};

} // namespace fhr
