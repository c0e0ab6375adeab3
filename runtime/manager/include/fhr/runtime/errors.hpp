#pragma once
/// \file
/// The runtime's exception hierarchy (docs/semantics.md §16): one class per
/// failure category, all rooted at ResidencyError. Argument errors (the
/// reference's TypeError and ValueError) are std::invalid_argument.
///
/// ResidencyStaleStateError is a ResidencyPlanError; ResidencyPlanExecutionError
/// is its sibling, not a subclass, and carries the partial report of what
/// committed before the failure.

#include "fhr/model/error_class.hpp"
#include "fhr/model/outcome.hpp"
#include "fhr/model/step_kind.hpp"
#include "fhr/runtime/reports.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace fhr {

class ResidencyError : public std::runtime_error {
public:
  ResidencyError(ErrorClass error_class, const std::string &message)
      : std::runtime_error(message), error_class_(error_class) {}
  /// The category, as the simulator reports it.
  ErrorClass error_class() const { return error_class_; }

private:
  ErrorClass error_class_;
};

/// Declares a category whose class adds nothing to ResidencyError.
#define FHR_RESIDENCY_ERROR(Name, Category)                                                                  \
  class Name : public ResidencyError {                                                                       \
  public:                                                                                                    \
    explicit Name(const std::string &message) : ResidencyError(ErrorClass::Category, message) {}             \
  }

FHR_RESIDENCY_ERROR(ResidencyHandleError, Handle);
FHR_RESIDENCY_ERROR(ResidencyUnavailableError, Unavailable);
FHR_RESIDENCY_ERROR(ResidencyInUseError, InUse);
FHR_RESIDENCY_ERROR(ResidencyLifetimeClosedError, LifetimeClosed);
FHR_RESIDENCY_ERROR(ResidencyMaterializationError, Materialization);
FHR_RESIDENCY_ERROR(ResidencyOwnershipError, Ownership);
FHR_RESIDENCY_ERROR(ResidencyClosedError, Closed);
FHR_RESIDENCY_ERROR(ResidencyReentrancyError, Reentrancy);
#undef FHR_RESIDENCY_ERROR

/// An admission check failed (§4.2); the figures are as of the check.
class ResidencyBudgetError : public ResidencyError {
public:
  ResidencyBudgetError(const std::string &message, Location location, const FailureDetail &figures)
      : ResidencyError(ErrorClass::Budget, message), location_(location), figures_(figures) {}
  Location location() const { return location_; }
  std::uint64_t budget_bytes() const { return figures_.budget_bytes; }
  std::uint64_t used_bytes() const { return figures_.used_bytes; }
  std::uint64_t reserved_bytes() const { return figures_.reserved_bytes; }
  std::uint64_t requested_bytes() const { return figures_.requested_bytes; }

private:
  Location location_;
  FailureDetail figures_;
};

/// A preflight found the plan infeasible; nothing ran.
class ResidencyPlanError : public ResidencyError {
public:
  explicit ResidencyPlanError(const std::string &message, ErrorClass error_class = ErrorClass::Plan)
      : ResidencyError(error_class, message) {}
};

/// expected_state_version did not match (§9).
class ResidencyStaleStateError : public ResidencyPlanError {
public:
  ResidencyStaleStateError(std::uint64_t expected_version, std::uint64_t actual_version);
  std::uint64_t expected_version() const { return expected_version_; }
  std::uint64_t actual_version() const { return actual_version_; }

private:
  std::uint64_t expected_version_;
  std::uint64_t actual_version_;
};

/// The controller's search stopped at its search_state_limit (§18.3 step 4),
/// or before that where it nested as deep as its thread's stack allows:
/// inconclusive, not a proof that the request cannot be met.
class ResidencySearchLimitError : public ResidencyPlanError {
public:
  ResidencySearchLimitError(std::string request_name, std::uint64_t state_limit,
                            std::uint64_t explored_states, std::string detail);
  const std::string &request_name() const { return request_name_; }
  std::uint64_t state_limit() const { return state_limit_; }
  std::uint64_t explored_states() const { return explored_states_; }
  const std::string &detail() const { return detail_; }

private:
  std::string request_name_;
  std::uint64_t state_limit_;
  std::uint64_t explored_states_;
  std::string detail_;
};

/// Where in a plan an execution failure happened (§12.4): execute, reclaim,
/// reserve, enter or exit, in the step vocabulary every layer shares.
using ExecutionPhase = StepKind;
inline std::string_view execution_phase_name(ExecutionPhase phase) { return step_kind_name(phase); }

/// A runtime failure after a successful preflight (§11 step 6, §12).
class ResidencyPlanExecutionError : public ResidencyError {
public:
  struct Details {
    std::string plan_name;
    ExecutionPhase phase = ExecutionPhase::Execute;
    /// Transitions that committed before the failure, in order.
    PlanReport partial_report;
    /// Index within the phase of the failed action (no-ops count), if an action failed.
    std::optional<std::size_t> failed_action_index;
    /// Index of the failed reservation, for the reserve phase.
    std::optional<std::size_t> failed_reservation_index;
    /// The cause's message.
    std::string detail;
    /// The cause's category, when it was a residency error.
    ErrorClass cause = ErrorClass::None;
  };
  explicit ResidencyPlanExecutionError(Details details);
  const Details &details() const { return details_; }

private:
  Details details_;
};

/// Throws the exception for a failed Outcome: the category's class, or
/// std::invalid_argument for argument errors. \pre outcome.failed()
[[noreturn]] void throw_failure(const Outcome &outcome, const MessageContext &context,
                                const FailureDetail &detail);

} // namespace fhr
