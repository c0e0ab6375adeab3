// Times each stage of `fhr-plan explain` on one file, on one thread:
// read, parse, sema, the explain pass over every plan, and the program runs;
// reports the peak resident memory after each stage.
//
// usage: explain_bench FILE [REPEATS=3]   (prints the best of REPEATS runs)
#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/sema.hpp"
#include "fhr/dsl/parser.hpp"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
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
} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: explain_bench FILE [REPEATS]\n");
    return 2;
  }
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  double best_parse = 1e9, best_sema = 1e9, best_plans = 1e9, best_programs = 1e9;
  std::size_t actions = 0, plans = 0, steps = 0, program_rows = 0;
  double rss_parse = 0, rss_sema = 0, rss_all = 0;
  for (int run = 0; run < repeats; ++run) {
    auto buffer = llvm::MemoryBuffer::getFile(argv[1], false, false);
    if (!buffer) {
      std::fprintf(stderr, "cannot read %s\n", argv[1]);
      return 2;
    }
    fhr::SourceFile source(std::move(*buffer));
    auto start = Clock::now();
    fhr::ast::File syntax = fhr::parse(source);
    best_parse = std::min(best_parse, seconds_since(start));
    rss_parse = std::max(rss_parse, peak_rss_mib());
    start = Clock::now();
    fhr::ir::Module module = fhr::analyze(syntax, source);
    best_sema = std::min(best_sema, seconds_since(start));
    rss_sema = std::max(rss_sema, peak_rss_mib());
    if (source.has_errors()) {
      source.print(llvm::errs(), false);
      return 2;
    }
    start = Clock::now();
    fhr::State state = fhr::initial_state(module, {});
    if (fhr::run_setup(module, state).failed_step) {
      std::fprintf(stderr, "setup failed\n");
      return 2;
    }
    fhr::Simulator simulator(state);
    steps = 0;
    for (const fhr::ir::Plan &plan : module.plans)
      steps += simulator.explain(plan.view()).steps.size();
    best_plans = std::min(best_plans, seconds_since(start));
    start = Clock::now();
    program_rows = 0;
    for (const fhr::ir::Program &program : module.programs) {
      fhr::State copy = state;
      program_rows += fhr::run_program(module, program, copy).rows.size();
    }
    best_programs = std::min(best_programs, seconds_since(start));
    rss_all = std::max(rss_all, peak_rss_mib());
    actions = 0;
    for (const fhr::ir::Plan &plan : module.plans)
      actions += plan.reclaim.size() + plan.enter.size() + plan.exit.size();
    plans = module.plans.size();
  }
  std::printf("file: %s\n", argv[1]);
  std::printf("plans: %zu, actions in plans: %zu, simulated plan steps: %zu, program rows: %zu\n", plans,
              actions, steps, program_rows);
  std::printf("parse:               %8.3f s   (peak RSS %7.1f MiB)\n", best_parse, rss_parse);
  std::printf("sema:                %8.3f s   (peak RSS %7.1f MiB)\n", best_sema, rss_sema);
  std::printf("setup + explain:     %8.3f s   = %.3f us per action\n", best_plans,
              1e6 * best_plans / double(actions));
  std::printf("parse+sema+explain:  %8.3f s\n", best_parse + best_sema + best_plans);
  std::printf("program run:         %8.3f s   (%zu steps: preflight + execution of every plan)\n",
              best_programs, program_rows);
  std::printf("peak RSS overall:    %8.1f MiB\n", rss_all);
  return 0;
}
