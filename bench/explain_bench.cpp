// Times each stage of `fhr-plan explain` on one file, on one thread: read,
// parse, sema, lowering (IR to a module and its span table, encoded by the
// bytecode writer), load + verify, the explain pass over every plan (setup
// and the plans on the interpreter's model target), and the program runs;
// reports the peak resident memory after each stage (the largest over the
// runs, each run's peak counted from its start). The syntax tree is freed
// after sema: nothing after it reads the tree.
//
// usage: explain_bench FILE [REPEATS=3]   (prints the best of REPEATS runs)
#include "fhr/bytecode/writer.hpp"
#include "fhr/compiler/lower.hpp"
#include "fhr/compiler/sema.hpp"
#include "fhr/dsl/parser.hpp"
#include "fhr/executor/interpreter.hpp"
#include "fhr/executor/model_target.hpp"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Peak resident set size so far, in MiB (VmHWM).
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      double kib = 0;
      status >> kib;
      return kib / 1024;
    }
    status.ignore(1 << 10, '\n');
  }
  return 0;
}

/// Starts peak_rss_mib() over from the current resident size, so that a
/// run's peaks are its own and not the previous run's (Linux: "5" to
/// clear_refs resets VmHWM).
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }
} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: explain_bench FILE [REPEATS]\n");
    return 2;
  }
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  double best_parse = 1e9, best_sema = 1e9, best_lower = 1e9, best_load = 1e9, best_plans = 1e9,
         best_programs = 1e9;
  std::size_t actions = 0, plans = 0, steps = 0, program_steps = 0;
  double rss_parse = 0, rss_sema = 0, rss_all = 0;
  for (int run = 0; run < repeats; ++run) {
    auto buffer = llvm::MemoryBuffer::getFile(argv[1], false, false);
    if (!buffer) {
      std::fprintf(stderr, "cannot read %s\n", argv[1]);
      return 2;
    }
    fhr::SourceFile source(std::move(*buffer));
    reset_peak_rss();
    auto start = Clock::now();
    auto syntax = std::make_unique<fhr::ast::File>(fhr::parse(source));
    best_parse = std::min(best_parse, seconds_since(start));
    rss_parse = std::max(rss_parse, peak_rss_mib());
    start = Clock::now();
    fhr::ir::Module ir = fhr::analyze(*syntax, source);
    best_sema = std::min(best_sema, seconds_since(start));
    rss_sema = std::max(rss_sema, peak_rss_mib());
    syntax.reset();
    if (source.has_errors()) {
      source.print(llvm::errs(), false);
      return 2;
    }
    start = Clock::now();
    fhr::Lowered lowered = fhr::lower(ir, source);
    const std::vector<char> bytes = fhr::bytecode::write_module(lowered.module);
    best_lower = std::min(best_lower, seconds_since(start));
    start = Clock::now();
    const fhr::bytecode::Module module =
        fhr::bytecode::load_module(std::as_bytes(std::span(bytes.data(), bytes.size())));
    best_load = std::min(best_load, seconds_since(start));

    start = Clock::now();
    fhr::PlanTable table(module);
    fhr::State state = fhr::initial_state(module);
    fhr::ModelTarget model(state);
    if (!fhr::Interpreter(table, model).run_setup().completed) {
      std::fprintf(stderr, "setup failed\n");
      return 2;
    }
    // As explain does: every plan through one buffer.
    steps = 0;
    fhr::PlanSteps plan;
    for (std::uint32_t p = 0; p < module.plans.size(); ++p) {
      fhr::expand_plan(module, p, plan);
      steps += model.explain(plan).steps.size();
    }
    best_plans = std::min(best_plans, seconds_since(start));
    start = Clock::now();
    program_steps = 0;
    for (std::uint32_t p = 0; p < module.programs.size(); ++p) {
      fhr::State copy = state;
      fhr::ModelTarget target(copy);
      program_steps += fhr::Interpreter(table, target).run_program(p).steps.size();
    }
    best_programs = std::min(best_programs, seconds_since(start));
    rss_all = std::max(rss_all, peak_rss_mib());
    actions = 0;
    for (const fhr::ir::Plan &plan : ir.plans)
      for (const fhr::ir::ActionList *list : {&plan.reclaim, &plan.enter, &plan.exit})
        for (const fhr::ir::ActionRange &action : list->actions)
          actions += action.count;
    plans = module.plans.size();
  }
  const double front = best_parse + best_sema + best_lower + best_load;
  std::printf("file: %s\n", argv[1]);
  std::printf("plans: %zu, actions in plans: %zu, simulated plan steps: %zu, program steps: %zu\n", plans,
              actions, steps, program_steps);
  std::printf("parse:                      %8.3f s   (peak RSS %7.1f MiB)\n", best_parse, rss_parse);
  std::printf("sema:                       %8.3f s   (peak RSS %7.1f MiB)\n", best_sema, rss_sema);
  std::printf("lower (+ span table, write): %7.3f s\n", best_lower);
  std::printf("load + verify:              %8.3f s\n", best_load);
  std::printf("setup + explain:            %8.3f s   = %.3f us per action\n", best_plans,
              1e6 * best_plans / double(actions));
  std::printf("parse+sema+explain:         %8.3f s   (lowering and loading included)\n", front + best_plans);
  std::printf("program run:                %8.3f s   (%zu steps: preflight + execution of every plan)\n",
              best_programs, program_steps);
  std::printf("peak RSS overall:           %8.1f MiB\n", rss_all);
  return 0;
}
