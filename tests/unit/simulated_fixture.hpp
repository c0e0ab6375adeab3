#pragma once
// A manager on the simulated device backend (two devices), with adopted
// values of known content and the invariant check the runtime tests share.
#include "runtime_support.hpp"

#include "fhr/runtime/manager.hpp"
#include "fhr/runtime/simulated_backend.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fhr::test {

struct Fixture {
  std::shared_ptr<SimulatedBackend> backend;
  std::unique_ptr<Manager> manager;

  /// Warnings the manager reported, in order (read them once the threads
  /// that may warn have finished).
  std::shared_ptr<std::vector<std::string>> warnings = std::make_shared<std::vector<std::string>>();
  std::shared_ptr<std::mutex> warnings_mutex = std::make_shared<std::mutex>();

  /// `overlap`: the backend has separate copy engines (overlap windows).
  explicit Fixture(std::vector<std::pair<Location, std::optional<std::uint64_t>>> budgets = {},
                   bool overlap = false)
      : backend(std::make_shared<SimulatedBackend>(2, overlap)) {
    ManagerOptions options;
    options.budgets = std::move(budgets);
    options.backend = backend;
    options.warning_handler = [sink = warnings, mutex = warnings_mutex](std::string_view message) {
      std::lock_guard lock(*mutex);
      sink->emplace_back(message);
    };
    manager = std::make_unique<Manager>(std::move(options));
  }

  Handle adopt(std::size_t nbytes, unsigned seed, Location at, ReplicaMode mode) {
    auto *data = static_cast<std::byte *>(std::malloc(nbytes));
    fill_pattern({data, nbytes}, seed);
    checksums.push_back(checksum_of({data, nbytes}));
    handles.push_back(manager->adopt(data, nbytes, at, std::free, mode));
    return handles.back();
  }

  /// The books agree with the storage: every location's used bytes is the
  /// sum of the charges of the replicas there, every adopted value still has
  /// a replica, and every replica holds the value's original bytes.
  void check_invariants() {
    const Snapshot s = manager->snapshot();
    for (const SnapshotLocation &l : s.locations)
      CHECK(l.used_bytes == charged_by_replicas(s, l.location));
    for (std::size_t i = 0; i < handles.size(); ++i) {
      const std::vector<Location> at = manager->replicas(handles[i]);
      CHECK_FALSE(at.empty()); // a must-preserve value is never lost
      for (Location l : at)
        CHECK(manager->content_checksum(handles[i], l) == checksums[i]);
    }
  }

  std::vector<Handle> handles;
  std::vector<std::uint64_t> checksums;
};

} // namespace fhr::test
