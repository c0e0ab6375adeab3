#pragma once
/// \file
/// One profile from several calibrations of one machine (`fhr-plan
/// calibrate --merge`, docs/links.md). A calibration is a snapshot: on a
/// shared machine the host's memory drifts by 10-40% within a minute
/// (docs/benchmarks.md, sixteenth to eighteenth waves), so one taken in a
/// slow or fast stretch describes that stretch. Calibrations spread over
/// time and merged by their medians describe the machine's typical state,
/// which is what the runs' medians meet.
///
/// Each measured figure is the median over the profiles that have it: a
/// link's samples size by size (its classes fitted again through them,
/// fhr/model/link_fit.hpp), the load curve's likewise, and every scalar
/// figure. A bandwidth of 0 (duplex, host memory) means "no limit" and
/// counts as the largest (of an even count whose upper middle it is, the
/// lower middle is taken). A figure a profile lacks (one older than its
/// key) counts as that key's default, as the profile loads it; but a
/// cold pinned block's fixed part and rate are merged from the profiles
/// that have the fixed part alone, where any has it (an older profile's
/// rate is a line through the origin: another model of the same cost). A
/// link that no profile measured keeps its curve, which must then be the
/// same in every profile.

#include "fhr/model/link_model.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace fhr {

/// One figure as the merged profiles had it: a link's sample at `bytes`
/// (seconds), or a scalar (`bytes` 0, in the profile's own unit).
struct MergedFigure {
  std::string name; ///< a link kind's name, "load pageable-device", or the JSON key of a scalar
  std::uint64_t bytes = 0;
  double median = 0, lowest = 0, highest = 0;
  unsigned profiles = 0; ///< how many of the merged profiles had it
};

struct MergedLinkModel {
  LinkModel model;
  /// Every merged figure in profile order: the links' samples by kind and
  /// size, the load samples, then the scalars.
  std::vector<MergedFigure> figures;
};

/// Merges `profiles` of one machine (their `machine` fields equal).
/// Throws std::invalid_argument for fewer than two, for profiles of different
/// machines, for different device pool granules, and for a link without
/// samples whose curves differ. `sources` names each profile in
/// `measured` (its file); \pre sources.size() == profiles.size().
MergedLinkModel merge_link_models(std::span<const LinkModel> profiles, std::span<const std::string> sources);

} // namespace fhr
