// A lone copy's stamps on the time-stamp counter (issue #15): the counter's
// intervals, turned into steady-clock nanoseconds around one fine read, land
// where the steady clock read around them says they must.
#include "../../runtime/manager/src/tick_stamps.hpp"

#include "simulated_fixture.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using namespace fhr;
using namespace fhr::test;

namespace {

/// Whether Linux lists `flag` for the first processor.
bool cpu_flag(const std::string &flag) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

void spin_ns(std::uint64_t ns) {
  const std::uint64_t until = now_ns() + ns;
  while (now_ns() < until) {
  }
}

} // namespace

TEST_CASE("tick stamps: used exactly where the processor's counter is invariant") {
#if defined(__x86_64__) && defined(__linux__)
  CHECK(TickStamps::available() == cpu_flag("nonstop_tsc"));
#else
  CHECK_FALSE(TickStamps::available());
#endif
}

TEST_CASE("tick stamps: a start and an end on the counter fall inside the steady clock's reads around them") {
  if (!TickStamps::available()) {
    MESSAGE("no invariant time-stamp counter here: the manager reads the steady clock (the case above)");
    return;
  }
  // Short intervals (converted) and a long wait after the anchor (a fine
  // read): both ends inside the fine reads taken just outside them. The
  // slack is the rate's error over the interval (0.02%), with room. A
  // thread preempted between its reads (a loaded machine, a sanitizer
  // build) can land outside by microseconds with nothing wrong, so each
  // case has five tries and one must hold every bound; a fault in the
  // conversion fails them all.
  constexpr std::uint64_t kSlack = 200;
  constexpr int kTries = 5;
  for (const std::uint64_t after_anchor : {std::uint64_t{5'000}, std::uint64_t{200'000}}) {
    CAPTURE(after_anchor);
    std::string last_try;
    bool held = false;
    for (int attempt = 0; attempt < kTries && !held; ++attempt) {
      TickStamps stamps;
      const std::uint64_t before = now_ns();
      stamps.start();
      const std::uint64_t started = now_ns();
      spin_ns(20'000);
      const std::uint64_t anchor_before = now_ns();
      const std::uint64_t start = stamps.anchor();
      spin_ns(after_anchor);
      const std::uint64_t end_before = now_ns();
      const std::uint64_t end = stamps.end_ns();
      const std::uint64_t after = now_ns();
      REQUIRE(start <= end);
      held = start + kSlack >= before && start <= started + kSlack && end + kSlack >= end_before &&
             end <= after + kSlack && end - start >= anchor_before - started;
      last_try = "before " + std::to_string(before) + ", start " + std::to_string(start) + ", started " +
                 std::to_string(started) + ", end_before " + std::to_string(end_before) + ", end " +
                 std::to_string(end) + ", after " + std::to_string(after);
    }
    CAPTURE(last_try);
    CHECK(held);
  }
}

TEST_CASE("tick stamps: a lone copy's report spans the call and follows the report before it") {
  // Copy engines that overlap the host: an ensure's copy into its
  // destination is a lone copy, booked while it runs.
  Fixture f({}, /*overlap=*/true);
  const Handle h = f.adopt(64 * KiB, 1, pinned, ReplicaMode::Replicable);
  std::uint64_t previous_end = 0;
  for (int round = 0; round < 3; ++round) {
    const std::uint64_t before = now_ns();
    const TransitionReport ensured = f.manager->ensure(h, gpu0);
    const std::uint64_t after = now_ns();
    CHECK_FALSE(ensured.no_op);
    CHECK(ensured.started_at_ns >= before);
    CHECK(ensured.started_at_ns >= previous_end);
    CHECK(ensured.started_at_ns <= ensured.completed_at_ns);
    CHECK(ensured.completed_at_ns <= after);
    const TransitionReport dropped = f.manager->drop(h, gpu0);
    CHECK(dropped.started_at_ns >= ensured.completed_at_ns);
    previous_end = dropped.completed_at_ns;
  }
  f.check_invariants();
}
