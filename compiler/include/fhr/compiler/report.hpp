#pragma once
/// \file
/// Analysis results turned into rows of names and numbers: what every
/// output format (text table, JSON, check lines, SARIF) prints. Building the
/// rows once keeps the formats in agreement. Each row names the instruction
/// it comes from; the module's span table says where that was written.

#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/span_table.hpp"
#include "fhr/model/location_set.hpp"
#include "fhr/model/step_transfer.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fhr {

struct ReportStep {
  std::string context; ///< "enter", "stage-1/exit", "setup", ...
  /// Its position within its phase or action list (0 for other steps): a
  /// run of a phase or a list begins at 0, so two runs of one plan or two
  /// lists of one name in a row stay apart.
  std::uint32_t index = 0;
  std::string text;              ///< the step as .fhr text: "ensure weight at cuda:0"
  std::uint32_t instruction = 0; ///< the instruction it executes (its span, its excerpt)
  SourceSpan span;
  std::optional<Location> source, destination;
  std::uint64_t logical_bytes = 0, storage_bytes = 0;
  Verdict verdict = Verdict::Ok;
  std::string reason;                   ///< no-op or failure reason, sizes human ("40 GiB")
  std::string exact_reason;             ///< the same with exact byte counts (JSON)
  ErrorClass error = ErrorClass::None;  ///< the failure's category
  ErrorClass raised = ErrorClass::None; ///< what a caller would catch
  std::string value;                    ///< the value an action acts on ("" for other steps)
  /// What moved its bytes, as the model decided (Simulator / ModelTarget).
  StepTransfer transfer = StepTransfer::None;
  /// A reservation the step admitted, which stays charged until the step
  /// `released_before` (0-based; a program's body or scope ended between
  /// the two), or past the unit's last step when none.
  bool admitted_reservation = false;
  std::optional<std::size_t> released_before;
  /// A discard: where it removed replicas (the model's record).
  std::optional<LocationSet> removed_from;
};

/// A statement a failure's note points at.
struct StatementRef {
  std::string text; ///< as .fhr text: `scope "PLAN"`, `hold w at cuda:0`
  std::uint32_t instruction = 0;
  SourceSpan span;
  std::string excerpt; ///< the text of its line (SARIF counts columns in code points)
};

/// The program step that entered the scope a failure lies in: where a
/// plan's failure inside a program was reached from (`scope "PLAN"` or
/// `run "PLAN"`).
struct ProgramStepRef : StatementRef {
  std::size_t step = 0; ///< the 1-based step (row) of the program where the scope begins
};

/// A hold or lease protecting a failing step's replica (`hold w at cuda:0`).
struct ProtectorRef : StatementRef {
  bool pending = false; ///< a lease released while its CUDA events are pending
};

struct ReportUnit {
  enum class Kind { Setup, Plan, Program } kind = Kind::Plan;
  std::string name;
  SourceSpan span;
  bool feasible = true;
  std::vector<ReportStep> steps;
  std::vector<LocationPrediction> locations;
  /// Index into steps of the first failure.
  std::optional<std::size_t> failure;
  /// The text of the failing step's line (SARIF counts its columns in code
  /// points, the span in bytes); empty without a failure.
  std::string failure_excerpt;
  /// For a program whose failure lies in a scope: the step that entered it.
  std::optional<ProgramStepRef> reached_by;
  /// For a failure of class InUse: the holds and leases that protect the
  /// replica the failing step would remove, oldest first.
  std::vector<ProtectorRef> protected_by;
};

struct FileReport {
  std::string file;
  std::size_t setup_steps = 0;
  std::vector<ReportUnit> units; ///< setup (only when it failed), plans, programs
  bool feasible = true;
};

/// How much of each unit to render: every step (explain) or only the failing
/// step (check, which prints nothing else and must stay fast on huge files).
enum class ReportDetail { AllSteps, FailuresOnly };

/// Builds the units one at a time and hands each to `sink`, so that a report
/// of millions of steps never has to be held whole.
void for_each_unit(const VerifiedModule &module, const Analysis &analysis, ReportDetail detail,
                   const std::function<void(const ReportUnit &)> &sink);

FileReport build_report(const VerifiedModule &module, const Analysis &analysis,
                        ReportDetail detail = ReportDetail::AllSteps);

/// "30 MiB", "1500 KB", "4097 B": exact, in the largest unit that divides.
std::string format_size(std::uint64_t bytes);

/// `text` as a .fhr string literal that reads back as `text`.
std::string string_literal(const std::string &text);

/// The one-line summary of a unit's first failure: "Transition exceeds ...".
/// Sizes in it are human (`40 GiB`); `exact_bytes` gives bytes (JSON).
std::string failure_summary(const ReportUnit &unit, bool exact_bytes = false);

/// The note under a failure that a program reached through a scope:
/// `reached at step 3 of program "main": 'run "stage-2"'`; empty without one.
std::string reached_by_note(const ReportUnit &unit);

/// The note at a hold or lease that protects a failing step's replica:
/// `protected by 'hold w at cuda:0', opened here and not released`.
std::string protected_by_note(const ProtectorRef &protector);

/// One note under a failure, at another statement.
struct FailureNote {
  const StatementRef *statement;
  std::string message;
};

/// A failure's notes in the order every format prints them: the program
/// step that reached it, then the holds and leases protecting its replica.
std::vector<FailureNote> failure_notes(const ReportUnit &unit);

} // namespace fhr
