#pragma once
/// \file
/// A block of bytes the manager owns at one location, released by the
/// function that came with it (the memory resource's free, or an adopted
/// buffer's deleter). Move-only: every replica has exactly one owner.

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
  /// `size` bytes of value at `data`; `block_size` (at least `size`) is the
  /// block they live in, whose first `size` bytes they are: an adopted view
  /// smaller than its buffer (§2.1: the actual backing storage).
  Storage(std::byte *data, std::size_t size, Location location, Release release)
      : Storage(data, size, location, std::move(release), size) {}
  Storage(std::byte *data, std::size_t size, Location location, Release release, std::size_t block_size)
      : data_(data), size_(size), block_size_(block_size < size ? size : block_size), location_(location),
        release_(std::move(release)) {}
  Storage(Storage &&other) noexcept { *this = std::move(other); }
  Storage &operator=(Storage &&other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      block_size_ = std::exchange(other.block_size_, 0);
      location_ = other.location_;
      release_ = std::move(other.release_);
    }
    return *this;
  }
  Storage(const Storage &) = delete;
  Storage &operator=(const Storage &) = delete;
  ~Storage() { reset(); }

  /// The value's bytes (copies and content checks use exactly these).
  std::span<std::byte> bytes() { return {data_, size_}; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  std::size_t size() const { return size_; }
  /// The bytes of the block the value lives in (>= size()).
  std::size_t block_size() const { return block_size_; }
  Location location() const { return location_; }
  explicit operator bool() const { return data_ != nullptr || size_ != 0 || release_ != nullptr; }

  /// Frees the bytes now.
  void reset() {
    if (release_ && data_) release_(data_);
    data_ = nullptr;
    size_ = 0;
    block_size_ = 0;
    release_ = nullptr;
  }

  /// Gives the bytes up without freeing them: the caller gets the pointer
  /// and the function that frees it (what Manager::adopt takes), and this
  /// storage becomes empty.
  std::pair<std::byte *, Release> detach() {
    std::pair<std::byte *, Release> out{std::exchange(data_, nullptr), std::move(release_)};
    release_ = nullptr;
    size_ = 0;
    block_size_ = 0;
    return out;
  }

private:
  std::byte *data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t block_size_ = 0;
  Location location_;
  Release release_;
};

} // namespace fhr
