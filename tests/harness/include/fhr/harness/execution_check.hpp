#pragma once
/// \file
/// Prediction against execution: runs a module's setup and then one program
/// (or one plan as a scope) through the one interpreter twice, on the model
/// target and on a fresh live manager with synthetic payloads, and compares
/// the two step records: the same steps in the same order (kind, index,
/// instruction, value), the same verdict (done, no-op, refused) and the
/// same error classes (the one a caller catches and its cause), the peak
/// charge of every location, and the content of every installed replica.
/// `fhr-plan run` prints the result; the differential test runs thousands
/// of random programs through it.

#include "fhr/bytecode/module.hpp"
#include "fhr/executor/model_target.hpp"
#include "fhr/executor/step_record.hpp"
#include "fhr/executor/value_binder.hpp"
#include "fhr/model/overlap_window.hpp"
#include "fhr/model/timeline.hpp"
#include "fhr/runtime/manager.hpp"
#include "fhr/runtime/simulated_backend.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fhr {

/// When the run compares replicas' bytes with what the binder gave them.
/// Every replica left when the run ends is checked either way.
enum class ContentChecks {
  /// Also each replica a transition installs, as it is installed (setup
  /// and run): a wrong copy is named by the step that made it.
  EachTransition,
  /// Only at the end. On the CUDA backend a check between steps is itself
  /// traffic the plan does not make (a device replica read back through
  /// the copy engine into fresh pageable pages, a pinned one read by the
  /// processor), and the next step's copy meets the state it leaves: on
  /// the H200 a 10 MiB pinned <-> cuda:0 DMA took 225-250 us after such
  /// checks, 198-203 us without them (docs/run.md).
  AtEnd,
};

/// What one execution of a program or plan produced, beside its prediction.
struct ExecutionCheck {
  std::string kind; ///< "program" or "plan"
  std::string name;
  /// The module's values as they were bound (names for the steps' values).
  std::vector<DeclaredValue> values;
  RunResult predicted_setup, setup; ///< the model's, the manager's
  RunResult predicted, run;         ///< the model's, the manager's
  /// Prediction and execution disagree (setup or run) or content changed.
  std::vector<std::string> differences;
  /// Per location: predicted and measured peak charge during the run.
  struct Peak {
    Location location;
    std::uint64_t predicted = 0;
    std::uint64_t measured = 0;
  };
  std::vector<Peak> peaks;
  std::uint64_t content_checks = 0;
  ContentChecks content_checked = ContentChecks::EachTransition; ///< when (ExecutionOptions)
  /// The simulated backend kept sizes and fingerprints instead of bytes
  /// (the run did not fit in memory): content checks compared fingerprints.
  bool sizes_only = false;
  /// The most copies the simulated backend had in flight at once (overlap
  /// windows at work); 0 on the other backends.
  std::size_t max_copies_in_flight = 0;
  /// The manager's warnings (a scope left by a failing body releases its
  /// reservations with one, say).
  std::shared_ptr<std::vector<std::string>> warnings;
  /// What ExecutionOptions::warm_up reserved between setup and the run,
  /// and how long it took.
  std::optional<WarmUpReport> warm_up;

  bool agrees() const { return differences.empty(); }
};

/// The differences between a prediction and a run of `module`; empty when
/// they agree. Each names the step (its number, kind and line) and what
/// differs; the first differing step ends the list (later steps follow from
/// a different state).
std::vector<std::string> compare_runs(const bytecode::Module &module, const RunResult &predicted,
                                      const RunResult &run);

/// A step the manager ran in another place among the overlap windows than
/// the time predictor put it (fhr/model/overlap_window.hpp, WindowPlace).
struct WindowDifference {
  std::size_t step = 0; ///< 0-based, in the run
  WindowPlace predicted = WindowPlace::Alone, ran = WindowPlace::Alone;
};

/// Where the windows the manager formed in `run` (with overlap on) differ
/// from those `timeline` predicts for the same steps, over the steps both
/// have. A window the manager split because an allocation failed while
/// copies were in flight (docs/runtime.md) is one the model cannot see.
std::vector<WindowDifference> window_differences(const Timeline &timeline, const RunResult &run);
/// "step 7: predicted joins, ran opens" (steps from 1).
std::string window_difference_text(const WindowDifference &difference);
/// The place of step `k` (0-based) among the windows `timeline` predicts,
/// and among those the manager formed in `run`.
WindowPlace predicted_step_place(const Timeline &timeline, std::size_t k);
WindowPlace ran_step_place(const RunResult &run, std::size_t k);

enum class BackendKind { Host, Simulated, Cuda };

struct ExecutionOptions;
/// The devices a run's manager has (its backend's): what the prediction of
/// the run assumes, so that explain's report of it (`fhr-plan run`'s
/// timing, fuzz_run's windows) does too.
DeviceConfig backend_devices(const bytecode::Module &module, const ExecutionOptions &options);

/// Whether this build has the CUDA backend (BackendKind::Cuda).
bool cuda_backend_built();
/// The CUDA devices the runtime reports (0 without the CUDA backend, a
/// driver or a device): where `fhr-plan run` chooses its default backend.
unsigned cuda_devices_present();

struct ExecutionOptions {
  BackendKind backend = BackendKind::Host;
  std::vector<BudgetOverride> overrides;
  /// The simulated backend's device count when the module declares none.
  unsigned default_devices = 8;
  /// The simulated backend reports separate copy engines, so that plans run
  /// with overlap windows (Backend::overlaps_copies).
  bool simulated_overlap = false;
  /// A run whose predicted peaks at locations in host memory (all of them,
  /// except CUDA locations on the CUDA backend) add up to more than this is
  /// refused before it starts (0: three quarters of the memory the machine
  /// has available, MemAvailable).
  std::uint64_t memory_limit_bytes = 0;
  /// What the simulated backend keeps: std::nullopt chooses bytes when the
  /// run fits under the memory limit, sizes and fingerprints when not
  /// (SimulatedMemory::SizesOnly); a run that does not fit with Bytes
  /// forced is refused like one on the host backend.
  std::optional<SimulatedMemory> simulated_memory;
  /// Called after every committed transition of the run (not of setup)
  /// with the transitions so far and the steps the prediction has.
  std::function<void(std::size_t transitions, std::size_t predicted_steps)> progress;
  /// Pool blocks the manager reserves after setup, before the run
  /// (Manager::warm_up): the run's steps then find its pools warm.
  std::vector<PoolRequest> warm_up;
  ContentChecks content_checks = ContentChecks::EachTransition;
};

/// Thrown when a run would need more memory than the machine has: host
/// memory beyond the limit, a device's memory beyond what it has free, or
/// on simulated devices keeping sizes only, more address space than their
/// blocks can reserve (SimulatedBackend::kMaxSizesOnlyBytes).
class ExecutionTooLarge : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Runs `program` (an index into module.programs) on the model and on a
/// fresh manager with synthetic payloads, checking every installed
/// replica's content. Throws what the manager's constructor throws (a
/// budget at a location the backend lacks) and ExecutionTooLarge.
ExecutionCheck check_program(const bytecode::Module &module, std::uint32_t program,
                             const ExecutionOptions &options);
/// Runs plan `plan` as a scope (enter, then close) in the same way.
ExecutionCheck check_plan(const bytecode::Module &module, std::uint32_t plan,
                          const ExecutionOptions &options);

} // namespace fhr
