#pragma once
/// \file
/// What explain and check report: a verified module interpreted on the
/// model target (fhr/executor). Setup runs once; every plan not marked
/// `in program` is explained (§10.2) against the state setup reaches (a
/// marked plan only inside the programs that run it); every program runs from that
/// state as the runtime would run it (scopes with their preflight,
/// reservations, bodies and exits). The results are the interpreter's step
/// records; rendering them to text or JSON is the reporters' job.

#include "fhr/compiler/frontend.hpp"
#include "fhr/executor/model_target.hpp"
#include "fhr/executor/step_record.hpp"
#include "fhr/model/simulator.hpp"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace fhr {

struct SetupReport {
  /// Setup steps run: one per value registered, per value of an action,
  /// per lifetime statement and release; up to and including a failure.
  std::size_t steps = 0;
  /// Which of those steps failed; setup stops there.
  std::optional<std::size_t> failed_step;
  Outcome failure;
  FailureDetail detail;
  RunResult run;
};

struct PlanExplanation {
  std::uint32_t plan = 0; ///< index into the module's plans
  std::string name;
  Explanation explanation;
  /// A failure of class InUse: the instructions that opened the holds and
  /// leases protecting the replica (RunResult::protected_by for a plan).
  std::vector<std::uint32_t> protected_by;
};

struct ProgramReport {
  std::uint32_t program = 0; ///< index into the module's programs
  std::string name;
  bool feasible = true;
  RunResult run;
  std::vector<LocationPrediction> locations;
};

struct Analysis {
  SetupReport setup;
  std::vector<PlanExplanation> plans;
  /// Plans marked `in program`: explained only inside the programs that run them.
  std::vector<std::string> program_only_plans;
  std::vector<ProgramReport> programs;

  bool feasible() const;
};

/// Interprets `module` on the model with the command line's budget
/// overrides, on `devices` when given (the machine a run has: `fhr-plan
/// run` explains on its backend's devices), else the module's own.
Analysis analyze_module(const VerifiedModule &module, std::span<const BudgetOverride> overrides = {},
                        std::optional<DeviceConfig> devices = std::nullopt);

} // namespace fhr
