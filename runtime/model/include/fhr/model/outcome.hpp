#pragma once
/// \file
/// What happened to one simulated or executed step: done, a no-op with its
/// reason, or a failure with its reason and error class (docs/semantics.md §6.6,
/// §10.2). Kept small and free of strings so that a million of them cost a
/// few megabytes; the message is rendered only when somebody reads it.

#include "fhr/model/error_class.hpp"
#include "fhr/model/location.hpp"
#include "fhr/model/location_set.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fhr {

enum class Verdict : std::uint8_t { Ok, NoOp, Failed };

enum class Reason : std::uint8_t {
  None,
  // no-ops
  DestinationAlreadyResident,
  DestinationOwnsSelectedReplica,
  MaterializationAlreadyAbsent,
  // failures
  TransitionExceedsBudget,
  ReservationExceedsBudget,
  WouldReplicateExclusive,
  NoMaterializationOrSource,
  ExplicitSourceNotResident,
  SourceProtected,
  MaterializationProtected,
  FinalMustPreserve,
  DiscardedValueProtected,
  ValueDiscardedInPlan,
  HandleDiscarded,
  HandleUnknown,
  LocationUnavailable,
  NotResident,
  LifetimeReleased,
};

/// One step's result. `where` is the location the reason names.
struct Outcome {
  Verdict verdict = Verdict::Ok;
  Reason reason = Reason::None;
  ErrorClass error = ErrorClass::None;
  Location where;
  std::optional<Location> source;
  std::optional<Location> destination;

  bool failed() const { return verdict == Verdict::Failed; }
  /// Executable as §10.3 defines it: no failure (no-ops are executable).
  bool executable() const { return verdict != Verdict::Failed; }
};

/// A failed Outcome.
inline Outcome failure(Reason reason, ErrorClass error, Location where = {}) {
  return Outcome{Verdict::Failed, reason, error, where, std::nullopt, std::nullopt};
}

/// The figures a budget failure carries (§4.2), and the protected locations
/// of a discard that was refused.
struct FailureDetail {
  std::uint64_t budget_bytes = 0;
  std::uint64_t used_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  std::uint64_t requested_bytes = 0;
  LocationSet protected_locations;
};

/// Names that a message may mention, supplied by whoever prints it.
struct MessageContext {
  std::string_view value_name;
  std::string_view label;
};

/// The reason of a no-op (Reason::DestinationAlreadyResident and the other
/// two), as static text: reports carry it without allocating.
std::string_view no_op_reason(Reason reason);

/// How a message writes a byte count: exact ("42949672960 B", the default,
/// what the runtime raises) or, for people, as a reporter chooses ("40 GiB").
using SizeText = std::string (*)(std::uint64_t bytes);

/// "42949672960 B".
std::string exact_size_text(std::uint64_t bytes);

/// The user-facing message: "destination already resident",
/// "Transition exceeds budget at cuda:0", ...
std::string describe(const Outcome &outcome, const MessageContext &context,
                     const FailureDetail *detail = nullptr, SizeText size_text = exact_size_text);

/// The short no-op tag used in tables: "already resident", ...
std::string_view describe_verdict(const Outcome &outcome);

} // namespace fhr
