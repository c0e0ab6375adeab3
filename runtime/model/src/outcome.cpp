#include "fhr/model/outcome.hpp"

#include "fhr/model/action.hpp"

namespace fhr {

std::string_view action_keyword(ActionKind kind) {
  switch (kind) {
  case ActionKind::Ensure: return "ensure";
  case ActionKind::Copy: return "copy";
  case ActionKind::Move: return "move";
  case ActionKind::Drop: return "drop";
  case ActionKind::Discard: return "discard";
  }
  return "?";
}

std::string exact_size_text(std::uint64_t bytes) { return std::to_string(bytes) + " B"; }

namespace {
/// " (budget B, used B, reserved B, requested B)" when the figures are known.
std::string budget_figures(const FailureDetail *detail, SizeText size) {
  if (!detail) return {};
  return " (budget " + size(detail->budget_bytes) + ", used " + size(detail->used_bytes) + ", reserved " +
         size(detail->reserved_bytes) + ", requested " + size(detail->requested_bytes) + ")";
}
} // namespace

std::string describe(const Outcome &outcome, const MessageContext &context, const FailureDetail *detail,
                     SizeText size_text) {
  const std::string where = outcome.where.name();
  const std::string value(context.value_name);
  switch (outcome.reason) {
  case Reason::None: return {};
  case Reason::DestinationAlreadyResident:
  case Reason::DestinationOwnsSelectedReplica:
  case Reason::MaterializationAlreadyAbsent: return std::string(no_op_reason(outcome.reason));
  case Reason::TransitionExceedsBudget:
    return "Transition exceeds budget at " + where + budget_figures(detail, size_text);
  case Reason::ReservationExceedsBudget:
    return "Reservation '" + std::string(context.label) + "' exceeds budget at " + where +
           budget_figures(detail, size_text);
  case Reason::WouldReplicateExclusive: return "EnsureResident would replicate an EXCLUSIVE value";
  case Reason::NoMaterializationOrSource: return "value has no materialization or source";
  case Reason::ExplicitSourceNotResident: return "explicit source " + where + " is not resident";
  case Reason::SourceProtected: return "source " + where + " is protected";
  case Reason::MaterializationProtected: return "materialization at " + where + " is protected";
  case Reason::FinalMustPreserve: return "cannot drop final MUST_PRESERVE materialization";
  case Reason::DiscardedValueProtected: {
    std::string text = "discarded value has protected locations [";
    bool first = true;
    if (detail)
      detail->protected_locations.for_each([&](Location l) {
        if (!first) text += ", ";
        text += l.name();
        first = false;
      });
    else
      text += where;
    return text + "]";
  }
  case Reason::ValueDiscardedInPlan: return "Value '" + value + "' is discarded";
  case Reason::HandleDiscarded: return "value '" + value + "' has been discarded";
  case Reason::HandleUnknown: return "value '" + value + "' is unknown to the manager";
  case Reason::LocationUnavailable: return where + " is not available in this process";
  case Reason::NotResident: return "value '" + value + "' is not resident at " + where;
  case Reason::LifetimeReleased: return "'" + std::string(context.label) + "' was already released";
  }
  return {};
}

std::string_view describe_verdict(const Outcome &outcome) {
  switch (outcome.verdict) {
  case Verdict::Ok: return "ok";
  case Verdict::NoOp: return "no-op";
  case Verdict::Failed: return "FAILED";
  }
  return "?";
}

std::string_view no_op_reason(Reason reason) {
  switch (reason) {
  case Reason::DestinationAlreadyResident: return "destination already resident";
  case Reason::DestinationOwnsSelectedReplica: return "destination already owns the selected replica";
  case Reason::MaterializationAlreadyAbsent: return "materialization already absent";
  default: return {};
  }
}

} // namespace fhr
