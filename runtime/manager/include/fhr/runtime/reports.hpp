#pragma once
/// \file
/// What the runtime returns for every transition and every plan
/// (docs/semantics.md §6.5, §11): plain data, so that a partial report can travel
/// inside an exception.

#include "fhr/model/action.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fhr {

struct TransitionReport {
  /// The action as requested (copy reports as Ensure, as in the reference).
  ActionKind action = ActionKind::Ensure;
  ValueId value = 0;
  bool no_op = false;
  std::optional<Location> source;
  std::optional<Location> destination;
  std::uint64_t logical_nbytes = 0;
  std::uint64_t storage_nbytes = 0;
  /// Steady-clock nanoseconds: the start of the transition's first piece of
  /// work (allocation, load, copy, install or removal) and its completion. A
  /// no-op does no work: both are one read of the coarse monotonic clock
  /// (the kernel tick's resolution), never before the previous report's
  /// completion.
  std::uint64_t started_at_ns = 0;
  std::uint64_t completed_at_ns = 0;
  /// Nanoseconds of the above spent in the value's Source::load (a
  /// reconstruction), 0 without one: the loader's time, not a transfer's.
  std::uint64_t source_load_ns = 0;
  /// Steady-clock nanoseconds when the copy into the destination was
  /// issued to the backend, its destination allocated (a load's source
  /// filled before): what the host did before the copy is
  /// `copy_issued_at_ns - started_at_ns`. 0 without such a copy, and for a
  /// small copy time-stamped on the time-stamp counter (a read would sit
  /// on its path).
  std::uint64_t copy_issued_at_ns = 0;
  /// Its place in the overlap window its copy ran in (0: the window's
  /// first; a lone plain copy is a window of one), when the manager ran it
  /// in one (docs/runtime.md, "Overlap inside a plan"); none for a
  /// transition run on its own (a load, a no-op, a removal, overlap off).
  /// `fhr-plan run` compares it with the windows explain predicts.
  std::optional<std::uint32_t> window_position;
  /// The no-op reason (static text), or empty.
  std::string_view reason;
};

struct PlanReport {
  std::string plan_name;
  std::vector<TransitionReport> transitions;
  std::uint64_t started_at_ns = 0;
  std::uint64_t completed_at_ns = 0;
};

} // namespace fhr
