#pragma once
/// \file
/// The workload statements after sema (docs/language.md, "Workloads"):
/// spill tiers and steps, expanded (loops unrolled, families resolved),
/// for `fhr-plan solve`. A file without steps is not a workload.

#include "fhr/dsl/ast.hpp"
#include "fhr/model/action.hpp"
#include "fhr/model/location.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fhr::ir {

/// `tier FROM to TO` lines of one location, in file order.
struct Tier {
  Location from;
  std::vector<Location> to;
  ast::Span span; ///< its first line
};

/// A value a step reads at a location.
struct StepNeed {
  ValueId value = 0;
  Location at;
};

/// A reservation a step holds while it computes.
struct StepWorkspace {
  Location at;
  std::uint64_t bytes = 0;
  std::string label;
};

struct WorkloadStep {
  std::string name;
  ast::Span span;
  std::vector<StepNeed> needs;
  std::vector<StepWorkspace> workspace;
  std::optional<double> compute_seconds;
};

} // namespace fhr::ir
