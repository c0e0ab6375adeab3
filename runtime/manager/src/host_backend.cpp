#include "fhr/runtime/backend.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

namespace fhr {

namespace {

class HostBackend final : public Backend {
public:
  DeviceConfig devices() const override { return DeviceConfig{false, 0}; }

  Storage allocate(Location location, std::size_t nbytes) override {
    if (location.is_cuda()) throw BackendError("the host backend has no " + location.name());
    const std::size_t alignment = location == Location::pinned() ? page_size() : 64;
    // aligned_alloc wants a size that is a multiple of the alignment and
    // non-zero; the value's bytes are the first nbytes.
    const std::size_t rounded = ((nbytes == 0 ? 1 : nbytes) + alignment - 1) / alignment * alignment;
    void *memory = std::aligned_alloc(alignment, rounded);
    if (!memory) throw std::bad_alloc();
    const bool locked = location == Location::pinned() && ::mlock(memory, rounded) == 0;
    return Storage(static_cast<std::byte *>(memory), nbytes, location, [rounded, locked](std::byte *data) {
      if (locked) ::munlock(data, rounded);
      std::free(data);
    });
  }

  void copy(const Storage &from, Storage &to, Stream) override {
    if (from.size() != to.size()) throw BackendError("copy between storages of different sizes");
    if (from.size() != 0) std::memcpy(to.bytes().data(), from.bytes().data(), from.size());
  }

private:
  static std::size_t page_size() {
    const long size = ::sysconf(_SC_PAGESIZE);
    return size > 0 ? static_cast<std::size_t>(size) : 4096;
  }
};

} // namespace

std::unique_ptr<Backend> make_host_backend() { return std::make_unique<HostBackend>(); }

} // namespace fhr
