// The runtime's exception hierarchy: every category maps to its class, the
// budget figures travel with the error, stale-state is a plan error and
// plan-execution is not.
#include "fhr/runtime/errors.hpp"

#include <doctest/doctest.h>

#include <type_traits>

using namespace fhr;

namespace {
template <typename Expected>
void expect_thrown(ErrorClass category, Reason reason) {
  Outcome outcome = failure(reason, category, Location::cuda(0));
  FailureDetail detail;
  try {
    throw_failure(outcome, MessageContext{"rk[3]", "tmp"}, detail);
  } catch (const Expected &error) {
    if constexpr (std::is_base_of_v<ResidencyError, Expected>) CHECK(error.error_class() == category);
    CHECK(std::string(error.what()) == describe(outcome, MessageContext{"rk[3]", "tmp"}, &detail));
    return;
  } catch (...) {
    FAIL("wrong exception type for " << error_class_name(category));
  }
  FAIL("nothing thrown");
}
} // namespace

TEST_CASE("runtime errors: every category throws its class") {
  expect_thrown<ResidencyHandleError>(ErrorClass::Handle, Reason::HandleDiscarded);
  expect_thrown<ResidencyUnavailableError>(ErrorClass::Unavailable, Reason::NotResident);
  expect_thrown<ResidencyInUseError>(ErrorClass::InUse, Reason::MaterializationProtected);
  expect_thrown<ResidencyOwnershipError>(ErrorClass::Ownership, Reason::FinalMustPreserve);
  expect_thrown<ResidencyMaterializationError>(ErrorClass::Materialization, Reason::None);
  expect_thrown<ResidencyLifetimeClosedError>(ErrorClass::LifetimeClosed, Reason::LifetimeReleased);
  expect_thrown<ResidencyClosedError>(ErrorClass::Closed, Reason::None);
  expect_thrown<ResidencyReentrancyError>(ErrorClass::Reentrancy, Reason::None);
  expect_thrown<ResidencyPlanError>(ErrorClass::Plan, Reason::None);
  expect_thrown<std::invalid_argument>(ErrorClass::InvalidArgument, Reason::LocationUnavailable);
}

TEST_CASE("runtime errors: a budget error carries the figures of the failed check") {
  FailureDetail figures;
  figures.budget_bytes = 100;
  figures.used_bytes = 60;
  figures.reserved_bytes = 10;
  figures.requested_bytes = 40;
  try {
    throw_failure(failure(Reason::TransitionExceedsBudget, ErrorClass::Budget, Location::pinned()), {},
                  figures);
  } catch (const ResidencyBudgetError &error) {
    CHECK(error.location() == Location::pinned());
    CHECK(error.budget_bytes() == 100);
    CHECK(error.used_bytes() == 60);
    CHECK(error.reserved_bytes() == 10);
    CHECK(error.requested_bytes() == 40);
    CHECK(std::string(error.what()) ==
          "Transition exceeds budget at pinned (budget 100 B, used 60 B, reserved 10 B, requested 40 B)");
    return;
  }
  FAIL("no budget error");
}

TEST_CASE("runtime errors: the shape of the hierarchy") {
  static_assert(std::is_base_of_v<std::runtime_error, ResidencyError>);
  static_assert(std::is_base_of_v<ResidencyError, ResidencyBudgetError>);
  static_assert(std::is_base_of_v<ResidencyPlanError, ResidencyStaleStateError>);
  static_assert(!std::is_base_of_v<ResidencyPlanError, ResidencyPlanExecutionError>);
  static_assert(std::is_base_of_v<ResidencyError, ResidencyPlanExecutionError>);
  ResidencyStaleStateError stale(3, 5);
  CHECK(stale.expected_version() == 3);
  CHECK(stale.actual_version() == 5);
  CHECK(stale.error_class() == ErrorClass::StaleState);
  CHECK(std::string(stale.what()) == "expected state version 3, the manager is at 5");
}

TEST_CASE("runtime errors: a plan-execution error names plan, phase and the partial report") {
  ResidencyPlanExecutionError::Details details;
  details.plan_name = "bootstrap/level-2";
  details.phase = ExecutionPhase::Enter;
  details.partial_report.transitions.resize(3);
  details.failed_action_index = 1;
  details.detail = "copy failed: injected fault";
  details.cause = ErrorClass::None;
  ResidencyPlanExecutionError error(details);
  CHECK(error.error_class() == ErrorClass::PlanExecution);
  CHECK(error.details().partial_report.transitions.size() == 3);
  CHECK(*error.details().failed_action_index == 1);
  CHECK(std::string(error.what()) == "plan 'bootstrap/level-2' failed in phase enter after 3 completed "
                                     "transitions: copy failed: injected fault");
}
