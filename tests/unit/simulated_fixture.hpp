#pragma once
// A manager on the simulated device backend (two devices) behind the fault
// adaptors, with adopted values of known content and the invariant check
// the runtime tests share.
#include "runtime_support.hpp"

#include "fhr/runtime/fault_injection.hpp"
#include "fhr/runtime/manager.hpp"
#include "fhr/runtime/simulated_backend.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fhr::test {

using Op = BackendOperation;

struct Fixture {
  std::shared_ptr<SimulatedBackend> backend;
  /// Arms and counts the faults of every allocation, copy and event
  /// recording of the manager, and of the loads of sources wrapped by
  /// faulty().
  std::shared_ptr<FaultPlan> faults = std::make_shared<FaultPlan>();
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
    options.backend = inject_faults(backend, faults);
    options.warning_handler = [sink = warnings, mutex = warnings_mutex](std::string_view message) {
      std::lock_guard lock(*mutex);
      sink->emplace_back(message);
    };
    manager = std::make_unique<Manager>(std::move(options));
  }

  /// `source` behind the fixture's fault plan (Op::Load).
  std::shared_ptr<Source> faulty(std::shared_ptr<Source> source) const {
    return std::make_shared<FaultInjectingSource>(std::move(source), faults);
  }

  /// A buffer of `nbytes` at `at` filled with the pattern of `seed`: heap
  /// memory for pageable, a block of the backend's otherwise (adopt refuses
  /// memory of another kind, §2.6).
  std::pair<std::byte *, Storage::Release> buffer(std::size_t nbytes, unsigned seed, Location at) {
    std::pair<std::byte *, Storage::Release> out;
    if (at == pageable) {
      out = {static_cast<std::byte *>(std::malloc(nbytes == 0 ? 1 : nbytes)), std::free};
    } else {
      out = backend->allocate(at, nbytes).detach();
    }
    fill_pattern({out.first, nbytes}, seed);
    return out;
  }

  Handle adopt(std::size_t nbytes, unsigned seed, Location at, ReplicaMode mode) {
    auto [data, release] = buffer(nbytes, seed, at);
    checksums.push_back(checksum_of({data, nbytes}));
    handles.push_back(manager->adopt(data, nbytes, at, std::move(release), mode));
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
