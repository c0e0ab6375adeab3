#pragma once
/// \file
/// What an operation needs, not how to get it (docs/semantics.md §18.1): a
/// request names values that must be resident at locations, and headroom
/// to hold while it runs. The controller turns it into a plan.

#include "fhr/model/plan.hpp"
#include "fhr/runtime/manager.hpp"

#include <string>
#include <vector>

namespace fhr {

/// One value that must be resident at one location (the seed's
/// ResidencyRequirement).
struct Requirement {
  Handle handle;
  Location location;
  friend bool operator==(const Requirement &, const Requirement &) = default;
};

/// An immutable working-set request (the seed's ResidencyRequest). The same
/// handle may be required at several locations; whether its replica mode
/// allows that is checked when a controller decides.
class Request {
public:
  /// std::invalid_argument for a blank name, no requirements, a repeated
  /// (handle, location) pair, or a reservation with a blank label.
  Request(std::string name, std::vector<Requirement> requirements,
          std::vector<Reservation> reservations = {});

  const std::string &name() const { return name_; }
  const std::vector<Requirement> &requirements() const { return requirements_; }
  const std::vector<Reservation> &reservations() const { return reservations_; }

private:
  std::string name_;
  std::vector<Requirement> requirements_;
  std::vector<Reservation> reservations_;
};

} // namespace fhr
