// pinned_dma: how long one DMA between cuda:0 and a pinned host block
// takes, by how the block is backed and by what happened since the device
// last touched it (issue #14: the 10 MiB moves of `bootstrapping`'s `ct`
// miss the link model, which is calibrated on blocks the device has just
// written, by 5-65 us).
//
//   pinned_dma [SAMPLES [MIB [making]]]   (defaults: 15 samples, 10 MiB;
//                                         making: the last table alone)
//
// Backings: the pinned pool's two (fhr::make_pinned_block): cudaHostAlloc
// (4 KiB pages), and pageable memory on 2 MiB boundaries advised to huge
// pages, faulted in, then registered (cudaHostRegister). States, each
// sampled in both directions, the backings' samples interleaved (the
// other DMA goes through cudaHostAlloc blocks, as the backend's staging
// buffers were made when this first ran):
//   - warm: the block was DMA'd just before (what `calibrate` measures);
//   - fresh: a new block the processor just filled, never DMA'd;
//   - after 2 GiB of staging: DMA'd, then 2 GiB through a 64 MiB pinned
//     block (the staging pattern of `bootstrapping`'s key loads);
//   - after 2 GiB over 1 GiB: the same through 1 GiB of other pinned memory;
//   - after a 128 MiB fill: DMA'd, then the processor wrote 128 MiB of
//     other memory (a reconstructible key's source fill);
//   - after staging and a fill: both, in that order (the end of a level);
//   - after 0.3 s idle: DMA'd, then nothing for 0.3 s.
// Prints a Markdown table: per state and direction, the median (p10-p90)
// per backing, and each backing's huge-page coverage (/proc/self/smaps);
// then what making a block costs each backing (the allocation, of it the
// faults on one thread and on the backend's fault threads) and its first
// copy from the device beyond the next one, as `calibrate` charges a cold
// pinned block.
#include "cuda_probe.hpp"
#include "fhr/cuda/cuda_backend.hpp"
#include "fhr/cuda/host_blocks.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMiB = std::size_t{1} << 20;

using fhr::bench::check;
using fhr::bench::summary;

/// A pinned host block made as the backend's pinned pool makes it
/// (fhr::make_pinned_block), huge pages or not; freed with it.
struct Block {
  std::byte *data = nullptr;
  std::size_t bytes = 0;
  bool huge_pages = false;
  Block(std::size_t n, bool huge, unsigned fault_threads = 1)
      : data(fhr::make_pinned_block(n, huge, fault_threads)), bytes(n), huge_pages(huge) {}
  Block(const Block &) = delete;
  Block &operator=(const Block &) = delete;
  ~Block() { fhr::free_pinned_block(data, bytes, huge_pages); }
};

/// KiB of the mapping that holds `address` backed by huge pages, from
/// /proc/self/smaps (-1 when not found).
long huge_kib_at(const void *address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (line.find('-') != std::string::npos && (header >> std::hex >> start >> dash >> end) && dash == '-' &&
        line.find(':') > line.find(' ')) {
      inside = start <= at && at < end;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::strtol(line.c_str() + 14, nullptr, 10);
  }
  return -1;
}

struct Rig {
  cudaStream_t stream = nullptr;
  std::byte *device = nullptr;     ///< the copies' device side
  std::byte *device_big = nullptr; ///< the other DMA's device side (64 MiB)
  Block staging{64 * kMiB, false}; ///< what the key loads go through
  Block other{1024 * kMiB, false}; ///< 1 GiB of other pinned memory
  std::vector<std::byte> fill_target = std::vector<std::byte>(128 * kMiB);
  std::size_t bytes;

  explicit Rig(std::size_t n) : bytes(n) {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaMalloc(reinterpret_cast<void **>(&device), n), "cudaMalloc");
    check(cudaMalloc(reinterpret_cast<void **>(&device_big), 64 * kMiB), "cudaMalloc");
  }

  /// One copy of the block, timed as the runtime times a step: from the
  /// issue to the stream's synchronisation, in microseconds.
  double dma(const Block &block, bool to_device) {
    const Clock::time_point start = Clock::now();
    if (to_device)
      check(cudaMemcpyAsync(device, block.data, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    else
      check(cudaMemcpyAsync(block.data, device, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  }
  /// 2 GiB host -> device through `span` bytes of `from`, in 64 MiB copies.
  void other_dma(const Block &from, std::size_t span) {
    for (std::size_t moved = 0, offset = 0; moved < (std::size_t{2} << 30); moved += 64 * kMiB) {
      check(cudaMemcpyAsync(device_big, from.data + offset, 64 * kMiB, cudaMemcpyHostToDevice, stream),
            "cudaMemcpyAsync");
      offset = (offset + 64 * kMiB) % span;
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  void fill(int k) { std::memset(fill_target.data(), k & 0xff, fill_target.size()); }
};

struct State {
  const char *name;
  /// Prepares `block` (DMA'd before, say) for the timed copy.
  std::function<void(Rig &, Block &, int)> before;
  bool fresh = false; ///< the timed copy goes to a new block the processor filled
};

/// What making a block costs each way the pinned pool can (the allocation,
/// and its first copy from the device beyond the next one, as `calibrate`
/// charges a cold pinned block); for huge pages, also their faults alone
/// on one thread and on the backend's fault threads.
void print_making(Rig &rig, std::size_t bytes, int samples) {
  const unsigned threads = fhr::pinned_fault_threads(fhr::resolved({}));
  struct Way {
    std::string name;
    bool huge;
    unsigned fault_threads;
  };
  const Way ways[] = {{"cudaHostAlloc", false, 1},
                      {"huge pages + cudaHostRegister, faulted on 1 thread", true, 1},
                      {"the same on " + std::to_string(threads) + " threads (the backend's)", true, threads}};
  std::printf("\n| making a %zu MiB block, µs: median (p10–p90) | %s | %s | %s |\n|---|---|---|---|\n",
              bytes / kMiB, ways[0].name.c_str(), ways[1].name.c_str(), ways[2].name.c_str());
  std::vector<double> made[3], first_extra[3], faults[3];
  for (int k = 0; k < samples; ++k)
    for (int way = 0; way < 3; ++way) {
      const Way &w = ways[way];
      Clock::time_point start = Clock::now();
      {
        Block block(bytes, w.huge, w.fault_threads);
        made[way].push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
        const double first = rig.dma(block, false);
        first_extra[way].push_back(first - rig.dma(block, false));
      }
      if (!w.huge) continue;
      const std::size_t rounded = fhr::huge_page_multiple(bytes);
      std::byte *mapped = fhr::map_huge_pages(rounded);
      start = Clock::now();
      fhr::fault_in_huge_pages(mapped, rounded, w.fault_threads);
      faults[way].push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
      fhr::unmap_huge_pages(mapped, rounded);
    }
  std::printf("| the allocation | %s | %s | %s |\n", summary(made[0]).c_str(), summary(made[1]).c_str(),
              summary(made[2]).c_str());
  std::printf("| of it, the faults alone | - | %s | %s |\n", summary(faults[1]).c_str(),
              summary(faults[2]).c_str());
  std::printf("| its first copy from cuda:0, beyond the next | %s | %s | %s |\n",
              summary(first_extra[0]).c_str(), summary(first_extra[1]).c_str(),
              summary(first_extra[2]).c_str());
}

} // namespace

int main(int argc, char **argv) {
  const int samples = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  const std::size_t bytes = (argc > 2 ? std::max(1, std::atoi(argv[2])) : 10) * kMiB;
  const bool making_only = argc > 3 && std::string(argv[3]) == "making";
  if (argc > 4 || (argc > 3 && !making_only)) {
    std::fprintf(stderr, "usage: pinned_dma [SAMPLES [MIB [making]]]\n");
    return 2;
  }
  if (bytes < fhr::kHugePageBytes) { // below, both backings are cudaHostAlloc (make_pinned_block)
    std::fprintf(stderr, "pinned_dma: the tables compare huge-page blocks: MIB must be 2 or more\n");
    return 2;
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  Rig rig(bytes);
  if (making_only) {
    print_making(rig, bytes, samples);
    return 0;
  }
  const std::vector<State> states = {
      {"warm: DMA'd just before", [](Rig &r, Block &b, int) { r.dma(b, true); }},
      {"fresh: a new block the processor filled", nullptr, true},
      {"after 2 GiB of staging through 64 MiB",
       [](Rig &r, Block &b, int) {
         r.dma(b, true);
         r.other_dma(r.staging, r.staging.bytes);
       }},
      {"after 2 GiB over 1 GiB of other pinned memory",
       [](Rig &r, Block &b, int) {
         r.dma(b, true);
         r.other_dma(r.other, r.other.bytes);
       }},
      {"after a 128 MiB fill of other memory",
       [](Rig &r, Block &b, int k) {
         r.dma(b, true);
         r.fill(k);
       }},
      {"after the staging and the fill",
       [](Rig &r, Block &b, int k) {
         r.dma(b, true);
         r.other_dma(r.staging, r.staging.bytes);
         r.fill(k);
       }},
      {"after 0.3 s idle",
       [](Rig &r, Block &b, int) {
         r.dma(b, true);
         std::this_thread::sleep_for(std::chrono::milliseconds(300));
       }},
  };
  const char *backing_names[2] = {"cudaHostAlloc", "huge pages + cudaHostRegister"};
  Block kept[2] = {Block(bytes, false), Block(bytes, true)};
  std::printf("pinned_dma: %zu MiB copies, %d samples per cell; huge pages of the blocks: %ld KiB "
              "(cudaHostAlloc), %ld KiB (registered)\n\n",
              bytes / kMiB, samples, huge_kib_at(kept[0].data), huge_kib_at(kept[1].data));
  std::printf("| state | direction | %s, µs: median (p10–p90) | %s |\n|---|---|---|---|\n", backing_names[0],
              backing_names[1]);
  for (const State &state : states)
    for (bool to_device : {true, false}) {
      std::vector<double> times[2];
      for (int k = 0; k < samples; ++k)
        for (int backing = 0; backing < 2; ++backing) {
          if (state.fresh) {
            Block block(bytes, backing == 1);
            std::memset(block.data, k & 0xff, bytes);
            times[backing].push_back(rig.dma(block, to_device));
            continue;
          }
          state.before(rig, kept[backing], k);
          times[backing].push_back(rig.dma(kept[backing], to_device));
        }
      std::printf("| %s | %s | %s | %s |\n", state.name, to_device ? "host → cuda:0" : "cuda:0 → host",
                  summary(times[0]).c_str(), summary(times[1]).c_str());
      std::fflush(stdout);
    }
  print_making(rig, bytes, samples);
  return 0;
}
