// Warm-up (docs/runtime.md): pool blocks reserved ahead of a plan's
// transfers, from explicit requests, from a plan, and at construction; what
// the report says, that the blocks are what the transfers then use, and
// that nothing of the residency state changes. Also BlockPool::reserve.
#include "fhr/runtime/block_pool.hpp"
#include "fhr/runtime/manager.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace fhr;

namespace {

const Location pinned = Location::pinned(), pageable = Location::pageable();

std::uint64_t page_rounded(std::uint64_t nbytes) {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return (nbytes + page - 1) / page * page;
}

Handle adopt_pageable(Manager &m, std::size_t nbytes) {
  auto *data = static_cast<std::byte *>(std::aligned_alloc(64, (nbytes + 63) / 64 * 64));
  std::memset(data, 7, nbytes);
  return m.adopt(data, nbytes, pageable, std::free, ReplicaMode::Replicable);
}

const SnapshotLocation &at(const Snapshot &s, Location location) {
  for (const SnapshotLocation &l : s.locations)
    if (l.location == location) return l;
  FAIL("location not in the snapshot");
  return s.locations.front();
}

} // namespace

TEST_CASE("warm-up: a plan's transfers to pinned memory find their blocks locked ahead") {
  Manager m;
  const Handle a = adopt_pageable(m, 10000), b = adopt_pageable(m, 5000), c = adopt_pageable(m, 10000);
  m.ensure(b, pinned); // already there: the plan's ensure of b is a no-op and needs no block
  const PlanSpec plan{
      "stage",
      {},
      {},
      {ActionSpec{ActionKind::Ensure, a, pinned, {}}, ActionSpec{ActionKind::Ensure, b, pinned, {}},
       ActionSpec{ActionKind::Move, c, pinned, {}}, ActionSpec{ActionKind::Drop, a, pageable, {}}},
      {}};
  const std::vector<PoolRequest> requests = m.pool_requests(plan);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].location == pinned);
  CHECK(requests[0].block_bytes == std::vector<std::size_t>{10000, 10000});

  const std::uint64_t version = m.state_version();
  const std::uint64_t idle_before = *at(m.snapshot(), pinned).pool_idle_bytes;
  const WarmUpReport report = m.warm_up(plan);
  REQUIRE(report.pools.size() == 1);
  CHECK(report.pools[0].location == pinned);
  CHECK(report.pools[0].blocks == 2);
  CHECK(report.pools[0].reserved_bytes == 2 * page_rounded(10000));
  CHECK(report.reserved_bytes() == 2 * page_rounded(10000));
  CHECK(report.duration_ns > 0);
  CHECK(m.state_version() == version); // no residency state changed
  const Snapshot warmed = m.snapshot();
  CHECK(*at(warmed, pinned).pool_idle_bytes == idle_before + 2 * page_rounded(10000));
  CHECK(at(warmed, pinned).used_bytes == 5000); // the books charge only b

  // The plan runs on the kept blocks: nothing idle is left, nothing new is made.
  m.execute_actions(plan.enter, "stage");
  const Snapshot after = m.snapshot();
  CHECK(*at(after, pinned).pool_idle_bytes == idle_before);
  CHECK(*at(after, pinned).pool_in_use_bytes == page_rounded(5000) + 2 * page_rounded(10000));

  // A second warm-up for blocks the pool already keeps reserves nothing more.
  m.ensure(a, pageable); // a is MUST_PRESERVE: its pinned replica is its last
  m.drop(a, pinned);
  const PoolRequest again{pinned, {10000}};
  CHECK(m.warm_up(std::span(&again, 1)).reserved_bytes() == 0);
}

TEST_CASE("warm-up: blocks are requested per location, in the order the locations first appear") {
  std::vector<PoolRequest> requests;
  request_block(requests, pinned, 10);
  request_block(requests, Location::cuda(0), 30);
  request_block(requests, pinned, 10); // a size may repeat: one block per value
  request_block(requests, pinned, 20);
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].location == pinned);
  CHECK(requests[0].block_bytes == std::vector<std::size_t>{10, 10, 20});
  CHECK(requests[1].location == Location::cuda(0));
  CHECK(requests[1].block_bytes == std::vector<std::size_t>{30});
}

TEST_CASE("warm-up: a reload's storage at its source location is reserved too, once per size") {
  // Three values reloaded from sources at pinned memory into pageable
  // memory: each load fills a pinned block and frees it once copied on, so
  // the plan needs one 20,000-byte and one 12,000-byte pinned block (the
  // two loads of 20,000 bytes take the same block in turn) besides the
  // pageable destinations.
  struct Zeros final : Source {
    void load(std::span<std::byte> out) override { std::memset(out.data(), 0, out.size()); }
  };
  auto zeros = std::make_shared<Zeros>();
  auto spec = [](std::uint64_t n) {
    return ValueSpec{n, n, ReplicaMode::Replicable, Recoverability::Reconstructible};
  };
  Manager m;
  const Handle a = m.register_source(spec(20000), zeros, pinned);
  const Handle b = m.register_source(spec(20000), zeros, pinned);
  const Handle c = m.register_source(spec(12000), zeros, pinned);
  const Handle d = adopt_pageable(m, 4096);
  const PlanSpec plan{
      "reload",
      {},
      {},
      {ActionSpec{ActionKind::Ensure, a, pageable, {}}, ActionSpec{ActionKind::Ensure, b, pageable, {}},
       ActionSpec{ActionKind::Ensure, c, pageable, {}}, ActionSpec{ActionKind::Ensure, d, pinned, {}}},
      {}};
  const std::vector<PoolRequest> requests = m.pool_requests(plan);
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].location == pageable);
  CHECK(requests[0].block_bytes == std::vector<std::size_t>{20000, 20000, 12000});
  CHECK(requests[1].location == pinned); // the loads' temporaries, then d's copy
  CHECK(requests[1].block_bytes == std::vector<std::size_t>{20000, 12000, 4096});

  const std::uint64_t idle_before = *at(m.snapshot(), pinned).pool_idle_bytes;
  const WarmUpReport report = m.warm_up(plan);
  CHECK(report.pools[1].reserved_bytes == page_rounded(20000) + page_rounded(12000) + page_rounded(4096));
  // The loads run on the reserved blocks: no pinned block is made for them.
  m.execute_actions(plan.enter, "reload");
  const Snapshot after = m.snapshot();
  CHECK(*at(after, pinned).pool_idle_bytes == idle_before + page_rounded(20000) + page_rounded(12000));
  CHECK(*at(after, pinned).pool_in_use_bytes == page_rounded(4096));
}

TEST_CASE("warm-up: at construction, reported by startup_warm_up; a location the backend lacks is refused") {
  ManagerOptions options;
  options.warm_up = {PoolRequest{pinned, {4096, 4096, 8192}}, PoolRequest{pageable, {1 << 20}}};
  Manager m(std::move(options));
  const WarmUpReport &report = m.startup_warm_up();
  REQUIRE(report.pools.size() == 2);
  CHECK(report.pools[0].blocks == 3);
  CHECK(report.pools[0].reserved_bytes == 2 * page_rounded(4096) + page_rounded(8192));
  CHECK(report.pools[1].location == pageable);
  CHECK(report.pools[1].reserved_bytes == 0); // the host backend keeps no pageable pool
  CHECK(m.backend().memory->pool_figures(pinned)->idle_bytes == 2 * page_rounded(4096) + page_rounded(8192));
  CHECK(Manager().startup_warm_up().pools.empty());

  const PoolRequest device{Location::cuda(0), {4096}};
  CHECK_THROWS_AS(m.warm_up(std::span(&device, 1)), std::invalid_argument);
  ManagerOptions bad;
  bad.warm_up = {device};
  CHECK_THROWS_AS((void)Manager(std::move(bad)), std::invalid_argument);
}

TEST_CASE("BlockPool::reserve counts the blocks already kept and stops at the bound") {
  int made = 0, released = 0;
  auto pool = BlockPool<int>::make(
      3000, [&](std::size_t) { return ++made; }, [&](int, std::size_t) { ++released; });
  const int first = pool->take(1000);
  pool->give_back(first, 1000); // one 1000-byte block kept
  const std::size_t sizes[] = {1000, 1000, 500, 2000};
  // 1000 twice (one kept already: one made), 500 once; 2000 would pass the bound.
  CHECK(pool->reserve(sizes) == 1500);
  CHECK(made == 3);
  CHECK(pool->figures().idle_bytes == 2500);
  CHECK(pool->figures().in_use_bytes == 0);
  const int reserved = pool->take(500);
  CHECK(reserved == 2); // the reserved block (made first: sizes go in order), no new one
  CHECK(made == 3);
  CHECK(released == 0);
  pool->give_back(reserved, 500); // a pool lives until its last block is back (LeakSanitizer checks)
}

TEST_CASE("BlockPool: a pool outlives its owner until its last block comes back, then frees it") {
  std::vector<std::byte *> released;
  std::byte blocks[3];
  int next = 0;
  auto pool = BlockPool<std::byte *>::make(
      1 << 20, [&](std::size_t) { return &blocks[next++]; },
      [&](std::byte *block, std::size_t) { released.push_back(block); });
  // Storages over pooled blocks, as a memory resource hands them out.
  auto first = std::make_optional<Storage>(pool->take(64), 64, Location::pinned(), pool->releaser(64));
  auto second = std::make_optional<Storage>(pool->take(64), 64, Location::pinned(), pool->releaser(64));
  std::byte *kept = pool->take(32);
  pool->give_back(kept, 32); // kept for reuse while the pool has an owner
  CHECK(released.empty());
  pool.reset(); // the owner lets go: the kept block is freed now
  CHECK(released == std::vector<std::byte *>{&blocks[2]});
  first.reset(); // a block back after the owner left goes to the system, not a list
  CHECK(released == std::vector<std::byte *>{&blocks[2], &blocks[0]});
  second.reset(); // the last one: the pool deletes itself (LeakSanitizer checks it in CI)
  CHECK(released == std::vector<std::byte *>{&blocks[2], &blocks[0], &blocks[1]});
}

TEST_CASE("BlockPool: blocks given back from several threads while the owner retires: each released once") {
  // ThreadSanitizer (CI) watches the pool's end: the last of the givers or
  // the owner deletes it, and no release runs on a deleted pool.
  for (int round = 0; round < 50; ++round) {
    constexpr int kThreads = 4, kBlocksEach = 16;
    std::atomic<int> released{0};
    auto pool = BlockPool<std::byte *>::make(
        64, [](std::size_t n) { return new std::byte[n]; },
        [&](std::byte *block, std::size_t) {
          delete[] block;
          released.fetch_add(1);
        });
    std::vector<std::vector<std::byte *>> blocks(kThreads);
    for (auto &mine : blocks)
      for (int k = 0; k < kBlocksEach; ++k)
        mine.push_back(pool->take(16)); // four fit under the bound, the rest go back to the system
    std::atomic<bool> go{false};
    std::vector<std::thread> givers;
    BlockPool<std::byte *> *raw = pool.get();
    for (auto &mine : blocks)
      givers.emplace_back([&, raw] {
        while (!go.load())
          std::this_thread::yield();
        for (std::byte *block : mine)
          raw->give_back(block, 16);
      });
    go.store(true);
    pool.reset(); // the owner retires while the blocks come back
    for (std::thread &t : givers)
      t.join();
    CHECK(released.load() == kThreads * kBlocksEach);
  }
}
