#pragma once
// The raw CUDA measurements of `fhr-plan calibrate` (built with CUDA only).
#include "calibrate.hpp"

#include <memory>
#include <string>

namespace fhr::calibrate {

/// cudaMemcpyAsync + synchronise between buffers of the same locations.
std::unique_ptr<RawCopies> make_cuda_raw_copies();
/// A fresh stream-ordered device block, cold pinned memory allocated and
/// registered (per byte), an event record and a query.
FixedCosts measure_cuda_fixed_costs();
/// "NVIDIA H200 (CUDA driver 13.0, 1 device)".
std::string cuda_machine_name(unsigned devices);

} // namespace fhr::calibrate
