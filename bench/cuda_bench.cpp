// The CUDA backend against raw CUDA in the same process (issue #5): each
// ratio beside its raw baseline. Run on a GPU machine:
//
//   ./build-release/bench/cuda_bench
#include "fhr/cuda/cuda_backend.hpp"
#include "fhr/runtime/manager.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

using namespace fhr;

namespace {

void check(cudaError_t error) {
  if (error != cudaSuccess) {
    std::fprintf(stderr, "CUDA: %s\n", cudaGetErrorName(error));
    std::exit(1);
  }
}

double seconds(const std::function<void()> &body, int repeats) {
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    body();
    samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

double gbps(std::size_t bytes, double s) { return static_cast<double>(bytes) / s / 1e9; }

const Location kPinned = Location::pinned(), kPageable = Location::pageable(), kGpu = Location::cuda(0);

/// Manager transition timings for one value of `bytes` between `host` and cuda:0.
void transfer(Manager &m, Location host, std::size_t bytes, int repeats) {
  std::byte *data = nullptr;
  Storage::Release release;
  if (host == kPinned) {
    check(cudaHostAlloc(reinterpret_cast<void **>(&data), bytes, cudaHostAllocPortable));
    release = [](std::byte *p) { cudaFreeHost(p); };
  } else {
    data = static_cast<std::byte *>(std::aligned_alloc(4096, bytes));
    release = [](std::byte *p) { std::free(p); };
  }
  std::memset(data, 1, bytes);
  const Handle h = m.adopt(data, bytes, host, release, ReplicaMode::Replicable);

  // Raw baselines on the same buffers.
  void *device = nullptr;
  check(cudaMalloc(&device, bytes));
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const double raw_h2d = seconds(
      [&] {
        check(cudaMemcpyAsync(device, data, bytes, cudaMemcpyDefault, stream));
        check(cudaStreamSynchronize(stream));
      },
      repeats);
  const double raw_d2h = seconds(
      [&] {
        check(cudaMemcpyAsync(data, device, bytes, cudaMemcpyDefault, stream));
        check(cudaStreamSynchronize(stream));
      },
      repeats);
  check(cudaFree(device));
  check(cudaStreamDestroy(stream));

  std::vector<double> to_device, to_host;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    m.ensure(h, kGpu);
    to_device.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    // Device -> host: the host replica goes first so that ensure copies back.
    m.move(h, kGpu, host);
    start = std::chrono::steady_clock::now();
    m.ensure(h, host);
    to_host.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    m.drop(h, kGpu);
  }
  std::sort(to_device.begin(), to_device.end());
  std::sort(to_host.begin(), to_host.end());
  const double h2d = to_device[to_device.size() / 2], d2h = to_host[to_host.size() / 2];
  std::printf(
      "%-8s %6zu MiB  to device: raw %6.1f GB/s, manager %6.1f GB/s (%5.1f%%)   to host: raw %6.1f GB/s, "
      "manager %6.1f GB/s (%5.1f%%)\n",
      host.name().c_str(), bytes >> 20, gbps(bytes, raw_h2d), gbps(bytes, h2d), 100 * raw_h2d / h2d,
      gbps(bytes, raw_d2h), gbps(bytes, d2h), 100 * raw_d2h / d2h);
  m.discard(h);
}

/// A plan phase that evicts 1 GiB from cuda:0 to pinned memory while it
/// prefetches 1 GiB from pinned memory to cuda:0, with and without overlap,
/// beside raw copies of the same sizes on two streams at once.
void evict_while_prefetch(bool overlap, int repeats) {
  constexpr std::size_t kBytes = std::size_t{1} << 30;
  ManagerOptions options;
  options.backend = make_cuda_backend();
  options.overlap_transfers = overlap;
  Manager m(std::move(options));
  auto pinned_value = [&](int fill) {
    std::byte *data = nullptr;
    check(cudaHostAlloc(reinterpret_cast<void **>(&data), kBytes, cudaHostAllocPortable));
    std::memset(data, fill, kBytes);
    return m.adopt(
        data, kBytes, kPinned, [](std::byte *p) { cudaFreeHost(p); }, ReplicaMode::Replicable);
  };
  const Handle evicted = pinned_value(1), prefetched = pinned_value(2);
  m.move(evicted, kGpu);
  const std::vector<ActionSpec> phase = {ActionSpec{ActionKind::Move, evicted, kPinned, std::nullopt},
                                         ActionSpec{ActionKind::Ensure, prefetched, kGpu, std::nullopt}};
  std::vector<double> samples;
  for (int r = 0; r < repeats + 1; ++r) { // the first run fills the pools
    const auto start = std::chrono::steady_clock::now();
    m.execute_actions(phase, "evict-while-prefetch");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) samples.push_back(s);
    m.drop(prefetched, kGpu);
    m.move(evicted, kGpu);
  }
  std::sort(samples.begin(), samples.end());
  const double managed = samples[samples.size() / 2];

  static double raw_both = 0; // measured once, printed with both rows
  if (raw_both == 0) {
    void *device[2] = {nullptr, nullptr};
    std::byte *host[2] = {nullptr, nullptr};
    cudaStream_t streams[2] = {nullptr, nullptr};
    for (int i = 0; i < 2; ++i) {
      check(cudaMalloc(&device[i], kBytes));
      check(cudaHostAlloc(reinterpret_cast<void **>(&host[i]), kBytes, cudaHostAllocPortable));
      check(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    }
    raw_both = seconds(
        [&] {
          check(cudaMemcpyAsync(host[0], device[0], kBytes, cudaMemcpyDefault, streams[0]));
          check(cudaMemcpyAsync(device[1], host[1], kBytes, cudaMemcpyDefault, streams[1]));
          check(cudaStreamSynchronize(streams[0]));
          check(cudaStreamSynchronize(streams[1]));
        },
        repeats);
    for (int i = 0; i < 2; ++i) {
      check(cudaFree(device[i]));
      check(cudaFreeHost(host[i]));
      check(cudaStreamDestroy(streams[i]));
    }
  }
  std::printf("evict 1 GiB to pinned while prefetching 1 GiB (%s): manager %6.1f GB/s aggregate; raw on two "
              "streams %6.1f GB/s (%5.1f%%)\n",
              overlap ? "overlap   " : "sequential", gbps(2 * kBytes, managed), gbps(2 * kBytes, raw_both),
              100 * raw_both / managed);
  m.close(true, true);
}

/// What the CUDA calls on the small-transfer and lease paths cost here.
void call_costs(cudaStream_t stream) {
  constexpr int kCalls = 20000;
  auto per_call = [&](const std::function<void()> &body) { return seconds(body, 5) / kCalls * 1e6; };
  const double set_device = per_call([] {
    for (int i = 0; i < kCalls; ++i)
      check(cudaSetDevice(0));
  });
  int device = -1;
  const double stream_device = per_call([&] {
    for (int i = 0; i < kCalls; ++i)
      check(cudaStreamGetDevice(stream, &device));
  });
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  const double record_query = per_call([&] {
    for (int i = 0; i < kCalls; ++i) {
      check(cudaEventRecord(event, stream));
      check(cudaEventQuery(event));
    }
  });
  const double record = per_call([&] {
    for (int i = 0; i < kCalls; ++i)
      check(cudaEventRecord(event, stream));
  });
  check(cudaStreamSynchronize(stream));
  const double query = per_call([&] {
    for (int i = 0; i < kCalls; ++i)
      check(cudaEventQuery(event));
  });
  check(cudaEventDestroy(event));
  // A stream-write marker (cuStreamWriteValue64 into mapped pinned memory)
  // would make the completion test a host load, but costs more to record
  // than an event's record and query together: leases use events.
  using WriteValue64 = int (*)(cudaStream_t, unsigned long long, std::uint64_t, unsigned);
  void *entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check(cudaGetDriverEntryPointByVersion("cuStreamWriteValue64", &entry, 12000, cudaEnableDefault, &found));
  std::uint64_t *word = nullptr;
  check(cudaHostAlloc(reinterpret_cast<void **>(&word), 64, cudaHostAllocMapped | cudaHostAllocPortable));
  const double write = per_call([&] {
    for (int i = 0; i < kCalls; ++i)
      reinterpret_cast<WriteValue64>(entry)(stream, reinterpret_cast<unsigned long long>(word),
                                            static_cast<std::uint64_t>(i), 0);
  });
  check(cudaStreamSynchronize(stream));
  check(cudaFreeHost(word));
  const double malloc_free = per_call([&] {
    for (int i = 0; i < kCalls; ++i) {
      void *p = nullptr;
      check(cudaMallocAsync(&p, 4096, stream));
      check(cudaFreeAsync(p, stream));
    }
  });
  check(cudaStreamSynchronize(stream));
  std::printf(
      "CUDA call costs (us): cudaSetDevice %.3f, cudaStreamGetDevice %.3f, cudaEventRecord+Query %.3f, "
      "cudaMallocAsync+cudaFreeAsync 4 KiB %.3f\n",
      set_device, stream_device, record_query, malloc_free);
  std::printf("  alone: cudaEventRecord %.3f, cudaEventQuery %.3f, cuStreamWriteValue64 %.3f\n", record,
              query, write);
}

/// 4 KiB ensure to the device, end to end, against a raw copy + synchronise;
/// then lease acquire + release with a consumer stream.
void small_transfers(Manager &m, const char *label) {
  std::printf("%s:\n", label);
  std::byte *data = nullptr;
  check(cudaHostAlloc(reinterpret_cast<void **>(&data), 4096, cudaHostAllocPortable));
  const Handle h = m.adopt(
      data, 4096, kPinned, [](std::byte *p) { cudaFreeHost(p); }, ReplicaMode::Replicable);
  void *device = nullptr;
  check(cudaMalloc(&device, 4096));
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  constexpr int kIterations = 2000;
  const double raw = seconds(
                         [&] {
                           for (int i = 0; i < kIterations; ++i) {
                             check(cudaMemcpyAsync(device, data, 4096, cudaMemcpyDefault, stream));
                             check(cudaStreamSynchronize(stream));
                           }
                         },
                         5) /
                     kIterations;
  std::vector<double> samples;
  for (int r = 0; r < 5; ++r) {
    double total = 0;
    for (int i = 0; i < kIterations; ++i) {
      const auto start = std::chrono::steady_clock::now();
      m.ensure(h, kGpu);
      total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      m.drop(h, kGpu);
    }
    samples.push_back(total / kIterations);
  }
  std::sort(samples.begin(), samples.end());
  const double managed = samples[samples.size() / 2];
  std::printf("4 KiB ensure to cuda:0: raw copy + synchronise %.2f us, manager %.2f us (+%.2f us)\n",
              raw * 1e6, managed * 1e6, (managed - raw) * 1e6);

  m.ensure(h, kGpu);
  const Handle handles[] = {h};
  const Stream consumer{reinterpret_cast<std::uintptr_t>(stream)};
  const double lease = seconds(
                           [&] {
                             for (int i = 0; i < 20000; ++i) {
                               Lease l = m.acquire(handles, kGpu, consumer);
                               l.release();
                             }
                           },
                           5) /
                       20000;
  // The same lease on the host replica: the manager's share, no CUDA call.
  const double host_lease = seconds(
                                [&] {
                                  for (int i = 0; i < 20000; ++i) {
                                    Lease l = m.acquire(handles, kPinned);
                                    l.release();
                                  }
                                },
                                5) /
                            20000;
  std::printf("lease acquire + release with a consumer stream: %.3f us (events recorded and reaped); "
              "the same at pinned (no CUDA call): %.3f us\n",
              lease * 1e6, host_lease * 1e6);
  call_costs(stream);
  (void)m.state_version();
  check(cudaFree(device));
  check(cudaStreamDestroy(stream));
}

} // namespace

int main() {
  if (cuda_device_count() == 0) {
    std::printf("no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0));
  std::printf("device 0: %s, %d devices\n", prop.name, static_cast<int>(cuda_device_count()));
  ManagerOptions options;
  options.backend = make_cuda_backend();
  Manager m(std::move(options));
  transfer(m, kPinned, std::size_t{256} << 20, 7);
  transfer(m, kPinned, std::size_t{1} << 30, 5);
  transfer(m, kPageable, std::size_t{256} << 20, 5);

  small_transfers(m, "small-block cache on (the default)");
  {
    CudaBackendOptions no_cache;
    no_cache.device_small_block_cache_bytes = 0;
    ManagerOptions other;
    other.backend = make_cuda_backend(no_cache);
    Manager plain(std::move(other));
    small_transfers(plain, "small-block cache off");
    plain.close(true, true);
  }
  m.close(true, true);
  evict_while_prefetch(/*overlap=*/false, 5);
  evict_while_prefetch(/*overlap=*/true, 5);
  return 0;
}
