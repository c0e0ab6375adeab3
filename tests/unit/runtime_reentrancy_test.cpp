// §13: while a source callback runs, every call that needs the state fails
// with ResidencyReentrancyError, from the callback's own thread and from any
// other; a thread that re-enters the manager from inside a transition (an
// adopted buffer's deleter) fails the same way instead of deadlocking.
#include "simulated_fixture.hpp"

#include <functional>
#include <future>
#include <thread>

using namespace fhr;
using namespace fhr::test;

namespace {

/// A source that runs a test's callback in the middle of its load.
class CallbackSource final : public Source {
public:
  explicit CallbackSource(std::function<void()> during) : during_(std::move(during)) {}
  void load(std::span<std::byte> destination) override {
    fill_pattern(destination, 7);
    during_();
  }

private:
  std::function<void()> during_;
};

ValueSpec reconstructible(std::uint64_t nbytes) {
  return ValueSpec{nbytes, nbytes, ReplicaMode::Replicable, Recoverability::Reconstructible};
}

} // namespace

TEST_CASE("reentrancy: the loader's own calls fail, and the error leaves the transition unchanged") {
  Fixture f({{pageable, 64 * KiB}});
  Manager &m = *f.manager;
  const Handle plain = f.adopt(4 * KiB, 1, pageable, ReplicaMode::Replicable);
  std::vector<std::string> refused;
  auto attempt = [&](const char *what, auto &&call) {
    try {
      call();
    } catch (const ResidencyReentrancyError &) {
      refused.emplace_back(what);
    }
  };
  auto source = std::make_shared<CallbackSource>([&] {
    attempt("state_version", [&] { (void)m.state_version(); });
    attempt("locations", [&] { (void)m.locations(); });
    attempt("snapshot", [&] { (void)m.snapshot(); });
    attempt("trace", [&] { (void)m.trace(); });
    attempt("clear_trace", [&] { m.clear_trace(); });
    attempt("ensure", [&] { m.ensure(plain, pinned); });
    attempt("reserve", [&] { (void)m.reserve(pinned, 1, "x"); });
    attempt("close", [&] { m.close(); });
    // Constructing a scope touches no state: allowed.
    (void)m.scope(PlanSpec{"later", {}, {}, {}, {}});
    throw ResidencyReentrancyError("the loader gives up");
  });
  const Handle key = m.register_source(reconstructible(8 * KiB), source);
  const std::uint64_t version = m.state_version();
  try {
    m.ensure(key, pinned);
    FAIL("ensure succeeded");
  } catch (const ResidencyReentrancyError &error) {
    CHECK(std::string(error.what()) == "the loader gives up"); // propagates unchanged
  }
  CHECK(refused == std::vector<std::string>{"state_version", "locations", "snapshot", "trace", "clear_trace",
                                            "ensure", "reserve", "close"});
  CHECK(m.state_version() == version);
  CHECK(m.account(pageable).reserved_bytes == 0); // the temporary charge went
  CHECK(m.replicas(key).empty());
  CHECK_FALSE(m.closed());

  // In a plan the loader's failure becomes the cause of the execution error.
  const ActionSpec action{ActionKind::Ensure, key, pinned, {}};
  try {
    m.execute_actions({&action, 1}, "load-key");
    FAIL("plan succeeded");
  } catch (const ResidencyPlanExecutionError &error) {
    CHECK(error.details().cause == ErrorClass::Reentrancy);
    CHECK(error.details().failed_action_index == 0u);
    CHECK(error.details().partial_report.transitions.empty());
  }
}

TEST_CASE("reentrancy: other threads fail while a callback runs, also those already waiting") {
  Fixture f;
  Manager &m = *f.manager;
  std::promise<void> loading;
  std::promise<void> others_done;
  std::atomic<int> refusals{0};
  auto source = std::make_shared<CallbackSource>([&] {
    loading.set_value();
    others_done.get_future().wait(); // the callback outlasts the other threads' calls
  });
  const Handle key = m.register_source(reconstructible(4 * KiB), source);
  const Handle plain = f.adopt(4 * KiB, 1, pageable, ReplicaMode::Replicable);
  std::thread loader([&] { m.ensure(key, pinned); });
  loading.get_future().wait();
  std::vector<std::thread> others;
  for (int i = 0; i < 4; ++i)
    others.emplace_back([&, i] {
      try {
        if (i % 2 == 0)
          (void)m.snapshot();
        else
          m.ensure(plain, pinned);
      } catch (const ResidencyReentrancyError &) {
        ++refusals;
      }
    });
  for (std::thread &t : others)
    t.join();
  others_done.set_value();
  loader.join();
  CHECK(refusals == 4);
  CHECK(m.replicas(key) == std::vector<Location>{pinned}); // the load itself went through
}

TEST_CASE("reentrancy: a deleter that calls back into the manager is refused, not deadlocked") {
  Fixture f;
  Manager &m = *f.manager;
  std::string refused;
  auto *data = static_cast<std::byte *>(std::malloc(4 * KiB));
  const Handle h = m.adopt(
      data, 4 * KiB, pageable,
      [&](std::byte *bytes) {
        try {
          (void)m.snapshot();
        } catch (const ResidencyReentrancyError &error) {
          refused = error.what();
        }
        std::free(bytes);
      },
      ReplicaMode::Replicable);
  m.ensure(h, pinned);
  m.drop(h, pageable); // runs the deleter under the manager lock
  CHECK(refused == "manager " + std::to_string(m.id()) + ": re-entered an active transition");
  CHECK(m.replicas(h) == std::vector<Location>{pinned});
}

TEST_CASE(
    "reentrancy: lifetimes released inside a callback are refused; abandoned ones go at the next operation") {
  Fixture f;
  Manager &m = *f.manager;
  const Handle plain = f.adopt(4 * KiB, 1, pageable, ReplicaMode::Replicable);
  m.ensure(plain, pinned);
  const Handle handles[] = {plain};
  Hold hold = m.hold(handles, pinned);
  std::optional<Hold> abandoned(m.hold(handles, pinned));
  bool release_refused = false;
  auto source = std::make_shared<CallbackSource>([&] {
    try {
      hold.release();
    } catch (const ResidencyReentrancyError &) {
      release_refused = true;
    }
    abandoned.reset(); // destroyed inside the callback
  });
  const Handle key = m.register_source(reconstructible(4 * KiB), source);
  m.ensure(key, pinned);
  CHECK(release_refused);
  CHECK(hold.active());
  REQUIRE(f.warnings->size() == 1);
  CHECK(f.warnings->front() ==
        "a lifetime destroyed while a source callback ran is released at the manager's next operation");
  // The abandoned hold still counts until the manager's next operation...
  CHECK(m.account(pinned).used_bytes == 8 * KiB);
  hold.release();
  // ...which releases it first: nothing protects the replica any more.
  CHECK_FALSE(m.drop(plain, pinned).no_op);
  m.close();
}
