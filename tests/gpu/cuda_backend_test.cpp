// The CUDA backend on a real GPU (ctest label `gpu`). On a machine without
// a CUDA device the whole suite is skipped with a visible message (exit 77,
// reported by ctest as skipped); the simulated backend covers the same
// manager paths there (tests/unit/runtime_leases_test.cpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include "../unit/runtime_support.hpp"

#include "fhr/cuda/cuda_backend.hpp"
#include "fhr/runtime/manager.hpp"

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace fhr;
using namespace fhr::test;

namespace {

constexpr std::size_t kValueBytes = 3 * (1 << 20) + 4096; // not a power of two

struct Gpu {
  std::shared_ptr<Backend> backend = make_cuda_backend();
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

TEST_CASE("gpu: a reader still running on the consumer stream blocks the drop until its event completes") {
  Gpu gpu;
  std::uint64_t expected = 0;
  const Handle h = gpu.adopt(5, &expected);
  gpu.manager.ensure(h, gpu0);
  BusyStream reader;
  const Handle handles[] = {h};
  Lease lease = gpu.manager.acquire(handles, gpu0, reader.handle());
  reader.occupy();
  lease.release();
  CHECK_THROWS_AS(gpu.manager.drop(h, gpu0), ResidencyInUseError);
  reader.release = true;
  REQUIRE(cudaStreamSynchronize(reader.stream) == cudaSuccess);
  CHECK_FALSE(gpu.manager.drop(h, gpu0).no_op); // reaped: the event completed
  CHECK(gpu.manager.replicas(h) == std::vector<Location>{pageable});
}

TEST_CASE("gpu: release(wait) and close(wait) synchronise the consumer streams") {
  Gpu gpu;
  std::uint64_t expected = 0;
  const Handle h = gpu.adopt(7, &expected);
  gpu.manager.ensure(h, gpu0);
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

int main(int argc, char **argv) {
  if (cuda_device_count() == 0) {
    std::printf("SKIPPED: no CUDA device on this machine; the simulated backend covers these paths\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
