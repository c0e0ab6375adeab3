#pragma once
/// \file
/// The verbs and options of time and pictures (issue #14): link profiles
/// for `explain --profile`, `explain --format html|svg`, `diff`, `check
/// --baseline` and `calibrate`.

#include "commands.hpp"

#include "fhr/model/link_model.hpp"

#include <optional>
#include <string>
#include <vector>

namespace fhr::cli {

struct TimeOptions {
  /// `--profile`: a links.json (schema fhr-links/2), `h200` for the shipped
  /// default, empty for none (pictures then use the default).
  std::string profile;
  /// `-o`: where the picture goes (standard output when empty).
  std::string output;
};

/// The link model `--profile` names; prints the error and returns nothing
/// when the file cannot be read or is not a valid profile.
std::optional<LinkModel> load_profile(const std::string &profile);

/// explain --format html|svg, and explain --profile (json: the document
/// with time fields; text: the tables, then the predicted time per unit).
int run_explain_pictures(const CommonOptions &options, const TimeOptions &time);

/// Writes `text` to `path` atomically (standard output for "" or "-"); false
/// after printing why it could not.
bool write_output(const std::string &path, const std::string &text);

/// "5%" or "5" -> 5; prints the error and returns nothing otherwise.
std::optional<double> parse_percent(const std::string &text);
/// A size in the language's syntax ("1GiB", "64 MiB") into `bytes`; false
/// after printing the error.
bool parse_size_option(const std::string &option, const std::string &text, std::uint64_t &bytes);

struct DiffOptions {
  std::string format = "text"; ///< "text", "json" or "markdown"
  /// --max-peak-increase: fail when a peak grows by more than this percentage.
  std::optional<double> max_peak_increase_percent;
  std::string profile;
};
/// fhr-plan diff OLD NEW: 0 nothing got worse than the gates allow, 1 a
/// plan became infeasible or a gate fired, 2 bad input.
int run_diff(const std::string &old_path, const std::string &new_path, const CommonOptions &options,
             const DiffOptions &diff);
/// check --baseline DIR: the check, then a diff against DIR/<file>.json or
/// DIR/<file> (an explain JSON or a plan file of the same name).
int run_check_baseline(const CommonOptions &options, const std::string &baseline, const DiffOptions &diff);

struct CalibrateOptions {
  std::string backend = "cuda"; ///< "cuda" or "sim"
  std::string output;
  /// Largest copy measured; repetitions per size.
  std::uint64_t max_bytes = std::uint64_t{1} << 30;
  unsigned repetitions = 5;
  /// Profiles to merge instead of measuring (`--merge`): each figure their
  /// median (fhr/model/link_merge.hpp).
  std::vector<std::string> merge;
};
int run_calibrate(const CalibrateOptions &options);

} // namespace fhr::cli
