#include "fhr/bytecode/module.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace fhr::bytecode {

std::uint64_t checksum(std::span<const std::byte> bytes) { return XXH64(bytes.data(), bytes.size(), 0); }

} // namespace fhr::bytecode
