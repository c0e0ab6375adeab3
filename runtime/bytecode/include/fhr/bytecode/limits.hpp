#pragma once
/// \file
/// What a module may ask of the interpreter. A module is small and what it
/// asks for need not be: a 600-byte module can declare 2^31 values, and a
/// program of a few instructions can run a plan of a million actions ten
/// thousand times, each step of which explain and run record. The verifier
/// refuses a module beyond these limits, and the compiler reports a file
/// that would lower to one (E0205), so that neither can ask `check`, the CI
/// gate, for unbounded memory or time (docs/bytecode.md, "Limits").

#include "fhr/bytecode/module.hpp"

#include <cstdint>
#include <optional>

namespace fhr::bytecode {

/// Declared values: each has a record in the state and in every report.
inline constexpr std::uint64_t kMaxValues = 1'000'000;

/// Plans and programs together: each is a unit that explain and check
/// report on its own, whatever its size (a kilobyte or so of records, and a
/// chart in the pictures), so a loop of a few bytes declaring empty plans
/// would otherwise ask for gigabytes. The planner prints a plan per step
/// of a workload, so a workload has at most this many steps.
inline constexpr std::uint64_t kMaxPlansAndPrograms = 100'000;

/// Steps the interpreter may record for one module, all added up: its
/// setup's (a declaration counts a step per value), each plan's explained on
/// its own (its actions and reservations, and its preflight) and each
/// program's (each statement, and each step of the plans it runs).
inline constexpr std::uint64_t kMaxSteps = 10'000'000;

/// Steps of a module's setup besides the values its declarations make: its
/// actions, holds, leases, reservations and releases. Each lives as long as
/// the module (a lifetime in the state, a setup step, a row of every
/// report) and costs three times a program's step, so a loop of a few
/// bytes would otherwise ask `check` for gigabytes (nine million `hold`s
/// took 22 s and 4.9 GB). A real setup has a handful.
inline constexpr std::uint64_t kMaxSetupSteps = 1'000'000;

/// A module's steps, counted as kMaxSteps counts them (sums stop at 2^62,
/// so that no count overflows).
struct StepCount {
  std::uint64_t total = 0;
  /// The setup's steps besides its declarations' (kMaxSetupSteps).
  std::uint64_t setup = 0;
  /// The program with the most steps, if any, and its steps.
  std::optional<std::uint32_t> largest_program;
  std::uint64_t largest_program_steps = 0;
};

/// Counts `module`'s steps. \pre every index in the module is valid (the
/// verifier calls it last; the compiler, on a module it has just lowered).
StepCount count_steps(const Module &module);

} // namespace fhr::bytecode
