#pragma once
/// \file
/// The JSON form of a workload, schema `fhr-workload/1` (docs/planner.md
/// describes every field). Parsing checks every field and the rules of
/// check_workload, and reports the first problem with its JSON path.

#include "fhr/planner/workload.hpp"

#include <string>
#include <string_view>
#include <variant>

namespace fhr::planner {

/// The workload, or the first problem ("steps[2].needs[0].values[1]: unknown value 'rk[40]'").
std::variant<Workload, WorkloadError> parse_workload_json(std::string_view text);

/// The workload as fhr-workload/1 JSON (families kept), one step per line.
std::string workload_to_json(const Workload &workload);

} // namespace fhr::planner
