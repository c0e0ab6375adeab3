// Concurrency stress (§13): 16 threads mix transitions, plans, scopes,
// leases (host and CUDA with consumer streams), holds, reservations and
// snapshots on shared values of one manager for a bounded time. Only
// residency errors a racing caller can legitimately meet are allowed; no
// value's bytes may change; at the end the books balance, nothing is
// protected, close() succeeds without force and every byte and event is
// returned. CI runs it under ThreadSanitizer (scripts/test.sh).
#include "../unit/simulated_fixture.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>

using namespace fhr;
using namespace fhr::test;

namespace {

constexpr int kThreads = 16;
constexpr int kMaxIterations = 4000;
constexpr auto kMaxDuration = std::chrono::seconds(3);
constexpr std::size_t kValueBytes = 8 * KiB;

class PatternSource final : public Source {
public:
  explicit PatternSource(unsigned seed) : seed_(seed) {}
  void load(std::span<std::byte> destination) override { fill_pattern(destination, seed_); }

private:
  unsigned seed_;
};

struct Failures {
  std::mutex mutex;
  std::vector<std::string> unexpected;
  void add(std::string what) {
    std::lock_guard lock(mutex);
    if (unexpected.size() < 20) unexpected.push_back(std::move(what));
  }
};

/// Errors that a correct manager raises when threads race for the same
/// values and budgets, or call while another thread's source loads (§13).
bool expected_under_contention(ErrorClass error) {
  switch (error) {
  case ErrorClass::Reentrancy:
  case ErrorClass::Budget:
  case ErrorClass::InUse:
  case ErrorClass::Unavailable:
  case ErrorClass::Ownership:
  case ErrorClass::Plan:
  case ErrorClass::PlanExecution: return true;
  default: return false;
  }
}

/// Releases a lifetime, retrying while source callbacks of other threads
/// refuse the call (§13).
template <typename Lifetime, typename... Args>
void release_retrying(Lifetime &lifetime, Args... args) {
  for (;;) {
    try {
      lifetime.release(args...);
      return;
    } catch (const ResidencyReentrancyError &) {
      std::this_thread::yield();
    }
  }
}

} // namespace

TEST_CASE("stress: 16 threads on shared values keep the manager consistent") {
  // With copy engines, as on a GPU: plans run in overlap windows.
  Fixture f({{pinned, 128 * KiB}, {gpu0, 96 * KiB}, {gpu1, 96 * KiB}}, /*overlap=*/true);
  Manager &m = *f.manager;
  std::vector<Handle> values;
  std::vector<std::uint64_t> checksums;
  for (unsigned i = 0; i < 8; ++i) {
    values.push_back(f.adopt(kValueBytes, i, pageable, ReplicaMode::Replicable));
    checksums.push_back(f.checksums.back());
  }
  for (unsigned i = 8; i < 12; ++i) {
    std::vector<std::byte> expected(kValueBytes);
    fill_pattern(expected, i);
    checksums.push_back(checksum_of(expected));
    values.push_back(m.register_source(
        ValueSpec{kValueBytes, kValueBytes, ReplicaMode::Replicable, Recoverability::Reconstructible},
        std::make_shared<PatternSource>(i)));
  }
  const Location locations[] = {pageable, pinned, gpu0, gpu1};

  Failures failures;
  std::atomic<std::uint64_t> operations{0}, refused{0}, corrupt{0};
  const auto deadline = std::chrono::steady_clock::now() + kMaxDuration;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1u);
      auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
      const Stream streams[] = {f.backend->create_stream(gpu0), f.backend->create_stream(gpu1)};
      auto stream_for = [&](Location at) { return streams[at == gpu0 ? 0 : 1]; };
      for (int i = 0; i < kMaxIterations && std::chrono::steady_clock::now() < deadline; ++i) {
        const std::size_t v = pick(values.size());
        const Handle h = values[v];
        const Location at = locations[pick(4)];
        try {
          switch (pick(11)) {
          case 0: m.ensure(h, at); break;
          case 1: m.move(h, at); break;
          case 2: m.drop(h, at); break;
          case 3: {
            const Handle handles[] = {h, values[pick(values.size())]};
            Lease lease = at.is_cuda() ? m.acquire(handles, at, stream_for(at)) : m.acquire(handles, at);
            if (at.is_cuda()) {
              f.backend->launch(stream_for(at)); // a kernel reads the values
              if (pick(2) == 0) f.backend->finish(stream_for(at));
              release_retrying(lease, pick(4) == 0);
            } else {
              if (checksum_of(lease.value(h)) != checksums[v]) ++corrupt;
              release_retrying(lease);
            }
            break;
          }
          case 4: {
            const Handle handles[] = {h};
            Hold hold = m.hold(handles, at);
            std::this_thread::yield();
            release_retrying(hold);
            break;
          }
          case 5: {
            ActiveReservation r = m.reserve(at, 4 * KiB, "workspace-" + std::to_string(t));
            std::this_thread::yield();
            release_retrying(r);
            break;
          }
          case 6: {
            const ActionSpec actions[] = {
                {ActionKind::Ensure, h, at, {}},
                {ActionKind::Ensure, values[pick(values.size())], locations[pick(4)], {}},
                {ActionKind::Drop, h, at, {}}};
            m.execute_actions(actions, "stress-" + std::to_string(t));
            break;
          }
          case 7: {
            PlanSpec plan{"scope-" + std::to_string(t),
                          {},
                          {{at, 2 * KiB, "headroom"}},
                          {{ActionKind::Ensure, h, at, {}}},
                          {{ActionKind::Drop, h, at, {}}}};
            Scope scope = m.scope(std::move(plan));
            scope.run([&] { std::this_thread::yield(); });
            break;
          }
          case 8: {
            if (m.snapshot().values.size() != values.size()) ++corrupt;
            break;
          }
          case 9:
            try {
              if (m.content_checksum(h, at) != checksums[v]) ++corrupt;
            } catch (const ResidencyUnavailableError &) {
            }
            break;
          default: f.backend->finish(streams[pick(2)]); break;
          }
          ++operations;
        } catch (const ResidencyError &error) {
          if (expected_under_contention(error.error_class()))
            ++refused;
          else
            failures.add(error.what());
        } catch (const std::exception &error) {
          failures.add(error.what());
        }
      }
      f.backend->finish(streams[0]);
      f.backend->finish(streams[1]);
    });
  for (std::thread &thread : threads)
    thread.join();

  MESSAGE(operations.load() << " operations completed, " << refused.load() << " refused under contention");
  for (const std::string &failure : failures.unexpected)
    CHECK_MESSAGE(false, failure);
  CHECK(corrupt == 0);
  CHECK(operations > 0);
  CHECK(refused > 0); // the threads really did contend

  // The books balance and every value has its bytes.
  f.check_invariants();
  for (std::size_t v = 0; v < values.size(); ++v)
    for (Location at : m.replicas(values[v]))
      CHECK(m.content_checksum(values[v], at) == checksums[v]);
  const Snapshot s = m.snapshot(); // reaps: every stream has finished
  for (const SnapshotLocation &l : s.locations) {
    CHECK(l.reserved_bytes == 0);
    CHECK(l.use_count + l.hold_count + l.pending_event_count == 0);
    if (l.budget_bytes) CHECK(l.peak_charged_bytes <= *l.budget_bytes);
  }
  CHECK(s.reservations.empty());
  for (const std::string &warning : *f.warnings) // only leases dropped by an exception mid-read
    CHECK(warning.find("destroyed") != std::string::npos);
  m.close(/*wait=*/false);
  for (Location at : locations)
    CHECK(f.backend->allocated_bytes(at) == 0);
  CHECK(f.backend->live_events() == 0);
  CHECK(f.backend->max_copies_in_flight() == 2); // action lists ran their two ensures together
}
