// The execution rules of docs/semantics.md §3–§9 on the model State: exact bytes,
// peaks, versions, outcomes and error classes.
#include "fhr/model/simulator.hpp"
#include "fhr/model/state.hpp"

#include <doctest/doctest.h>

using namespace fhr;

namespace {
constexpr std::uint64_t MiB = 1 << 20;

ValueSpec spec(std::uint64_t storage, ReplicaMode mode = ReplicaMode::Exclusive,
               Recoverability recoverability = Recoverability::MustPreserve) {
  return ValueSpec{storage, storage, mode, recoverability};
}

Action act(ActionKind kind, ValueId value, Location at, std::optional<Location> from = std::nullopt) {
  return Action{kind, value, at, from};
}

const Location pageable = Location::pageable();
const Location pinned = Location::pinned();
const Location gpu0 = Location::cuda(0);
const Location gpu1 = Location::cuda(1);
} // namespace

TEST_CASE("registry: budgets first, then lazy registration with a version bump each") {
  State state;
  state.set_budget(gpu0, 64 * MiB);
  CHECK(state.registry() == std::vector<Location>{gpu0});
  CHECK(state.version() == 0);
  REQUIRE_FALSE(state.adopt(0, spec(8 * MiB), pinned).failed());
  CHECK(state.registry() == std::vector<Location>{gpu0, pinned});
  CHECK(state.version() == 2); // registration + install
  REQUIRE_FALSE(state.adopt(1, spec(8 * MiB), pinned).failed());
  CHECK(state.version() == 3);
  CHECK(state.account(pinned).used_bytes == 16 * MiB);
  CHECK(state.account(pinned).peak_used_bytes == 16 * MiB);
}

TEST_CASE("adopt: admission inequality used + reserved + x <= budget, failure leaves no value") {
  State state;
  state.set_budget(pinned, 10 * MiB);
  REQUIRE_FALSE(state.adopt(0, spec(6 * MiB), pinned).failed());
  FailureDetail detail;
  Outcome refused = state.adopt(1, spec(5 * MiB), pinned, &detail);
  CHECK(refused.error == ErrorClass::Budget);
  CHECK(refused.reason == Reason::TransitionExceedsBudget);
  CHECK(detail.budget_bytes == 10 * MiB);
  CHECK(detail.used_bytes == 6 * MiB);
  CHECK(detail.requested_bytes == 5 * MiB);
  CHECK(state.value(1).status == ValueStatus::Unregistered);
  CHECK(state.account(pinned).used_bytes == 6 * MiB);
  CHECK_FALSE(state.adopt(2, spec(4 * MiB), pinned).failed()); // exactly fills the budget
  CHECK(state.account(pinned).used_bytes == 10 * MiB);
  CHECK_FALSE(state.adopt(3, spec(0), pinned).failed()); // zero bytes always admitted
}

TEST_CASE("zero budget admits only zero-byte charges") {
  State state;
  state.set_budget(gpu0, 0);
  CHECK(state.adopt(0, spec(1), gpu0).error == ErrorClass::Budget);
  CHECK_FALSE(state.adopt(1, spec(0), gpu0).failed());
}

TEST_CASE("every location accounts at most 4 EiB, budgeted or not") {
  // Found by fuzz_workload: 27 values of 5.3 EB wrapped an unbudgeted
  // location's account and overflowed the controller's search.
  State state;
  REQUIRE_FALSE(state.adopt(0, spec(kMaxChargedBytes - 1), pinned).failed());
  CHECK_FALSE(state.adopt(1, spec(1), pinned).failed()); // exactly the limit
  FailureDetail detail;
  const Outcome refused = state.adopt(2, spec(1), pinned, &detail);
  CHECK(refused.error == ErrorClass::Budget);
  CHECK(refused.reason == Reason::TransitionExceedsBudget);
  CHECK(detail.budget_bytes == kMaxChargedBytes);
  CHECK(detail.used_bytes == kMaxChargedBytes);
  CHECK(state.account(pinned).used_bytes == kMaxChargedBytes);
  CHECK_FALSE(state.adopt(3, spec(0), pinned).failed()); // zero bytes always admitted
  // A value larger than the limit fits nowhere, a budget above it is the limit.
  CHECK(state.adopt(4, spec(kMaxChargedBytes + 1), pageable).error == ErrorClass::Budget);
  state.set_budget(gpu0, ~std::uint64_t{0});
  CHECK(state.account(gpu0).limit_bytes() == kMaxChargedBytes);
  CHECK(state.adopt(5, spec(kMaxChargedBytes + 1), gpu0).error == ErrorClass::Budget);
}

TEST_CASE("headroom at the peak is against the limit, not a budget above it") {
  // A budget of 14.3 EiB once reported a headroom of -1.95e18 B in JSON
  // (the difference cast to 64 signed bits) and 14.3 EiB in text.
  LocationPrediction p;
  p.location = pinned;
  CHECK_FALSE(p.headroom_at_peak());
  p.budget_bytes = 16'492'674'416'640'000'000ull;
  p.peak_charged = MiB;
  CHECK(p.headroom_at_peak() == static_cast<std::int64_t>(kMaxChargedBytes - MiB));
  p.budget_bytes = 100;
  p.peak_charged = 60;
  CHECK(p.headroom_at_peak() == 40);
  p.peak_charged = 160; // an infeasible plan's peak counts the refused request
  CHECK(p.headroom_at_peak() == -60);
  p.peak_charged = ~std::uint64_t{0};
  CHECK(p.headroom_at_peak() == -static_cast<std::int64_t>(kMaxChargedBytes));
}

TEST_CASE("unavailable cuda location is an argument error") {
  State state(DeviceConfig{true, 2});
  Outcome outcome = state.adopt(0, spec(MiB), Location::cuda(2));
  CHECK(outcome.error == ErrorClass::InvalidArgument);
  CHECK(outcome.reason == Reason::LocationUnavailable);
  State no_cuda(DeviceConfig{false, 0});
  CHECK(no_cuda.adopt(0, spec(MiB), gpu0).error == ErrorClass::InvalidArgument);
  CHECK_FALSE(no_cuda.adopt(0, spec(MiB), pinned).failed());
}

TEST_CASE("ensure: no-op, exclusive rejection, source in location order") {
  State state;
  REQUIRE_FALSE(state.adopt(0, spec(4 * MiB, ReplicaMode::Replicable), pinned).failed());
  REQUIRE_FALSE(state.adopt(1, spec(4 * MiB), pinned).failed());
  const std::uint64_t version = state.version();

  Outcome noop = state.apply(act(ActionKind::Ensure, 0, pinned));
  CHECK(noop.verdict == Verdict::NoOp);
  CHECK(noop.reason == Reason::DestinationAlreadyResident);
  CHECK_FALSE(noop.source.has_value());
  CHECK(state.version() == version);

  Outcome exclusive = state.apply(act(ActionKind::Ensure, 1, gpu0));
  CHECK(exclusive.error == ErrorClass::Ownership);
  CHECK(exclusive.reason == Reason::WouldReplicateExclusive);
  // An exclusive value ensured where it already is: a legal no-op.
  CHECK(state.apply(act(ActionKind::Ensure, 1, pinned)).verdict == Verdict::NoOp);

  Outcome replicated = state.apply(act(ActionKind::Copy, 0, gpu0));
  CHECK(replicated.verdict == Verdict::Ok);
  CHECK(replicated.source == pinned);
  CHECK(state.account(gpu0).used_bytes == 4 * MiB);
  CHECK(state.version() == version + 2); // registration of cuda:0 + install
  REQUIRE_FALSE(state.apply(act(ActionKind::Ensure, 0, pageable)).failed());
  // pageable now precedes pinned in location order.
  CHECK(state.apply(act(ActionKind::Ensure, 0, gpu1)).source == pageable);
}

TEST_CASE("ensure reconstructs with a temporary charge at the source location") {
  State state;
  state.set_budget(pageable, 10 * MiB);
  state.set_budget(gpu0, 100 * MiB);
  REQUIRE_FALSE(state
                    .register_source(
                        0, spec(8 * MiB, ReplicaMode::Replicable, Recoverability::Reconstructible), pageable)
                    .failed());
  Outcome loaded = state.apply(act(ActionKind::Ensure, 0, gpu0));
  CHECK(loaded.verdict == Verdict::Ok);
  CHECK(loaded.source == pageable);
  CHECK(state.account(pageable).reserved_bytes == 0); // released afterwards
  CHECK(state.account(pageable).peak_charged_bytes == 8 * MiB);
  CHECK(state.account(pageable).used_bytes == 0);
  CHECK(state.account(gpu0).used_bytes == 8 * MiB);

  SUBCASE("the temporary charge must fit the source location's budget") {
    State tight;
    tight.set_budget(pageable, 4 * MiB);
    REQUIRE_FALSE(
        tight
            .register_source(0, spec(8 * MiB, ReplicaMode::Replicable, Recoverability::Reconstructible),
                             pageable)
            .failed());
    Outcome refused = tight.apply(act(ActionKind::Ensure, 0, gpu0));
    CHECK(refused.error == ErrorClass::Budget);
    CHECK(refused.where == pageable);
    CHECK(tight.account(gpu0).used_bytes == 0);
  }
  SUBCASE("loading into the source location charges it once, not twice") {
    State same;
    same.set_budget(pageable, 8 * MiB);
    REQUIRE_FALSE(
        same.register_source(0, spec(8 * MiB, ReplicaMode::Replicable, Recoverability::Reconstructible),
                             pageable)
            .failed());
    CHECK_FALSE(same.apply(act(ActionKind::Ensure, 0, pageable)).failed());
    CHECK(same.account(pageable).used_bytes == 8 * MiB);
    CHECK(same.account(pageable).peak_charged_bytes == 8 * MiB);
  }
}

TEST_CASE("move: transient double charge, version +2, explicit and implicit sources") {
  State state;
  state.set_budget(gpu0, 8 * MiB);
  REQUIRE_FALSE(state.adopt(0, spec(8 * MiB), pinned).failed());
  const std::uint64_t version = state.version();
  Outcome moved = state.apply(act(ActionKind::Move, 0, gpu0));
  CHECK(moved.source == pinned);
  CHECK(state.account(gpu0).used_bytes == 8 * MiB);
  CHECK(state.account(pinned).used_bytes == 0);
  CHECK(state.account(pinned).peak_used_bytes == 8 * MiB);
  CHECK(state.version() == version + 2); // install, remove (cuda:0 has a budget, so it is known)

  Outcome explicit_missing = state.apply(act(ActionKind::Move, 0, pageable, pinned));
  CHECK(explicit_missing.error == ErrorClass::Unavailable);
  CHECK(explicit_missing.reason == Reason::ExplicitSourceNotResident);

  Outcome owns = state.apply(act(ActionKind::Move, 0, gpu0));
  CHECK(owns.verdict == Verdict::NoOp);
  CHECK(owns.reason == Reason::DestinationOwnsSelectedReplica);
  Outcome owns_explicit = state.apply(act(ActionKind::Move, 0, gpu0, gpu0));
  CHECK(owns_explicit.verdict == Verdict::NoOp);
  CHECK(owns_explicit.source == gpu0);
}

TEST_CASE("move removes at most one replica; destination resident means pure removal") {
  State state;
  REQUIRE_FALSE(state.adopt(0, spec(MiB, ReplicaMode::Replicable), pageable).failed());
  REQUIRE_FALSE(state.apply(act(ActionKind::Ensure, 0, pinned)).failed());
  REQUIRE_FALSE(state.apply(act(ActionKind::Ensure, 0, gpu0)).failed());
  Outcome removal = state.apply(act(ActionKind::Move, 0, gpu0));
  CHECK(removal.verdict == Verdict::Ok);
  CHECK(removal.source == pageable);
  CHECK_FALSE(state.value(0).resident.contains(pageable));
  CHECK(state.value(0).resident.contains(pinned));
  Outcome copy_move = state.apply(act(ActionKind::Move, 0, gpu1));
  CHECK(copy_move.source == pinned);
  CHECK(state.value(0).resident.contains(gpu0));
  CHECK(state.value(0).resident.contains(gpu1));
  CHECK_FALSE(state.value(0).resident.contains(pinned));
}

TEST_CASE("move of a source-backed value with no replica reconstructs and removes nothing") {
  State state;
  REQUIRE_FALSE(
      state.register_source(0, spec(MiB, ReplicaMode::Exclusive, Recoverability::Reconstructible), pinned)
          .failed());
  const std::uint64_t version = state.version();
  Outcome moved = state.apply(act(ActionKind::Move, 0, gpu0));
  CHECK(moved.source == pinned);
  CHECK(state.version() == version + 2); // register cuda:0 + install
  CHECK(state.account(pinned).peak_charged_bytes == MiB);
}

TEST_CASE("drop: absent no-op, protection before the final-copy rule, reconstructible may end empty") {
  State state;
  REQUIRE_FALSE(state.adopt(0, spec(MiB), pinned).failed());
  Outcome absent = state.apply(act(ActionKind::Drop, 0, gpu0));
  CHECK(absent.verdict == Verdict::NoOp);
  CHECK(absent.reason == Reason::MaterializationAlreadyAbsent);
  CHECK_FALSE(state.is_registered(gpu0));

  CHECK(state.apply(act(ActionKind::Drop, 0, pinned)).error == ErrorClass::Ownership);
  LifetimeId hold = 0;
  const ValueId held[] = {0};
  REQUIRE_FALSE(state.protect(LifetimeKind::Hold, held, pinned, &hold).failed());
  Outcome protected_drop = state.apply(act(ActionKind::Drop, 0, pinned));
  CHECK(protected_drop.error == ErrorClass::InUse);
  CHECK(protected_drop.reason == Reason::MaterializationProtected);
  state.release(hold);

  REQUIRE_FALSE(
      state.register_source(1, spec(MiB, ReplicaMode::Replicable, Recoverability::Reconstructible), pageable)
          .failed());
  REQUIRE_FALSE(state.apply(act(ActionKind::Ensure, 1, gpu0)).failed());
  CHECK_FALSE(state.apply(act(ActionKind::Drop, 1, gpu0)).failed());
  CHECK(state.value(1).resident.empty());
  CHECK(state.value(1).status == ValueStatus::Live);
}

TEST_CASE("discard: all-or-nothing protection, then every replica removed and the handle dead") {
  State state;
  REQUIRE_FALSE(state.adopt(0, spec(2 * MiB, ReplicaMode::Replicable), pinned).failed());
  REQUIRE_FALSE(state.apply(act(ActionKind::Ensure, 0, gpu0)).failed());
  LifetimeId lease = 0;
  const ValueId leased[] = {0};
  REQUIRE_FALSE(state.protect(LifetimeKind::Lease, leased, gpu0, &lease).failed());
  FailureDetail detail;
  Outcome refused = state.apply(act(ActionKind::Discard, 0, {}), &detail);
  CHECK(refused.error == ErrorClass::InUse);
  CHECK(detail.protected_locations.contains(gpu0));
  CHECK(state.account(pinned).used_bytes == 2 * MiB);

  state.release(lease, /*events_pending=*/true);
  CHECK(state.apply(act(ActionKind::Discard, 0, {})).error == ErrorClass::InUse);
  state.complete_pending(lease);

  const std::uint64_t version = state.version();
  CHECK_FALSE(state.apply(act(ActionKind::Discard, 0, {})).failed());
  CHECK(state.version() == version + 3); // two removals + the discard mark
  CHECK(state.account(pinned).used_bytes == 0);
  CHECK(state.account(gpu0).used_bytes == 0);
  Outcome again = state.apply(act(ActionKind::Discard, 0, {}));
  CHECK(again.error == ErrorClass::Handle);
  CHECK(again.reason == Reason::HandleDiscarded);
}

TEST_CASE("unknown handle") {
  State state;
  Outcome outcome = state.apply(act(ActionKind::Ensure, 7, pinned));
  CHECK(outcome.error == ErrorClass::Handle);
  CHECK(outcome.reason == Reason::HandleUnknown);
}

TEST_CASE("leases and holds: atomic, not-resident, tokens stack, versions") {
  State state;
  REQUIRE_FALSE(state.adopt(0, spec(MiB), pinned).failed());
  REQUIRE_FALSE(state.adopt(1, spec(MiB), pageable).failed());
  const ValueId both[] = {0, 1};
  LifetimeId id = 0;
  ValueId failed = 99;
  const std::uint64_t version = state.version();
  Outcome refused = state.protect(LifetimeKind::Lease, both, pinned, &id, &failed);
  CHECK(refused.error == ErrorClass::Unavailable);
  CHECK(refused.reason == Reason::NotResident);
  CHECK(failed == 1);
  CHECK_FALSE(state.is_protected(0, pinned)); // atomic: nothing installed
  CHECK(state.version() == version);

  const ValueId first[] = {0, 0};
  LifetimeId a = 0, b = 0;
  REQUIRE_FALSE(state.protect(LifetimeKind::Lease, first, pinned, &a).failed());
  REQUIRE_FALSE(state.protect(LifetimeKind::Hold, first, pinned, &b).failed());
  CHECK(state.find_lifetime(a)->values.size() == 1); // duplicates collapse
  CHECK(state.version() == version + 2);
  state.release(a);
  CHECK(state.is_protected(0, pinned));
  state.release(b);
  CHECK_FALSE(state.is_protected(0, pinned));
  CHECK(state.version() == version + 4);
  state.release(b); // idempotent
  CHECK(state.version() == version + 4);
}

TEST_CASE("a host lease never goes pending") {
  State state;
  REQUIRE_FALSE(state.adopt(0, spec(MiB), pinned).failed());
  const ValueId one[] = {0};
  LifetimeId id = 0;
  REQUIRE_FALSE(state.protect(LifetimeKind::Lease, one, pinned, &id).failed());
  state.release(id, /*events_pending=*/true);
  CHECK_FALSE(state.is_protected(0, pinned));
  CHECK(state.lifetime_state(id) == LifetimeState::Released);
  CHECK(state.find_lifetime(id) == nullptr);
}

TEST_CASE("reservations: admission, zero bytes at a full location, peak charged") {
  State state;
  state.set_budget(gpu0, 10 * MiB);
  REQUIRE_FALSE(state.adopt(0, spec(6 * MiB), gpu0).failed());
  LifetimeId id = 0;
  FailureDetail detail;
  Outcome refused = state.reserve(gpu0, 5 * MiB, "workspace", &id, &detail);
  CHECK(refused.error == ErrorClass::Budget);
  CHECK(refused.reason == Reason::ReservationExceedsBudget);
  CHECK(detail.requested_bytes == 5 * MiB);
  REQUIRE_FALSE(state.reserve(gpu0, 4 * MiB, "workspace", &id).failed());
  CHECK(state.account(gpu0).reserved_bytes == 4 * MiB);
  CHECK(state.account(gpu0).peak_charged_bytes == 10 * MiB);
  CHECK(state.account(gpu0).peak_used_bytes == 6 * MiB);
  LifetimeId zero = 0;
  CHECK_FALSE(state.reserve(gpu0, 0, "marker", &zero).failed());
  state.release(id);
  CHECK(state.account(gpu0).reserved_bytes == 0);
  CHECK(state.account(gpu0).peak_charged_bytes == 10 * MiB); // peaks never decrease
  // A reservation at a new location registers it.
  REQUIRE_FALSE(state.reserve(gpu1, MiB, "scratch", &id).failed());
  CHECK(state.is_registered(gpu1));
}

TEST_CASE("location parsing: canonical spellings only") {
  CHECK(parse_location("pageable") == pageable);
  CHECK(parse_location("pageable-host") == pageable);
  CHECK(parse_location("pinned-host") == pinned);
  CHECK(parse_location("cuda:0") == gpu0);
  CHECK(parse_location("cuda:127") == Location::cuda(127));
  LocationParseError error{};
  CHECK_FALSE(parse_location("cuda", &error));
  CHECK(error.kind == LocationParseError::Kind::MissingIndex);
  CHECK_FALSE(parse_location("cuda:00", &error));
  CHECK(error.kind == LocationParseError::Kind::NotCanonical);
  CHECK_FALSE(parse_location("cuda:01", &error));
  CHECK_FALSE(parse_location("cuda:-1", &error));
  CHECK_FALSE(parse_location("cuda:128", &error));
  CHECK(error.kind == LocationParseError::Kind::OutOfRange);
  CHECK_FALSE(parse_location("cuda:99999999999999999999", &error));
  CHECK_FALSE(parse_location("disk", &error));
  CHECK(error.kind == LocationParseError::Kind::Unknown);
  CHECK(pageable < pinned);
  CHECK(pinned < gpu0);
  CHECK(gpu0 < gpu1);
  CHECK(Location::cuda(5).name() == "cuda:5");
}

TEST_CASE("lifetime slots are reused; a stale id stays released and cannot release the new lifetime") {
  State state;
  REQUIRE_FALSE(state.adopt(0, spec(MiB), pinned).failed());
  const ValueId one[] = {0};
  LifetimeId first = 0, second = 0;
  REQUIRE_FALSE(state.protect(LifetimeKind::Hold, one, pinned, &first).failed());
  state.release(first);
  REQUIRE_FALSE(state.protect(LifetimeKind::Hold, one, pinned, &second).failed());
  CHECK(static_cast<std::uint32_t>(first) == static_cast<std::uint32_t>(second)); // same slot
  CHECK(first != second);
  const std::uint64_t version = state.version();
  state.release(first); // stale: a no-op
  CHECK(state.version() == version);
  CHECK(state.is_protected(0, pinned));
  CHECK(state.lifetime_state(second) == LifetimeState::Active);
  CHECK(state.live_lifetimes() == std::vector<LifetimeId>{second});
  state.release(second);
  CHECK(state.live_lifetimes().empty());
}

TEST_CASE("a pending CUDA lease protects until its events complete") {
  State state;
  const Location gpu = Location::cuda(0);
  REQUIRE_FALSE(state.adopt(0, spec(MiB), gpu).failed());
  const ValueId one[] = {0};
  LifetimeId lease = 0;
  REQUIRE_FALSE(state.protect(LifetimeKind::Lease, one, gpu, &lease).failed());
  const std::uint64_t version = state.version();
  state.release(lease, /*events_pending=*/true);
  CHECK(state.version() == version + 1);
  CHECK(state.lifetime_state(lease) == LifetimeState::Pending);
  CHECK(state.is_protected(0, gpu));
  CHECK(state.value(0).protections.front().pending_count == 1);
  state.release(lease); // already released by its owner: nothing
  CHECK(state.version() == version + 1);
  state.complete_pending(lease);
  CHECK(state.version() == version + 2);
  CHECK_FALSE(state.is_protected(0, gpu));
  CHECK(state.lifetime_state(lease) == LifetimeState::Released);
}
