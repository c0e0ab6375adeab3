#include "fhr/model/error_class.hpp"

namespace fhr {

namespace {
struct ErrorClassNames {
  std::string_view id;
  std::string_view name;
};

ErrorClassNames names_of(ErrorClass error) {
  switch (error) {
  case ErrorClass::None: return {"none", "none"};
  case ErrorClass::Budget: return {"budget", "ResidencyBudgetError"};
  case ErrorClass::Handle: return {"handle", "ResidencyHandleError"};
  case ErrorClass::Unavailable: return {"unavailable", "ResidencyUnavailableError"};
  case ErrorClass::InUse: return {"in-use", "ResidencyInUseError"};
  case ErrorClass::LifetimeClosed: return {"lifetime-closed", "ResidencyLifetimeClosedError"};
  case ErrorClass::Materialization: return {"materialization", "ResidencyMaterializationError"};
  case ErrorClass::Ownership: return {"ownership", "ResidencyOwnershipError"};
  case ErrorClass::Plan: return {"plan", "ResidencyPlanError"};
  case ErrorClass::StaleState: return {"stale-state", "ResidencyStaleStateError"};
  case ErrorClass::PlanExecution: return {"plan-execution", "ResidencyPlanExecutionError"};
  case ErrorClass::Closed: return {"closed", "ResidencyClosedError"};
  case ErrorClass::Reentrancy: return {"reentrancy", "ResidencyReentrancyError"};
  case ErrorClass::InvalidArgument: return {"invalid-argument", "std::invalid_argument"};
  }
  return {"none", "none"};
}
} // namespace

std::string_view error_class_id(ErrorClass error) { return names_of(error).id; }
std::string_view error_class_name(ErrorClass error) { return names_of(error).name; }

} // namespace fhr
