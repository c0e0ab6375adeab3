#pragma once
/// \file
/// What a run of a module did, step by step, in the same terms whichever
/// target ran it: the model (explain, check) or a live manager (run). The
/// differential test compares the two records step for step; the reports of
/// explain, check and `fhr-plan run` are rendered from them.

#include "fhr/model/action.hpp"
#include "fhr/model/outcome.hpp"
#include "fhr/model/simulated_step.hpp"
#include "fhr/model/step_kind.hpp"
#include "fhr/model/step_transfer.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fhr {

/// One executed (or refused) step.
struct StepRecord {
  static constexpr std::uint32_t kNotInProgram = ~std::uint32_t{0};

  StepKind kind = StepKind::Direct;
  /// For a Preflight: the phase of the refused simulated step. (Beside
  /// `kind`, so that the two bytes share one word: the record is 40 bytes.)
  StepKind phase = StepKind::Enter;
  /// The position within its phase or list: a scope's actions and
  /// reservations, an action list's actions; 0 for the other kinds. For a
  /// Preflight: the refused simulated step's position within its phase.
  std::uint32_t index = 0;
  /// The instruction of the module the step executes (an action, a
  /// reservation, a declaration, a lifetime's header, a release); for a
  /// Preflight, the instruction of the refused simulated step. Lines, spans
  /// and the step's text come from it.
  std::uint32_t instruction = 0;
  /// The value an action or registration concerns; the value that decided
  /// a failed hold or lease.
  ValueId value = 0;
  /// What the step belongs to: for a scope's steps (and its preflight) the
  /// plan's index, for an action list's steps the list's `actions`
  /// instruction; 0 otherwise.
  std::uint32_t container = 0;
  /// For a scope's steps (and its preflight) in a program: the `scope` or
  /// `run` instruction that entered the scope; kNotInProgram otherwise.
  std::uint32_t entered_by = kNotInProgram;
  /// Verdict, reason, error class (the cause, for failures inside plans),
  /// resolved source and destination.
  Outcome outcome;
  /// For a failed step, the class a caller catches: the outcome's own for
  /// setup, direct primitives and body lifetimes; plan when a preflight
  /// refused; plan-execution inside a running scope or action list.
  ErrorClass raised = ErrorClass::None;
  /// What moved the step's bytes, as the model's rules decided (recorded by
  /// the ModelTarget; a live manager's record leaves it None).
  StepTransfer transfer = StepTransfer::None;
  /// For an admitted reservation of a program (a body's or a scope's): how
  /// many rows the run had recorded when it was released, so it is charged
  /// up to the row before that one; 0 while it outlasts the record (a
  /// release comes after the reservation's own row, so never before row 0;
  /// a run has at most kMaxSteps rows). The interpreter, which ends bodies
  /// and scopes, records it.
  std::uint32_t released_before_row = 0;

  bool failed() const { return outcome.failed(); }
};
// A run records up to 10,000,000 of them (fhr/bytecode/limits.hpp): each
// byte more is 10 MB more at the limit.
static_assert(sizeof(StepRecord) <= 40);

/// Start and completion of a step, steady-clock nanoseconds (targets that
/// measure: the manager).
struct StepTiming {
  std::uint64_t started_at_ns = 0;
  std::uint64_t completed_at_ns = 0;
  std::uint64_t source_load_ns = 0; ///< of the span, in the value's source (TransitionReport)
  /// When its copy into the destination was issued (TransitionReport); 0: not stamped.
  std::uint64_t copy_issued_at_ns = 0;
  /// Its place in the overlap window it ran in (TransitionReport); none: alone.
  std::optional<std::uint32_t> window_position;
};

/// One run: setup, a plan as a scope, or a program. A run stops at the
/// first failing step, as a program does.
struct RunResult {
  std::string name;
  bool completed = true; ///< false: stopped at the failed last step
  std::vector<StepRecord> steps;
  /// Where each discard among `steps` removed replicas (the model target's
  /// record: explain's replay of the run's memory reads it).
  std::vector<DiscardedReplicas> discarded;
  /// Figures of the failing step, when the target knows them (budget
  /// failures on the model).
  FailureDetail failure_detail;
  /// The failure's message as the target produced it (the manager's
  /// exception text); empty where the report renders it (the model).
  std::string failure_message;
  /// One per step, or empty when the target does not measure time.
  std::vector<StepTiming> timings;
  /// For a failure of class InUse, where the target knows it (the model):
  /// the instructions that opened the live holds and leases protecting the
  /// replica the failing step would remove, oldest first.
  std::vector<std::uint32_t> protected_by;

  const StepRecord *failure() const { return completed || steps.empty() ? nullptr : &steps.back(); }
};

} // namespace fhr
