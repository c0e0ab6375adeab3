#include "fhr/controller/request.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace fhr {

namespace {
bool blank(const std::string &text) { return text.find_first_not_of(" \t\n\r") == std::string::npos; }
} // namespace

Request::Request(std::string name, std::vector<Requirement> requirements,
                 std::vector<Reservation> reservations)
    : name_(std::move(name)), requirements_(std::move(requirements)), reservations_(std::move(reservations)) {
  if (blank(name_)) throw std::invalid_argument("a residency request needs a non-blank name");
  if (requirements_.empty())
    throw std::invalid_argument("residency request '" + name_ + "' needs at least one requirement");
  std::vector<Requirement> sorted = requirements_;
  const auto key = [](const Requirement &r) {
    return std::tuple(r.handle.manager_id, r.handle.handle_id, r.location.index());
  };
  std::sort(sorted.begin(), sorted.end(),
            [&](const Requirement &a, const Requirement &b) { return key(a) < key(b); });
  if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end())
    throw std::invalid_argument("residency request '" + name_ + "' names value " +
                                std::to_string(twice->handle.handle_id) + " at " + twice->location.name() +
                                " twice");
  for (const Reservation &r : reservations_)
    if (blank(r.label))
      throw std::invalid_argument("residency request '" + name_ + "' has a reservation with a blank label");
}

} // namespace fhr
