#pragma once
// Helpers of the controller tests: a manager on the simulated device
// backend, values of 100-byte units, and actions and evictions as text so
// that a test compares a whole decision in one line.
#include "runtime_support.hpp"

#include "fhr/controller/controller.hpp"
#include "fhr/runtime/simulated_backend.hpp"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace fhr::test {

/// Writes the pattern of its seed; counts its loads.
class CountingSource final : public Source {
public:
  explicit CountingSource(unsigned seed) : seed_(seed) {}
  void load(std::span<std::byte> destination) override {
    ++loads;
    fill_pattern(destination, seed_);
  }
  int loads = 0;

private:
  unsigned seed_;
};

struct ControllerFixture {
  std::shared_ptr<SimulatedBackend> backend = std::make_shared<SimulatedBackend>(2);
  std::unique_ptr<Manager> manager;
  std::vector<std::shared_ptr<CountingSource>> sources;

  explicit ControllerFixture(std::vector<std::pair<Location, std::optional<std::uint64_t>>> budgets = {}) {
    ManagerOptions options;
    options.budgets = std::move(budgets);
    options.backend = backend;
    manager = std::make_unique<Manager>(std::move(options));
  }
  /// A must-preserve value of `nbytes` adopted at `at`: heap memory for
  /// pageable, a block of the backend's otherwise (adopt refuses memory of
  /// another kind, §2.6).
  Handle adopt(std::size_t nbytes, Location at, ReplicaMode mode = ReplicaMode::Exclusive) {
    std::pair<std::byte *, Storage::Release> buffer;
    if (at == Location::pageable())
      buffer = {static_cast<std::byte *>(std::malloc(nbytes)), std::free};
    else
      buffer = backend->allocate(at, nbytes).detach();
    fill_pattern({buffer.first, nbytes}, static_cast<unsigned>(sources.size() + 100));
    return manager->adopt(buffer.first, nbytes, at, std::move(buffer.second), mode);
  }
  /// A reconstructible value whose source is at `at`.
  Handle source(std::size_t nbytes, Location at = Location::pageable(),
                ReplicaMode mode = ReplicaMode::Replicable) {
    sources.push_back(std::make_shared<CountingSource>(static_cast<unsigned>(sources.size() + 1)));
    return manager->register_source(ValueSpec{nbytes, nbytes, mode, Recoverability::Reconstructible},
                                    sources.back(), at);
  }
  int loads() const {
    int n = 0;
    for (const auto &s : sources)
      n += s->loads;
    return n;
  }
};

/// "ensure #2 at cuda:0", "move #1 to pinned from cuda:0", "drop #3 at cuda:0".
inline std::string action_text(const ActionSpec &a) {
  const std::string value = "#" + std::to_string(a.handle.handle_id);
  switch (a.kind) {
  case ActionKind::Ensure:
  case ActionKind::Copy: return "ensure " + value + " at " + a.location.name();
  case ActionKind::Move:
    return "move " + value + " to " + a.location.name() + (a.from ? " from " + a.from->name() : "");
  case ActionKind::Drop: return "drop " + value + " at " + a.location.name();
  case ActionKind::Discard: return "discard " + value;
  }
  return {};
}

inline std::string actions_text(const std::vector<ActionSpec> &actions) {
  std::string out;
  for (const ActionSpec &a : actions)
    out += (out.empty() ? "" : "; ") + action_text(a);
  return out;
}

/// "drop #2 at cuda:0 [rank 0, 100 B from cuda:0: its registered source can rebuild the value]".
inline std::string evictions_text(const std::vector<Eviction> &evictions) {
  std::string out;
  for (const Eviction &e : evictions)
    out += (out.empty() ? "" : "; ") + action_text(e.action) + " [rank " + std::to_string(e.rank) + ", " +
           std::to_string(e.released_nbytes) + " B from " + e.released_location.name() + ": " + e.reason +
           "]";
  return out;
}

inline Request need(std::string name, std::vector<Requirement> requirements,
                    std::vector<Reservation> reservations = {}) {
  return Request(std::move(name), std::move(requirements), std::move(reservations));
}

} // namespace fhr::test
