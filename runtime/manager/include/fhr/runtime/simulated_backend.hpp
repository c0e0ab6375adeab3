#pragma once
/// \file
/// A backend that stands in for CUDA on machines without a GPU: `cuda:N` for
/// N below a configured device count is host memory tagged with its device,
/// so every runtime path that involves device locations runs and is tested in
/// CI. Streams and events follow the model of docs/semantics.md §17: a stream
/// counts the work submitted to it and the work completed; an event marks
/// the submitted count when it is recorded and has completed once the
/// stream's completed count reaches the mark. Tests "launch" work on a
/// consumer stream and "finish" it later, which is what keeps a released
/// CUDA lease pending.
///
/// Faults are injected by the adaptors of fhr/runtime/fault_injection.hpp
/// in front of it (inject_faults), as in front of any backend.
///
/// Made with `overlap_copies`, it reports separate copy engines: a copy
/// started by begin_copy moves its bytes only when finish_copy waits for it,
/// so tests see the manager's overlap windows exactly as on a GPU, copies in
/// flight included.
///
/// It knows the pinned and device blocks it handed out (locate): a buffer
/// adopted at pinned or cuda:N must be one of those, as on a GPU.
///
/// Made with `SimulatedMemory::SizesOnly`, it keeps sizes and a content
/// fingerprint instead of the bytes, so that a plan of 40 GiB runs on a
/// machine with less: every block is address space of its full size
/// (reserved without backing, so the manager's index of blocks and locate
/// work as before), of which only the first kFingerprintBytes are real. The
/// storage it hands out holds those first bytes (Storage::size() is
/// min(nbytes, kFingerprintBytes), Storage::block_size() the full size),
/// so copies, loads and content checksums touch only the fingerprint.
///
/// Thread safety: every member may be called from any thread.

#include "fhr/runtime/backend.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace fhr {

class BlockRegistry;

/// What a simulated block holds.
enum class SimulatedMemory : std::uint8_t {
  Bytes,     ///< every byte, in host memory
  SizesOnly, ///< its size and its first SimulatedBackend::kFingerprintBytes bytes
};

class SimulatedBackend final : public Backend {
public:
  /// The real bytes of a block in SimulatedMemory::SizesOnly.
  static constexpr std::size_t kFingerprintBytes = 8;
  /// What the blocks of a run in SimulatedMemory::SizesOnly may add up to:
  /// each is still address space of its full size, and x86-64 gives a
  /// process 128 TiB of it (a 2.9 EiB value failed its mmap).
  static constexpr std::uint64_t kMaxSizesOnlyBytes = std::uint64_t{64} << 40;

  explicit SimulatedBackend(unsigned device_count, bool overlap_copies = false,
                            SimulatedMemory memory = SimulatedMemory::Bytes);

  SimulatedMemory memory() const { return memory_; }

  DeviceConfig devices() const override;
  Storage allocate(Location location, std::size_t nbytes) override;
  /// A copy into a device waits for the work already submitted to its
  /// stream, as a stream-ordered copy followed by a synchronize does.
  void copy(const Storage &from, Storage &to, Stream stream) override;
  bool overlaps_copies() const override { return overlap_copies_; }
  CopyInFlight begin_copy(const Storage &from, Storage &to, Stream stream) override;
  void finish_copy(CopyInFlight copy) override;
  /// Every location is a pool without idle bytes: what it has handed out.
  std::optional<PoolFigures> pool_figures(Location location) const override;
  /// The location of a pinned or device block it handed out; pageable for
  /// any other memory.
  std::optional<Location> locate(const std::byte *data, std::size_t nbytes) const override;
  /// The most copies that were in flight at once (overlap made visible).
  std::size_t max_copies_in_flight() const;

  /// Bytes currently allocated at a location.
  std::uint64_t allocated_bytes(Location location) const;

  // ---- streams under test control --------------------------------------
  /// A new stream on `device` (a CUDA location below the device count).
  Stream create_stream(Location device);
  /// Submits `kernels` units of work (e.g. a kernel reading a leased value).
  void launch(Stream stream, std::uint64_t kernels = 1);
  /// Completes everything submitted to the stream so far.
  void finish(Stream stream);
  /// Events recorded and not yet destroyed (the manager must not leak them).
  std::size_t live_events() const;
  /// synchronize_device calls so far (close with force, fallbacks).
  std::uint64_t device_synchronizations() const;
  /// event_complete calls so far (what reaping costs on a GPU).
  std::uint64_t event_queries() const;

  std::optional<Location> stream_location(Stream stream) const override;
  Event record_event(Stream stream) override;
  bool event_complete(Event event) override;
  void synchronize(Event event) override;
  void destroy_event(Event event) noexcept override;
  void synchronize_stream(Stream stream) override;
  void synchronize_device(Location device) override;

private:
  struct SimulatedStream {
    Location device;
    std::uint64_t submitted = 0;
    std::uint64_t completed = 0;
  };
  struct SimulatedEvent {
    std::size_t stream = 0;
    std::uint64_t mark = 0;
    bool live = false;
  };
  struct CopyJob {
    const std::byte *from = nullptr;
    std::byte *to = nullptr;
    std::size_t nbytes = 0;
    bool live = false;
  };
  /// A copy submitted to `stream` runs after the stream's earlier work.
  void order_after(Stream stream);
  /// The stream's slot; BackendError for one this backend did not create.
  std::size_t slot(Stream stream) const;
  SimulatedEvent &event(Event event);

  unsigned device_count_;
  bool overlap_copies_;
  SimulatedMemory memory_;
  mutable std::mutex mutex_;
  /// Pinned and device blocks handed out (shared with their storages).
  std::shared_ptr<BlockRegistry> blocks_;
  std::vector<CopyJob> copies_;
  std::size_t copies_in_flight_ = 0, max_copies_in_flight_ = 0;
  std::shared_ptr<std::uint64_t[]> allocated_;
  std::vector<SimulatedStream> streams_;
  std::vector<SimulatedEvent> events_;
  std::uint64_t device_synchronizations_ = 0;
  std::uint64_t event_queries_ = 0;
};

} // namespace fhr
