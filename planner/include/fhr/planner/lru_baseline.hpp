#pragma once
/// \file
/// The reference policy on a workload (`fhr-plan solve --policy lru`): the
/// controller's own search (fhr::search_request, §18.3) with
/// DeterministicTieredLRU over the workload's tiers decides each step as a
/// ResidencyController would, one request at a time, no prefetch, with
/// access epochs recorded per step as `use` records them. Target
/// fhr_planner_lru (it links the controller; fhr_planner does not).

#include "fhr/planner/solve.hpp"

namespace fhr::planner {

struct LruOptions {
  std::uint64_t search_state_limit = 100000;
  const LinkModel *links = nullptr; ///< LinkModel::h200() when null
};

SolveResult solve_lru(const Workload &workload, const LruOptions &options = {});

} // namespace fhr::planner
