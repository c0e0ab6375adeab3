// Runtime against simulator: programs executed for real by the module
// runner on a fresh manager (simulated devices, synthetic payloads whose
// content is checked after every transition) must agree with the compiler's
// prediction on every step's verdict and error class and on the peak charge
// of every location. 10,000 seeded random programs, then every example.
// A disagreement prints the program as .fhr text: the reproducer.
#include "random_program.hpp"
#include "test_support.hpp"

#include "fhr/compiler/execution_check.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/lower.hpp"

#include <doctest/doctest.h>

using namespace fhr;
using namespace fhr::test;

namespace {

struct Tally {
  std::size_t programs = 0, plans = 0, steps = 0, failures_predicted = 0, content_checks = 0;
  /// Runs in which copies of several actions were in flight at once.
  std::size_t overlapped = 0;
  /// Modules that budget a location their `devices` do not provide: the
  /// manager refuses such budgets at construction (§1.2), so nothing runs.
  std::size_t unconstructible = 0;
};

/// Runs every program of `text` (every plan when it has none) and checks
/// that execution agrees with the prediction.
void check_agreement(const std::string &text, Tally &tally, bool overlap = false) {
  CompiledFile compiled = compile_text(text, "random.fhr");
  REQUIRE_MESSAGE(compiled.ok(), text);
  const std::vector<char> bytes = lower_module(compiled.module, *compiled.source);
  const bytecode::Module module = bytecode::load_module(std::as_bytes(std::span(bytes.data(), bytes.size())));
  ExecutionOptions options;
  options.backend = BackendKind::Simulated;
  options.simulated_overlap = overlap;
  auto account = [&](const ExecutionCheck &check) {
    for (const std::string &difference : check.differences)
      FAIL_CHECK(check.kind << " '" << check.name << "': " << difference << "\nreproducer:\n" << text);
    tally.steps += check.setup.steps.size() + check.run.steps.size();
    tally.failures_predicted += !check.run.completed || !check.setup.completed;
    tally.content_checks += check.content_checks;
    tally.overlapped += check.max_copies_in_flight > 1;
  };
  try {
    for (std::uint32_t p = 0; p < compiled.module.programs.size(); ++p, ++tally.programs)
      account(check_program(compiled.module, module, p, options));
    if (compiled.module.programs.empty())
      for (std::uint32_t p = 0; p < compiled.module.plans.size(); ++p, ++tally.plans)
        account(check_plan(compiled.module, module, p, options));
  } catch (const std::invalid_argument &error) {
    const bool unavailable_budget = std::string(error.what()).find("is not available") != std::string::npos;
    CHECK_MESSAGE(unavailable_budget, error.what() << "\nreproducer:\n" << text);
    ++tally.unconstructible;
  }
}

} // namespace

TEST_CASE("differential: 10,000 random programs run as the simulator predicts, half with overlap windows") {
  Tally tally;
  for (unsigned seed = 1; seed <= 10000; ++seed) {
    CAPTURE(seed);
    // Odd seeds run with overlap windows (copies started ahead, applied in
    // plan order): the prediction must hold either way.
    check_agreement(RandomProgram(seed, /*small=*/true).generate(), tally, seed % 2 == 1);
  }
  MESSAGE(tally.programs << " programs and " << tally.plans << " plans, " << tally.steps << " steps, "
                         << tally.failures_predicted << " stopped at a predicted failure, "
                         << tally.content_checks << " content checks; " << tally.overlapped
                         << " runs overlapped copies; " << tally.unconstructible
                         << " modules budget a missing device");
  CHECK(tally.programs + tally.plans > 9000);
  CHECK(tally.unconstructible < 1000);
  CHECK(tally.failures_predicted > 100); // failures were exercised, not only successes
  CHECK(tally.content_checks > 10000);
  CHECK(tally.overlapped > 10); // windows really started copies together (the unit tests aim at them)
}
