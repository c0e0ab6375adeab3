#pragma once
/// \file
/// What a manager works through, split the way RMM splits memory: a memory
/// resource (where bytes live), a copy engine (how they move) and stream
/// support (streams and events of CUDA locations). Each is a small
/// interface of its own header; an adaptor wraps only the one it changes
/// (fault injection: fhr/runtime/fault_injection.hpp).
///
/// A Backend is one object that implements all three, as the host, the
/// simulated and the CUDA backends do; BackendInterfaces is what a manager
/// is constructed from, and converts from any Backend.
///
/// Backends may throw (std::bad_alloc, BackendError); the manager then
/// leaves its state exactly as the rules say (nothing installed, temporary
/// charges released).

#include "fhr/runtime/copy_engine.hpp"
#include "fhr/runtime/memory_resource.hpp"
#include "fhr/runtime/stream_support.hpp"

#include <concepts>
#include <memory>

namespace fhr {

/// One object implementing the three interfaces.
class Backend : public MemoryResource, public CopyEngine, public StreamSupport {};

/// The three interfaces of one manager. They may be three objects (an
/// adaptor in front of one of them) or one Backend; all empty means the host
/// backend.
struct BackendInterfaces {
  std::shared_ptr<MemoryResource> memory;
  std::shared_ptr<CopyEngine> copies;
  std::shared_ptr<StreamSupport> streams;

  BackendInterfaces() = default;
  BackendInterfaces(std::shared_ptr<MemoryResource> memory_resource, std::shared_ptr<CopyEngine> copy_engine,
                    std::shared_ptr<StreamSupport> stream_support)
      : memory(std::move(memory_resource)), copies(std::move(copy_engine)),
        streams(std::move(stream_support)) {}
  /// All three from one backend (implicit: `options.backend = make_cuda_backend()`).
  template <std::derived_from<Backend> B>
  BackendInterfaces(std::shared_ptr<B> backend) // NOLINT(google-explicit-constructor)
      : memory(backend), copies(backend), streams(backend) {}
  template <std::derived_from<Backend> B>
  BackendInterfaces(std::unique_ptr<B> backend) // NOLINT(google-explicit-constructor)
      : BackendInterfaces(std::shared_ptr<B>(std::move(backend))) {}

  bool empty() const { return !memory && !copies && !streams; }
};

/// Host memory only: pageable storage is 64-byte aligned heap memory; pinned
/// storage is page-aligned memory locked with mlock where the process may
/// (page-locked as CUDA's pinned memory is, without a GPU), and freed pinned
/// blocks are kept for reuse, up to 64 MiB, so that repeated transitions
/// do not lock pages again. It knows the pinned blocks it handed out
/// (MemoryResource::locate); every other buffer is pageable. No CUDA
/// devices, no streams.
std::unique_ptr<Backend> make_host_backend();

} // namespace fhr
