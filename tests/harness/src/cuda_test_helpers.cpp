#include "fhr/harness/cuda_test_helpers.hpp"

#include "fhr/cuda/cuda_calls.hpp"

#include <cuda_runtime.h>

#include <string>
#include <thread>

namespace fhr {

DeviceBuffer copy_to_device(Location device, std::span<const std::byte> bytes) {
  if (!device.is_cuda()) throw BackendError(device.name() + " is not a CUDA device");
  DeviceGuard current(device.device());
  // From the device's stream-ordered pool, as the backend allocates: freed
  // with cudaFreeAsync, since cudaFree waits for the whole device (a value
  // moved off the device in an overlap window would commit only once every
  // copy of the window had finished).
  void *memory = nullptr;
  check_cuda(cudaMallocAsync(&memory, bytes.empty() ? 1 : bytes.size(), cudaStreamPerThread),
             "cudaMallocAsync");
  cudaError_t error =
      cudaMemcpyAsync(memory, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, cudaStreamPerThread);
  if (error == cudaSuccess) error = cudaStreamSynchronize(cudaStreamPerThread);
  if (error != cudaSuccess) {
    cudaFreeAsync(memory, cudaStreamPerThread);
    check_cuda(error, "cudaMemcpyAsync");
  }
  const int owner = static_cast<int>(device.device());
  return DeviceBuffer{static_cast<std::byte *>(memory), [owner](std::byte *data) {
                        // The manager frees a replica once nothing reads it.
                        DeviceGuard on_owner(owner);
                        cudaFreeAsync(data, cudaStreamPerThread);
                      }};
}

void submit_waiting_reader(Stream stream, const std::atomic<bool> *done) {
  check_cuda(cudaLaunchHostFunc(
                 reinterpret_cast<cudaStream_t>(stream.native),
                 [](void *flag) {
                   while (!static_cast<const std::atomic<bool> *>(flag)->load())
                     std::this_thread::yield();
                 },
                 const_cast<std::atomic<bool> *>(done)),
             "cudaLaunchHostFunc");
}

} // namespace fhr
