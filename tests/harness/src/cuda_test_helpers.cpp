#include "fhr/harness/cuda_test_helpers.hpp"

#include <cuda_runtime.h>

#include <string>
#include <thread>

namespace fhr {

namespace {

void check(cudaError_t error, const char *what) {
  if (error == cudaSuccess) return;
  cudaGetLastError(); // clear a sticky non-fatal error so later calls report their own
  throw BackendError(std::string(what) + ": " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) +
                     ")");
}

/// `device` is the calling thread's current device while it lives; then
/// the thread has its own device back.
class CurrentDevice {
public:
  explicit CurrentDevice(unsigned device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ == static_cast<int>(device)) {
      previous_ = -1;
      return;
    }
    cudaGetLastError();
    cudaSetDevice(static_cast<int>(device));
  }
  ~CurrentDevice() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  CurrentDevice(const CurrentDevice &) = delete;
  CurrentDevice &operator=(const CurrentDevice &) = delete;

private:
  int previous_ = -1;
};

} // namespace

DeviceBuffer copy_to_device(Location device, std::span<const std::byte> bytes) {
  if (!device.is_cuda()) throw BackendError(device.name() + " is not a CUDA device");
  CurrentDevice current(device.device());
  void *memory = nullptr;
  check(cudaMalloc(&memory, bytes.empty() ? 1 : bytes.size()), "cudaMalloc");
  if (cudaError_t error = cudaMemcpy(memory, bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
      error != cudaSuccess) {
    cudaFree(memory);
    check(error, "cudaMemcpy");
  }
  return DeviceBuffer{static_cast<std::byte *>(memory), [](std::byte *data) { cudaFree(data); }};
}

void submit_waiting_reader(Stream stream, const std::atomic<bool> *done) {
  check(cudaLaunchHostFunc(
            reinterpret_cast<cudaStream_t>(stream.native),
            [](void *flag) {
              while (!static_cast<const std::atomic<bool> *>(flag)->load())
                std::this_thread::yield();
            },
            const_cast<std::atomic<bool> *>(done)),
        "cudaLaunchHostFunc");
}

} // namespace fhr
