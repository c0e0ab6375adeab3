#include "fhr/runtime/simulated_backend.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace fhr {

SimulatedBackend::SimulatedBackend(unsigned device_count)
    : device_count_(device_count), allocated_(new std::uint64_t[Location::kCount]()) {}

DeviceConfig SimulatedBackend::devices() const { return DeviceConfig{device_count_ > 0, device_count_}; }

void SimulatedBackend::fail_on(Operation operation, std::uint64_t nth) {
  const auto kind = static_cast<unsigned>(operation);
  armed_at_[kind] = nth == 0 ? 0 : performed_[kind] + nth;
}

void SimulatedBackend::step(Operation operation) {
  const auto kind = static_cast<unsigned>(operation);
  ++performed_[kind];
  if (armed_at_[kind] != 0 && performed_[kind] == armed_at_[kind]) {
    armed_at_[kind] = 0;
    static const char *const names[] = {"allocation", "copy", "source load"};
    throw BackendError(std::string("injected failure of ") + names[kind] + " " +
                       std::to_string(performed_[kind]));
  }
}

void SimulatedBackend::before_load() { step(Operation::Load); }

Storage SimulatedBackend::allocate(Location location, std::size_t nbytes) {
  if (location.is_cuda() && location.device() >= device_count_)
    throw BackendError("simulated backend has no " + location.name());
  step(Operation::Allocate);
  void *memory = std::malloc(nbytes == 0 ? 1 : nbytes);
  if (!memory) throw std::bad_alloc();
  allocated_[location.index()] += nbytes;
  // The counter outlives the backend if a replica does (shared ownership).
  return Storage(static_cast<std::byte *>(memory), nbytes, location,
                 [counters = allocated_, index = location.index(), nbytes](std::byte *data) {
                   counters[index] -= nbytes;
                   std::free(data);
                 });
}

void SimulatedBackend::copy(const Storage &from, Storage &to) {
  if (from.size() != to.size()) throw BackendError("copy between storages of different sizes");
  step(Operation::Copy);
  if (from.size() != 0) std::memcpy(to.bytes().data(), from.bytes().data(), from.size());
}

std::uint64_t SimulatedBackend::count(Operation operation) const {
  return performed_[static_cast<unsigned>(operation)];
}

std::uint64_t SimulatedBackend::allocated_bytes(Location location) const {
  return allocated_[location.index()];
}

} // namespace fhr
