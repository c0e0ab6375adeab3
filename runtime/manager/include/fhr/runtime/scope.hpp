#pragma once
/// \file
/// A single-use scope over one plan (§12).

#include "fhr/model/state.hpp"
#include "fhr/runtime/errors.hpp"
#include "fhr/runtime/plan.hpp"
#include "fhr/runtime/reports.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace fhr {

class Manager;

/// A single-use scope over one plan (§12): enter() runs the whole-plan
/// preflight, then reclaim, the reservations and enter; close() runs exit
/// and releases the reservations. Completed transitions are never rolled
/// back. Destroying an entered scope without close() releases its
/// reservations but runs no exit action.
class Scope {
public:
  Scope(Scope &&) noexcept;
  Scope &operator=(Scope &&) = delete;
  Scope(const Scope &) = delete;
  ~Scope();

  /// Throws std::logic_error on a second entry; ResidencyStaleStateError,
  /// ResidencyPlanError (nothing ran) or ResidencyPlanExecutionError (phase
  /// reclaim, reserve or enter; entry failures consume the scope).
  void enter();
  /// Idempotent; std::logic_error before enter(). An exit failure throws
  /// ResidencyPlanExecutionError (phase exit) after releasing the
  /// reservations, and exit_error() keeps it (§12.3).
  void close();
  /// enter(), body(), close(). If the body throws and close() fails too, the
  /// body's exception propagates and exit_error() keeps the close failure;
  /// if the body returns, a close failure propagates (and is kept too).
  template <typename Body>
  void run(Body &&body);

  /// All transitions (reclaim, enter, exit) once closed successfully.
  const std::optional<PlanReport> &report() const { return report_; }
  /// The transitions committed so far: reclaim and enter once entered,
  /// exit too once closed.
  const PlanReport &progress() const { return report_ ? *report_ : entered_; }
  /// The failure of an exit action, however close() was reached (directly,
  /// through run(), with or without a failing body); std::nullopt otherwise.
  const std::optional<ResidencyPlanExecutionError> &exit_error() const { return exit_error_; }

private:
  friend class Manager;
  Scope(Manager &manager, PlanSpec plan, std::optional<std::uint64_t> expected_state_version,
        TransferStreams transfer_streams)
      : manager_(&manager), plan_(std::move(plan)), expected_state_version_(expected_state_version),
        transfer_streams_(std::move(transfer_streams)) {}

  enum class Stage { Created, Entered, Closed };
  Manager *manager_;
  PlanSpec plan_;
  std::optional<std::uint64_t> expected_state_version_;
  TransferStreams transfer_streams_;
  Stage stage_ = Stage::Created;
  PlanReport entered_;
  std::vector<LifetimeId> reservations_;
  std::optional<PlanReport> report_;
  /// Set by close() when an exit action fails (§12.3).
  std::optional<ResidencyPlanExecutionError> exit_error_;
};

template <typename Body>
void Scope::run(Body &&body) {
  enter();
  try {
    body();
  } catch (...) {
    try {
      close();
    } catch (const ResidencyPlanExecutionError &) { // kept in exit_error(); the body's error wins
    }
    throw;
  }
  close();
}

} // namespace fhr
