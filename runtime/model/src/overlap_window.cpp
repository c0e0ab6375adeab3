#include "fhr/model/overlap_window.hpp"

#include <algorithm>

namespace fhr {

bool OverlapWindow::admits(const OverlapCandidate &candidate,
                           const LocationAccount &destination_account) const {
  if (!candidate.plain_copy_source) return false; // runs alone, in order
  if (values_.size() >= kMaxOverlapWindow) return false;
  // A second action on a value depends on the first: it waits for its commit.
  if (std::find(values_.begin(), values_.end(), candidate.value) != values_.end()) return false;
  // The window's earlier copies charge their destinations while their
  // sources are still held: count them as reserved.
  LocationAccount account = destination_account;
  account.reserved_bytes += starting_[candidate.destination.index()];
  return account.admits(candidate.storage_bytes);
}

void OverlapWindow::add(const OverlapCandidate &candidate) {
  values_.push_back(candidate.value);
  std::uint64_t &starting = starting_[candidate.destination.index()];
  if (starting == 0) destinations_.push_back(candidate.destination);
  starting += candidate.storage_bytes;
}

void OverlapWindow::clear() {
  values_.clear();
  for (Location destination : destinations_)
    starting_[destination.index()] = 0;
  destinations_.clear();
}

const char *window_place_name(WindowPlace place) {
  switch (place) {
  case WindowPlace::Alone: return "alone";
  case WindowPlace::Opens: return "opens";
  case WindowPlace::Joins: return "joins";
  }
  return "alone";
}

} // namespace fhr
