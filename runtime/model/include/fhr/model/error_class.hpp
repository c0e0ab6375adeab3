#pragma once
/// \file
/// The failure categories of the residency manager (docs/semantics.md §16). The
/// simulator reports them as values; the runtime throws one exception class
/// per category. The short ids are part of the explain output format.

#include <cstdint>
#include <string_view>

namespace fhr {

enum class ErrorClass : std::uint8_t {
  None,
  Budget,          ///< ResidencyBudgetError
  Handle,          ///< ResidencyHandleError
  Unavailable,     ///< ResidencyUnavailableError
  InUse,           ///< ResidencyInUseError
  LifetimeClosed,  ///< ResidencyLifetimeClosedError
  Materialization, ///< ResidencyMaterializationError
  Ownership,       ///< ResidencyOwnershipError
  Plan,            ///< ResidencyPlanError
  StaleState,      ///< ResidencyStaleStateError
  PlanExecution,   ///< ResidencyPlanExecutionError
  Closed,          ///< ResidencyClosedError
  Reentrancy,      ///< ResidencyReentrancyError
  InvalidArgument, ///< std::invalid_argument (the reference's TypeError / ValueError)
};

/// Stable short id, e.g. "budget", "in-use", "invalid-argument".
std::string_view error_class_id(ErrorClass error);
/// The runtime's exception class name, e.g. "ResidencyBudgetError".
std::string_view error_class_name(ErrorClass error);

} // namespace fhr
