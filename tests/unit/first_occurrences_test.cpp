// first_occurrences (fhr/model/first_occurrences.hpp): how leases and holds
// collapse repeated handles (§7.2), on each of its three paths: a short
// list scanned, keys that only grow, and a long list with repeats.
#include "fhr/model/first_occurrences.hpp"
#include "fhr/runtime/manager.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>

using namespace fhr;

namespace {

std::vector<int> unique_ints(const std::vector<int> &items) {
  return first_occurrences(std::span<const int>(items), [](int v) { return v; });
}

} // namespace

TEST_CASE("first_occurrences keeps every first occurrence in order, on each path") {
  CHECK(unique_ints({}).empty());
  CHECK(unique_ints({3, 1, 3, 2, 1}) == std::vector<int>{3, 1, 2}); // scanned
  std::vector<int> growing(40), expected_growing(40);
  for (int i = 0; i < 40; ++i)
    growing[i] = expected_growing[i] = 2 * i;
  CHECK(unique_ints(growing) == expected_growing); // one pass
  // 60 items, every value repeated, first occurrences out of order.
  std::vector<int> repeated, expected;
  for (int i = 29; i >= 0; --i)
    expected.push_back(i * 7 % 30);
  repeated = expected;
  for (int i = 0; i < 30; ++i)
    repeated.push_back(i);
  CHECK(unique_ints(repeated) == expected); // sorted keys
  CHECK(unique_ints(std::vector<int>(50, 5)) == std::vector<int>{5});
}

TEST_CASE("a lease over 40 handles with repeats holds each value once, in first order") {
  Manager m;
  std::vector<Handle> values;
  for (int i = 0; i < 20; ++i) {
    auto *data = static_cast<std::byte *>(std::aligned_alloc(64, 64));
    std::memset(data, i, 64);
    values.push_back(m.adopt(data, 64, Location::pageable(), std::free, ReplicaMode::Replicable));
  }
  std::vector<Handle> asked;
  for (int i = 19; i >= 0; --i)
    asked.push_back(values[static_cast<std::size_t>(i)]);
  asked.insert(asked.end(), values.begin(), values.end()); // every handle twice
  Lease lease = m.acquire(asked, Location::pageable());
  CHECK(lease.handles() == std::vector<Handle>(asked.begin(), asked.begin() + 20));
  for (const SnapshotValue &v : m.snapshot().values)
    CHECK(v.materializations.at(0).use_count == 1);
  lease.release();
  for (const SnapshotValue &v : m.snapshot().values)
    CHECK(v.materializations.at(0).use_count == 0);
}
