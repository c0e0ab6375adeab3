#pragma once
/// \file
/// How the values a module declares become live values of a manager: a
/// ValueBinder is asked once per declared value (each family member on its
/// own) for the handle that stands for it. An evaluator binds its own
/// ciphertexts and key sources; `fhr-plan run` and the tests bind synthetic
/// payloads of the declared sizes whose content is known (the
/// SyntheticBinder of tests/harness).

#include "fhr/bytecode/module.hpp"
#include "fhr/runtime/manager.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace fhr {

/// One value of a module, as its declaration describes it.
struct DeclaredValue {
  std::uint32_t value_id = 0;
  std::string name;                   ///< the value's or family's name
  std::optional<std::uint32_t> index; ///< the member index for a family
  ValueSpec spec;
  /// Where it is adopted (must-preserve) or where its source loads (reconstructible).
  Location location;
  std::uint32_t line = 0; ///< the declaration's line

  /// "name" or "name[index]".
  std::string display_name() const;
};

class ValueBinder {
public:
  virtual ~ValueBinder() = default;
  /// The handle for `value` on `manager`: adopt or register it there, or
  /// return one the caller registered before. May throw (a budget error of
  /// the adopt, say); the runner reports it as the failing setup step.
  virtual Handle bind(Manager &manager, const DeclaredValue &value) = 0;
};

} // namespace fhr
