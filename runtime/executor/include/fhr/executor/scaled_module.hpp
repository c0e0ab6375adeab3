#pragma once
/// \file
/// A module with every size divided, rounding up: its values, reservations
/// and budgets. The same plans on values small enough to run thousands of
/// times (the fault sweep); every target then sees the same smaller module.

#include "fhr/bytecode/module.hpp"

#include <cstdint>

namespace fhr {

/// `module` with every byte count divided by `divisor` (>= 1), rounding up.
bytecode::Module scaled_module(bytecode::Module module, std::uint64_t divisor);

} // namespace fhr
