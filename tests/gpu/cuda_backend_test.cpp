// The CUDA backend on a real GPU (ctest label `gpu`). On a machine without
// a CUDA device the whole suite is skipped with a visible message (exit 77,
// reported by ctest as skipped); the simulated backend covers the same
// manager paths there (tests/unit/runtime_leases_test.cpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include "../unit/runtime_support.hpp"

#include "fhr/cuda/cuda_backend.hpp"
#include "fhr/cuda/host_blocks.hpp"
#include "fhr/harness/cuda_test_helpers.hpp"
#include "fhr/runtime/fault_injection.hpp"
#include "fhr/runtime/manager.hpp"

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sys/mman.h>
#include <thread>
#include <vector>

using namespace fhr;
using namespace fhr::test;

namespace {

constexpr std::size_t kValueBytes = 3 * (1 << 20) + 4096; // not a power of two

struct Gpu {
  explicit Gpu(BackendInterfaces with = make_cuda_backend()) : backend(std::move(with)) {}
  BackendInterfaces backend;
  Manager manager{[this] {
    ManagerOptions options;
    options.backend = backend;
    options.budgets = {{Location::cuda(0), 64 * (1 << 20)}};
    return options;
  }()};

  Handle adopt(unsigned seed, std::uint64_t *checksum) {
    auto *data = static_cast<std::byte *>(std::malloc(kValueBytes));
    fill_pattern({data, kValueBytes}, seed);
    *checksum = checksum_of({data, kValueBytes});
    return manager.adopt(data, kValueBytes, pageable, std::free, ReplicaMode::Replicable);
  }

  /// A value adopted in pageable memory and copied to cuda:0.
  Handle adopt_on_gpu0(unsigned seed, std::uint64_t *checksum) {
    const Handle h = adopt(seed, checksum);
    manager.ensure(h, gpu0);
    return h;
  }
};

/// A stream whose work is a host function that waits for `release`: a
/// stand-in for a kernel that is still reading a leased value.
struct BusyStream {
  cudaStream_t stream = nullptr;
  std::atomic<bool> release{false};
  BusyStream() {
    REQUIRE(cudaSetDevice(0) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  }
  ~BusyStream() {
    release = true;
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
  void occupy() { submit_waiting_reader(handle(), &release); }
  Stream handle() const { return Stream{reinterpret_cast<std::uintptr_t>(stream)}; }
};

/// The replica of `h` on cuda:0 cannot be dropped while `reader` still
/// runs, and can once it has finished (its leases' events reaped).
void check_drop_waits_for(Gpu &gpu, BusyStream &reader, const Handle &h) {
  CHECK_THROWS_AS(gpu.manager.drop(h, gpu0), ResidencyInUseError);
  reader.release = true;
  REQUIRE(cudaStreamSynchronize(reader.stream) == cudaSuccess);
  CHECK_FALSE(gpu.manager.drop(h, gpu0).no_op);
  CHECK(gpu.manager.replicas(h) == std::vector<Location>{pageable});
}

} // namespace

TEST_CASE("gpu: every transition between every pair of location kinds keeps the bytes") {
  Gpu gpu;
  std::uint64_t expected = 0;
  const Handle h = gpu.adopt(3, &expected);
  const Location kinds[] = {pageable, pinned, gpu0};
  for (Location from : kinds)
    for (Location to : kinds) {
      if (from == to) continue;
      CAPTURE(from.name());
      CAPTURE(to.name());
      gpu.manager.ensure(h, from);
      for (Location l : gpu.manager.replicas(h))
        if (l != from) gpu.manager.drop(h, l);
      CHECK(gpu.manager.replicas(h) == std::vector<Location>{from});
      const TransitionReport moved = gpu.manager.move(h, to);
      CHECK(moved.source == from);
      CHECK(moved.destination == to);
      CHECK(gpu.manager.replicas(h) == std::vector<Location>{to});
      CHECK(gpu.manager.content_checksum(h, to) == expected);
      gpu.manager.ensure(h, from);
      CHECK(gpu.manager.content_checksum(h, from) == expected);
    }
}

TEST_CASE("gpu: large pageable transfers are staged in chunks and keep every byte") {
  Gpu gpu;
  constexpr std::size_t kBig = 37 * (std::size_t{1} << 20) + 123; // three chunks and a ragged end
  auto *data = static_cast<std::byte *>(std::malloc(kBig));
  fill_pattern({data, kBig}, 11);
  const std::uint64_t expected = checksum_of({data, kBig});
  const Handle h = gpu.manager.adopt(data, kBig, pageable, std::free, ReplicaMode::Replicable);
  gpu.manager.ensure(h, gpu0);
  CHECK(gpu.manager.content_checksum(h, gpu0) == expected);
  gpu.manager.move(h, gpu0, pageable); // only the device replica is left
  const TransitionReport back = gpu.manager.ensure(h, pageable);
  CHECK(back.source == gpu0);
  CHECK(gpu.manager.content_checksum(h, pageable) == expected);
  if (cuda_device_count() > 1) { // staging resources are per device
    gpu.manager.drop(h, gpu0);
    gpu.manager.ensure(h, gpu1);
    CHECK(gpu.manager.content_checksum(h, gpu1) == expected);
    gpu.manager.move(h, gpu1, pageable);
    gpu.manager.ensure(h, pageable);
    CHECK(gpu.manager.content_checksum(h, pageable) == expected);
  }
}

TEST_CASE("gpu: staged transfers through rings of other shapes keep every byte") {
  // Many rounds of a small ring, one slot per buffer, the candidate for the
  // default (slots of 4 MiB, the automatic workers) and one worker: the
  // slots' DMAs and the workers' pieces each wait for the other
  // (runtime/cuda/src/staging_ring.hpp).
  struct Shape {
    std::size_t chunk, slot;
    unsigned threads;
  };
  for (const Shape shape : {Shape{std::size_t{4} << 20, std::size_t{1} << 20, 15},
                            Shape{std::size_t{2} << 20, std::size_t{2} << 20, 3},
                            Shape{std::size_t{32} << 20, std::size_t{4} << 20, 0},
                            Shape{std::size_t{32} << 20, std::size_t{8} << 20, 1}}) {
    CAPTURE(shape.chunk);
    CAPTURE(shape.slot);
    CudaBackendOptions options;
    options.staging_chunk_bytes = shape.chunk;
    options.staging_slot_bytes = shape.slot;
    options.host_copy_threads = shape.threads;
    REQUIRE(resolved(options).staging_slot_bytes == shape.slot);
    Gpu gpu(make_cuda_backend(options));
    constexpr std::size_t kBig = 41 * (std::size_t{1} << 20) + 77;
    auto *data = static_cast<std::byte *>(std::malloc(kBig));
    fill_pattern({data, kBig}, 23);
    const std::uint64_t expected = checksum_of({data, kBig});
    const Handle h = gpu.manager.adopt(data, kBig, pageable, std::free, ReplicaMode::Replicable);
    for (int round = 0; round < 3; ++round) {
      gpu.manager.ensure(h, gpu0);
      CHECK(gpu.manager.content_checksum(h, gpu0) == expected);
      gpu.manager.move(h, gpu0, pageable);
      CHECK(gpu.manager.ensure(h, pageable).source == gpu0);
      CHECK(gpu.manager.content_checksum(h, pageable) == expected);
    }
  }
}

TEST_CASE("gpu: a reader still running on the consumer stream blocks the drop until its event completes") {
  Gpu gpu;
  std::uint64_t expected = 0;
  const Handle h = gpu.adopt_on_gpu0(5, &expected);
  BusyStream reader;
  const Handle handles[] = {h};
  Lease lease = gpu.manager.acquire(handles, gpu0, reader.handle());
  reader.occupy();
  lease.release();
  check_drop_waits_for(gpu, reader, h);
}

TEST_CASE("gpu: a backlog of pending leases behind a running reader is reaped exactly") {
  Gpu gpu;
  std::uint64_t expected = 0;
  const Handle h = gpu.adopt_on_gpu0(6, &expected);
  BusyStream reader;
  const Handle handles[] = {h};
  reader.occupy(); // every lease below is released behind this reader
  for (int i = 0; i < 100; ++i) {
    Lease lease = gpu.manager.acquire(handles, gpu0, reader.handle());
    lease.release();
  }
  check_drop_waits_for(gpu, reader, h); // all 100 reaped once it finished
}

TEST_CASE("gpu: release(wait) and close(wait) synchronise the consumer streams") {
  Gpu gpu;
  std::uint64_t expected = 0;
  const Handle h = gpu.adopt_on_gpu0(7, &expected);
  BusyStream reader;
  const Handle handles[] = {h};
  {
    Lease lease = gpu.manager.acquire(handles, gpu0, reader.handle());
    reader.occupy();
    std::thread finisher([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      reader.release = true;
    });
    lease.release(/*wait=*/true); // returns once the reader finished
    finisher.join();
  }
  CHECK_NOTHROW(gpu.manager.drop(h, gpu0));
  gpu.manager.ensure(h, gpu0);
  reader.release = false;
  Lease pending = gpu.manager.acquire(handles, gpu0, reader.handle());
  reader.occupy();
  pending.release();
  CHECK_THROWS_AS(gpu.manager.close(/*wait=*/false), ResidencyInUseError);
  std::thread finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    reader.release = true;
  });
  gpu.manager.close(/*wait=*/true);
  finisher.join();
  CHECK(gpu.manager.closed());
}

TEST_CASE("gpu: streams of other devices, and devices that do not exist, are refused") {
  Gpu gpu;
  std::uint64_t expected = 0;
  const Handle h = gpu.adopt(1, &expected);
  const unsigned devices = cuda_device_count();
  CHECK_THROWS_AS(gpu.manager.ensure(h, Location::cuda(devices)), std::invalid_argument);
  gpu.manager.ensure(h, gpu0);
  const Handle handles[] = {h};
  CHECK_THROWS_AS(gpu.manager.acquire(handles, gpu0), std::invalid_argument);
  if (devices > 1) {
    cudaStream_t other = nullptr;
    REQUIRE(cudaSetDevice(1) == cudaSuccess);
    REQUIRE(cudaStreamCreate(&other) == cudaSuccess);
    const Stream wrong{reinterpret_cast<std::uintptr_t>(other)};
    CHECK_THROWS_AS(gpu.manager.acquire(handles, gpu0, wrong), std::invalid_argument);
    CHECK_THROWS_AS(gpu.manager.ensure(h, gpu0, wrong), std::invalid_argument);
    // Device to device: the only replica is on cuda:0 when it moves.
    gpu.manager.drop(h, pageable);
    REQUIRE(gpu.manager.replicas(h) == std::vector<Location>{gpu0});
    const TransitionReport moved = gpu.manager.move(h, gpu1);
    CHECK(moved.source == gpu0);
    CHECK(gpu.manager.replicas(h) == std::vector<Location>{gpu1});
    CHECK(gpu.manager.content_checksum(h, gpu1) == expected);
    gpu.manager.move(h, gpu0, gpu1);
    CHECK(gpu.manager.content_checksum(h, gpu0) == expected);
    cudaStreamDestroy(other);
  } else {
    MESSAGE("one CUDA device: the wrong-device and peer cases need two");
  }
}

TEST_CASE("gpu: the backend leaves the calling thread's current device as it was") {
  const int mine = static_cast<int>(cuda_device_count()) - 1; // the last device: not the one it works on
  REQUIRE(cudaSetDevice(mine) == cudaSuccess);
  {
    Gpu gpu; // makes streams and pools on every device
    std::uint64_t expected = 0;
    const Handle h = gpu.adopt_on_gpu0(4, &expected);
    gpu.manager.ensure(h, pinned);
    CHECK(gpu.manager.content_checksum(h, gpu0) == expected);
    const Handle handles[] = {h};
    BusyStream reader; // on cuda:0
    REQUIRE(cudaSetDevice(mine) == cudaSuccess);
    Lease lease = gpu.manager.acquire(handles, gpu0, reader.handle());
    lease.release(/*wait=*/true);
    (void)gpu.manager.snapshot();
    int current = -1;
    REQUIRE(cudaGetDevice(&current) == cudaSuccess);
    CHECK(current == mine);
  }
  int current = -1;
  REQUIRE(cudaGetDevice(&current) == cudaSuccess);
  CHECK(current == mine);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

TEST_CASE("gpu: a budget error on the device leaves nothing allocated") {
  Gpu gpu;
  std::vector<Handle> handles;
  std::uint64_t expected = 0;
  for (unsigned i = 0; i < 30; ++i)
    handles.push_back(gpu.adopt(i, &expected));
  std::size_t placed = 0;
  for (const Handle &h : handles) {
    try {
      gpu.manager.ensure(h, gpu0);
      ++placed;
    } catch (const ResidencyBudgetError &) {
      break;
    }
  }
  CHECK(placed == (64u << 20) / kValueBytes);
  CHECK(gpu.manager.account(gpu0).used_bytes == placed * kValueBytes);
}

namespace {

/// A stage of a CKKS pipeline, scaled down: evict a ciphertext from the
/// device, prefetch a key from pinned memory and one from pageable memory,
/// and move a spent value out of pinned memory.
struct OverlapStage {
  Gpu gpu;
  std::vector<Handle> values;
  std::vector<std::uint64_t> checksums;
  std::vector<ActionSpec> actions;

  explicit OverlapStage(BackendInterfaces backend = make_cuda_backend()) : gpu(std::move(backend)) {
    const Location homes[] = {gpu0, pinned, pageable, pinned};
    for (unsigned i = 0; i < 4; ++i) {
      std::uint64_t checksum = 0;
      values.push_back(gpu.adopt(20 + i, &checksum));
      checksums.push_back(checksum);
      if (homes[i] != pageable) gpu.manager.move(values[i], homes[i]);
    }
    actions = {ActionSpec{ActionKind::Move, values[0], pinned, std::nullopt},
               ActionSpec{ActionKind::Ensure, values[1], gpu0, std::nullopt},
               ActionSpec{ActionKind::Ensure, values[2], gpu0, std::nullopt},
               ActionSpec{ActionKind::Move, values[3], pageable, std::nullopt}};
  }

  /// Where every value lives, in installation order.
  std::vector<std::vector<Location>> placement() {
    std::vector<std::vector<Location>> out;
    for (const Handle &h : values)
      out.push_back(gpu.manager.replicas(h));
    return out;
  }

  /// Every replica holds its value's bytes, and every location's books are
  /// the sum of its replicas.
  void check_books_and_bytes() {
    const Snapshot s = gpu.manager.snapshot();
    for (const SnapshotLocation &l : s.locations)
      CHECK(l.used_bytes == charged_by_replicas(s, l.location));
    for (std::size_t i = 0; i < values.size(); ++i)
      for (Location l : gpu.manager.replicas(values[i]))
        CHECK(gpu.manager.content_checksum(values[i], l) == checksums[i]);
  }
};

} // namespace

TEST_CASE("gpu: overlap: an eviction and prefetches copy together and commit in plan order") {
  OverlapStage stage;
  const PlanReport report = stage.gpu.manager.execute_actions(stage.actions, "stage");
  REQUIRE(report.transitions.size() == 4);
  CHECK(report.transitions[0].source == gpu0);
  CHECK(report.transitions[1].source == pinned);
  CHECK(report.transitions[2].source == pageable);
  CHECK(report.transitions[3].destination == pageable);
  // The prefetches were under way before the eviction committed; the
  // commits themselves come in plan order.
  CHECK(report.transitions[1].started_at_ns < report.transitions[0].completed_at_ns);
  for (std::size_t i = 1; i < 4; ++i)
    CHECK(report.transitions[i].completed_at_ns >= report.transitions[i - 1].completed_at_ns);
  CHECK(stage.placement() ==
        std::vector<std::vector<Location>>{{pinned}, {pinned, gpu0}, {pageable, gpu0}, {pageable}});
  stage.check_books_and_bytes();
}

TEST_CASE("gpu: fault injection through the fault adaptors: every failure leaves the exact partial report") {
  using Op = BackendOperation;
  cudaMemPool_t pool = nullptr;
  REQUIRE(cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess);
  auto pool_used = [&] {
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess); // frees are stream-ordered
    std::uint64_t used = 0;
    REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess);
    return used;
  };
  std::uint64_t counts[5] = {};
  {
    auto faults = std::make_shared<FaultPlan>();
    OverlapStage clean(inject_faults(make_cuda_backend(), faults));
    const std::uint64_t before[5] = {faults->count(Op::Allocate), faults->count(Op::Copy), 0, 0,
                                     faults->count(Op::CopyCompletion)};
    clean.gpu.manager.execute_actions(clean.actions, "stage");
    for (Op op : {Op::Allocate, Op::Copy, Op::CopyCompletion})
      counts[static_cast<unsigned>(op)] = faults->count(op) - before[static_cast<unsigned>(op)];
  }
  CHECK(counts[static_cast<unsigned>(Op::Allocate)] == 4);
  CHECK(counts[static_cast<unsigned>(Op::CopyCompletion)] >= 1);
  const std::uint64_t baseline = pool_used();
  std::size_t runs = 0;
  for (Op op : {Op::Allocate, Op::Copy, Op::CopyCompletion})
    for (std::uint64_t k = 1; k <= counts[static_cast<unsigned>(op)]; ++k) {
      CAPTURE(static_cast<unsigned>(op));
      CAPTURE(k);
      auto faults = std::make_shared<FaultPlan>();
      OverlapStage stage(inject_faults(make_cuda_backend(), faults));
      faults->fail_on(op, k);
      std::size_t failed_at = stage.actions.size();
      try {
        stage.gpu.manager.execute_actions(stage.actions, "stage");
      } catch (const ResidencyPlanExecutionError &error) {
        REQUIRE(error.details().failed_action_index);
        failed_at = *error.details().failed_action_index;
        CHECK(error.details().partial_report.transitions.size() == failed_at);
        CHECK(error.details().detail.find("injected failure") != std::string::npos);
      }
      // The state is exactly that of the actions before the failure.
      OverlapStage reference;
      reference.gpu.manager.execute_actions(std::span(reference.actions).first(failed_at), "prefix");
      CHECK(stage.placement() == reference.placement());
      stage.check_books_and_bytes();
      ++runs;
    }
  CHECK(runs >= 9);
  CHECK(pool_used() == baseline); // every device byte went back to the pool
}

TEST_CASE("gpu: snapshots show the device pool and the driver's free memory beside the books") {
  Gpu gpu;
  std::uint64_t expected = 0;
  const Handle h = gpu.adopt_on_gpu0(2, &expected);
  gpu.manager.ensure(h, pinned);
  Snapshot s = gpu.manager.snapshot();
  auto at = [&](Location l) {
    for (const SnapshotLocation &location : s.locations)
      if (location.location == l) return location;
    FAIL("no such location in the snapshot");
    return SnapshotLocation{};
  };
  REQUIRE(at(gpu0).pool_in_use_bytes);
  CHECK(*at(gpu0).pool_in_use_bytes >= kValueBytes);
  REQUIRE(at(gpu0).driver_free_bytes);
  CHECK(*at(gpu0).driver_free_bytes > 0);
  CHECK(*at(pinned).pool_in_use_bytes >= kValueBytes);
  CHECK_FALSE(at(pinned).driver_free_bytes);
  REQUIRE(at(pageable).pool_in_use_bytes); // the pageable pool's: the adopted block is not its
  CHECK(*at(pageable).pool_in_use_bytes == 0);
  const std::uint64_t in_use = *at(gpu0).pool_in_use_bytes;
  gpu.manager.drop(h, gpu0);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  s = gpu.manager.snapshot();
  CHECK(*at(gpu0).pool_in_use_bytes + kValueBytes <= in_use);
  CHECK(*at(gpu0).pool_idle_bytes >= kValueBytes); // kept by the pool, not returned to the driver
  MESSAGE("cuda:0 pool in use " << *at(gpu0).pool_in_use_bytes << ", idle " << *at(gpu0).pool_idle_bytes
                                << ", driver free " << *at(gpu0).driver_free_bytes);
}

namespace {

/// `nbytes` of cudaMallocHost memory holding the pattern of `seed`.
std::byte *pinned_pattern(std::size_t nbytes, unsigned seed);
void free_pinned(std::byte *data);

} // namespace

TEST_CASE("gpu: small device blocks are carved from cudaMalloc slabs up to the cache's bound, then pooled") {
  // A bound of one 2 MiB slab: eight blocks of 256 KiB (a size class of
  // its own) are carved from it, the next four come from the device's
  // stream-ordered pool; every value's bytes arrive either way.
  constexpr std::size_t kSmall = 256 << 10;
  CudaBackendOptions options;
  options.device_small_block_cache_bytes = 2 << 20;
  Gpu gpu(make_cuda_backend(options));
  cudaMemPool_t pool = nullptr;
  REQUIRE(cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess);
  auto pool_used = [&] {
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::uint64_t used = 0;
    REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess);
    return used;
  };
  const std::uint64_t baseline = pool_used();
  std::vector<Handle> values;
  std::vector<std::uint64_t> checksums;
  for (unsigned k = 0; k < 12; ++k) {
    auto *data = static_cast<std::byte *>(std::malloc(kSmall));
    fill_pattern({data, kSmall}, 40 + k);
    checksums.push_back(checksum_of({data, kSmall}));
    values.push_back(gpu.manager.adopt(data, kSmall, pageable, std::free, ReplicaMode::Replicable));
    gpu.manager.ensure(values.back(), gpu0);
    CAPTURE(k);
    if (k < 8)
      CHECK(pool_used() == baseline);
    else
      CHECK(pool_used() >= baseline + (k - 7) * kSmall);
  }
  for (std::size_t k = 0; k < values.size(); ++k)
    CHECK(gpu.manager.content_checksum(values[k], gpu0) == checksums[k]);
  Snapshot s = gpu.manager.snapshot();
  auto gpu0_figures = [&] {
    for (const SnapshotLocation &location : s.locations)
      if (location.location == gpu0) return location;
    FAIL("no cuda:0 in the snapshot");
    return SnapshotLocation{};
  };
  REQUIRE(gpu0_figures().pool_in_use_bytes);
  CHECK(*gpu0_figures().pool_in_use_bytes >= 12 * kSmall);
  // Dropped in order: the carved eight fill the cache's bound and are kept,
  // the pooled four go back to the pool.
  for (const Handle &h : values)
    gpu.manager.drop(h, gpu0);
  CHECK(pool_used() == baseline);
  s = gpu.manager.snapshot();
  CHECK(*gpu0_figures().pool_idle_bytes >= 8 * kSmall);
  // The kept blocks serve the next eight: nothing from the pool.
  for (std::size_t k = 0; k < 8; ++k) {
    gpu.manager.ensure(values[k], gpu0);
    CHECK(gpu.manager.content_checksum(values[k], gpu0) == checksums[k]);
  }
  CHECK(pool_used() == baseline);
}

TEST_CASE("gpu: large pageable blocks come back from the pageable pool, bytes intact") {
  Gpu gpu;
  constexpr std::size_t kLarge = 9 * (std::size_t{1} << 20) + 123; // 10 MiB in huge pages
  constexpr std::uint64_t kRounded = 10 << 20;
  std::byte *data = pinned_pattern(kLarge, 21);
  const std::uint64_t expected = checksum_of({data, kLarge});
  const Handle h = gpu.manager.adopt(data, kLarge, pinned, free_pinned, ReplicaMode::Replicable);
  auto pageable_pool = [&] {
    const std::optional<PoolFigures> figures = gpu.backend.memory->pool_figures(pageable);
    REQUIRE(figures);
    return std::make_pair(figures->in_use_bytes, figures->idle_bytes);
  };
  const auto before = pageable_pool();
  // pinned -> pageable: a host-to-host copy on the copier threads.
  gpu.manager.ensure(h, pageable);
  CHECK(gpu.manager.content_checksum(h, pageable) == expected);
  CHECK(pageable_pool().first == before.first + kRounded);
  gpu.manager.drop(h, pageable);
  CHECK(pageable_pool().first == before.first);
  CHECK(pageable_pool().second == before.second + kRounded); // kept, pages faulted in
  // cuda:0 -> pageable, staged, into the kept block.
  gpu.manager.ensure(h, gpu0);
  gpu.manager.move(h, pageable, gpu0);
  CHECK(pageable_pool() == std::make_pair(before.first + kRounded, before.second));
  CHECK(gpu.manager.content_checksum(h, pageable) == expected);
  gpu.manager.move(h, pinned, pageable);
  CHECK(gpu.manager.content_checksum(h, pinned) == expected);
  CHECK(pageable_pool() == std::make_pair(before.first, before.second + kRounded));
}

namespace {

/// `nbytes` of cudaMallocHost memory holding the pattern of `seed`.
std::byte *pinned_pattern(std::size_t nbytes, unsigned seed) {
  void *block = nullptr;
  REQUIRE(cudaMallocHost(&block, nbytes) == cudaSuccess);
  fill_pattern({static_cast<std::byte *>(block), nbytes}, seed);
  return static_cast<std::byte *>(block);
}

/// `nbytes` of cudaMalloc memory on `device` holding the pattern of `seed`.
DeviceBuffer device_pattern(Location device, std::size_t nbytes, unsigned seed) {
  std::vector<std::byte> bytes(nbytes);
  fill_pattern(bytes, seed);
  return copy_to_device(device, bytes);
}

void free_pinned(std::byte *data) { cudaFreeHost(data); }

} // namespace

TEST_CASE("gpu: adopt infers the location from the memory: device, pinned, pageable") {
  Gpu gpu;
  constexpr std::size_t n = 64 * KiB;
  std::vector<std::byte> expected(n);
  fill_pattern(expected, 31);
  const DeviceBuffer device = device_pattern(gpu0, n, 31);
  const Handle on_device = gpu.manager.adopt(device.data, n, n, std::nullopt, device.release);
  CHECK(gpu.manager.replicas(on_device) == std::vector<Location>{gpu0});
  CHECK(gpu.manager.content_checksum(on_device, gpu0) == checksum_of(expected));
  const Handle in_pinned = gpu.manager.adopt(pinned_pattern(n, 31), n, n, std::nullopt, free_pinned);
  CHECK(gpu.manager.replicas(in_pinned) == std::vector<Location>{pinned});
  auto *heap = static_cast<std::byte *>(std::malloc(n));
  fill_pattern({heap, n}, 31);
  const Handle in_pageable = gpu.manager.adopt(heap, n, n, std::nullopt, std::free);
  CHECK(gpu.manager.replicas(in_pageable) == std::vector<Location>{pageable});
  CHECK(gpu.manager.account(gpu0).used_bytes == n);
  CHECK(gpu.manager.account(pinned).used_bytes == n);
  // A view smaller than its device block: the block is charged, the view copied.
  const DeviceBuffer block = device_pattern(gpu0, 2 * n, 32);
  std::vector<std::byte> first_half(n);
  fill_pattern(first_half, 32);
  const Handle view =
      gpu.manager.adopt(block.data, n, 2 * n, std::nullopt, block.release, ReplicaMode::Replicable);
  CHECK(gpu.manager.account(gpu0).used_bytes == 3 * n);
  const Snapshot s = gpu.manager.snapshot();
  CHECK(s.values.back().materializations[0].storage_nbytes == 2 * n);
  CHECK(s.values.back().materializations[0].charged_nbytes == 2 * n);
  CHECK(gpu.manager.ensure(view, pageable).storage_nbytes == 2 * n);
  CHECK(gpu.manager.content_checksum(view, pageable) == checksum_of(first_half));
  CHECK(gpu.manager.account(pageable).used_bytes == n + 2 * n); // every replica is charged the spec
  if (cuda_device_count() > 1) {
    const DeviceBuffer other = device_pattern(gpu1, n, 33);
    const Handle h = gpu.manager.adopt(other.data, n, n, std::nullopt, other.release);
    CHECK(gpu.manager.replicas(h) == std::vector<Location>{gpu1});
  }
}

TEST_CASE("gpu: adopt refuses memory whose kind contradicts `at`, and a second view of an owned block") {
  Gpu gpu;
  constexpr std::size_t n = 16 * KiB;
  const std::uint64_t version = gpu.manager.state_version();
  const DeviceBuffer device = device_pattern(gpu0, n, 1);
  std::byte *pinned_block = pinned_pattern(n, 2);
  auto *heap = static_cast<std::byte *>(std::malloc(n));
  struct Case {
    std::byte *data;
    Location at;
    const char *message;
  };
  const Case cases[] = {
      {device.data, pinned, "adopt at pinned: the buffer is memory of cuda:0, not pinned host memory"},
      {device.data, pageable, "adopt at pageable: the buffer is memory of cuda:0, not pageable host memory"},
      {pinned_block, pageable, "adopt at pageable: the buffer unexpectedly uses pinned storage"},
      {pinned_block, gpu0, "adopt at cuda:0: the buffer is pinned host memory, not memory of cuda:0"},
      {heap, pinned, "adopt at pinned: the buffer is not fully pinned (it is pageable host memory)"},
      {heap, gpu0, "adopt at cuda:0: the buffer is pageable host memory, not memory of cuda:0"},
  };
  for (const Case &c : cases) {
    CAPTURE(c.message);
    try {
      gpu.manager.adopt(c.data, n, n, c.at, [](std::byte *) { FAIL("a refused buffer was freed"); });
      FAIL("adopted");
    } catch (const ResidencyMaterializationError &error) {
      CHECK(std::string(error.what()) == c.message);
    }
  }
  if (cuda_device_count() > 1) {
    const DeviceBuffer other = device_pattern(gpu1, n, 3);
    CHECK_THROWS_WITH_AS(gpu.manager.adopt(other.data, n, n, gpu0, other.release),
                         "adopt at cuda:0: the buffer is memory of cuda:1, not memory of cuda:0",
                         ResidencyMaterializationError);
    other.release(other.data);
  }
  CHECK(gpu.manager.state_version() == version); // nothing registered, nothing charged
  CHECK(gpu.manager.snapshot().values.empty());
  // A second view of a block the manager owns would be freed twice (§2.7).
  const Handle h = gpu.manager.adopt(device.data, n, n, gpu0, device.release, ReplicaMode::Replicable);
  const std::uint64_t adopted = gpu.manager.state_version();
  CHECK_THROWS_WITH_AS(
      gpu.manager.adopt(device.data + n / 2, n / 4, n / 4, std::nullopt, [](std::byte *) { FAIL("freed"); }),
      "an adopted value must own independent backing storage: the buffer overlaps the replica of value #1 at "
      "cuda:0",
      ResidencyOwnershipError);
  gpu.manager.ensure(h, pinned); // manager-made storage is indexed too
  const Handle handles[] = {h};
  {
    Lease lease = gpu.manager.acquire(handles, pinned);
    auto *leased = const_cast<std::byte *>(lease.value(h).data());
    CHECK_THROWS_AS(gpu.manager.adopt(leased, n, pinned, [](std::byte *) { FAIL("freed"); }),
                    ResidencyOwnershipError);
  }
  // pinned registered and the replica installed, the lease and its release
  CHECK(gpu.manager.state_version() == adopted + 4);
  CHECK(gpu.manager.account(gpu0).used_bytes == n);
  cudaFreeHost(pinned_block);
  std::free(heap);
}

TEST_CASE("gpu: pinned blocks on huge pages: registered, pooled, staged through, bytes intact") {
  ::unsetenv("FHR_PINNED_HUGE_PAGES"); // the option below decides
  CudaBackendOptions options;
  options.pinned_huge_pages = true;
  REQUIRE(pinned_on_huge_pages(true));
  Gpu gpu(make_cuda_backend(options));
  constexpr std::size_t kLarge = 10 * (std::size_t{1} << 20) + 4096; // six huge pages
  constexpr std::size_t kSmall = 64 * KiB;                           // below one: cudaHostAlloc
  for (const std::size_t n : {kLarge, kSmall}) {
    CAPTURE(n);
    auto *data = static_cast<std::byte *>(std::malloc(n));
    fill_pattern({data, n}, 41);
    const std::uint64_t expected = checksum_of({data, n});
    const Handle h = gpu.manager.adopt(data, n, pageable, std::free, ReplicaMode::Replicable);
    gpu.manager.ensure(h, pinned);
    Storage block = gpu.backend.memory->allocate(pinned, n); // what the binder adopts
    std::byte *view = block.bytes().data();
    std::memcpy(view, data, n);
    // Registered memory is pinned memory to the driver (what adopt's
    // location inference asks), on a huge-page boundary when it is large.
    cudaPointerAttributes attributes{};
    REQUIRE(cudaPointerGetAttributes(&attributes, view) == cudaSuccess);
    CHECK(attributes.type == cudaMemoryTypeHost);
    CHECK((reinterpret_cast<std::uintptr_t>(view) % kHugePageBytes == 0) == (n >= kHugePageBytes));
    CHECK(gpu.manager.content_checksum(h, pinned) == expected);
    gpu.manager.move(h, gpu0, pinned);
    CHECK(gpu.manager.content_checksum(h, gpu0) == expected);
    gpu.manager.move(h, pinned, gpu0); // into a kept block
    CHECK(gpu.manager.content_checksum(h, pinned) == expected);
    // Staged both ways through the bounce buffers (on huge pages too) when large.
    gpu.manager.move(h, gpu0, pageable);
    CHECK(gpu.manager.content_checksum(h, gpu0) == expected);
    gpu.manager.drop(h, pinned);
    gpu.manager.move(h, pageable, gpu0);
    CHECK(gpu.manager.replicas(h) == std::vector<Location>{pageable});
    CHECK(gpu.manager.content_checksum(h, pageable) == expected);
    gpu.manager.discard(h);
  }
  // Kept in the pinned pool, per size the value's block and the one
  // allocated above: the large by the whole huge pages it takes (six), the
  // small cudaHostAlloc block by its size.
  auto idle = [&] {
    const std::optional<PoolFigures> figures = gpu.backend.memory->pool_figures(pinned);
    REQUIRE(figures);
    return figures->idle_bytes;
  };
  CHECK(idle() == 2 * (huge_page_multiple(kLarge) + kSmall));
  // Another size that rounds to the same six pages takes a kept block.
  Storage larger = gpu.backend.memory->allocate(pinned, kLarge + kHugePageBytes / 2);
  CHECK(idle() == huge_page_multiple(kLarge) + 2 * kSmall);
}

// Host code alone: runs on machines without a GPU too (see main).
TEST_CASE("cuda host blocks: huge-page mappings are fresh, aligned and whole") {
  constexpr std::size_t kRounded = 3 * kHugePageBytes;
  CHECK(huge_page_multiple(1) == kHugePageBytes);
  CHECK(huge_page_multiple(kHugePageBytes) == kHugePageBytes);
  CHECK(huge_page_multiple(2 * kHugePageBytes + 1) == kRounded);
  CHECK_THROWS_AS(huge_page_multiple(std::numeric_limits<std::size_t>::max()),
                  std::bad_alloc); // no wrap to 0
  for (int round = 0; round < 4; ++round) {
    CAPTURE(round);
    std::byte *block = map_huge_pages(kRounded);
    CHECK(reinterpret_cast<std::uintptr_t>(block) % kHugePageBytes == 0);
    // Fresh memory every time: a block malloc's heap handed back would hold
    // the previous round's bytes (and be faulted in already).
    bool zero = true;
    for (std::size_t offset = 0; offset < kRounded; offset += 4096)
      zero = zero && block[offset] == std::byte{0} && block[offset + 4095] == std::byte{0};
    CHECK(zero);
    std::memset(block, 0xab, kRounded); // all of it writable
    unmap_huge_pages(block, kRounded);
  }
}

// Host code alone too. Residency is read with mincore: a fresh mapping has
// no page in memory, and after the faults the first page of every huge
// page is (the whole huge page where the kernel gave one).
TEST_CASE("cuda host blocks: the huge pages are faulted in on any number of threads") {
  constexpr std::size_t kPages = 16, kRounded = kPages * kHugePageBytes, kSmallPage = 4096;
  auto resident_pages = [](std::byte *block) {
    std::vector<unsigned char> in_memory(kRounded / kSmallPage);
    REQUIRE(::mincore(block, kRounded, in_memory.data()) == 0);
    std::size_t huge = 0;
    for (std::size_t page = 0; page < kPages; ++page)
      huge += in_memory[page * (kHugePageBytes / kSmallPage)] & 1;
    return huge;
  };
  for (unsigned threads : {0u, 1u, 3u, 16u, 64u}) { // 16: one a page; 64: more threads than pages
    CAPTURE(threads);
    std::byte *block = map_huge_pages(kRounded);
    CHECK(resident_pages(block) == 0);
    fault_in_huge_pages(block, kRounded, threads);
    CHECK(resident_pages(block) == kPages);
    unmap_huge_pages(block, kRounded);
  }
}

TEST_CASE("cuda options: the environment's tuning overrides, the automatic choices") {
  struct Variable { // sets an environment variable for the test, then unsets it
    const char *name;
    Variable(const char *variable, const char *value) : name(variable) { ::setenv(name, value, 1); }
    ~Variable() { ::unsetenv(name); }
    Variable(const Variable &) = delete;
    Variable &operator=(const Variable &) = delete;
  };
  ::unsetenv("FHR_HOST_COPY_THREADS");
  ::unsetenv("FHR_STAGING_CHUNK_MIB");
  ::unsetenv("FHR_STAGING_SLOT_MIB");
  ::unsetenv("FHR_HOST_COPY_STREAMING");
  ::unsetenv("FHR_PINNED_HUGE_PAGES");
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const CudaBackendOptions automatic = resolved({});
  CHECK(automatic.host_copy_threads == std::min(15u, cores - 1));
  CHECK(automatic.staging_chunk_bytes == std::size_t{32} << 20);
  CHECK(automatic.staging_slot_bytes == 0); // the buffers in turn
  CHECK(automatic.host_copy_streaming_stores);
  CudaBackendOptions chosen;
  chosen.host_copy_threads = 5;
  chosen.staging_chunk_bytes = std::size_t{16} << 20;
  CHECK(resolved(chosen).host_copy_threads == 5);
  CHECK(resolved(chosen).staging_chunk_bytes == std::size_t{16} << 20);
  CHECK(pinned_fault_threads(resolved(chosen)) == 6); // the copy threads and their caller
  {
    Variable threads("FHR_HOST_COPY_THREADS", "3"), chunk("FHR_STAGING_CHUNK_MIB", "8");
    CHECK(resolved(chosen).host_copy_threads == 3);
    CHECK(resolved(chosen).staging_chunk_bytes == std::size_t{8} << 20);
  }
  for (const char *setting : {"0", "1"}) {
    Variable streaming("FHR_HOST_COPY_STREAMING", setting), huge("FHR_PINNED_HUGE_PAGES", setting);
    CHECK(resolved({}).host_copy_streaming_stores == (setting[0] == '1'));
    CHECK(resolved({}).pinned_huge_pages == (setting[0] == '1'));
  }
  {
    Variable streaming("FHR_HOST_COPY_STREAMING", "2"); // neither: the options' own
    CudaBackendOptions plain;
    plain.host_copy_streaming_stores = false;
    CHECK_FALSE(resolved(plain).host_copy_streaming_stores);
  }
  for (const char *bad : {"", "x", "-2", " -1", "+8", "4 ", "0x10", "99999999999999999999999"}) {
    CAPTURE(bad);
    Variable threads("FHR_HOST_COPY_THREADS", bad), chunk("FHR_STAGING_CHUNK_MIB", bad);
    CHECK(resolved(chosen).host_copy_threads == 5); // ignored: the options' own
    CHECK(resolved(chosen).staging_chunk_bytes == std::size_t{16} << 20);
  }
  Variable no_chunk("FHR_STAGING_CHUNK_MIB", "0"); // no chunk at all: the automatic one
  CHECK(resolved({}).staging_chunk_bytes == std::size_t{32} << 20);
}

TEST_CASE("cuda options: the staging ring's slot is a power of two that divides the chunk, or none") {
  ::unsetenv("FHR_STAGING_CHUNK_MIB");
  ::unsetenv("FHR_STAGING_SLOT_MIB");
  auto slot_of = [](std::size_t chunk, std::size_t slot) {
    CudaBackendOptions options;
    options.staging_chunk_bytes = chunk;
    options.staging_slot_bytes = slot;
    return resolved(options).staging_slot_bytes;
  };
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  CHECK(slot_of(16 * kMiB, 3 * kMiB) == 2 * kMiB);   // rounded down to a power of two
  CHECK(slot_of(16 * kMiB, 64 * kMiB) == 16 * kMiB); // no larger than the chunk
  CHECK(slot_of(24 * kMiB, 16 * kMiB) == 8 * kMiB);  // and dividing it
  CHECK(slot_of(3 * kMiB / 2, 4 * kMiB) == kMiB / 2);
  CHECK(slot_of(32 * kMiB, 100) == kMiB / 2); // at least a copier piece
  CHECK(slot_of(1000, 4096) == 1000);         // a chunk under a piece: one slot
  CHECK(slot_of(kMiB + 4096, kMiB) == 0);     // not whole pieces: the buffers in turn
  CHECK(slot_of(16 * kMiB, 0) == 0);          // no ring: the buffers in turn
  ::setenv("FHR_STAGING_SLOT_MIB", "1", 1);
  CHECK(resolved({}).staging_slot_bytes == kMiB);
  ::setenv("FHR_STAGING_SLOT_MIB", "x", 1); // ignored: no ring
  CHECK(resolved({}).staging_slot_bytes == 0);
  ::setenv("FHR_STAGING_SLOT_MIB", "0", 1);
  CHECK(slot_of(16 * kMiB, 2 * kMiB) == 2 * kMiB); // 0 is not a slot: the options' own
  ::unsetenv("FHR_STAGING_SLOT_MIB");
}

int main(int argc, char **argv) {
  if (cuda_device_count() == 0) {
    // The host-only cases run here too; the rest needs a device.
    doctest::Context host_only(argc, argv);
    host_only.addFilter("test-case", "cuda options*,cuda host*");
    if (const int failed = host_only.run(); failed != 0) return failed;
    std::printf("SKIPPED: no CUDA device on this machine; the simulated backend covers these paths\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
