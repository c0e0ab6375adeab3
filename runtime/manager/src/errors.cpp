#include "fhr/runtime/errors.hpp"

namespace fhr {

ResidencyStaleStateError::ResidencyStaleStateError(std::uint64_t expected_version,
                                                   std::uint64_t actual_version)
    : ResidencyPlanError("expected state version " + std::to_string(expected_version) +
                             ", the manager is at " + std::to_string(actual_version),
                         ErrorClass::StaleState),
      expected_version_(expected_version), actual_version_(actual_version) {}

ResidencySearchLimitError::ResidencySearchLimitError(std::string request_name, std::uint64_t state_limit,
                                                     std::uint64_t explored_states, std::string detail)
    : ResidencyPlanError(
          "automatic residency search for '" + request_name + "' is inconclusive: it stopped " +
          (explored_states >= state_limit ? "at its limit of " + std::to_string(state_limit)
                                          : "within its limit of " + std::to_string(state_limit)) +
          " explored states (explored_states=" + std::to_string(explored_states) + "): " + detail),
      request_name_(std::move(request_name)), state_limit_(state_limit), explored_states_(explored_states),
      detail_(std::move(detail)) {}

namespace {
std::string execution_message(const ResidencyPlanExecutionError::Details &d) {
  const std::size_t done = d.partial_report.transitions.size();
  return "plan '" + d.plan_name + "' failed in phase " + std::string(execution_phase_name(d.phase)) +
         " after " + std::to_string(done) + " completed transition" + (done == 1 ? "" : "s") + ": " +
         d.detail;
}
} // namespace

ResidencyPlanExecutionError::ResidencyPlanExecutionError(Details details)
    : ResidencyError(ErrorClass::PlanExecution, execution_message(details)), details_(std::move(details)) {}

void throw_failure(const Outcome &outcome, const MessageContext &context, const FailureDetail &detail) {
  const std::string message = describe(outcome, context, &detail);
  switch (outcome.error) {
  case ErrorClass::Budget: throw ResidencyBudgetError(message, outcome.where, detail);
  case ErrorClass::Handle: throw ResidencyHandleError(message);
  case ErrorClass::Unavailable: throw ResidencyUnavailableError(message);
  case ErrorClass::InUse: throw ResidencyInUseError(message);
  case ErrorClass::LifetimeClosed: throw ResidencyLifetimeClosedError(message);
  case ErrorClass::Materialization: throw ResidencyMaterializationError(message);
  case ErrorClass::Ownership: throw ResidencyOwnershipError(message);
  case ErrorClass::Plan: throw ResidencyPlanError(message);
  case ErrorClass::StaleState: throw ResidencyPlanError(message, ErrorClass::StaleState);
  case ErrorClass::Closed: throw ResidencyClosedError(message);
  case ErrorClass::Reentrancy: throw ResidencyReentrancyError(message);
  case ErrorClass::InvalidArgument: throw std::invalid_argument(message);
  case ErrorClass::PlanExecution:
  case ErrorClass::None: break;
  }
  throw ResidencyError(outcome.error, message);
}

} // namespace fhr
