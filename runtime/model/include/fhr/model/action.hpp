#pragma once
/// \file
/// The primitive transitions a plan is made of (docs/semantics.md §6, §10.1).

#include "fhr/model/location.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace fhr {

/// Index of a value in a manager (or model) in registration order.
using ValueId = std::uint32_t;

enum class ActionKind : std::uint8_t {
  Ensure,  ///< EnsureResident
  Copy,    ///< the alias of Ensure; kept apart only to print what was written
  Move,    ///< MoveResident, with an optional explicit source
  Drop,    ///< DropResident
  Discard, ///< DiscardValue
};

struct Action {
  ActionKind kind = ActionKind::Ensure;
  ValueId value = 0;
  /// Destination for ensure/copy/move, the location for drop; unused by discard.
  Location location;
  /// Explicit move source.
  std::optional<Location> from;
};

/// The keyword that spells the action in a plan: ensure, copy, move, drop, discard.
std::string_view action_keyword(ActionKind kind);

} // namespace fhr
