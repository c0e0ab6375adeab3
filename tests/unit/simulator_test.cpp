// The explain simulator (docs/semantics.md §10.2) through small plans: verdicts,
// reasons, error classes, resolved sources and exact peaks.
#include "test_support.hpp"

using namespace fhr;
using namespace fhr::test;

namespace {
const Location pageable = Location::pageable();
const Location pinned = Location::pinned();
const Location gpu0 = Location::cuda(0);
} // namespace

TEST_CASE("peaks start from the current charge; reservations come after reclaim") {
  Explained e = explain(R"(
    budget cuda:0 100 MiB
    value a 10 MiB replicable at pinned
    value b 16 MiB storage 20 MiB exclusive at cuda:0
    reserve cuda:0 5 MiB "resident workspace"
    plan "p" {
      reclaim { drop a at cuda:0 }
      reserve cuda:0 30 MiB "tmp"
      enter { ensure a at cuda:0 }
      exit { drop a at cuda:0 }
    })");
  const Explanation &x = e.plan();
  CHECK(x.feasible);
  REQUIRE(x.steps.size() == 4);
  CHECK(x.steps[0].phase == Phase::Reclaim);
  CHECK(x.steps[0].outcome.verdict == Verdict::NoOp);
  CHECK(x.steps[1].phase == Phase::Reserve);
  CHECK(x.steps[2].phase == Phase::Enter);
  CHECK(x.steps[2].outcome.source == pinned);
  const LocationPrediction &gpu = e.location(x, gpu0);
  CHECK(gpu.used_before == 20 * MiB);
  CHECK(gpu.resident_logical_before == 16 * MiB); // what the backend holds: b's logical bytes
  CHECK(gpu.reserved_before == 5 * MiB);
  CHECK(gpu.peak_charged == 65 * MiB); // 20 used + 5 + 30 reserved + 10 incoming
  CHECK(gpu.peak_used == 30 * MiB);
}

TEST_CASE("budget failure: peak includes the failing request, later steps are not listed") {
  Explained e = explain(R"(
    budget cuda:0 100 MiB
    value a 60 MiB replicable at pinned
    value b 50 MiB replicable at pinned
    plan "p" { enter { ensure a at cuda:0  ensure b at cuda:0  drop a at cuda:0 } })");
  const Explanation &x = e.plan();
  CHECK_FALSE(x.feasible);
  REQUIRE(x.steps.size() == 2);
  CHECK(x.steps[1].outcome.error == ErrorClass::Budget);
  CHECK(x.steps[1].outcome.reason == Reason::TransitionExceedsBudget);
  CHECK(x.failure_detail.used_bytes == 60 * MiB);
  CHECK(x.failure_detail.requested_bytes == 50 * MiB);
  CHECK(e.location(x, gpu0).peak_charged == 110 * MiB);
  CHECK(e.location(x, gpu0).peak_used == 60 * MiB);
  CHECK(describe(x.steps[1].outcome, {}, &x.failure_detail) ==
        "Transition exceeds budget at cuda:0 (budget 104857600 B, used 62914560 B, reserved 0 B, "
        "requested 52428800 B)");
}

TEST_CASE("move charges the destination before the source is freed") {
  Explained e = explain(R"(
    budget cuda:0 64 MiB
    value a 40 MiB exclusive at cuda:0
    plan "p" { enter { move a to pinned  move a to cuda:0 } })");
  const Explanation &x = e.plan();
  CHECK(x.feasible);
  CHECK(e.location(x, pinned).peak_used == 40 * MiB);
  CHECK(e.location(x, gpu0).peak_charged == 40 * MiB);
  SUBCASE("a same-device round trip that needs both copies at once does not fit") {
    Explained tight = explain(R"(
      budget cuda:0 64 MiB
      value a 40 MiB replicable at cuda:0
      value b 40 MiB exclusive at pinned
      plan "p" { enter { move a to pinned  move b to cuda:0  move a to cuda:0 } })");
    CHECK_FALSE(tight.plan().feasible);
    CHECK(tight.plan().steps.back().outcome.error == ErrorClass::Budget);
  }
}

TEST_CASE("reconstruction: temporary charge at the source location, charged once when equal") {
  Explained e = explain(R"(
    budget pageable 16 MiB
    value k 10 MiB replicable source pageable
    plan "to-gpu" { enter { ensure k at cuda:0 } }
    plan "to-source" { enter { ensure k at pageable } }
    plan "too-big" { reserve pageable 8 MiB "scratch" enter { ensure k at cuda:0 } })");
  const Explanation &to_gpu = e.plan(0);
  CHECK(to_gpu.feasible);
  CHECK(to_gpu.steps[0].outcome.source == pageable);
  CHECK(e.location(to_gpu, pageable).peak_charged == 10 * MiB);
  CHECK(e.location(to_gpu, pageable).peak_used == 0);
  const Explanation &to_source = e.plan(1);
  CHECK(e.location(to_source, pageable).peak_charged == 10 * MiB);
  CHECK(e.location(to_source, pageable).peak_used == 10 * MiB);
  const Explanation &too_big = e.plan(2);
  CHECK_FALSE(too_big.feasible);
  CHECK(too_big.steps[1].outcome.where == pageable);
  CHECK(e.location(too_big, pageable).peak_charged == 18 * MiB);
}

TEST_CASE("every failure reason and its error class") {
  Explained e = explain(R"(
    devices 1
    value ex 1 MiB exclusive at pinned
    value only 1 MiB at pinned
    value held 1 MiB replicable at pinned
    value gone 1 MiB at pinned
    discard gone
    hold held at pinned
    lease ex at pinned
    plan "replicate-exclusive" { enter { ensure ex at cuda:0 } }
    plan "explicit-source" { enter { move only to cuda:0 from pageable } }
    plan "final-copy" { enter { drop only at pinned } }
    plan "protected-drop" { enter { drop held at pinned } }
    plan "protected-move" { enter { move held to cuda:0 } }
    plan "protected-discard" { enter { discard held } }
    plan "discarded-before" { enter { ensure gone at cuda:0 } }
    plan "discarded-in-plan" { enter { discard only  ensure only at pinned } }
    plan "unavailable-device" { enter { ensure held at cuda:1 } }
    plan "ok-copy" { enter { copy held to cuda:0 } })");
  struct Expect {
    Reason reason;
    ErrorClass error;
  };
  const Expect expected[] = {
      {Reason::WouldReplicateExclusive, ErrorClass::Ownership},
      {Reason::ExplicitSourceNotResident, ErrorClass::Unavailable},
      {Reason::FinalMustPreserve, ErrorClass::Ownership},
      {Reason::MaterializationProtected, ErrorClass::InUse},
      {Reason::SourceProtected, ErrorClass::InUse},
      {Reason::DiscardedValueProtected, ErrorClass::InUse},
      {Reason::HandleDiscarded, ErrorClass::Handle},
      {Reason::ValueDiscardedInPlan, ErrorClass::Handle},
      {Reason::LocationUnavailable, ErrorClass::InvalidArgument},
  };
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    CAPTURE(e.analysis.plans[i].name);
    const Explanation &x = e.plan(i);
    CHECK_FALSE(x.feasible);
    CHECK(x.steps.back().outcome.reason == expected[i].reason);
    CHECK(x.steps.back().outcome.error == expected[i].error);
  }
  CHECK(e.plan(std::size(expected)).feasible);
  const auto &discarded = e.report.units[6];
  CHECK(discarded.steps[0].storage_bytes == 0); // handle failures carry no figures
  CHECK(discarded.steps[0].reason == "value 'gone' has been discarded");
}

TEST_CASE("a pending CUDA lease protects; a completed one would not") {
  Explained e = explain(R"(
    value ct 30 MiB exclusive at cuda:0
    lease ct at cuda:0 pending
    plan "evict" { enter { move ct to pinned } })");
  CHECK(e.plan().steps[0].outcome.reason == Reason::SourceProtected);
  CHECK(e.analysis.setup.steps == 2);
}

TEST_CASE("explain leaves the setup state alone: every plan starts from the same state") {
  Explained e = explain(R"(
    budget cuda:0 10 MiB
    value a 8 MiB replicable at pinned
    plan "one" { enter { ensure a at cuda:0 } }
    plan "two" { enter { ensure a at cuda:0 } })");
  CHECK(e.plan(0).steps[0].outcome.verdict == Verdict::Ok);
  CHECK(e.plan(1).steps[0].outcome.verdict == Verdict::Ok);
}

TEST_CASE("locations first referenced by a plan come after the registry, in simulation order") {
  Explained e = explain(R"(
    budget pinned 1 GiB
    value a 1 MiB replicable at pinned
    plan "p" { reserve cuda:3 1 MiB "w" enter { ensure a at cuda:1 } })");
  const Explanation &x = e.plan();
  REQUIRE(x.locations.size() == 3);
  CHECK(x.locations[0].location == pinned);
  CHECK(x.locations[1].location == Location::cuda(3));
  CHECK(x.locations[2].location == Location::cuda(1));
  CHECK_FALSE(x.locations[1].budget_bytes.has_value());
}

TEST_CASE("a reservation over budget stops the plan before enter") {
  Explained e = explain(R"(
    budget cuda:0 10 MiB
    value a 1 MiB replicable at pinned
    plan "p" { reserve cuda:0 11 MiB "big" enter { ensure a at cuda:0 } })");
  const Explanation &x = e.plan();
  CHECK_FALSE(x.feasible);
  REQUIRE(x.steps.size() == 1);
  CHECK(x.steps[0].outcome.reason == Reason::ReservationExceedsBudget);
  CHECK(e.location(x, gpu0).peak_charged == 11 * MiB);
  CHECK(e.report.units[0].steps[0].reason.starts_with("Reservation 'big' exceeds budget at cuda:0"));
}

TEST_CASE("--budget overrides replace or add constructor budgets") {
  const char *text = R"(
    budget cuda:0 1 GiB
    value a 600 MiB replicable at pinned
    plan "p" { enter { ensure a at cuda:0 } })";
  CHECK(explain(text).plan().feasible);
  Explained small = explain(text, {BudgetOverride{gpu0, 512 * MiB}});
  CHECK_FALSE(small.plan().feasible);
  Explained pinned_budget = explain(text, {BudgetOverride{pinned, 100 * MiB}});
  CHECK_FALSE(pinned_budget.analysis.setup.failed_step.has_value() == false);
  CHECK(pinned_budget.analysis.setup.failure.error == ErrorClass::Budget);
}

TEST_CASE("setup failures stop setup and are reported with their class") {
  Explained e = explain(R"(
    value a 1 MiB at pinned
    hold a at pinned as h
    drop a at pinned
    release h)");
  REQUIRE(e.analysis.setup.failed_step.has_value());
  CHECK(*e.analysis.setup.failed_step == 2);
  CHECK(e.analysis.setup.failure.error == ErrorClass::InUse);
  CHECK_FALSE(e.analysis.feasible());
  REQUIRE(e.report.units.size() == 1);
  CHECK(e.report.units[0].kind == ReportUnit::Kind::Setup);
  CHECK(failure_summary(e.report.units[0]) ==
        "setup step 'drop a at pinned' failed: materialization at pinned is protected [in-use]");
}

TEST_CASE("release ends a named hold so a later drop succeeds") {
  Explained e = explain(R"(
    value a 1 MiB replicable at pinned
    ensure a at cuda:0
    hold a at cuda:0 as h
    release h
    drop a at cuda:0)");
  CHECK_FALSE(e.analysis.setup.failed_step.has_value());
  CHECK(e.analysis.setup.steps == 5);
}

TEST_CASE("the simulator and the model target record what moved each step's bytes") {
  Explained e = explain(R"(
    value a 10 MiB replicable at pinned
    value k 10 MiB replicable source pageable
    plan "p" {
      enter { ensure a at cuda:0  ensure k at cuda:0  ensure a at cuda:0  move a to pageable from cuda:0 }
      exit { drop a at pageable  discard k }
    }
    program "q" {
      ensure k at pageable
      actions "in" { ensure a at cuda:0  move k to cuda:0 }
      hold a at cuda:0
    })");
  const Explanation &plan = e.plan();
  REQUIRE(plan.steps.size() == 6);
  CHECK(plan.steps[0].transfer == StepTransfer::Copy); // pinned -> cuda:0
  CHECK(plan.steps[1].transfer == StepTransfer::Load); // from its source at pageable
  CHECK(plan.steps[2].transfer == StepTransfer::None); // a no-op
  CHECK(plan.steps[3].transfer == StepTransfer::Copy);
  CHECK(plan.steps[4].transfer == StepTransfer::None); // drops and discards free, they do not move
  CHECK(plan.steps[5].transfer == StepTransfer::None);
  const std::vector<StepRecord> &program = e.analysis.programs.at(0).run.steps;
  REQUIRE(program.size() == 4);
  CHECK(program[0].transfer == StepTransfer::Load); // a load into its own source location
  CHECK(program[1].transfer == StepTransfer::Copy);
  CHECK(program[2].transfer == StepTransfer::Copy); // k's pageable replica moves
  CHECK(program[3].transfer == StepTransfer::None);
  // The report and explain's JSON carry them, with the link they take.
  const ReportUnit &unit = e.report.units.at(0);
  CHECK(unit.steps[1].value == "k");
  CHECK(unit.steps[1].transfer == StepTransfer::Load);
  CHECK(transfer_link_name(unit.steps[1].transfer, *unit.steps[1].source, *unit.steps[1].destination) ==
        "load pageable-device");
  CHECK(transfer_link_name(StepTransfer::Load, pageable, pageable) == "load");
  CHECK(transfer_link_name(StepTransfer::Copy, pinned, gpu0) == "pinned-device");
  CHECK(transfer_link_name(StepTransfer::None, pinned, gpu0).empty());
}
