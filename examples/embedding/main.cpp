// Embedding fhr's runtime: a bootstrapping key streamed from a key file and
// a ciphertext adopted from the evaluator, moved under a pinned-memory budget
// with a checked plan. Build: the `embedding_example` target; run it with no
// arguments (it writes its key file to the temporary directory).
#include "fhr/runtime/manager.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

int main() {
  using namespace fhr;
  constexpr std::size_t kKeyBytes = 1 << 20;        // a (small) rotation key
  constexpr std::size_t kCiphertextBytes = 1 << 18; // a (small) ciphertext

  // The key file the source reads from.
  const std::filesystem::path key_file =
      std::filesystem::temp_directory_path() / "fhr-example-rotation-key.bin";
  {
    std::vector<char> key(kKeyBytes, 0x5a);
    std::ofstream(key_file, std::ios::binary).write(key.data(), static_cast<std::streamsize>(key.size()));
  }

  ManagerOptions options;
  options.budgets = {{Location::pinned(), 2 * kKeyBytes}}; // pinned memory is scarce
  Manager manager(std::move(options));

  // Register the key without loading it; adopt the ciphertext the evaluator made.
  const Handle key = manager.register_source(
      ValueSpec{kKeyBytes, kKeyBytes, ReplicaMode::Replicable, Recoverability::Reconstructible},
      make_file_source(key_file.string()));
  // The ciphertext's bytes are heap memory: adopt infers the location (pageable).
  auto *ciphertext = static_cast<std::byte *>(std::calloc(kCiphertextBytes, 1));
  const Handle ct = manager.adopt(ciphertext, kCiphertextBytes, kCiphertextBytes, std::nullopt, std::free);

  // Check the stage before running it, then run it.
  const std::vector<ActionSpec> stage = {{ActionKind::Ensure, key, Location::pinned(), {}},
                                         {ActionKind::Move, ct, Location::pinned(), {}}};
  PlanSpec plan{"stage-in", {}, {}, stage, {}};
  const ExplainedPlan preview = manager.explain(plan, manager.state_version());
  std::printf("stage-in is %s; pinned peak %llu bytes\n", preview.feasible ? "feasible" : "infeasible",
              static_cast<unsigned long long>(preview.locations.front().peak_charged));
  const PlanReport report = manager.execute_actions(stage, "stage-in");
  for (const TransitionReport &t : report.transitions)
    std::printf("  %s %s -> %s\n", t.action == ActionKind::Ensure ? "ensure" : "move",
                t.source ? t.source->name().c_str() : "-",
                t.destination ? t.destination->name().c_str() : "-");

  // A second key does not fit next to the first: the budget error says why.
  const Handle other = manager.register_source(
      ValueSpec{kKeyBytes, kKeyBytes, ReplicaMode::Replicable, Recoverability::Reconstructible},
      make_file_source(key_file.string()));
  try {
    manager.ensure(other, Location::pinned());
  } catch (const ResidencyBudgetError &error) {
    std::printf("refused: %s\n", error.what());
  }
  manager.drop(key, Location::pinned()); // the key can be reloaded from its file
  manager.ensure(other, Location::pinned());
  std::printf("pinned now holds %llu bytes\n",
              static_cast<unsigned long long>(manager.account(Location::pinned()).used_bytes));
  std::filesystem::remove(key_file);
  return 0;
}
