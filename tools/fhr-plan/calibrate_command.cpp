// fhr-plan calibrate --backend cuda|sim -o links.json (docs/links.md).
#include "calibrate.hpp"
#include "time_commands.hpp"

#include "fhr/runtime/simulated_backend.hpp"
#ifdef FHR_HAVE_CUDA
#include "calibrate_cuda.hpp"
#include "fhr/cuda/cuda_backend.hpp"
#endif

#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <ctime>

namespace fhr::cli {

namespace {

#ifdef FHR_HAVE_CUDA
/// When a measured profile was taken (only the CUDA calibration measures).
std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}
#endif

} // namespace

int run_calibrate(const CalibrateOptions &options) {
  if (options.repetitions == 0 || options.max_bytes < 4096) {
    report_error(llvm::createStringError(
        std::errc::invalid_argument,
        "calibrate needs --repetitions of at least 1 and --max-bytes of at least 4KiB"));
    return kBadInput;
  }
  calibrate::Options measure;
  measure.max_bytes = options.max_bytes;
  measure.repetitions = options.repetitions;
  try {
    if (options.backend == "sim") {
      // The simulated device backend, two devices, on a simulated clock that
      // charges what the shipped profile predicts: a deterministic run of
      // the whole pipeline, which must give that profile back.
      const LinkModel &stand_in = LinkModel::h200();
      ManagerOptions manager_options;
      manager_options.backend = std::make_shared<SimulatedBackend>(2, /*overlap_copies=*/true);
      Manager manager(std::move(manager_options));
      measure.devices = 2;
      calibrate::SimulatedClock clock(stand_in);
      const calibrate::FixedCosts fixed{stand_in.device_allocation_seconds,
                                        stand_in.device_growth_seconds_per_byte,
                                        stand_in.device_pool_granule_bytes,
                                        stand_in.pinned_allocation_seconds_per_byte,
                                        stand_in.pinned_registration_seconds_per_byte,
                                        stand_in.event_record_seconds,
                                        stand_in.event_query_seconds,
                                        stand_in.small_pinned_allocation};
      calibrate::Result result = calibrate::calibrate(manager, clock, measure, fixed, nullptr, stand_in);
      result.model.machine = "simulated device backend, 2 devices (stand-in: " + stand_in.machine + ")";
      result.model.measured = "simulated clock";
      llvm::outs() << calibrate::result_text(result);
      llvm::outs().flush();
      return write_output(options.output, link_model_to_json(result.model)) ? kFeasible : kBadInput;
    }
#ifdef FHR_HAVE_CUDA
    const unsigned devices = cuda_device_count();
    if (devices == 0) {
      report_error(
          llvm::createStringError(std::errc::no_such_device, "calibrate --backend cuda: no CUDA device"));
      return kBadInput;
    }
    measure.devices = std::min(devices, 2u);
    const calibrate::FixedCosts fixed = calibrate::measure_cuda_fixed_costs();
    std::unique_ptr<calibrate::RawCopies> raw = calibrate::make_cuda_raw_copies();
    ManagerOptions manager_options;
    CudaBackendOptions backend_options;
    backend_options.pinned_pool_bytes =
        calibrate::host_pool_bytes(measure, backend_options.pinned_pool_bytes);
    backend_options.pageable_pool_bytes =
        calibrate::host_pool_bytes(measure, backend_options.pageable_pool_bytes);
    manager_options.backend = make_cuda_backend(backend_options);
    Manager manager(std::move(manager_options));
    calibrate::WallClock clock;
    calibrate::Result result =
        calibrate::calibrate(manager, clock, measure, fixed, raw.get(), LinkModel::h200());
    result.model.machine = calibrate::cuda_machine_name(devices);
    result.model.measured = utc_now() + ", fhr-plan calibrate --max-bytes " +
                            std::to_string(options.max_bytes) + " --repetitions " +
                            std::to_string(options.repetitions);
    llvm::outs() << calibrate::result_text(result);
    llvm::outs().flush();
    return write_output(options.output, link_model_to_json(result.model)) ? kFeasible : kBadInput;
#else
    report_error(llvm::createStringError(std::errc::not_supported,
                                         "calibrate --backend cuda: this fhr-plan was built without CUDA"));
    return kBadInput;
#endif
  } catch (const std::exception &error) {
    report_error(llvm::createStringError(std::errc::io_error, "calibrate: %s", error.what()));
    return kBadInput;
  }
}

} // namespace fhr::cli
