// The link model: which link and engine a copy takes, its cost by size
// class, and the JSON profile with its validation.
#include "fhr/model/link_fit.hpp"
#include "fhr/model/link_model.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using fhr::CopyQueue;
using fhr::LinkKind;
using fhr::LinkModel;
using fhr::Location;

namespace {
/// What loading `json` as a profile throws, or "no error".
std::string error_of(const std::string &json) {
  try {
    fhr::link_model_from_json(json);
  } catch (const std::invalid_argument &error) {
    return std::string(error.what());
  }
  return std::string("no error");
}
} // namespace

TEST_CASE("link model: every pair of locations takes one link and one engine") {
  CHECK(fhr::link_between(Location::pageable(), Location::pinned()) == LinkKind::PageableToPinned);
  CHECK(fhr::link_between(Location::pinned(), Location::pageable()) == LinkKind::PinnedToPageable);
  CHECK(fhr::link_between(Location::pinned(), Location::cuda(0)) == LinkKind::PinnedToDevice);
  CHECK(fhr::link_between(Location::cuda(1), Location::pinned()) == LinkKind::DeviceToPinned);
  CHECK(fhr::link_between(Location::pageable(), Location::cuda(0)) == LinkKind::PageableToDevice);
  CHECK(fhr::link_between(Location::cuda(0), Location::pageable()) == LinkKind::DeviceToPageable);
  CHECK(fhr::link_between(Location::cuda(0), Location::cuda(1)) == LinkKind::DeviceToDevice);
  CHECK_FALSE(fhr::link_between(Location::cuda(0), Location::cuda(0)));

  CHECK(fhr::engine_of(Location::pinned(), Location::cuda(2)) == CopyQueue{CopyQueue::Kind::Inbound, 2});
  CHECK(fhr::engine_of(Location::cuda(0), Location::cuda(1)) == CopyQueue{CopyQueue::Kind::Inbound, 1});
  CHECK(fhr::engine_of(Location::cuda(3), Location::pageable()) == CopyQueue{CopyQueue::Kind::Outbound, 3});
  CHECK(fhr::engine_of(Location::pinned(), Location::pageable()) ==
        CopyQueue{CopyQueue::Kind::HostThreads, 0});
  for (std::size_t i = 0; i < fhr::kLinkKindCount; ++i) {
    const auto kind = static_cast<LinkKind>(i);
    CHECK(fhr::parse_link_kind(fhr::link_kind_name(kind)) == kind);
  }
  CHECK_FALSE(fhr::parse_link_kind("pinned-pinned"));
}

TEST_CASE("link model: a copy costs the latency plus the bytes over the bandwidth of its size class") {
  LinkModel model = LinkModel::h200();
  model.links[static_cast<std::size_t>(LinkKind::PinnedToDevice)] = {
      {{4096, 5e-6, 1e9}, {std::nullopt, 10e-6, 50e9}}};
  CHECK(model.transfer_seconds(Location::pinned(), Location::cuda(0), 4096) ==
        doctest::Approx(5e-6 + 4096 / 1e9));
  CHECK(model.transfer_seconds(Location::pinned(), Location::cuda(0), 4097) ==
        doctest::Approx(10e-6 + 4097 / 50e9));
  CHECK(model.transfer_seconds(Location::cuda(0), Location::cuda(0), 1 << 30) == 0.0);
  // The shipped default: a 256 MiB key crosses pinned -> device in about 4.9 ms.
  const double key = LinkModel::h200().transfer_seconds(Location::pinned(), Location::cuda(0), 256u << 20);
  CHECK(key > 4.8e-3);
  CHECK(key < 5.0e-3);
}

TEST_CASE("link model: the JSON profile round-trips and names what is wrong") {
  const std::string text = fhr::link_model_to_json(LinkModel::h200());
  const LinkModel back = fhr::link_model_from_json(text);
  CHECK(fhr::link_model_to_json(back) == text);
  CHECK(back.machine == LinkModel::h200().machine);
  CHECK(back.curve(LinkKind::PageableToDevice).classes.size() ==
        LinkModel::h200().curve(LinkKind::PageableToDevice).classes.size());
  CHECK(LinkModel::h200().machine.find("H200") != std::string::npos); // the shipped, measured profile

  CHECK(error_of("{") == "links profile: $: not valid JSON");
  CHECK(error_of(R"({"schema": "fhr-links/3"})") ==
        "links profile: $.schema: expected \"fhr-links/2\" (or the older \"fhr-links/1\")");
  // A version-2 document names the two host directions; the old name is not a link there.
  std::string old_name = text;
  old_name.replace(old_name.find("\"pageable-pinned\""), 17, "\"host-host\"");
  CHECK(error_of(old_name) == "links profile: $.links.pageable-pinned: missing");
  std::string no_links = text;
  no_links.replace(no_links.find("\"device-device\""), 15, "\"device-devise\"");
  CHECK(error_of(no_links) == "links profile: $.links.device-device: missing");
  std::string negative = text;
  negative.insert(negative.find("\"bandwidth_gbps\": ") + 18, "-");
  CHECK(error_of(negative) == "links profile: $.links.pageable-pinned[0].bandwidth_gbps: must be positive");
}

TEST_CASE("link model: a version-1 profile loads, its one host-host link serving both host directions") {
  const std::string v1 = R"({
    "schema": "fhr-links/1", "machine": "m", "measured": "t",
    "links": {
      "host-host": [{"max_bytes": 4096, "latency_us": 1, "bandwidth_gbps": 2},
                    {"max_bytes": null, "latency_us": 3, "bandwidth_gbps": 4}],
      "pinned-device": [{"max_bytes": null, "latency_us": 5, "bandwidth_gbps": 50}],
      "device-pinned": [{"max_bytes": null, "latency_us": 5, "bandwidth_gbps": 50}],
      "pageable-device": [{"max_bytes": null, "latency_us": 9, "bandwidth_gbps": 20}],
      "device-pageable": [{"max_bytes": null, "latency_us": 9, "bandwidth_gbps": 20}],
      "device-device": [{"max_bytes": null, "latency_us": 10, "bandwidth_gbps": 300}]},
    "duplex_bandwidth_gbps": 90, "device_allocation_us": 70, "pinned_allocation_ns_per_byte": 0.4,
    "event_record_us": 0.2, "event_query_us": 0.1,
    "samples": {"host-host": [{"bytes": 4096, "median_us": 3.048}]}})";
  const LinkModel model = fhr::link_model_from_json(v1);
  for (const LinkKind host : {LinkKind::PageableToPinned, LinkKind::PinnedToPageable}) {
    REQUIRE(model.curve(host).classes.size() == 2);
    CHECK(model.curve(host).seconds(4096) == doctest::Approx(1e-6 + 4096 / 2e9));
    CHECK(model.curve(host).seconds(1 << 20) == doctest::Approx(3e-6 + (1 << 20) / 4e9));
    REQUIRE(model.samples[static_cast<std::size_t>(host)].size() == 1);
    CHECK(model.samples[static_cast<std::size_t>(host)][0].seconds == doctest::Approx(3.048e-6));
  }
  // Written back, it is a version-2 profile with the two directions apart.
  const std::string written = fhr::link_model_to_json(model);
  CHECK(written.find("\"schema\": \"fhr-links/2\"") != std::string::npos);
  CHECK(written.find("\"pinned-pageable\"") != std::string::npos);
  CHECK(written.find("\"host-host\"") == std::string::npos);
}

TEST_CASE("link model: the shipped curves are the fit of their measured medians") {
  // runtime/model/profiles/h200.json: the merge of three calibrations
  // (`calibrate --merge`), every measured link 4 KiB .. 1 GiB doubling.
  const LinkModel &shipped = LinkModel::h200();
  for (std::size_t link = 0; link < fhr::kLinkKindCount; ++link) {
    const std::vector<fhr::LinkSample> &samples = shipped.samples[link];
    if (static_cast<LinkKind>(link) == LinkKind::DeviceToDevice) {
      CHECK(samples.empty()); // one GPU: kept from the earlier default
      continue;
    }
    REQUIRE(samples.size() == 19);
    CHECK(samples.front().bytes == 4096u);
    CHECK(samples.back().bytes == std::uint64_t{1} << 30);
    const fhr::LinkCurve fitted = fhr::fit_link_curve(samples);
    const fhr::LinkCurve &curve = shipped.links[link];
    REQUIRE(fitted.classes.size() == curve.classes.size());
    for (std::size_t c = 0; c < curve.classes.size(); ++c) {
      CHECK(curve.classes[c].max_bytes == fitted.classes[c].max_bytes);
      CHECK(curve.classes[c].latency_seconds ==
            doctest::Approx(fitted.classes[c].latency_seconds).epsilon(1e-5));
      CHECK(curve.classes[c].bytes_per_second ==
            doctest::Approx(fitted.classes[c].bytes_per_second).epsilon(1e-5));
    }
    for (const fhr::LinkSample &sample : samples)
      CHECK(curve.seconds(sample.bytes) == doctest::Approx(sample.seconds).epsilon(1e-4));
  }
  REQUIRE(shipped.load_samples.size() == 19);
  CHECK(shipped.load_pageable_to_device.seconds(std::uint64_t{1} << 30) ==
        doctest::Approx(shipped.load_samples.back().seconds).epsilon(1e-4));
}

TEST_CASE("link fit: an allocation's fixed part and rate through two block sizes, the origin where noise "
          "tips the line") {
  constexpr std::uint64_t kSmall = std::uint64_t{32} << 20, kLarge = std::uint64_t{256} << 20;
  // 32 MiB in 2.2 ms, 256 MiB in 10.2 ms: 8 ms over 224 MiB, 1.06 ms fixed.
  const fhr::AllocationCost line = fhr::fit_allocation_cost(kSmall, 2.2e-3, kLarge, 10.2e-3);
  CHECK(line.seconds_per_byte == doctest::Approx(8e-3 / static_cast<double>(kLarge - kSmall)));
  CHECK(line.of(kSmall) == doctest::Approx(2.2e-3));
  CHECK(line.of(kLarge) == doctest::Approx(10.2e-3));
  CHECK(line.seconds == doctest::Approx(2.2e-3 - 8e-3 / 7).epsilon(1e-9));
  // The smaller block as slow as the larger, or slower: no growth to fit.
  for (const double small : {10.2e-3, 12e-3}) {
    const fhr::AllocationCost flat = fhr::fit_allocation_cost(kSmall, small, kLarge, 10.2e-3);
    CHECK(flat.seconds == 0);
    CHECK(flat.of(kLarge) == doctest::Approx(10.2e-3));
  }
  // A line that would make a block of no bytes cost less than nothing.
  const fhr::AllocationCost steep = fhr::fit_allocation_cost(kSmall, 0.1e-3, kLarge, 10.2e-3);
  CHECK(steep.seconds == 0);
  CHECK(steep.seconds_per_byte == doctest::Approx(10.2e-3 / static_cast<double>(kLarge)));
  // Both measured as nothing (a warm copy as slow as the cold one): free.
  const fhr::AllocationCost none = fhr::fit_allocation_cost(kSmall, 0, kLarge, 0);
  CHECK(none.seconds == 0);
  CHECK(none.seconds_per_byte == 0);
}

TEST_CASE("link fit: piecewise linear through the medians, exact at every measured size") {
  // 4 KiB: 8 us; 64 KiB: 10 us (latency 7.87 us, 30.7 GB/s between);
  // 1 MiB: 30 us; a faster method from 4 MiB on (time falls): flat there.
  const std::vector<fhr::LinkSample> samples = {
      {4096, 8e-6}, {65536, 10e-6}, {1 << 20, 30e-6}, {4 << 20, 25e-6}, {16 << 20, 325e-6}};
  const fhr::LinkCurve curve = fhr::fit_link_curve(samples);
  REQUIRE(curve.classes.size() == 4);
  CHECK(curve.classes[0].max_bytes == 65536u);
  CHECK_FALSE(curve.classes[3].max_bytes);
  for (const fhr::LinkSample &sample : samples)
    CHECK(curve.seconds(sample.bytes) == doctest::Approx(sample.seconds).epsilon(1e-9));
  // Between two sizes: on the line (64 KiB .. 1 MiB: 20 us per 960 KiB).
  CHECK(curve.seconds(65536 + 491520) == doctest::Approx(20e-6).epsilon(1e-9));
  CHECK(curve.seconds(2 << 20) == doctest::Approx(25e-6).epsilon(1e-9)); // the flat class: its upper time
  // 4 .. 16 MiB: the line (300 us per 12 MiB) would start below zero at 0
  // bytes, so the class is 16 MiB in 325 us with no latency: 162.5 us at 8.
  CHECK(curve.seconds(8 << 20) == doctest::Approx(162.5e-6).epsilon(1e-9));
  CHECK(curve.seconds(32 << 20) == doctest::Approx(650e-6).epsilon(1e-9));
  // A segment whose line would start below zero keeps latency 0.
  const std::vector<fhr::LinkSample> convex = {{1 << 20, 10e-6}, {2 << 20, 30e-6}};
  const fhr::LinkCurve steep = fhr::fit_link_curve(convex);
  CHECK(steep.classes[0].latency_seconds == 0);
  CHECK(steep.seconds(2 << 20) == doctest::Approx(30e-6));
  // The fitted curve, its samples and the new keys survive the JSON profile.
  LinkModel model = LinkModel::h200();
  model.links[static_cast<std::size_t>(LinkKind::PinnedToDevice)] = curve;
  model.samples[static_cast<std::size_t>(LinkKind::PinnedToDevice)] = samples;
  model.source_load_bytes_per_second = 12.5e9;
  const LinkModel back = fhr::link_model_from_json(fhr::link_model_to_json(model));
  CHECK(back.samples[static_cast<std::size_t>(LinkKind::PinnedToDevice)].size() == samples.size());
  CHECK(back.samples[static_cast<std::size_t>(LinkKind::PinnedToDevice)][4].seconds ==
        doctest::Approx(325e-6));
  CHECK(back.source_load_bytes_per_second == doctest::Approx(12.5e9));
  CHECK(back.transfer_seconds(Location::pinned(), Location::cuda(0), 8 << 20) ==
        doctest::Approx(162.5e-6).epsilon(1e-5));
}

TEST_CASE("link model: a load's copy takes the load curve when one was measured, else its link's") {
  LinkModel model = LinkModel::h200();
  const Location pageable = Location::pageable(), gpu0 = Location::cuda(0);
  const std::uint64_t bytes = std::uint64_t{124} << 20;
  // A profile without loads measured (hand-written, or older than them).
  model.load_pageable_to_device = {};
  model.load_samples.clear();
  CHECK(model.load_transfer_seconds(pageable, gpu0, bytes) == model.transfer_seconds(pageable, gpu0, bytes));
  // Measured: 3 ms at 64 MiB, 5 ms at 128 MiB (the line through them: 1 ms
  // plus 2 ms per 64 MiB).
  model.load_samples = {{std::uint64_t{64} << 20, 3e-3}, {std::uint64_t{128} << 20, 5e-3}};
  model.load_pageable_to_device = fhr::fit_link_curve(model.load_samples);
  CHECK(model.load_transfer_seconds(pageable, gpu0, bytes) == doctest::Approx(4.875e-3).epsilon(1e-9));
  // Only pageable -> device loads: a load from pinned copies as any copy.
  CHECK(model.load_transfer_seconds(Location::pinned(), gpu0, bytes) ==
        model.transfer_seconds(Location::pinned(), gpu0, bytes));
  // Written and read back, curve and samples.
  const std::string text = fhr::link_model_to_json(model);
  const LinkModel back = fhr::link_model_from_json(text);
  CHECK(fhr::link_model_to_json(back) == text);
  REQUIRE(back.load_samples.size() == 2);
  CHECK(back.load_samples[1].seconds == doctest::Approx(5e-3));
  CHECK(back.load_transfer_seconds(pageable, gpu0, bytes) == doctest::Approx(4.875e-3).epsilon(1e-6));
}

TEST_CASE(
    "link model: a cold pinned block under a huge page costs its own figures, when a profile has them") {
  LinkModel model = LinkModel::h200();
  model.pinned_allocation_fixed_seconds.reset();
  model.pinned_allocation_seconds_per_byte = 0.1e-9;
  model.small_pinned_allocation.reset();
  // Without them (profiles older than the fourteenth wave): the large rate for every size.
  CHECK(model.pinned_allocation_seconds(1 << 20) == doctest::Approx(0.1e-9 * (1 << 20)));
  model.small_pinned_allocation = fhr::AllocationCost{20e-6, 0.5e-9};
  CHECK(model.pinned_allocation_seconds(1 << 20) == doctest::Approx(20e-6 + 0.5e-9 * (1 << 20)));
  CHECK(model.pinned_allocation_seconds(fhr::kHugePageBytes - 1) ==
        doctest::Approx(20e-6 + 0.5e-9 * static_cast<double>(fhr::kHugePageBytes - 1)));
  // From a huge page up, the pool's huge-page blocks: the large rate.
  CHECK(model.pinned_allocation_seconds(fhr::kHugePageBytes) ==
        doctest::Approx(0.1e-9 * static_cast<double>(fhr::kHugePageBytes)));

  // The two keys round-trip, and come together or not at all.
  const std::string text = fhr::link_model_to_json(model);
  const LinkModel back = fhr::link_model_from_json(text);
  REQUIRE(back.small_pinned_allocation);
  CHECK(back.small_pinned_allocation->seconds == doctest::Approx(20e-6));
  CHECK(back.small_pinned_allocation->seconds_per_byte == doctest::Approx(0.5e-9));
  CHECK(fhr::link_model_to_json(back) == text);
  auto renamed = [&](const std::string &key) {
    std::string changed = text;
    changed.replace(changed.find(key), key.size(), "\"unknown_key\"");
    return changed;
  };
  CHECK(error_of(renamed("\"small_pinned_allocation_ns_per_byte\"")) ==
        "links profile: $.small_pinned_allocation_us: needs \"small_pinned_allocation_us\" and "
        "\"small_pinned_allocation_ns_per_byte\" together");
  CHECK(error_of(renamed("\"small_pinned_allocation_us\"")) ==
        "links profile: $.small_pinned_allocation_ns_per_byte: needs \"small_pinned_allocation_us\" and "
        "\"small_pinned_allocation_ns_per_byte\" together");
}

namespace {
/// An optional figure in microseconds under `key`, set in `model` and
/// written as `printed`: it round-trips, a measured 0 stays one apart from no figure, a negative
/// figure or one that is not a number is refused. Returns `model` as a
/// profile made before the figure was measured reads it (the key left
/// out), the figure absent.
LinkModel check_optional_microseconds(const LinkModel &model, std::optional<double> LinkModel::*field,
                                      const std::string &key, const std::string &printed) {
  const double seconds = *(model.*field);
  const std::string text = fhr::link_model_to_json(model);
  // Written in microseconds.
  const std::size_t line = text.find("  \"" + key + "\": " + printed + ",\n");
  REQUIRE(line != std::string::npos);
  const LinkModel back = fhr::link_model_from_json(text);
  REQUIRE(back.*field);
  CHECK(*(back.*field) == doctest::Approx(seconds));
  CHECK(fhr::link_model_to_json(back) == text);
  LinkModel measured_zero = model;
  measured_zero.*field = 0.0;
  const LinkModel zero_back = fhr::link_model_from_json(fhr::link_model_to_json(measured_zero));
  REQUIRE(zero_back.*field);
  CHECK(*(zero_back.*field) == 0);
  const std::size_t value = line + key.size() + 6, end = text.find(',', value);
  std::string negative = text, not_number = text;
  negative.replace(value, end - value, "-1.0");
  CHECK(error_of(negative) == "links profile: $." + key + ": must be positive");
  not_number.replace(value, end - value, "\"x\"");
  CHECK(error_of(not_number) == "links profile: $." + key + ": expected a number");
  std::string older = text;
  older.erase(line, text.find('\n', line) + 1 - line);
  const LinkModel old_profile = fhr::link_model_from_json(older);
  CHECK_FALSE(old_profile.*field);
  return old_profile;
}
} // namespace

TEST_CASE("link model: a cold pinned block of a huge page or more costs a fixed part and a rate; the "
          "fixed part is optional") {
  LinkModel model = LinkModel::h200();
  model.pinned_allocation_fixed_seconds = 1.2e-3;
  model.pinned_allocation_seconds_per_byte = 0.04e-9;
  model.small_pinned_allocation = fhr::AllocationCost{20e-6, 0.5e-9};
  constexpr std::uint64_t kStagingBuffer = std::uint64_t{32} << 20;
  CHECK(model.pinned_allocation_seconds(kStagingBuffer) ==
        doctest::Approx(1.2e-3 + 0.04e-9 * static_cast<double>(kStagingBuffer)));
  // Under a huge page the small blocks' figures, the fixed part not among
  // them; without those figures the rate alone.
  CHECK(model.pinned_allocation_seconds(1 << 20) == doctest::Approx(20e-6 + 0.5e-9 * (1 << 20)));
  LinkModel no_small = model;
  no_small.small_pinned_allocation.reset();
  CHECK(no_small.pinned_allocation_seconds(1 << 20) == doctest::Approx(0.04e-9 * (1 << 20)));

  // Profiles made before it was measured have none: the rate alone.
  const LinkModel old_profile = check_optional_microseconds(
      model, &LinkModel::pinned_allocation_fixed_seconds, "pinned_allocation_us", "1200.0");
  CHECK(old_profile.pinned_allocation_seconds(kStagingBuffer) ==
        doctest::Approx(0.04e-9 * static_cast<double>(kStagingBuffer)));
}

TEST_CASE("link model: the device pool's granule round-trips, is optional, and must be a whole positive "
          "number") {
  LinkModel model = LinkModel::h200();
  CHECK(model.device_pool_granule_bytes == std::uint64_t{32} << 20); // the shipped profile's
  const std::string text = fhr::link_model_to_json(model);
  CHECK(fhr::link_model_from_json(text).device_pool_granule_bytes == std::uint64_t{32} << 20);
  auto with_value = [&](const std::string &value) {
    std::string changed = text;
    const std::string key = "\"device_pool_granule_bytes\": 33554432";
    changed.replace(changed.find(key), key.size(), "\"device_pool_granule_bytes\": " + value);
    return changed;
  };
  for (const char *bad : {"0", "-1", "1.5", "\"32 MiB\""})
    CHECK(error_of(with_value(bad)) ==
          "links profile: $.device_pool_granule_bytes: expected a whole number of bytes above 0");
  // Absent (profiles before it was measured): by the byte, and not written.
  model.device_pool_granule_bytes = 0;
  const std::string without = fhr::link_model_to_json(model);
  CHECK(without.find("\"device_pool_granule_bytes\":") == std::string::npos);
  CHECK(fhr::link_model_from_json(without).device_pool_granule_bytes == 0);
}

TEST_CASE("link model: the host memory figure round-trips, is optional, and is checked") {
  LinkModel model = LinkModel::h200();
  model.host_memory_bytes_per_second = 127.5e9;
  const std::string text = fhr::link_model_to_json(model);
  CHECK(fhr::link_model_from_json(text).host_memory_bytes_per_second == doctest::Approx(127.5e9));
  auto replaced = [&](const std::string &value) {
    std::string changed = text;
    const std::size_t at = changed.find("\"host_memory_gbps\": ");
    const std::size_t end = changed.find_first_of(",\n", at);
    changed.replace(at, end - at, "\"host_memory_gbps\": " + value);
    return changed;
  };
  CHECK(error_of(replaced("0")) == "links profile: $.host_memory_gbps: must be positive");
  CHECK(error_of(replaced("-3")) == "links profile: $.host_memory_gbps: must be positive");
  CHECK(error_of(replaced("\"fast\"")) == "links profile: $.host_memory_gbps: expected a number");
  // Absent (profiles before it was measured): not shared, and not written.
  model.host_memory_bytes_per_second = 0;
  const std::string without = fhr::link_model_to_json(model);
  CHECK(without.find("\"host_memory_gbps\"") == std::string::npos);
  CHECK(fhr::link_model_from_json(without).host_memory_bytes_per_second == 0);
}

TEST_CASE("link model: the host memory each copy reads and writes per byte") {
  const Location pinned = Location::pinned(), pageable = Location::pageable(), gpu0 = Location::cuda(0),
                 gpu1 = Location::cuda(1);
  CHECK(fhr::host_memory_traffic(pageable, pinned) == 2);
  CHECK(fhr::host_memory_traffic(pinned, pageable) == 2);
  CHECK(fhr::host_memory_traffic(pinned, gpu0) == 1);
  CHECK(fhr::host_memory_traffic(gpu0, pageable) == 1); // a staged copy's DMA part
  CHECK(fhr::host_memory_traffic(gpu0, gpu1) == 0);
  CHECK(fhr::host_memory_traffic(pinned, pinned) == 0);
  // A copy's phases: a staged pageable <-> device copy adds its host part,
  // a memcpy through a bounce buffer; no other copy has one.
  auto phases = [](Location from, Location to, bool staged) {
    const fhr::CopyHostTraffic traffic = fhr::copy_host_traffic(from, to, staged);
    return std::pair{traffic.transfer, traffic.host_part};
  };
  CHECK(phases(pageable, gpu0, true) == std::pair{1u, 2u});
  CHECK(phases(gpu0, pageable, true) == std::pair{1u, 2u});
  CHECK(fhr::copy_host_traffic(gpu0, pageable, true).total() == 3);
  CHECK(phases(pageable, gpu0, false) == std::pair{1u, 0u}); // below the staging threshold
  CHECK(phases(pinned, gpu0, true) == std::pair{1u, 0u});
  CHECK(phases(pageable, pinned, true) == std::pair{2u, 0u});
  CHECK(phases(gpu0, gpu1, true) == std::pair{0u, 0u});
}

TEST_CASE("link model: a DMA's extra after host work round-trips, is optional, and is checked") {
  LinkModel model = LinkModel::h200();
  model.dma_after_host_work_seconds = 62.5e-6;
  check_optional_microseconds(model, &LinkModel::dma_after_host_work_seconds, "dma_after_host_work_us",
                              "62.5");
}

TEST_CASE("link model: a cold value's DMA extra round-trips, is optional, and is checked") {
  LinkModel model = LinkModel::h200();
  model.dma_cold_value_seconds = 21.25e-6;
  check_optional_microseconds(model, &LinkModel::dma_cold_value_seconds, "dma_cold_value_us", "21.25");
}

TEST_CASE("link model: the follow-on DMA's extra round-trips, is optional, and is checked") {
  LinkModel model = LinkModel::h200();
  model.dma_follow_on_seconds = 7.75e-6;
  check_optional_microseconds(model, &LinkModel::dma_follow_on_seconds, "dma_follow_on_us", "7.75");
}
