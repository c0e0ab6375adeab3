// A consumer of the installed package's compiler component: compiles .fhr
// text in-process, lowers it to bytecode and runs its plan on a manager,
// binding each declared value to a zeroed buffer of its declared size.
#include "fhr/bytecode/module.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/lower.hpp"
#include "fhr/executor/module_runner.hpp"

#include <cstdio>
#include <cstring>

namespace {

/// Adopts a zeroed block of the declared size from the manager's own
/// memory resource, so that its memory is of the declared location's kind.
class ZeroBinder final : public fhr::ValueBinder {
public:
  fhr::Handle bind(fhr::Manager &manager, const fhr::DeclaredValue &value) override {
    fhr::Storage storage = manager.backend().memory->allocate(value.location, value.spec.storage_nbytes);
    std::memset(storage.bytes().data(), 0, storage.size());
    auto [data, release] = storage.detach();
    return manager.adopt(data, value.spec.logical_nbytes, value.spec.storage_nbytes, value.location, release,
                         value.spec.replica_mode);
  }
};

} // namespace

int main() {
  using namespace fhr;
  const char *text = "budget pinned 1 MiB\n"
                     "value weight 256 KiB replicable at pageable\n"
                     "plan \"stage\" { enter { ensure weight at pinned } exit { drop weight at pinned } }\n";
  CompiledFile file = compile_text(text, "consumer.fhr");
  if (!file.ok()) {
    std::fprintf(stderr, "consumer: the plan does not compile\n");
    return 1;
  }
  const std::vector<char> bytes = lower_module(file.module, *file.source);
  const bytecode::Module module = bytecode::load_module(std::as_bytes(std::span(bytes)));
  ManagerOptions options;
  options.budgets = module.budgets;
  Manager manager(std::move(options));
  ZeroBinder binder;
  ModuleRunner runner(manager, module, binder);
  const bool setup = runner.run_setup().completed;
  const RunResult run = runner.run_plan("stage");
  std::printf("consumer: compiled %zu bytes of bytecode; setup %s; plan %s in %zu steps\n", bytes.size(),
              setup ? "completed" : "failed", run.completed ? "completed" : "failed", run.steps.size());
  return setup && run.completed ? 0 : 1;
}
