// AddressRanges: the disjoint ranges behind the §2.7 index and a backend's
// blocks, and the node a removal hands to a second index.
#include "fhr/runtime/address_ranges.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstddef>

using fhr::AddressRanges;

TEST_CASE("address ranges: overlap queries, and a removal that keeps its node in another index") {
  std::array<std::byte, 256> memory{};
  std::byte *base = memory.data();
  AddressRanges<int> host, device;
  host.add(base, 64, 1);
  host.add(base + 128, 64, 2);
  device.add(base + 64, 32, 3);
  CHECK(host.size() == 2);
  REQUIRE(host.overlapping(base + 130, 1));
  CHECK(*host.overlapping(base + 130, 1)->payload == 2);
  CHECK_FALSE(host.overlapping(base + 64, 64)); // between the two host ranges
  CHECK(*device.overlapping(base + 60, 8)->payload == 3);
  CHECK_FALSE(host.overlapping(base, 0)); // an empty range overlaps nothing

  // Two removals from the host index: the first node stays its spare, the
  // second becomes the device index's; both are reused by the next adds.
  host.remove(base, device);
  host.remove(base + 128, device);
  CHECK(host.size() == 0);
  CHECK_FALSE(host.overlapping(base, 256));
  device.add(base + 160, 16, 4);
  host.add(base + 200, 8, 5);
  CHECK(device.size() == 2);
  CHECK(*device.overlapping(base + 170, 1)->payload == 4);
  CHECK(*host.overlapping(base + 207, 1)->payload == 5);
  // Removing a range that is not kept changes nothing.
  host.remove(base + 1, device);
  CHECK(host.size() == 1);
  device.remove(base + 64);
  CHECK(device.size() == 1);
  CHECK(device.overlapping(base + 160, 1)->start == reinterpret_cast<std::uintptr_t>(base + 160));
}
