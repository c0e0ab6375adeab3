#pragma once
/// \file
/// CUDA helpers that tests and `fhr-plan run --backend cuda` need and an
/// evaluator does not: device memory to adopt synthetic values from, and
/// work that holds a stream until the test says so (a stand-in for a kernel
/// still reading leased values). Built where the CUDA toolkit is found.

#include "fhr/runtime/backend.hpp"
#include "fhr/runtime/storage.hpp"

#include <atomic>
#include <cstddef>
#include <span>

namespace fhr {

/// Device memory (the device's stream-ordered pool) holding a copy of
/// `bytes`, and the deleter that frees it (cudaFreeAsync): for adopting a value that already lives on a
/// device.
struct DeviceBuffer {
  std::byte *data = nullptr;
  Storage::Release release;
};
DeviceBuffer copy_to_device(Location device, std::span<const std::byte> bytes);

/// Submits to `stream` work that finishes only once `*done` is true (a host
/// function that waits): a stand-in for a kernel still reading leased
/// values, so that a lease released meanwhile stays pending.
void submit_waiting_reader(Stream stream, const std::atomic<bool> *done);

} // namespace fhr
