#pragma once
/// \file
/// Where a reconstructible value's bytes come from (§3.2, §5).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace fhr {

/// A trusted loader: fills manager-provided storage at the source location
/// with the exact bytes of the value it stands for. It runs with the
/// manager locked; calls into the manager from it fail with
/// ResidencyReentrancyError (§13).
class Source {
public:
  virtual ~Source() = default;
  virtual void load(std::span<std::byte> destination) = 0;
};

/// A Source that reads `destination.size()` bytes of `path` from `offset`;
/// a short or failed read throws BackendError.
std::shared_ptr<Source> make_file_source(std::string path, std::uint64_t offset = 0);

} // namespace fhr
