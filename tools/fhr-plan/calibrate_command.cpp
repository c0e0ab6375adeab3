// fhr-plan calibrate --backend cuda|sim -o links.json, and --merge
// a.json,b.json,... -o links.json (docs/links.md).
#include "calibrate.hpp"
#include "time_commands.hpp"

#include "fhr/model/link_merge.hpp"
#include "fhr/runtime/simulated_backend.hpp"
#ifdef FHR_HAVE_CUDA
#include "calibrate_cuda.hpp"
#include "fhr/cuda/cuda_backend.hpp"
#endif

#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
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

/// Where the printed table goes: standard output, unless the profile does.
llvm::raw_ostream &table_stream(const std::string &output) {
  return output.empty() || output == "-" ? llvm::errs() : llvm::outs();
}

/// The merge's table: every figure's median, its range over the profiles
/// and that range as a share of the median (how far the calibrations
/// disagreed), then the widest such spread among copies of 16 MiB and more.
std::string merge_text(const MergedLinkModel &merged, std::size_t profiles) {
  std::string out = "merged " + std::to_string(profiles) + " link profiles of " + merged.model.machine + "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-36s %12s %14s %14s %14s %8s\n", "figure", "bytes", "median", "lowest",
                "highest", "spread");
  out += line;
  // A copy's sample is in seconds (shown in us); a scalar in its key's unit.
  auto shown = [](const MergedFigure &figure, double value) {
    char text[32];
    if (std::isinf(value))
      std::snprintf(text, sizeof text, "no limit");
    else if (figure.bytes > 0)
      std::snprintf(text, sizeof text, "%.2f us", value * 1e6);
    else
      std::snprintf(text, sizeof text, "%.4g", value);
    return std::string(text);
  };
  const MergedFigure *widest = nullptr;
  // No spread between a figure and no limit: shown as "-", never widest.
  auto spread_of = [](const MergedFigure &figure) {
    return figure.median > 0 && !std::isinf(figure.highest) ? (figure.highest - figure.lowest) / figure.median
                                                            : 0.0;
  };
  for (const MergedFigure &figure : merged.figures) {
    char bytes[24] = "-";
    if (figure.bytes > 0) std::snprintf(bytes, sizeof bytes, "%" PRIu64, figure.bytes);
    char spread[16] = "-";
    if (!std::isinf(figure.highest)) std::snprintf(spread, sizeof spread, "%.1f%%", spread_of(figure) * 100);
    std::snprintf(line, sizeof line, "  %-36s %12s %14s %14s %14s %8s", figure.name.c_str(), bytes,
                  shown(figure, figure.median).c_str(), shown(figure, figure.lowest).c_str(),
                  shown(figure, figure.highest).c_str(), spread);
    out += line;
    if (figure.profiles < profiles) out += "  (" + std::to_string(figure.profiles) + " profiles had it)";
    out += "\n";
    if (figure.bytes >= (std::uint64_t{16} << 20) && (!widest || spread_of(figure) > spread_of(*widest)))
      widest = &figure;
  }
  if (widest) {
    std::snprintf(line, sizeof line, "widest spread at 16 MiB and more: %s at %" PRIu64 " B, %.1f%%\n",
                  widest->name.c_str(), widest->bytes, spread_of(*widest) * 100);
    out += line;
  }
  return out;
}

/// calibrate --merge: reads every profile, merges them, writes the result.
int run_merge(const CalibrateOptions &options) {
  std::vector<LinkModel> profiles;
  for (const std::string &path : options.merge) {
    // An empty name (a stray comma) would load the shipped default, a vote
    // nobody meant to cast; "h200" names it on purpose.
    if (path.empty()) {
      report_error(llvm::createStringError(std::errc::invalid_argument,
                                           "calibrate --merge: an empty profile name in the list"));
      return kBadInput;
    }
    std::optional<LinkModel> profile = load_profile(path);
    if (!profile) return kBadInput; // load_profile named the file and the fault
    profiles.push_back(std::move(*profile));
  }
  try {
    const MergedLinkModel merged = merge_link_models(profiles, options.merge);
    table_stream(options.output) << merge_text(merged, profiles.size());
    table_stream(options.output).flush();
    return write_output(options.output, link_model_to_json(merged.model)) ? kFeasible : kBadInput;
  } catch (const std::invalid_argument &error) {
    report_error(llvm::createStringError(std::errc::invalid_argument, "calibrate --merge: %s", error.what()));
    return kBadInput;
  }
}

} // namespace

int run_calibrate(const CalibrateOptions &options) {
  if (!options.merge.empty()) return run_merge(options);
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
      const calibrate::FixedCosts fixed{
          stand_in.device_allocation_seconds,
          stand_in.device_growth_seconds_per_byte,
          stand_in.device_pool_granule_bytes,
          {stand_in.pinned_allocation_fixed_seconds.value_or(0), stand_in.pinned_allocation_seconds_per_byte},
          stand_in.pinned_registration_seconds_per_byte,
          stand_in.event_record_seconds,
          stand_in.event_query_seconds,
          stand_in.small_pinned_allocation};
      calibrate::Result result = calibrate::calibrate(manager, clock, measure, fixed, nullptr, stand_in);
      result.model.machine = "simulated device backend, 2 devices (stand-in: " + stand_in.machine + ")";
      result.model.measured = "simulated clock";
      table_stream(options.output) << calibrate::result_text(result);
      table_stream(options.output).flush();
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
    table_stream(options.output) << calibrate::result_text(result);
    table_stream(options.output).flush();
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
