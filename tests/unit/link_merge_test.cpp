// Merging calibrations of one machine (`fhr-plan calibrate --merge`): every
// figure the median over the profiles, the curves fitted again through the
// merged samples, and the profiles that cannot be merged refused.
#include "fhr/model/link_fit.hpp"
#include "fhr/model/link_merge.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include <stdexcept>
#include <string>
#include <vector>

using fhr::LinkKind;
using fhr::LinkModel;
using fhr::LinkSample;

namespace {

constexpr std::size_t kPinnedToDevice = static_cast<std::size_t>(LinkKind::PinnedToDevice);
constexpr std::size_t kDeviceToDevice = static_cast<std::size_t>(LinkKind::DeviceToDevice);

constexpr std::size_t kPageableToDevice = static_cast<std::size_t>(LinkKind::PageableToDevice);

/// The shipped profile, its load curve made from its staged copies'
/// samples a tenth longer: loads whose figures the test knows.
LinkModel with_loads() {
  LinkModel model = LinkModel::h200();
  model.load_samples = model.samples[kPageableToDevice];
  for (LinkSample &sample : model.load_samples)
    sample.seconds *= 1.1;
  model.load_pageable_to_device = fhr::fit_link_curve(model.load_samples);
  return model;
}

/// with_loads() with every sample `factor` times as long and the duplex
/// and host memory figures as given.
LinkModel scaled(double factor, double duplex, double host_memory) {
  LinkModel model = with_loads();
  for (std::vector<LinkSample> &samples : model.samples)
    for (LinkSample &sample : samples)
      sample.seconds *= factor;
  for (LinkSample &sample : model.load_samples)
    sample.seconds *= factor;
  model.event_record_seconds *= factor;
  model.duplex_bytes_per_second = duplex;
  model.host_memory_bytes_per_second = host_memory;
  return model;
}

/// What merging `profiles` (named a.json, b.json, ...) throws, or "no error".
std::string error_of(const std::vector<LinkModel> &profiles) {
  std::vector<std::string> sources;
  for (std::size_t k = 0; k < profiles.size(); ++k)
    sources.push_back(std::string(1, static_cast<char>('a' + k)) + ".json");
  try {
    fhr::merge_link_models(profiles, sources);
  } catch (const std::invalid_argument &error) {
    return error.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("link merge: each figure is the median of the profiles, the curves fitted through it") {
  const LinkModel base = with_loads();
  REQUIRE_FALSE(base.samples[kPinnedToDevice].empty());
  // A slow, a typical and a fast calibration, given out of order.
  const std::vector<LinkModel> profiles = {scaled(1.3, 90e9, 0), scaled(1.0, 80e9, 150e9),
                                           scaled(0.8, 0, 140e9)};
  const std::vector<std::string> sources = {"slow.json", "typical.json", "fast.json"};
  const fhr::MergedLinkModel merged = fhr::merge_link_models(profiles, sources);

  const std::vector<LinkSample> &samples = merged.model.samples[kPinnedToDevice];
  REQUIRE(samples.size() == base.samples[kPinnedToDevice].size());
  for (std::size_t k = 0; k < samples.size(); ++k) {
    CHECK(samples[k].bytes == base.samples[kPinnedToDevice][k].bytes);
    CHECK(samples[k].seconds == doctest::Approx(base.samples[kPinnedToDevice][k].seconds));
  }
  const fhr::LinkCurve refit = fhr::fit_link_curve(samples);
  const std::uint64_t gib = std::uint64_t{1} << 30;
  CHECK(merged.model.curve(LinkKind::PinnedToDevice).seconds(gib) == doctest::Approx(refit.seconds(gib)));
  REQUIRE(merged.model.load_samples.size() == base.load_samples.size());
  CHECK(merged.model.load_samples.back().seconds == doctest::Approx(base.load_samples.back().seconds));
  CHECK(merged.model.event_record_seconds == doctest::Approx(base.event_record_seconds));
  // A bandwidth of 0 is no limit, the largest: the median of 80, 90 and
  // unlimited is 90; of 140, 150 and unlimited, 150.
  CHECK(merged.model.duplex_bytes_per_second == doctest::Approx(90e9));
  CHECK(merged.model.host_memory_bytes_per_second == doctest::Approx(150e9));
  // The curve no profile measured (one GPU: no peer copies) is theirs.
  CHECK(merged.model.samples[kDeviceToDevice].empty());
  CHECK(merged.model.curve(LinkKind::DeviceToDevice).seconds(gib) ==
        doctest::Approx(base.curve(LinkKind::DeviceToDevice).seconds(gib)));
  CHECK(merged.model.measured.find("median of 3 calibrations: slow.json (") == 0);

  // The figures record each one's range: the 1 GiB DMA's slowest is the
  // slow profile's, its fastest the fast one's.
  const fhr::MergedFigure *dma = nullptr;
  for (const fhr::MergedFigure &figure : merged.figures)
    if (figure.name == "pinned-device" && figure.bytes == base.samples[kPinnedToDevice].back().bytes)
      dma = &figure;
  REQUIRE(dma);
  CHECK(dma->profiles == 3);
  CHECK(dma->highest == doctest::Approx(1.3 * base.samples[kPinnedToDevice].back().seconds));
  CHECK(dma->lowest == doctest::Approx(0.8 * base.samples[kPinnedToDevice].back().seconds));
}

TEST_CASE("link merge: sizes some profiles lack are merged over those that have them") {
  LinkModel short_one = LinkModel::h200(), long_one = LinkModel::h200();
  short_one.samples[kPinnedToDevice] = {{4096, 10e-6}, {1 << 20, 30e-6}};
  long_one.samples[kPinnedToDevice] = {{4096, 20e-6}, {1 << 20, 40e-6}, {1 << 30, 25e-3}};
  const std::vector<LinkModel> profiles = {short_one, long_one};
  const std::vector<std::string> sources = {"a.json", "b.json"};
  const fhr::MergedLinkModel merged = fhr::merge_link_models(profiles, sources);
  const std::vector<LinkSample> &samples = merged.model.samples[kPinnedToDevice];
  REQUIRE(samples.size() == 3);
  CHECK(samples[0].seconds == doctest::Approx(15e-6)); // the mean of an even count's middle two
  CHECK(samples[1].seconds == doctest::Approx(35e-6));
  CHECK(samples[2].seconds == doctest::Approx(25e-3));
  unsigned at_1_gib = 0;
  for (const fhr::MergedFigure &figure : merged.figures)
    if (figure.name == "pinned-device" && figure.bytes == (1u << 30)) at_1_gib = figure.profiles;
  CHECK(at_1_gib == 1);
}

TEST_CASE("link merge: no limit, a missing load curve and the small pinned blocks") {
  // Two profiles, one measured a host memory figure and one did not (0,
  // no limit): the measured figure, not the mean of it and no limit.
  LinkModel measured = with_loads(), unmeasured = LinkModel::h200();
  measured.host_memory_bytes_per_second = 146e9;
  unmeasured.host_memory_bytes_per_second = 0;
  // The older profile has no loads and no small-block figures: the merge
  // takes the other's, over the one profile that has them.
  unmeasured.load_pageable_to_device = {};
  unmeasured.load_samples.clear();
  unmeasured.small_pinned_allocation.reset();
  measured.small_pinned_allocation = fhr::AllocationCost{8e-6, 0.5e-9};
  const std::vector<LinkModel> profiles = {measured, unmeasured};
  const std::vector<std::string> sources = {"new.json", "old.json"};
  const fhr::MergedLinkModel merged = fhr::merge_link_models(profiles, sources);
  CHECK(merged.model.host_memory_bytes_per_second == doctest::Approx(146e9));
  REQUIRE(merged.model.load_samples.size() == measured.load_samples.size());
  CHECK(merged.model.load_pageable_to_device.seconds(std::uint64_t{1} << 30) ==
        doctest::Approx(measured.load_pageable_to_device.seconds(std::uint64_t{1} << 30)).epsilon(1e-9));
  REQUIRE(merged.model.small_pinned_allocation);
  CHECK(merged.model.small_pinned_allocation->seconds == doctest::Approx(8e-6));
  // Three small-block figures: their median, each part apart.
  LinkModel third = measured, fourth = measured;
  third.small_pinned_allocation = fhr::AllocationCost{12e-6, 0.3e-9};
  fourth.small_pinned_allocation = fhr::AllocationCost{6e-6, 0.4e-9};
  const std::vector<LinkModel> three = {measured, third, fourth};
  const std::vector<std::string> names = {"a.json", "b.json", "c.json"};
  const fhr::MergedLinkModel small = fhr::merge_link_models(three, names);
  REQUIRE(small.model.small_pinned_allocation);
  CHECK(small.model.small_pinned_allocation->seconds == doctest::Approx(8e-6));
  CHECK(small.model.small_pinned_allocation->seconds_per_byte == doctest::Approx(0.4e-9));
}

TEST_CASE("link merge: a cold pinned block's fixed part and rate come from the profiles that measured both") {
  LinkModel older = LinkModel::h200(), first = older, second = older;
  older.pinned_allocation_fixed_seconds.reset(); // a line through the origin
  older.pinned_allocation_seconds_per_byte = 0.19e-9;
  first.pinned_allocation_fixed_seconds = 1.3e-3;
  first.pinned_allocation_seconds_per_byte = 0.030e-9;
  second.pinned_allocation_fixed_seconds = 1.1e-3;
  second.pinned_allocation_seconds_per_byte = 0.036e-9;
  const std::vector<std::string> names = {"old.json", "a.json", "b.json"};
  const std::vector<LinkModel> mixed = {older, first, second};
  const fhr::MergedLinkModel merged = fhr::merge_link_models(mixed, names);
  // The two that have the fixed part, each part their median; the older
  // rate left out of it (with it the median rate would be 0.036 ns/B).
  REQUIRE(merged.model.pinned_allocation_fixed_seconds);
  CHECK(*merged.model.pinned_allocation_fixed_seconds == doctest::Approx(1.2e-3));
  CHECK(merged.model.pinned_allocation_seconds_per_byte == doctest::Approx(0.033e-9));
  auto figure = [](const fhr::MergedLinkModel &of, const std::string &name) {
    const auto found = std::find_if(of.figures.begin(), of.figures.end(),
                                    [&](const fhr::MergedFigure &f) { return f.name == name; });
    REQUIRE(found != of.figures.end());
    return *found;
  };
  CHECK(figure(merged, "pinned_allocation_us").profiles == 2);
  CHECK(figure(merged, "pinned_allocation_ns_per_byte").profiles == 2);
  // None has it: the rate over all of them, and still no fixed part.
  LinkModel third = older;
  first.pinned_allocation_fixed_seconds.reset();
  third.pinned_allocation_seconds_per_byte = 0.15e-9;
  const std::vector<LinkModel> old_only = {older, first, third};
  const fhr::MergedLinkModel rate_only = fhr::merge_link_models(old_only, names);
  CHECK_FALSE(rate_only.model.pinned_allocation_fixed_seconds);
  CHECK(rate_only.model.pinned_allocation_seconds_per_byte == doctest::Approx(0.15e-9));
  CHECK(figure(rate_only, "pinned_allocation_ns_per_byte").profiles == 3);
  CHECK(fhr::link_model_to_json(rate_only.model).find("\"pinned_allocation_us\"") == std::string::npos);
}

TEST_CASE("link merge: profiles that describe different things are refused") {
  CHECK(error_of({}) == "a merge needs two profiles or more");
  CHECK(error_of({LinkModel::h200()}) == "a merge needs two profiles or more");
  LinkModel other = LinkModel::h200();
  other.machine = "NVIDIA A100";
  CHECK(error_of({LinkModel::h200(), other}) == "profiles of different machines: a.json is \"" +
                                                    LinkModel::h200().machine + "\", b.json \"NVIDIA A100\"");
  LinkModel granule = LinkModel::h200();
  granule.device_pool_granule_bytes = 2 << 20;
  CHECK(error_of({LinkModel::h200(), LinkModel::h200(), granule}) ==
        "the device pool's granule differs: " + std::to_string(LinkModel::h200().device_pool_granule_bytes) +
            " B in a.json, 2097152 B in c.json");
  // A link without samples can only be taken as it is, from all alike.
  LinkModel peer = LinkModel::h200();
  peer.links[kDeviceToDevice].classes.back().bytes_per_second *= 2;
  CHECK(error_of({LinkModel::h200(), peer}) ==
        "the device-device curves of a.json and b.json differ and neither has the samples to merge them by");
}

TEST_CASE("link merge: a DMA's extras are each the median of the profiles that measured it") {
  // Every one of them: after host work, a cold value's, the follow-on, a
  // staged copy's after host work.
  CHECK(std::size(fhr::kDmaExtraFigures) == 4);
  for (const fhr::OptionalMicroseconds &extra : fhr::kDmaExtraFigures) {
    CAPTURE(extra.key);
    LinkModel older = LinkModel::h200(), first = older, second = older, third = older;
    older.*extra.field = std::nullopt;
    first.*extra.field = 40e-6;
    second.*extra.field = 90e-6;
    third.*extra.field = 60e-6;
    const std::vector<std::string> names = {"old.json", "a.json", "b.json", "c.json"};
    const std::vector<LinkModel> mixed = {older, first, second, third};
    const fhr::MergedLinkModel merged = fhr::merge_link_models(mixed, names);
    REQUIRE(merged.model.*extra.field);
    CHECK(*(merged.model.*extra.field) == doctest::Approx(60e-6));
    const auto found = std::find_if(merged.figures.begin(), merged.figures.end(),
                                    [&](const fhr::MergedFigure &f) { return f.name == extra.key; });
    REQUIRE(found != merged.figures.end());
    CHECK(found->profiles == 3);
    CHECK(found->lowest == doctest::Approx(40));
    CHECK(found->highest == doctest::Approx(90));
    // None has it: none merged.
    const std::vector<LinkModel> old_only = {older, older};
    const std::vector<std::string> two = {"old.json", "old2.json"};
    CHECK_FALSE(fhr::merge_link_models(old_only, two).model.*extra.field);
  }
}
