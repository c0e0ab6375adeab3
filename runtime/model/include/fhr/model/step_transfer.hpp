#pragma once
/// \file
/// What moved a step's bytes, as the model decided when it applied the
/// step: the Simulator (plan units of `explain`) and the ModelTarget
/// (programs) record it per step from the transition's hooks, so that
/// explain's JSON states it (`transfer`, docs/explain-json.md) and the time
/// predictor (fhr/model/timeline.hpp) need not infer it.

#include "fhr/model/link_model.hpp"
#include "fhr/model/outcome.hpp"
#include "fhr/model/transfer_recorder.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace fhr {

/// What a step moves.
enum class StepTransfer : std::uint8_t {
  None, ///< nothing: a no-op, a failure, a reservation, a drop or discard, a lease or hold
  Copy, ///< a plain copy of the resident replica at `source` to `destination`
  Load, ///< reconstruction: the value's source fills storage at `source`, copied on to `destination`
};

/// Hooks that keep only what decides a step's transfer: whether the
/// transition reloaded its value from its source or copied a resident
/// replica. The rules call them inline, so explain's and the model target's
/// per-step path keeps two flags in registers where a TransferRecorder would
/// write down every endpoint.
struct StepTransferHooks {
  bool loaded = false;
  bool copied = false;

  void load(ValueId, Location) { loaded = true; }
  void copy(ValueId, Location, Location) { copied = true; }
  void install(ValueId, Location) {}
  void remove(ValueId, Location) {}

  /// The transfer of the applied step: a reload from the value's source is
  /// a load (whether or not a copy follows it), a copy of a resident replica
  /// a copy; a step that failed or did nothing moves nothing.
  StepTransfer transfer(const Outcome &outcome) const {
    if (outcome.verdict != Verdict::Ok) return StepTransfer::None;
    if (loaded) return StepTransfer::Load;
    return copied ? StepTransfer::Copy : StepTransfer::None;
  }
};

/// StepTransferHooks that also keep where the transition removed replicas:
/// for a discard, whose replicas are known nowhere else once they are gone
/// (DiscardedReplicas). The rules resolve the hooks statically, so the
/// other steps keep to the two flags.
struct StepRemovalHooks : StepTransferHooks {
  LocationSet removed;

  void remove(ValueId, Location location) { removed.insert(location); }
};

/// The stable name of a transfer in outputs: "none", "copy", "load".
inline std::string_view step_transfer_name(StepTransfer transfer) {
  switch (transfer) {
  case StepTransfer::Copy: return "copy";
  case StepTransfer::Load: return "load";
  case StepTransfer::None: return "none";
  }
  return "none";
}

/// The link a transfer's bytes take (docs/links.md): the copy's link
/// ("pinned-device"); a load is "load" plus the link of the copy that
/// follows it ("load pageable-device"), "load" alone into its own source
/// location; "" for no transfer.
inline std::string transfer_link_name(StepTransfer transfer, Location source, Location destination) {
  if (transfer == StepTransfer::None) return {};
  const std::optional<LinkKind> link = link_between(source, destination);
  const std::string name = link ? std::string(link_kind_name(*link)) : std::string();
  if (transfer == StepTransfer::Load) return name.empty() ? "load" : "load " + name;
  return name;
}

} // namespace fhr
