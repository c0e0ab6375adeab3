// Programs: scopes with preflight, bodies, exits without preflight, lifetimes
// released at the end of a body, and the classes a caller would see.
#include "fhr/executor/interpreter.hpp"
#include "fhr/executor/model_target.hpp"
#include "test_support.hpp"

using namespace fhr;
using namespace fhr::test;

TEST_CASE("a pipeline is feasible only thanks to reclaim between stages") {
  const char *text = R"(
    budget cuda:0 100 MiB
    value k[4] 40 MiB replicable source pageable
    plan "s0" { enter { ensure k[0..2] at cuda:0 } }
    plan "s1" { reclaim { drop k[0..2] at cuda:0 } enter { ensure k[2..4] at cuda:0 } }
    plan "s1-greedy" { enter { ensure k[2..4] at cuda:0 } }
    program "good" { run "s0" run "s1" }
    program "bad" { run "s0" run "s1-greedy" })";
  Explained e = explain(text);
  REQUIRE(e.analysis.programs.size() == 2);
  const ProgramReport &good = e.analysis.programs[0];
  CHECK(good.feasible);
  CHECK(good.run.steps.size() == 6);
  const ProgramReport &bad = e.analysis.programs[1];
  CHECK_FALSE(bad.feasible);
  CHECK(bad.run.steps.back().kind == StepKind::Preflight);
  CHECK(bad.run.steps.back().raised == ErrorClass::Plan);
  CHECK(bad.run.steps.back().outcome.error == ErrorClass::Budget);
  // Each plan alone is feasible from the setup state.
  for (const PlanExplanation &plan : e.analysis.plans)
    CHECK(plan.explanation.feasible);
  const LocationPrediction &gpu = good.locations.front();
  CHECK(gpu.peak_used == 80 * MiB);
  CHECK(gpu.peak_charged == 80 * MiB);
}

TEST_CASE("a scope body's acquire protects until the body ends, then exit may evict") {
  Explained e = explain(R"(
    value ct 30 MiB exclusive at pinned
    plan "stage" { enter { move ct to cuda:0 } exit { move ct to pinned } }
    program {
      scope "stage" {
        acquire ct at cuda:0
        reserve cuda:0 64 MiB "tmp"
      }
    })");
  const ProgramReport &p = e.analysis.programs[0];
  CHECK(p.feasible);
  REQUIRE(p.run.steps.size() == 4);
  CHECK(p.run.steps[1].kind == StepKind::Acquire);
  CHECK(p.run.steps[2].kind == StepKind::BodyReserve);
  CHECK(p.run.steps[3].kind == StepKind::Exit);
  CHECK(p.locations.back().location == Location::cuda(0));
  CHECK(p.locations.back().peak_charged == 94 * MiB);
  CHECK(e.analysis.programs[0].name == "program-1");
}

TEST_CASE("an exit that the body made impossible fails as plan-execution") {
  Explained e = explain(R"(
    value a 1 MiB replicable at pinned
    plan "stage" { enter { ensure a at cuda:0 } exit { drop a at cuda:0 } }
    program "p" {
      scope "stage" {
        hold a at cuda:0
      }
    })");
  // The hold is released at the body's end, before exit: feasible.
  CHECK(e.analysis.programs[0].feasible);
  // The entry preflight sees a drop of an absent replica (a no-op); the body
  // then moves the only copy there, so the exit's drop meets the final-copy rule.
  Explained stuck = explain(R"(
    value a 1 MiB exclusive at pinned
    plan "outer" { exit { drop a at cuda:0 } }
    program "p" {
      scope "outer" {
        move a to cuda:0
      }
    })");
  const ProgramReport &p = stuck.analysis.programs[0];
  CHECK_FALSE(p.feasible);
  CHECK(p.run.steps.back().kind == StepKind::Exit);
  CHECK(p.run.steps.back().raised == ErrorClass::PlanExecution);
  CHECK(p.run.steps.back().outcome.error == ErrorClass::Ownership);
}

TEST_CASE("direct primitives in a program fail with their own class; actions lists with plan") {
  Explained e = explain(R"(
    value a 1 MiB at pinned
    program "direct" { drop a at pinned }
    program "list" { actions "evict" { drop a at pinned } })");
  CHECK(e.analysis.programs[0].run.steps.back().raised == ErrorClass::Ownership);
  CHECK(e.analysis.programs[1].run.steps.back().raised == ErrorClass::Plan);
  CHECK(e.analysis.programs[1].run.steps.back().kind == StepKind::Preflight);
}

TEST_CASE("acquire of a value that is not resident names it") {
  Explained e = explain(R"(
    value a 1 MiB at pinned
    value b 1 MiB at pageable
    program { acquire a, b at pinned })");
  const ProgramReport &p = e.analysis.programs[0];
  CHECK_FALSE(p.feasible);
  CHECK(p.run.steps[0].outcome.error == ErrorClass::Unavailable);
  CHECK(e.report.units[0].steps[0].reason == "value 'b' is not resident at pinned");
  CHECK(e.report.units[0].steps[0].text == "acquire a, b at pinned");
}

namespace {

/// `released_before_row` of every row, none where it is not a released reservation.
std::vector<std::optional<std::size_t>> releases(const RunResult &run) {
  std::vector<std::optional<std::size_t>> out;
  for (const StepRecord &row : run.steps)
    out.push_back(row.released_before_row == 0 ? std::nullopt
                                               : std::optional<std::size_t>(row.released_before_row));
  return out;
}

constexpr const char *kNestedReservations = R"(
    value a 1 MiB replicable at pinned
    value b 1 MiB replicable at pageable
    plan "outer" in program {
      reserve cuda:0 8 MiB "outer"
      enter { ensure a at cuda:0 }
      exit { drop a at cuda:0 }
    }
    plan "inner" in program { reserve cuda:0 2 MiB "inner" }
    program "p" {
      scope "outer" {
        reserve cuda:0 4 MiB "body"
        run "inner"
        ensure b at pinned
      }
      reserve cuda:0 1 MiB "program"
      run "inner"
    })";

} // namespace

TEST_CASE("the record says when each reservation of a program was released") {
  Explained e = explain(kNestedReservations);
  const ProgramReport &p = e.analysis.programs[0];
  REQUIRE(p.feasible);
  // 0 outer/reserve, 1 outer/enter, 2 body reserve, 3 inner/reserve,
  // 4 direct ensure, 5 outer/exit, 6 program reserve, 7 inner/reserve.
  REQUIRE(p.run.steps.size() == 8);
  CHECK(p.run.steps[2].kind == StepKind::BodyReserve);
  CHECK(p.run.steps[3].kind == StepKind::Reserve);
  const std::vector<std::optional<std::size_t>> expected{
      6,            // the outer scope's: after its exit
      std::nullopt, //
      5,            // the body's: when the body ends, before the exit
      4,            // the inner scope's: when `run` leaves it
      std::nullopt,
      std::nullopt,
      8, // the program body's: when the program ends, after its last row
      8, // the second inner scope's: after its (empty) exit, the last row
  };
  CHECK(releases(p.run) == expected);

  // The statement-at-a-time walk (the Python package's ProgramSteps)
  // records the same.
  const bytecode::Module &module = *e.compiled.lowered->module;
  PlanTable plans(module);
  State state = initial_state(module);
  ModelTarget target(state);
  Interpreter interpreter(plans, target);
  REQUIRE(interpreter.run_setup().completed);
  interpreter.begin_program(0);
  while (interpreter.enter_next_statement())
    CHECK(interpreter.run_current_body());
  const RunResult walked = interpreter.finish_program();
  CHECK(walked.completed);
  CHECK(releases(walked) == expected);
}

TEST_CASE("a failing body releases its scope's reservations where the record ends") {
  Explained e = explain(R"(
    value a 1 MiB exclusive at pinned
    plan "stage" in program { reserve cuda:0 8 MiB "stage" }
    program "p" {
      scope "stage" {
        reserve cuda:0 4 MiB "body"
        drop a at pinned
      }
    })");
  const ProgramReport &p = e.analysis.programs[0];
  REQUIRE_FALSE(p.feasible);
  REQUIRE(p.run.steps.size() == 3);
  CHECK(p.run.steps[2].failed());
  CHECK(p.run.steps[0].released_before_row == 3);
  CHECK(p.run.steps[1].released_before_row == 3);
  CHECK(p.run.steps[2].released_before_row == 0);
}
