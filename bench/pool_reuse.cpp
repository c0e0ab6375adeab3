// pool_reuse: what a device block costs to allocate after a warm-up
// reserved the pool for it (issue #14: with `run --warm-up` the 30 MiB
// query move of `inference.fhr` spent 224-263 us before its copy was
// issued, all of it in the device allocation, where the model has a warm
// pool allocate for free; with only the key's load before it, 17 us).
//
//   pool_reuse [SAMPLES]      (default 7)
//
// Each sample sets the device's default pool up as a fresh CUDA backend
// does (new streams; the pool trimmed to nothing, its release threshold
// keep-everything, a 2 MiB block allocated and freed), then, as `run
// --warm-up` does, allocates every block of a plan in plan order on the
// transfer stream and frees them again (a warm-up), and then runs the
// plan's allocations: each block allocated (timed on the host) and a copy
// into it from pinned memory. Prints a Markdown table per sequence of
// blocks: each block's allocation time (median, p10-p90) and what the pool
// reserved beyond the warm-up's reservation by then
// (cudaMemPoolAttrReservedMemCurrent).
#include "cuda_probe.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMiB = std::size_t{1} << 20;

using fhr::bench::check;
using fhr::bench::summary;

/// How the pool is warmed up before the plan's allocations.
enum class WarmUp {
  None,
  PerBlock, ///< every block of the plan allocated, then all freed (`run --warm-up`)
  OneBlock, ///< one block of their peak allocated and freed (`run --warm-up` since the twenty-second wave)
};

/// How the host thread spends `Block::idle_us` before an allocation.
enum class Idle { Spin, Sleep };

/// One allocation of a plan: its size, and whether the plan frees it
/// right after its copy (a dropped key) rather than at the end. The
/// twenty-third wave's probes: `copied_mib` copies only that much into it
/// (0: all of it; a short copy where the plan has a long one), and
/// `idle_us` keeps the host thread away from CUDA that long before the
/// allocation (is a slow hand-out the pool's carving, or the host's first
/// call after a long wait?).
struct Block {
  std::size_t mib = 0;
  bool dropped = false;
  std::size_t copied_mib = 0;
  int idle_us = 0;
  Idle idle = Idle::Spin;
};

struct Sequence {
  const char *name;
  std::vector<Block> blocks; ///< in plan order
  WarmUp warm_up = WarmUp::PerBlock;
};

/// The most the plan holds at once: what `run --warm-up` hands the pool
/// as one block (fhr::warm_up_blocks).
std::size_t peak_bytes(const std::vector<Block> &blocks) {
  std::size_t live = 0, peak = 0;
  for (const Block &block : blocks) {
    live += block.mib * kMiB;
    peak = std::max(peak, live);
    if (block.dropped) live -= block.mib * kMiB;
  }
  return peak;
}

std::uint64_t reserved(cudaMemPool_t pool) {
  std::uint64_t bytes = 0;
  check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &bytes), "cudaMemPoolGetAttribute");
  return bytes;
}

} // namespace

int main(int argc, char **argv) {
  const int samples = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const std::vector<Sequence> sequences = {
      {"inference: weight, key, query", {{15}, {120}, {30}}},
      {"key-alone: key, query", {{120}, {30}}},
      {"the weight alone", {{15}}},
      {"the query alone", {{30}}},
      {"query, then weight", {{30}, {15}}},
      {"inference, warmed up by one block of their peak", {{15}, {120}, {30}}, WarmUp::OneBlock},
      {"key-alone, warmed up by one block of their peak", {{120}, {30}}, WarmUp::OneBlock},
      {"inference without a warm-up", {{15}, {120}, {30}}, WarmUp::None},
      // The twenty-second wave's `before_copy_us` of 5-16 us (`run
      // --warm-up`, one block of the peak): is it the pool's?
      {"bootstrapping: key, then ciphertext, one block of the peak", {{120}, {10}}, WarmUp::OneBlock},
      {"a key loaded and dropped, then a query, one block of the peak",
       {{124, true}, {16}},
       WarmUp::OneBlock},
      {"a query moved out and back, one block of the peak", {{16, true}, {16}}, WarmUp::OneBlock},
      {"bootstrapping: key, then ciphertext, per block", {{120}, {10}}},
      // The twenty-third wave: the 6-7 us hand-outs above all follow a
      // 120 MiB copy (2.5 ms on the stream). Carving, or the wait?
      {"key-alone, one block of the peak, again", {{120}, {30}}, WarmUp::OneBlock},
      {"the key with a 1 MiB copy, then the query", {{120, false, 1}, {30}}, WarmUp::OneBlock},
      {"the key, then two queries", {{120}, {16}, {16}}, WarmUp::OneBlock},
      {"the query after the host spun 2.5 ms", {{30, false, 0, 2500}}, WarmUp::OneBlock},
      {"the query after the host slept 2.5 ms", {{30, false, 0, 2500, Idle::Sleep}}, WarmUp::OneBlock},
      {"a 16 MiB query, then another after the host spun 2.5 ms",
       {{16}, {16, false, 0, 2500}},
       WarmUp::OneBlock},
      {"the key dropped and allocated again", {{120, true}, {120}}, WarmUp::OneBlock},
      {"the key with a 1 MiB copy, dropped, then a 16 MiB query", {{120, true, 1}, {16}}, WarmUp::OneBlock},
  };
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaMemPool_t pool = nullptr;
  check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
  std::uint64_t keep_all = UINT64_MAX;
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all), "cudaMemPoolSetAttribute");
  void *source = nullptr;
  check(cudaHostAlloc(&source, 128 * kMiB, cudaHostAllocDefault), "cudaHostAlloc");
  std::memset(source, 1, 128 * kMiB);

  std::printf("| blocks (MiB, plan order) | block | allocation, µs: median (p10–p90) | pool grew beyond the "
              "warm-up by then, MiB (median) |\n|---|---|---|---|\n");
  for (const Sequence &sequence : sequences) {
    std::vector<std::vector<double>> costs(sequence.blocks.size());
    std::vector<std::vector<double>> growth(sequence.blocks.size());
    for (int s = 0; s < samples; ++s) {
      // A fresh backend: its streams, the pool trimmed and started.
      cudaStream_t transfer = nullptr;
      check(cudaStreamCreateWithFlags(&transfer, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
      void *first = nullptr;
      check(cudaMallocAsync(&first, 2 * kMiB, transfer), "cudaMallocAsync");
      check(cudaFreeAsync(first, transfer), "cudaFreeAsync");
      std::vector<void *> blocks(sequence.blocks.size(), nullptr);
      if (sequence.warm_up == WarmUp::PerBlock) {
        for (std::size_t k = 0; k < blocks.size(); ++k)
          check(cudaMallocAsync(&blocks[k], sequence.blocks[k].mib * kMiB, transfer), "cudaMallocAsync");
        for (void *block : blocks)
          check(cudaFreeAsync(block, transfer), "cudaFreeAsync");
      } else if (sequence.warm_up == WarmUp::OneBlock) {
        void *block = nullptr;
        check(cudaMallocAsync(&block, peak_bytes(sequence.blocks), transfer), "cudaMallocAsync");
        check(cudaFreeAsync(block, transfer), "cudaFreeAsync");
      }
      check(cudaStreamSynchronize(transfer), "cudaStreamSynchronize");
      const std::uint64_t warmed = reserved(pool);
      for (std::size_t k = 0; k < blocks.size(); ++k) {
        const Block &block = sequence.blocks[k];
        const std::size_t bytes = block.mib * kMiB;
        if (block.idle_us > 0) {
          const auto until = Clock::now() + std::chrono::microseconds(block.idle_us);
          if (block.idle == Idle::Sleep)
            std::this_thread::sleep_until(until);
          else
            while (Clock::now() < until) {
            }
        }
        const auto start = Clock::now();
        check(cudaMallocAsync(&blocks[k], bytes, transfer), "cudaMallocAsync");
        costs[k].push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
        const std::size_t copied = block.copied_mib > 0 ? block.copied_mib * kMiB : bytes;
        check(cudaMemcpyAsync(blocks[k], source, copied, cudaMemcpyHostToDevice, transfer),
              "cudaMemcpyAsync");
        check(cudaStreamSynchronize(transfer), "cudaStreamSynchronize");
        growth[k].push_back(static_cast<double>(reserved(pool) - std::min(reserved(pool), warmed)) / kMiB);
        if (block.dropped) {
          check(cudaFreeAsync(blocks[k], transfer), "cudaFreeAsync");
          blocks[k] = nullptr;
        }
      }
      for (void *block : blocks)
        if (block) check(cudaFreeAsync(block, transfer), "cudaFreeAsync");
      check(cudaStreamSynchronize(transfer), "cudaStreamSynchronize");
      check(cudaStreamDestroy(transfer), "cudaStreamDestroy");
    }
    std::string sizes;
    for (const Block &block : sequence.blocks)
      sizes +=
          (sizes.empty() ? "" : ", ") + std::to_string(block.mib) + (block.dropped ? " dropped" : "") +
          (block.copied_mib ? " (" + std::to_string(block.copied_mib) + " copied)" : "") +
          (block.idle_us ? std::string(block.idle == Idle::Sleep ? " after a sleep" : " after a spin") : "");
    for (std::size_t k = 0; k < sequence.blocks.size(); ++k) {
      std::sort(growth[k].begin(), growth[k].end());
      std::printf("| %s (%s) | %zu MiB | %s | %.0f |\n", sequence.name, sizes.c_str(), sequence.blocks[k].mib,
                  summary(costs[k]).c_str(), growth[k][growth[k].size() / 2]);
    }
  }
  check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
  cudaFreeHost(source);
  return 0;
}
