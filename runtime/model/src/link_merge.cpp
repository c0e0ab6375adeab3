#include "fhr/model/link_merge.hpp"

#include "fhr/model/link_fit.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>

namespace fhr {

namespace {

constexpr double kUnlimited = std::numeric_limits<double>::infinity();

/// A scalar figure of a profile, by its JSON key and unit. `unlimited_at_zero`:
/// 0 means "no limit" (LinkModel's bandwidths that bound sharing).
struct Scalar {
  const char *key;
  double unit; ///< seconds or bytes per second of one unit of the key
  double LinkModel::*field;
  bool unlimited_at_zero = false;
};

constexpr Scalar kScalars[] = {
    {"duplex_bandwidth_gbps", 1e9, &LinkModel::duplex_bytes_per_second, true},
    {"host_memory_gbps", 1e9, &LinkModel::host_memory_bytes_per_second, true},
    {"device_allocation_us", 1e-6, &LinkModel::device_allocation_seconds},
    {"device_growth_ns_per_byte", 1e-9, &LinkModel::device_growth_seconds_per_byte},
    {"pinned_registration_ns_per_byte", 1e-9, &LinkModel::pinned_registration_seconds_per_byte},
    {"pageable_first_touch_ns_per_byte", 1e-9, &LinkModel::pageable_first_touch_seconds_per_byte},
    {"event_record_us", 1e-6, &LinkModel::event_record_seconds},
    {"event_query_us", 1e-6, &LinkModel::event_query_seconds},
    {"source_load_gbps", 1e9, &LinkModel::source_load_bytes_per_second},
};

/// The median of `values`, recorded under `name` (in units of `unit`). Of
/// an even count whose upper middle is "no limit" the lower middle: the
/// mean of a figure and no limit would be no limit, and discard a measured
/// figure for one that was not measured.
double merge_figure(std::vector<double> values, std::string name, std::uint64_t bytes, double unit,
                    std::vector<MergedFigure> &figures) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const double middle = n % 2 == 0 && values[n / 2] == kUnlimited ? values[n / 2 - 1] : median(values);
  figures.push_back(MergedFigure{std::move(name), bytes, middle / unit, values.front() / unit,
                                 values.back() / unit, static_cast<unsigned>(n)});
  return figures.back().median * unit;
}

/// A curve's samples merged size by size (each size's median over the
/// profiles that measured it), ascending.
std::vector<LinkSample> merge_samples(const std::vector<const std::vector<LinkSample> *> &lists,
                                      const std::string &name, std::vector<MergedFigure> &figures) {
  std::map<std::uint64_t, std::vector<double>> by_size;
  for (const std::vector<LinkSample> *list : lists)
    for (const LinkSample &sample : *list)
      by_size[sample.bytes].push_back(sample.seconds);
  std::vector<LinkSample> merged;
  for (auto &[bytes, seconds] : by_size)
    merged.push_back(LinkSample{bytes, merge_figure(std::move(seconds), name, bytes, 1, figures)});
  return merged;
}

bool same_curve(const LinkCurve &a, const LinkCurve &b) {
  return std::equal(a.classes.begin(), a.classes.end(), b.classes.begin(), b.classes.end(),
                    [](const SizeClass &x, const SizeClass &y) {
                      return x.max_bytes == y.max_bytes && x.latency_seconds == y.latency_seconds &&
                             x.bytes_per_second == y.bytes_per_second;
                    });
}

/// One curve as each profile has it: its classes and the samples behind them.
struct CurveOfProfile {
  const LinkCurve *curve;
  const std::vector<LinkSample> *samples;
};

/// The merged curve of one link (or the loads'): fitted through the
/// merged samples, or, where no profile measured it, the one curve they
/// all have.
LinkCurve merge_curve(const std::vector<CurveOfProfile> &profiles, std::span<const std::string> sources,
                      const std::string &name, std::vector<LinkSample> &samples,
                      std::vector<MergedFigure> &figures) {
  std::vector<const std::vector<LinkSample> *> lists;
  for (const CurveOfProfile &profile : profiles)
    lists.push_back(profile.samples);
  samples = merge_samples(lists, name, figures);
  if (!samples.empty()) return fit_link_curve(samples);
  for (std::size_t k = 1; k < profiles.size(); ++k)
    if (!same_curve(*profiles[k].curve, *profiles.front().curve))
      throw std::invalid_argument("the " + name + " curves of " + sources.front() + " and " + sources[k] +
                                  " differ and neither has the samples to merge them by");
  return *profiles.front().curve;
}

} // namespace

MergedLinkModel merge_link_models(std::span<const LinkModel> profiles, std::span<const std::string> sources) {
  if (profiles.size() < 2) throw std::invalid_argument("a merge needs two profiles or more");
  const LinkModel &first = profiles.front();
  for (std::size_t k = 1; k < profiles.size(); ++k) {
    if (profiles[k].machine != first.machine)
      throw std::invalid_argument("profiles of different machines: " + sources.front() + " is \"" +
                                  first.machine + "\", " + sources[k] + " \"" + profiles[k].machine + "\"");
    if (profiles[k].device_pool_granule_bytes != first.device_pool_granule_bytes)
      throw std::invalid_argument(
          "the device pool's granule differs: " + std::to_string(first.device_pool_granule_bytes) + " B in " +
          sources.front() + ", " + std::to_string(profiles[k].device_pool_granule_bytes) + " B in " +
          sources[k]);
  }
  MergedLinkModel merged;
  LinkModel &model = merged.model;
  model = first; // the machine and the granule, equal in all
  model.measured = "median of " + std::to_string(profiles.size()) + " calibrations:";
  for (std::size_t k = 0; k < profiles.size(); ++k)
    model.measured += (k ? "; " : " ") + sources[k] + " (" + profiles[k].measured + ")";

  for (std::size_t i = 0; i < kLinkKindCount; ++i) {
    std::vector<CurveOfProfile> link;
    for (const LinkModel &profile : profiles)
      link.push_back({&profile.links[i], &profile.samples[i]});
    model.links[i] = merge_curve(link, sources, std::string(link_kind_name(static_cast<LinkKind>(i))),
                                 model.samples[i], merged.figures);
  }
  std::vector<CurveOfProfile> loads;
  for (const LinkModel &profile : profiles)
    loads.push_back({&profile.load_pageable_to_device, &profile.load_samples});
  model.load_pageable_to_device =
      merge_curve(loads, sources, "load pageable-device", model.load_samples, merged.figures);

  for (const Scalar &scalar : kScalars) {
    std::vector<double> values;
    for (const LinkModel &profile : profiles) {
      const double value = profile.*scalar.field;
      values.push_back(scalar.unlimited_at_zero && value == 0 ? kUnlimited : value);
    }
    const double value = merge_figure(std::move(values), scalar.key, 0, scalar.unit, merged.figures);
    model.*scalar.field = value == kUnlimited ? 0 : value;
  }
  // A large cold pinned block's cost: a fixed part and a rate where
  // measured, so only from the profiles that have both (an older profile's
  // rate is a line through the origin, another model); else the rate alone.
  std::vector<double> block_fixed, block_rate, rate_alone;
  for (const LinkModel &profile : profiles) {
    rate_alone.push_back(profile.pinned_allocation_seconds_per_byte);
    if (profile.pinned_allocation_fixed_seconds) {
      block_fixed.push_back(*profile.pinned_allocation_fixed_seconds);
      block_rate.push_back(profile.pinned_allocation_seconds_per_byte);
    }
  }
  model.pinned_allocation_fixed_seconds.reset();
  if (!block_fixed.empty()) {
    model.pinned_allocation_fixed_seconds =
        merge_figure(std::move(block_fixed), "pinned_allocation_us", 0, 1e-6, merged.figures);
    model.pinned_allocation_seconds_per_byte =
        merge_figure(std::move(block_rate), "pinned_allocation_ns_per_byte", 0, 1e-9, merged.figures);
  } else {
    model.pinned_allocation_seconds_per_byte =
        merge_figure(std::move(rate_alone), "pinned_allocation_ns_per_byte", 0, 1e-9, merged.figures);
  }
  // The DMAs' extras, each over the profiles that measured it.
  for (const OptionalMicroseconds &optional : kDmaExtraFigures) {
    std::vector<double> values;
    for (const LinkModel &profile : profiles)
      if (const std::optional<double> &value = profile.*optional.field) values.push_back(*value);
    model.*optional.field =
        values.empty()
            ? std::nullopt
            : std::optional<double>(merge_figure(std::move(values), optional.key, 0, 1e-6, merged.figures));
  }
  // A small pinned block's cost, where measured (profiles before it have none).
  std::vector<double> fixed, rate;
  for (const LinkModel &profile : profiles)
    if (profile.small_pinned_allocation) {
      fixed.push_back(profile.small_pinned_allocation->seconds);
      rate.push_back(profile.small_pinned_allocation->seconds_per_byte);
    }
  model.small_pinned_allocation.reset();
  if (!fixed.empty())
    model.small_pinned_allocation = AllocationCost{
        merge_figure(std::move(fixed), "small_pinned_allocation_us", 0, 1e-6, merged.figures),
        merge_figure(std::move(rate), "small_pinned_allocation_ns_per_byte", 0, 1e-9, merged.figures)};
  return merged;
}

} // namespace fhr
