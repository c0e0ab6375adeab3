// fhr-plan calibrate: placeholder until the measurement library lands below.
#include "time_commands.hpp"

namespace fhr::cli {
int run_calibrate(const CalibrateOptions &) { return kBadInput; }
} // namespace fhr::cli
