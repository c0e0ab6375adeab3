#include "fhr/runtime/simulated_backend.hpp"

#include "block_registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace fhr {

namespace {

// Streams and events are numbered from 1 in their tables so that the empty
// Stream (0) is never a simulated one.
std::uintptr_t to_native(std::size_t slot) { return static_cast<std::uintptr_t>(slot) + 1; }

} // namespace

SimulatedBackend::SimulatedBackend(unsigned device_count, bool overlap_copies)
    : device_count_(device_count), overlap_copies_(overlap_copies),
      blocks_(std::make_shared<BlockRegistry>()), allocated_(new std::uint64_t[Location::kCount]()) {}

DeviceConfig SimulatedBackend::devices() const { return DeviceConfig{device_count_ > 0, device_count_}; }

Storage SimulatedBackend::allocate(Location location, std::size_t nbytes) {
  if (location.is_cuda() && location.device() >= device_count_)
    throw BackendError("simulated backend has no " + location.name());
  void *memory = std::malloc(nbytes == 0 ? 1 : nbytes);
  if (!memory) throw std::bad_alloc();
  std::lock_guard lock(mutex_);
  __atomic_fetch_add(&allocated_[location.index()], nbytes, __ATOMIC_RELAXED);
  // A pinned or device block is remembered, so that locate() tells it from
  // pageable memory (the block is at least one byte: malloc(1) for none).
  if (location != Location::pageable())
    blocks_->add(static_cast<std::byte *>(memory), nbytes == 0 ? 1 : nbytes, location);
  // The counter outlives the backend if a replica does (shared ownership);
  // replicas are freed under the manager's lock, one at a time per manager.
  return Storage(
      static_cast<std::byte *>(memory), nbytes, location,
      [counters = allocated_, blocks = blocks_, index = location.index(), nbytes](std::byte *data) {
        __atomic_fetch_sub(&counters[index], nbytes, __ATOMIC_RELAXED);
        if (index != Location::pageable().index()) blocks->remove(data);
        std::free(data);
      });
}

void SimulatedBackend::order_after(Stream stream) {
  if (!stream) return;
  SimulatedStream &s = streams_[slot(stream)];
  s.completed = s.submitted; // the copy ran after the stream's earlier work
}

void SimulatedBackend::copy(const Storage &from, Storage &to, Stream stream) {
  if (from.size() != to.size()) throw BackendError("copy between storages of different sizes");
  {
    std::lock_guard lock(mutex_);
    order_after(stream);
  }
  if (from.size() != 0) std::memcpy(to.bytes().data(), from.bytes().data(), from.size());
}

CopyInFlight SimulatedBackend::begin_copy(const Storage &from, Storage &to, Stream stream) {
  if (!overlap_copies_) return Backend::begin_copy(from, to, stream);
  if (from.size() != to.size()) throw BackendError("copy between storages of different sizes");
  std::lock_guard lock(mutex_);
  order_after(stream);
  auto free = std::find_if(copies_.begin(), copies_.end(), [](const CopyJob &job) { return !job.live; });
  if (free == copies_.end()) free = copies_.insert(copies_.end(), CopyJob{});
  *free = CopyJob{from.bytes().data(), to.bytes().data(), from.size(), true};
  max_copies_in_flight_ = std::max(max_copies_in_flight_, ++copies_in_flight_);
  return CopyInFlight{to_native(static_cast<std::size_t>(free - copies_.begin()))};
}

void SimulatedBackend::finish_copy(CopyInFlight copy) {
  if (copy.native == 0) return; // completed when it started
  std::lock_guard lock(mutex_);
  if (copy.native > copies_.size() || !copies_[copy.native - 1].live)
    throw BackendError("not a simulated copy in flight");
  CopyJob &job = copies_[copy.native - 1];
  job.live = false;
  --copies_in_flight_;
  if (job.nbytes != 0) std::memcpy(job.to, job.from, job.nbytes);
}

std::optional<PoolFigures> SimulatedBackend::pool_figures(Location location) const {
  return PoolFigures{allocated_bytes(location), 0, std::nullopt};
}

std::optional<Location> SimulatedBackend::locate(const std::byte *data, std::size_t nbytes) const {
  return blocks_->locate(data, nbytes);
}

std::size_t SimulatedBackend::max_copies_in_flight() const {
  std::lock_guard lock(mutex_);
  return max_copies_in_flight_;
}

std::uint64_t SimulatedBackend::allocated_bytes(Location location) const {
  return __atomic_load_n(&allocated_[location.index()], __ATOMIC_RELAXED);
}

Stream SimulatedBackend::create_stream(Location device) {
  if (!device.is_cuda() || device.device() >= device_count_)
    throw BackendError("simulated backend has no " + device.name());
  std::lock_guard lock(mutex_);
  streams_.push_back(SimulatedStream{device});
  return Stream{to_native(streams_.size() - 1)};
}

std::size_t SimulatedBackend::slot(Stream stream) const {
  if (stream.native == 0 || stream.native > streams_.size()) throw BackendError("not a simulated stream");
  return stream.native - 1;
}

SimulatedBackend::SimulatedEvent &SimulatedBackend::event(Event event) {
  if (event.native == 0 || event.native > events_.size() || !events_[event.native - 1].live)
    throw BackendError("not a live simulated event");
  return events_[event.native - 1];
}

void SimulatedBackend::launch(Stream stream, std::uint64_t kernels) {
  std::lock_guard lock(mutex_);
  streams_[slot(stream)].submitted += kernels;
}

void SimulatedBackend::finish(Stream stream) {
  std::lock_guard lock(mutex_);
  SimulatedStream &s = streams_[slot(stream)];
  s.completed = s.submitted;
}

std::size_t SimulatedBackend::live_events() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(
      std::count_if(events_.begin(), events_.end(), [](const SimulatedEvent &e) { return e.live; }));
}

std::uint64_t SimulatedBackend::device_synchronizations() const {
  std::lock_guard lock(mutex_);
  return device_synchronizations_;
}

std::uint64_t SimulatedBackend::event_queries() const {
  std::lock_guard lock(mutex_);
  return event_queries_;
}

std::optional<Location> SimulatedBackend::stream_location(Stream stream) const {
  std::lock_guard lock(mutex_);
  if (stream.native == 0 || stream.native > streams_.size()) return std::nullopt;
  return streams_[stream.native - 1].device;
}

Event SimulatedBackend::record_event(Stream stream) {
  std::lock_guard lock(mutex_);
  const std::size_t s = slot(stream);
  // Reuse a destroyed event's slot: the table stays as small as the number
  // of events alive at once.
  auto free = std::find_if(events_.begin(), events_.end(), [](const SimulatedEvent &e) { return !e.live; });
  if (free == events_.end()) free = events_.insert(events_.end(), SimulatedEvent{});
  *free = SimulatedEvent{s, streams_[s].submitted, true};
  return Event{to_native(static_cast<std::size_t>(free - events_.begin()))};
}

bool SimulatedBackend::event_complete(Event e) {
  std::lock_guard lock(mutex_);
  ++event_queries_;
  const SimulatedEvent &recorded = event(e);
  return streams_[recorded.stream].completed >= recorded.mark;
}

void SimulatedBackend::synchronize(Event e) {
  std::lock_guard lock(mutex_);
  const SimulatedEvent &recorded = event(e);
  SimulatedStream &s = streams_[recorded.stream];
  s.completed = std::max(s.completed, recorded.mark);
}

void SimulatedBackend::destroy_event(Event e) noexcept {
  std::lock_guard lock(mutex_);
  if (e.native != 0 && e.native <= events_.size()) events_[e.native - 1].live = false;
}

void SimulatedBackend::synchronize_stream(Stream stream) {
  std::lock_guard lock(mutex_);
  SimulatedStream &s = streams_[slot(stream)];
  s.completed = s.submitted;
}

void SimulatedBackend::synchronize_device(Location device) {
  std::lock_guard lock(mutex_);
  ++device_synchronizations_;
  for (SimulatedStream &s : streams_)
    if (s.device == device) s.completed = s.submitted;
}

} // namespace fhr
