#include "fhr/harness/cuda_test_helpers.hpp"

#include "fhr/cuda/cuda_calls.hpp"

#include <cuda_runtime.h>

#include <string>
#include <thread>

namespace fhr {

DeviceBuffer copy_to_device(Location device, std::span<const std::byte> bytes) {
  if (!device.is_cuda()) throw BackendError(device.name() + " is not a CUDA device");
  DeviceGuard current(device.device());
  void *memory = nullptr;
  check_cuda(cudaMalloc(&memory, bytes.empty() ? 1 : bytes.size()), "cudaMalloc");
  if (cudaError_t error = cudaMemcpy(memory, bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
      error != cudaSuccess) {
    cudaFree(memory);
    check_cuda(error, "cudaMemcpy");
  }
  return DeviceBuffer{static_cast<std::byte *>(memory), [](std::byte *data) { cudaFree(data); }};
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
