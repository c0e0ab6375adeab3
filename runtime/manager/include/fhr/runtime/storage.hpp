#pragma once
/// \file
/// A block of bytes the manager owns at one location, released by the
/// function that came with it (the backend's free, or an adopted buffer's
/// deleter). Move-only: every replica has exactly one owner.

#include "fhr/model/location.hpp"

#include <cstddef>
#include <functional>
#include <span>
#include <utility>

namespace fhr {

class Storage {
public:
  using Release = std::function<void(std::byte *)>;

  Storage() = default;
  Storage(std::byte *data, std::size_t size, Location location, Release release)
      : data_(data), size_(size), location_(location), release_(std::move(release)) {}
  Storage(Storage &&other) noexcept { *this = std::move(other); }
  Storage &operator=(Storage &&other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      location_ = other.location_;
      release_ = std::move(other.release_);
    }
    return *this;
  }
  Storage(const Storage &) = delete;
  Storage &operator=(const Storage &) = delete;
  ~Storage() { reset(); }

  std::span<std::byte> bytes() { return {data_, size_}; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  std::size_t size() const { return size_; }
  Location location() const { return location_; }
  explicit operator bool() const { return data_ != nullptr || size_ != 0 || release_ != nullptr; }

  /// Frees the bytes now.
  void reset() {
    if (release_ && data_) release_(data_);
    data_ = nullptr;
    size_ = 0;
    release_ = nullptr;
  }

private:
  std::byte *data_ = nullptr;
  std::size_t size_ = 0;
  Location location_;
  Release release_;
};

} // namespace fhr
