// The raw CUDA side of `fhr-plan calibrate`: copies of the same sizes with
// cudaMemcpyAsync alone, the driver's allocation, registration and event
// costs, and the machine's name.
#include "calibrate_cuda.hpp"

#include "fhr/model/link_fit.hpp"

#include "fhr/cuda/cuda_backend.hpp"
#include "fhr/cuda/host_blocks.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace fhr::calibrate {

namespace {

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(status) + " (" +
                             cudaGetErrorString(status) + ")");
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Host or device memory of one location, for raw copies.
struct Buffer {
  Location location;
  void *data = nullptr;
  Buffer(Location at, std::uint64_t bytes) : location(at) {
    if (at.is_cuda()) {
      check(cudaSetDevice(static_cast<int>(at.device())), "cudaSetDevice");
      check(cudaMalloc(&data, bytes), "cudaMalloc");
    } else if (at == Location::pinned()) {
      check(cudaHostAlloc(&data, bytes, cudaHostAllocDefault), "cudaHostAlloc");
    } else {
      data = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
      if (!data) throw std::bad_alloc();
    }
    // First touch outside the clock.
    if (at.is_cuda())
      check(cudaMemset(data, 1, bytes), "cudaMemset");
    else
      std::memset(data, 1, bytes);
  }
  ~Buffer() {
    if (location.is_cuda())
      cudaFree(data);
    else if (location == Location::pinned())
      cudaFreeHost(data);
    else
      std::free(data);
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
};

class CudaRawCopies final : public RawCopies {
public:
  CudaRawCopies() {
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~CudaRawCopies() override { cudaStreamDestroy(stream_); }

  std::optional<double> median_seconds(Location from, Location to, std::uint64_t bytes,
                                       unsigned repetitions) override {
    if (from.is_cuda() && to.is_cuda()) return std::nullopt; // peer copies: the manager's figure only
    Buffer source(from, bytes), destination(to, bytes);
    std::vector<double> times;
    for (unsigned rep = 0; rep <= repetitions; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      if (!from.is_cuda() && !to.is_cuda()) {
        std::memcpy(destination.data, source.data, bytes);
      } else {
        check(cudaMemcpyAsync(destination.data, source.data, bytes, cudaMemcpyDefault, stream_),
              "cudaMemcpyAsync");
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
      }
      if (rep > 0) times.push_back(seconds_since(start));
    }
    return median(times);
  }

private:
  cudaStream_t stream_ = nullptr;
};

} // namespace

std::unique_ptr<RawCopies> make_cuda_raw_copies() { return std::make_unique<CudaRawCopies>(); }

FixedCosts measure_cuda_fixed_costs() {
  FixedCosts costs;
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  // Fresh device blocks from a pool that keeps nothing, of two sizes: what
  // a value that finds no free pool memory costs, fixed and per byte the
  // pool grows by. The driver maps physical memory for each, and the first
  // copy into newly mapped memory runs slower than the next one: a cold
  // step pays both, so the figure is the allocation and its first copy
  // less the same copy into the block again (docs/links.md; on the H200
  // the growth per byte came out about twice the allocation's alone).
  constexpr std::size_t kSmall = std::size_t{64} << 20, kLarge = std::size_t{512} << 20;
  void *pinned_source = nullptr;
  check(cudaHostAlloc(&pinned_source, kLarge, cudaHostAllocDefault), "cudaHostAlloc");
  std::memset(pinned_source, 1, kLarge);
  cudaMemPool_t pool;
  check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
  auto copy_in = [&](void *block, std::size_t bytes) {
    check(cudaMemcpyAsync(block, pinned_source, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  };
  auto fresh_block_seconds = [&](std::size_t bytes) {
    std::vector<double> allocations;
    for (int rep = 0; rep < 9; ++rep) {
      void *block = nullptr;
      auto start = std::chrono::steady_clock::now();
      check(cudaMallocAsync(&block, bytes, stream), "cudaMallocAsync");
      copy_in(block, bytes);
      const double cold = seconds_since(start);
      start = std::chrono::steady_clock::now();
      copy_in(block, bytes);
      allocations.push_back(cold - seconds_since(start));
      check(cudaFreeAsync(block, stream), "cudaFreeAsync");
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
    }
    return median(allocations);
  };
  const double small = fresh_block_seconds(kSmall), large = fresh_block_seconds(kLarge);
  // The unit the pool reserves in: what one small block makes an empty
  // pool reserve (bench/pool_growth.cpp: 32 MiB on the H200's driver).
  {
    void *block = nullptr;
    check(cudaMallocAsync(&block, std::size_t{1} << 20, stream), "cudaMallocAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    std::uint64_t reserved = 0;
    check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved),
          "cudaMemPoolGetAttribute");
    costs.device_pool_granule_bytes = reserved;
    check(cudaFreeAsync(block, stream), "cudaFreeAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
  }
  cudaFreeHost(pinned_source);
  const AllocationCost fresh_block = fit_allocation_cost(kSmall, small, kLarge, large);
  costs.device_allocation_seconds = fresh_block.seconds;
  costs.device_growth_seconds_per_byte = fresh_block.seconds_per_byte;
  // Cold pinned blocks as the backend's pinned pool makes them (the
  // environment's FHR_PINNED_HUGE_PAGES and FHR_HOST_COPY_THREADS and the
  // devices' support included):
  // each made, with its first copy from the device, less the same copy
  // again, as above; at two sizes, a fixed part and a rate, as the
  // faults run on several threads (a staging buffer's few pages take one
  // round of faults, as a large block's many take a few).
  const CudaBackendOptions backend = resolved({});
  // The staging buffer as the pinned pool makes it (whole huge pages, at
  // least two: one is a single fault, no spread over threads).
  constexpr std::size_t kPinned = std::size_t{256} << 20;
  const std::size_t staging_block =
      std::min(std::max(huge_page_multiple(backend.staging_chunk_bytes), 2 * kHugePageBytes), kPinned / 2);
  void *device_source = nullptr;
  check(cudaMalloc(&device_source, kPinned), "cudaMalloc");
  check(cudaMemset(device_source, 1, kPinned), "cudaMemset");
  auto copy_out = [&](void *block, std::size_t bytes) {
    check(cudaMemcpyAsync(block, device_source, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  };
  const bool huge_pages = pinned_on_huge_pages(backend.pinned_huge_pages);
  const unsigned fault_threads = pinned_fault_threads(backend);
  auto cold_pinned_seconds = [&](std::size_t bytes) {
    auto start = std::chrono::steady_clock::now();
    std::byte *block = make_pinned_block(bytes, huge_pages, fault_threads);
    copy_out(block, bytes);
    const double cold = seconds_since(start);
    start = std::chrono::steady_clock::now();
    copy_out(block, bytes);
    const double warm = seconds_since(start);
    free_pinned_block(block, bytes, huge_pages);
    // Never below zero: on a noisy machine the second copy can be the slower.
    return std::max(0.0, cold - warm);
  };
  std::vector<double> pinned, small_pinned, registered;
  for (int rep = 0; rep < 3; ++rep) {
    pinned.push_back(cold_pinned_seconds(kPinned));
    small_pinned.push_back(cold_pinned_seconds(staging_block));
    void *host = std::aligned_alloc(4096, kPinned);
    if (!host) throw std::bad_alloc();
    std::memset(host, 0, kPinned);
    const auto start = std::chrono::steady_clock::now();
    check(cudaHostRegister(host, kPinned, cudaHostRegisterDefault), "cudaHostRegister");
    registered.push_back(seconds_since(start) / kPinned);
    cudaHostUnregister(host);
    std::free(host);
  }
  costs.pinned_allocation = fit_allocation_cost(staging_block, median(small_pinned), kPinned, median(pinned));
  costs.pinned_registration_seconds_per_byte = median(registered);
  // Blocks under a huge page are always a cudaHostAlloc (make_pinned_block),
  // which the driver carves from pinned memory it maps in larger pieces:
  // on the H200 most came out of a piece already mapped in 1.5-2.7 us, and
  // one made with none alive, or every second 1 MiB block kept alive, paid
  // 480-1,000 us for a new piece (fourteenth wave, calls 1-3). So the mean
  // over 16 MiB of blocks kept alive, as the pinned pool keeps them, at
  // two sizes: a fixed part and a rate.
  auto kept_blocks_mean_seconds = [&](std::size_t bytes) {
    constexpr std::size_t kTotal = std::size_t{16} << 20;
    std::vector<std::byte *> blocks;
    double sum = 0;
    for (std::size_t made = 0; made < kTotal; made += bytes) {
      auto start = std::chrono::steady_clock::now();
      blocks.push_back(make_pinned_block(bytes, huge_pages, fault_threads));
      copy_out(blocks.back(), bytes);
      const double cold = seconds_since(start);
      start = std::chrono::steady_clock::now();
      copy_out(blocks.back(), bytes);
      sum += std::max(0.0, cold - seconds_since(start));
    }
    for (std::byte *block : blocks)
      free_pinned_block(block, bytes, huge_pages);
    return sum / static_cast<double>(blocks.size());
  };
  constexpr std::size_t kSmallPinned = std::size_t{64} << 10, kLargePinned = std::size_t{1} << 20;
  static_assert(kLargePinned < kHugePageBytes);
  const double small_block = kept_blocks_mean_seconds(kSmallPinned),
               large_block = kept_blocks_mean_seconds(kLargePinned);
  costs.small_pinned_allocation = fit_allocation_cost(kSmallPinned, small_block, kLargePinned, large_block);
  cudaFree(device_source);
  // One event record and one query of a completed event.
  cudaEvent_t event;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  constexpr int kEvents = 2000;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kEvents; ++i)
    check(cudaEventRecord(event, stream), "cudaEventRecord");
  costs.event_record_seconds = seconds_since(start) / kEvents;
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < kEvents; ++i)
    check(cudaEventQuery(event), "cudaEventQuery");
  costs.event_query_seconds = seconds_since(start) / kEvents;
  cudaEventDestroy(event);
  cudaStreamDestroy(stream);
  return costs;
}

std::string cuda_machine_name(unsigned devices) {
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  int driver = 0;
  cudaDriverGetVersion(&driver);
  char name[320];
  std::snprintf(name, sizeof name, "%s (CUDA driver %d.%d, %u device%s)", properties.name, driver / 1000,
                (driver % 1000) / 10, devices, devices == 1 ? "" : "s");
  return name;
}

} // namespace fhr::calibrate
