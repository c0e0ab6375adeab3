#pragma once
/// \file
/// What code calling the CUDA runtime needs around each call (the backend,
/// the GPU test helpers): a failed call as a BackendError naming the call and
/// the CUDA error, and a scope during which a given device is the calling
/// thread's current one.

#include "fhr/runtime/backend_error.hpp"

#include <cuda_runtime.h>

#include <string>

namespace fhr {

/// Throws BackendError("<what>: <error name> (<error text>)") unless
/// `error` is cudaSuccess. The sticky non-fatal error is cleared first, so
/// that later calls report their own.
inline void check_cuda(cudaError_t error, const char *what) {
  if (error == cudaSuccess) return;
  cudaGetLastError();
  throw BackendError(std::string(what) + ": " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) +
                     ")");
}

/// Makes `device` the calling thread's current device for its lifetime and
/// then gives the thread its own device back: code using it never changes
/// which device the application's own CUDA calls go to. Never throws (a
/// failure shows in the CUDA call that follows).
class DeviceGuard {
public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ == device) {
      previous_ = -1;
      return;
    }
    cudaGetLastError();
    cudaSetDevice(device);
  }
  explicit DeviceGuard(unsigned device) : DeviceGuard(static_cast<int>(device)) {}
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
  int previous_ = -1;
};

} // namespace fhr
