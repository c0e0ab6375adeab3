// Compiles one .fhr file to bytecode and measures, on one thread: compile
// time (parse + sema, lowering through the bytecode writer), module size per
// action, and load + verify throughput of the module (best of REPEATS).
//
// usage: bytecode_bench FILE [REPEATS=5]
#include "fhr/bytecode/module.hpp"
#include "fhr/compiler/lower.hpp"
#include "fhr/compiler/sema.hpp"
#include "fhr/dsl/parser.hpp"

#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bytecode_bench FILE [REPEATS]\n");
    return 2;
  }
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  auto buffer = llvm::MemoryBuffer::getFile(argv[1], false, false);
  if (!buffer) {
    std::fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  auto start = Clock::now();
  fhr::SourceFile source(std::move(*buffer));
  const fhr::ast::File syntax = fhr::parse(source);
  const fhr::ir::Module ir = fhr::analyze(syntax, source);
  if (source.has_errors()) {
    std::fprintf(stderr, "cannot compile %s\n", argv[1]);
    return 2;
  }
  const double front_end = seconds_since(start);
  start = Clock::now();
  const std::vector<char> bytes = fhr::lower_module(ir, source);
  const double lowering = seconds_since(start);

  std::size_t actions = 0;
  for (const fhr::ir::Plan &plan : ir.plans)
    for (const fhr::ir::ActionList *list : {&plan.reclaim, &plan.enter, &plan.exit})
      for (const fhr::ir::ActionRange &action : list->actions)
        actions += action.count;
  for (const fhr::ir::SetupStep &step : ir.setup)
    if (step.kind == fhr::ir::SetupKind::Action) actions += step.action.count;

  double best_load = 1e9;
  std::size_t instructions = 0;
  for (int i = 0; i < repeats; ++i) {
    start = Clock::now();
    fhr::bytecode::Module module =
        fhr::bytecode::load_module(std::as_bytes(std::span(bytes.data(), bytes.size())));
    best_load = std::min(best_load, seconds_since(start));
    instructions = module.code.size();
  }
  std::printf("file: %s\n", argv[1]);
  std::printf("actions: %zu, instructions: %zu\n", actions, instructions);
  std::printf("compile:        %.3f s (parse + sema %.3f s, lowering %.3f s)\n", front_end + lowering,
              front_end, lowering);
  std::printf("module size:    %zu bytes = %.2f bytes per action\n", bytes.size(),
              double(bytes.size()) / double(actions));
  std::printf("load + verify:  %.4f s = %.1f million actions per second\n", best_load,
              double(actions) / best_load / 1e6);
  return 0;
}
