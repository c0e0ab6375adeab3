#include "fhr/harness/synthetic_binder.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <tuple>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace fhr {

void fill_synthetic(std::span<std::byte> bytes, std::uint32_t value_id, std::uint64_t offset) {
  // A 64-bit word pattern: cheap to write at memory speed, different for
  // every value and every offset, so a misplaced or stale copy is caught.
  // \pre offset is a multiple of 8 (blocks of one value continue the pattern).
  const std::uint64_t seed = (static_cast<std::uint64_t>(value_id) + 1) * 0x9e3779b97f4a7c15ull;
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    const std::uint64_t word = seed ^ ((offset + i) * 0xff51afd7ed558ccdull);
    std::memcpy(bytes.data() + i, &word, 8);
  }
  for (; i < bytes.size(); ++i)
    bytes[i] = static_cast<std::byte>(seed >> (8 * ((offset + i) % 8)));
}

namespace {

class SyntheticSource final : public Source {
public:
  explicit SyntheticSource(std::uint32_t value_id) : value_id_(value_id) {}
  void load(std::span<std::byte> destination) override { fill_synthetic(destination, value_id_, 0); }

private:
  std::uint32_t value_id_;
};

/// XXH64 of a value's pattern, generated block by block: no buffer of the
/// value's size.
std::uint64_t synthetic_checksum(std::uint64_t nbytes, std::uint32_t value_id) {
  constexpr std::size_t kBlock = std::size_t{1} << 20;
  std::vector<std::byte> block(static_cast<std::size_t>(std::min<std::uint64_t>(nbytes, kBlock)));
  XXH64_state_t *state = XXH64_createState();
  XXH64_reset(state, 0);
  for (std::uint64_t offset = 0; offset < nbytes; offset += kBlock) {
    const auto size = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, nbytes - offset));
    fill_synthetic({block.data(), size}, value_id, offset);
    XXH64_update(state, block.data(), size);
  }
  const std::uint64_t hash = XXH64_digest(state);
  XXH64_freeState(state);
  return hash;
}

/// Does the manager's backend have `location` (§1.2)?
bool available(const Manager &manager, Location location) {
  const DeviceConfig devices = manager.backend().memory->devices();
  return !location.is_cuda() || (devices.cuda_available && location.device() < devices.device_count);
}

} // namespace

Handle SyntheticBinder::bind(Manager &manager, const DeclaredValue &value) {
  if (checksums_.size() <= value.value_id) checksums_.resize(value.value_id + 1);
  if (value.spec.recoverability == Recoverability::Reconstructible) {
    // Loads fill storage of the backend's size: the fingerprint alone in sizes-only mode.
    const std::uint64_t filled = fingerprint_bytes_
                                     ? std::min<std::uint64_t>(value.spec.logical_nbytes, *fingerprint_bytes_)
                                     : value.spec.logical_nbytes;
    checksums_[value.value_id] = Expected{filled, std::nullopt};
    return manager.register_source(value.spec, std::make_shared<SyntheticSource>(value.value_id),
                                   value.location);
  }
  // Adopted values are charged their storage size; the buffer is that big.
  const std::size_t nbytes = value.spec.storage_nbytes;
  // A value the manager would refuse is refused before its buffer is made:
  // one beyond what a location can account (4 EiB) cannot be allocated
  // either, and the allocator's failure is not the plan's predicted one.
  if (available(manager, value.location)) manager.check_adoptable(value.location, nbytes);
  std::byte *data = nullptr;
  Storage::Release release;
  if (fingerprint_bytes_) {
    // Address space of the full size (the manager indexes the block), only
    // the fingerprint written: the value is a view of that many bytes.
    const std::size_t view = std::min(nbytes, *fingerprint_bytes_);
    // (At a location the manager lacks, adopt reports the location.)
    const Location block_at = available(manager, value.location) ? value.location : Location::pageable();
    std::tie(data, release) = manager.backend().memory->allocate(block_at, nbytes).detach();
    fill_synthetic({data, view}, value.value_id, 0);
    checksums_[value.value_id] = Expected{view, XXH64(data, view, 0)};
    try {
      return manager.adopt(data, view, nbytes, value.location, release, value.spec.replica_mode);
    } catch (...) {
      release(data);
      throw;
    }
  }
  if (value.location.is_cuda() && place_on_device_) {
    std::vector<std::byte> bytes(nbytes);
    fill_synthetic(bytes, value.value_id, 0);
    checksums_[value.value_id] = Expected{nbytes, XXH64(bytes.data(), nbytes, 0)};
    std::tie(data, release) = place_on_device_(value.location, bytes);
  } else if (value.location != Location::pageable() && available(manager, value.location)) {
    // Memory of the location's kind (adopt refuses a pageable buffer at
    // pinned, §2.6), host-addressable on the host and simulated backends.
    // (At a location the manager lacks, adopt reports the location.)
    std::tie(data, release) = manager.backend().memory->allocate(value.location, nbytes).detach();
    fill_synthetic({data, nbytes}, value.value_id, 0);
    checksums_[value.value_id] = Expected{nbytes, XXH64(data, nbytes, 0)};
  } else {
    data = static_cast<std::byte *>(std::malloc(nbytes == 0 ? 1 : nbytes));
    if (!data) throw std::bad_alloc();
    release = std::free;
    fill_synthetic({data, nbytes}, value.value_id, 0);
    checksums_[value.value_id] = Expected{nbytes, XXH64(data, nbytes, 0)};
  }
  try {
    return manager.adopt(data, nbytes, value.location, release, value.spec.replica_mode);
  } catch (...) {
    release(data); // a refused adopt leaves the buffer with its owner: us
    throw;
  }
}

std::uint64_t SyntheticBinder::expected_checksum(std::uint32_t value_id) {
  if (value_id >= checksums_.size())
    throw std::out_of_range("value " + std::to_string(value_id) + " is not bound");
  Expected &expected = checksums_[value_id];
  if (!expected.checksum) expected.checksum = synthetic_checksum(expected.nbytes, value_id);
  return *expected.checksum;
}

} // namespace fhr
