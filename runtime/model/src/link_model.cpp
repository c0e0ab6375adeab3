#include "fhr/model/link_model.hpp"

#include "h200_profile.inc"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace fhr {

namespace {
constexpr std::array<std::string_view, kLinkKindCount> kLinkNames = {
    "pageable-pinned", "pinned-pageable", "pinned-device", "device-pinned",
    "pageable-device", "device-pageable", "device-device"};

constexpr std::string_view kSchema = "fhr-links/2";
/// The first schema: one `host-host` link stood for both host directions.
constexpr std::string_view kSchemaOne = "fhr-links/1";
constexpr std::string_view kHostHostOne = "host-host";

constexpr double kMicro = 1e-6;
constexpr double kGiga = 1e9;

/// A large cold pinned block's fixed part, beside the DMAs' extras.
constexpr OptionalMicroseconds kPinnedAllocationFixed = {"pinned_allocation_us",
                                                         &LinkModel::pinned_allocation_fixed_seconds};
/// Every optional figure of a profile: that, then the DMAs' extras.
constexpr auto kOptionalMicroseconds = [] {
  std::array<OptionalMicroseconds, 1 + std::size(kDmaExtraFigures)> all{};
  all[0] = kPinnedAllocationFixed;
  std::copy(std::begin(kDmaExtraFigures), std::end(kDmaExtraFigures), all.begin() + 1);
  return all;
}();
} // namespace

std::string_view link_kind_name(LinkKind kind) { return kLinkNames[static_cast<std::size_t>(kind)]; }

std::optional<LinkKind> parse_link_kind(std::string_view name) {
  for (std::size_t i = 0; i < kLinkNames.size(); ++i)
    if (kLinkNames[i] == name) return static_cast<LinkKind>(i);
  return std::nullopt;
}

std::optional<LinkKind> link_between(Location from, Location to) {
  if (from == to) return std::nullopt;
  if (!from.is_cuda() && !to.is_cuda())
    return to == Location::pinned() ? LinkKind::PageableToPinned : LinkKind::PinnedToPageable;
  if (from.is_cuda() && to.is_cuda()) return LinkKind::DeviceToDevice;
  if (to.is_cuda()) return from == Location::pinned() ? LinkKind::PinnedToDevice : LinkKind::PageableToDevice;
  return to == Location::pinned() ? LinkKind::DeviceToPinned : LinkKind::DeviceToPageable;
}

std::optional<CopyQueue> engine_of(Location from, Location to) {
  if (from == to) return std::nullopt;
  // Copies into a device run on its inbound stream (peer copies too); copies
  // out of a device to the host on its outbound stream.
  if (to.is_cuda()) return CopyQueue{CopyQueue::Kind::Inbound, to.device()};
  if (from.is_cuda()) return CopyQueue{CopyQueue::Kind::Outbound, from.device()};
  return CopyQueue{CopyQueue::Kind::HostThreads, 0};
}

double LinkModel::pinned_allocation_seconds(std::uint64_t bytes) const {
  const double by_rate = static_cast<double>(bytes) * pinned_allocation_seconds_per_byte;
  if (bytes < kHugePageBytes) return small_pinned_allocation ? small_pinned_allocation->of(bytes) : by_rate;
  return pinned_allocation_fixed_seconds.value_or(0) + by_rate;
}

const SizeClass &LinkCurve::class_for(std::uint64_t bytes) const {
  for (const SizeClass &size_class : classes)
    if (!size_class.max_bytes || bytes <= *size_class.max_bytes) return size_class;
  return classes.back();
}

double LinkCurve::seconds(std::uint64_t bytes) const {
  const SizeClass &size_class = class_for(bytes);
  return size_class.latency_seconds + static_cast<double>(bytes) / size_class.bytes_per_second;
}

double duplex_rate(double own_bytes_per_second, double other_bytes_per_second,
                   double duplex_bytes_per_second) {
  const double together = own_bytes_per_second + other_bytes_per_second;
  if (duplex_bytes_per_second <= 0 || together <= duplex_bytes_per_second) return own_bytes_per_second;
  return own_bytes_per_second * duplex_bytes_per_second / together;
}

unsigned host_memory_traffic(Location from, Location to) {
  if (from == to || (from.is_cuda() && to.is_cuda())) return 0;
  return from.is_cuda() || to.is_cuda() ? 1 : 2;
}

CopyHostTraffic copy_host_traffic(Location from, Location to, bool staged) {
  const std::optional<LinkKind> link = link_between(from, to);
  const bool stages =
      staged && link && (*link == LinkKind::PageableToDevice || *link == LinkKind::DeviceToPageable);
  // The host part is a memcpy between pageable memory and a bounce buffer.
  return {host_memory_traffic(from, to),
          stages ? host_memory_traffic(Location::pageable(), Location::pinned()) : 0};
}

void share_host_memory(std::span<double> rates, std::span<const unsigned> traffic,
                       double host_memory_bytes_per_second) {
  assert(rates.size() == traffic.size());
  if (!(host_memory_bytes_per_second > 0)) return; // 0 (not shared), and never NaN
  double demand = 0, largest = 0;
  unsigned touching = 0;
  for (std::size_t k = 0; k < rates.size(); ++k) {
    const double own = rates[k] * traffic[k];
    if (own <= 0) continue;
    ++touching;
    demand += own;
    largest = std::max(largest, own);
  }
  const double capacity = std::max(host_memory_bytes_per_second, largest);
  if (touching < 2 || demand <= capacity) return;
  for (std::size_t k = 0; k < rates.size(); ++k)
    if (traffic[k] > 0) rates[k] *= capacity / demand;
}

double LinkModel::transfer_seconds(Location from, Location to, std::uint64_t bytes) const {
  const std::optional<LinkKind> link = link_between(from, to);
  return link ? curve(*link).seconds(bytes) : 0.0;
}

double LinkModel::load_transfer_seconds(Location from, Location to, std::uint64_t bytes) const {
  if (from == Location::pageable() && to.is_cuda() && !load_pageable_to_device.classes.empty())
    return load_pageable_to_device.seconds(bytes);
  return transfer_seconds(from, to, bytes);
}

// ---- JSON ---------------------------------------------------------------

namespace {
using nlohmann::json;

[[noreturn]] void invalid(const std::string &path, const std::string &what) {
  throw std::invalid_argument("links profile: " + path + ": " + what);
}

// Views, not strings: GCC 13 warns of a dangling reference whenever a
// function returning one is given a temporary std::string.
const json &member(const json &object, std::string_view path, std::string_view key) {
  if (!object.is_object()) invalid(std::string(path), "expected an object");
  auto found = object.find(std::string(key));
  if (found == object.end()) invalid(std::string(path) + "." + std::string(key), "missing");
  return *found;
}

double positive_number(const json &object, const std::string &path, const char *key, bool allow_zero) {
  const json &value = member(object, path, key);
  if (!value.is_number()) invalid(path + "." + key, "expected a number");
  const double number = value.get<double>();
  if (!(number > 0 || (allow_zero && number == 0))) invalid(path + "." + key, "must be positive");
  return number;
}

/// A curve's size classes (`links.L`, `load_pageable_device`).
LinkCurve curve_from_json(const json &classes, const std::string &path) {
  if (!classes.is_array() || classes.empty()) invalid(path, "expected a non-empty array of size classes");
  LinkCurve curve;
  std::optional<std::uint64_t> previous;
  for (std::size_t c = 0; c < classes.size(); ++c) {
    const std::string class_path = path + "[" + std::to_string(c) + "]";
    const json &max_bytes = member(classes[c], class_path, "max_bytes");
    SizeClass size_class;
    const bool last = c + 1 == classes.size();
    if (max_bytes.is_null()) {
      if (!last) invalid(class_path + ".max_bytes", "only the last class may be unbounded");
    } else {
      if (!max_bytes.is_number_unsigned())
        invalid(class_path + ".max_bytes", "expected a byte count or null");
      size_class.max_bytes = max_bytes.get<std::uint64_t>();
      if (previous && *size_class.max_bytes <= *previous)
        invalid(class_path + ".max_bytes", "classes must ascend");
      if (last) invalid(class_path + ".max_bytes", "the last class must be unbounded (null)");
      previous = size_class.max_bytes;
    }
    size_class.latency_seconds = positive_number(classes[c], class_path, "latency_us", true) * kMicro;
    size_class.bytes_per_second = positive_number(classes[c], class_path, "bandwidth_gbps", false) * kGiga;
    curve.classes.push_back(size_class);
  }
  return curve;
}

/// A curve's measurements (`samples.L`, `load_samples`).
std::vector<LinkSample> samples_from_json(const json &list, const std::string &path) {
  if (!list.is_array()) invalid(path, "expected an array");
  std::vector<LinkSample> samples;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const std::string sample_path = path + "[" + std::to_string(k) + "]";
    const json &bytes = member(list[k], sample_path, "bytes");
    if (!bytes.is_number_unsigned()) invalid(sample_path + ".bytes", "expected a byte count");
    samples.push_back(LinkSample{bytes.get<std::uint64_t>(),
                                 positive_number(list[k], sample_path, "median_us", true) * kMicro});
  }
  return samples;
}

std::string text(const json &object, const std::string &path, const char *key) {
  const json &value = member(object, path, key);
  if (!value.is_string()) invalid(path + "." + key, "expected a string");
  return value.get<std::string>();
}
} // namespace

std::string link_model_to_json(const LinkModel &model) {
  using ordered = nlohmann::ordered_json;
  // Six significant digits: what a measurement can tell, and stable text.
  auto figure = [](double value) {
    if (value == 0) return 0.0;
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return std::strtod(text, nullptr);
  };
  auto classes_of = [&](const LinkCurve &curve) {
    ordered classes = ordered::array();
    for (const SizeClass &size_class : curve.classes)
      classes.push_back(
          {{"max_bytes", size_class.max_bytes ? ordered(*size_class.max_bytes) : ordered(nullptr)},
           {"latency_us", figure(size_class.latency_seconds / kMicro)},
           {"bandwidth_gbps", figure(size_class.bytes_per_second / kGiga)}});
    return classes;
  };
  auto samples_of = [&](const std::vector<LinkSample> &samples) {
    ordered list = ordered::array();
    for (const LinkSample &sample : samples)
      list.push_back({{"bytes", sample.bytes}, {"median_us", figure(sample.seconds / kMicro)}});
    return list;
  };
  ordered links = ordered::object();
  for (std::size_t i = 0; i < kLinkKindCount; ++i)
    links[std::string(kLinkNames[i])] = classes_of(model.links[i]);
  ordered document = {
      {"schema", std::string(kSchema)},
      {"machine", model.machine},
      {"measured", model.measured},
      {"links", std::move(links)},
      {"duplex_bandwidth_gbps", figure(model.duplex_bytes_per_second / kGiga)},
      {"device_allocation_us", figure(model.device_allocation_seconds / kMicro)},
      {"pinned_allocation_ns_per_byte", figure(model.pinned_allocation_seconds_per_byte / 1e-9)},
      {"event_record_us", figure(model.event_record_seconds / kMicro)},
      {"event_query_us", figure(model.event_query_seconds / kMicro)},
      {"source_load_gbps", figure(model.source_load_bytes_per_second / kGiga)},
      {"pinned_registration_ns_per_byte", figure(model.pinned_registration_seconds_per_byte / 1e-9)},
      {"device_growth_ns_per_byte", figure(model.device_growth_seconds_per_byte / 1e-9)},
      {"pageable_first_touch_ns_per_byte", figure(model.pageable_first_touch_seconds_per_byte / 1e-9)}};
  if (model.host_memory_bytes_per_second > 0)
    document["host_memory_gbps"] = figure(model.host_memory_bytes_per_second / kGiga);
  if (model.device_pool_granule_bytes > 0)
    document["device_pool_granule_bytes"] = model.device_pool_granule_bytes;
  for (const OptionalMicroseconds &optional : kOptionalMicroseconds)
    if (const std::optional<double> &seconds = model.*optional.field)
      document[optional.key] = figure(*seconds / kMicro);
  if (model.small_pinned_allocation) {
    document["small_pinned_allocation_us"] = figure(model.small_pinned_allocation->seconds / kMicro);
    document["small_pinned_allocation_ns_per_byte"] =
        figure(model.small_pinned_allocation->seconds_per_byte / 1e-9);
  }
  ordered samples = ordered::object();
  for (std::size_t i = 0; i < kLinkKindCount; ++i) {
    if (model.samples[i].empty()) continue;
    samples[std::string(kLinkNames[i])] = samples_of(model.samples[i]);
  }
  if (!samples.empty()) document["samples"] = std::move(samples);
  if (!model.load_pageable_to_device.classes.empty())
    document["load_pageable_device"] = classes_of(model.load_pageable_to_device);
  if (!model.load_samples.empty()) document["load_samples"] = samples_of(model.load_samples);
  return document.dump(2) + "\n";
}

LinkModel link_model_from_json(std::string_view input) {
  const json document = json::parse(input.begin(), input.end(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) invalid("$", "not valid JSON");
  const std::string schema = text(document, "$", "schema");
  const bool schema_one = schema == kSchemaOne;
  if (schema != kSchema && !schema_one)
    invalid("$.schema",
            "expected \"" + std::string(kSchema) + "\" (or the older \"" + std::string(kSchemaOne) + "\")");
  // The name a link has in this document: version 1 had one host link.
  auto document_name = [&](std::size_t link) {
    const auto kind = static_cast<LinkKind>(link);
    return schema_one && (kind == LinkKind::PageableToPinned || kind == LinkKind::PinnedToPageable)
               ? kHostHostOne
               : kLinkNames[link];
  };
  LinkModel model;
  model.machine = text(document, "$", "machine");
  model.measured = text(document, "$", "measured");
  const json &links = member(document, "$", "links");
  if (!links.is_object()) invalid("$.links", "expected an object");
  for (std::size_t i = 0; i < kLinkKindCount; ++i)
    model.links[i] = curve_from_json(member(links, "$.links", document_name(i)),
                                     "$.links." + std::string(document_name(i)));
  model.duplex_bytes_per_second = positive_number(document, "$", "duplex_bandwidth_gbps", false) * kGiga;
  model.device_allocation_seconds = positive_number(document, "$", "device_allocation_us", true) * kMicro;
  model.pinned_allocation_seconds_per_byte =
      positive_number(document, "$", "pinned_allocation_ns_per_byte", true) * 1e-9;
  model.event_record_seconds = positive_number(document, "$", "event_record_us", true) * kMicro;
  model.event_query_seconds = positive_number(document, "$", "event_query_us", true) * kMicro;
  // Keys added after the first profiles: optional, with the defaults.
  if (document.contains("source_load_gbps"))
    model.source_load_bytes_per_second = positive_number(document, "$", "source_load_gbps", false) * kGiga;
  if (document.contains("pinned_registration_ns_per_byte"))
    model.pinned_registration_seconds_per_byte =
        positive_number(document, "$", "pinned_registration_ns_per_byte", true) * 1e-9;
  if (document.contains("device_growth_ns_per_byte"))
    model.device_growth_seconds_per_byte =
        positive_number(document, "$", "device_growth_ns_per_byte", true) * 1e-9;
  if (document.contains("host_memory_gbps"))
    model.host_memory_bytes_per_second = positive_number(document, "$", "host_memory_gbps", false) * kGiga;
  if (document.contains("pageable_first_touch_ns_per_byte"))
    model.pageable_first_touch_seconds_per_byte =
        positive_number(document, "$", "pageable_first_touch_ns_per_byte", true) * 1e-9;
  for (const OptionalMicroseconds &optional : kOptionalMicroseconds)
    if (document.contains(optional.key))
      model.*optional.field = positive_number(document, "$", optional.key, true) * kMicro;
  if (document.contains("device_pool_granule_bytes")) {
    const json &granule = document["device_pool_granule_bytes"];
    if (!granule.is_number_unsigned() || granule.get<std::uint64_t>() == 0)
      invalid("$.device_pool_granule_bytes", "expected a whole number of bytes above 0");
    model.device_pool_granule_bytes = granule.get<std::uint64_t>();
  }
  // Both or neither: one alone would leave the other part of a small
  // block's cost unknown.
  const bool small_fixed = document.contains("small_pinned_allocation_us"),
             small_rate = document.contains("small_pinned_allocation_ns_per_byte");
  if (small_fixed != small_rate)
    invalid(small_fixed ? "$.small_pinned_allocation_us" : "$.small_pinned_allocation_ns_per_byte",
            "needs \"small_pinned_allocation_us\" and \"small_pinned_allocation_ns_per_byte\" together");
  if (small_fixed)
    model.small_pinned_allocation =
        AllocationCost{positive_number(document, "$", "small_pinned_allocation_us", true) * kMicro,
                       positive_number(document, "$", "small_pinned_allocation_ns_per_byte", true) * 1e-9};
  if (document.contains("samples")) {
    const json &samples = document["samples"];
    if (!samples.is_object()) invalid("$.samples", "expected an object");
    for (const auto &[name, list] : samples.items()) {
      const std::string path = "$.samples." + name;
      std::vector<LinkKind> kinds;
      if (schema_one && name == kHostHostOne) {
        kinds = {LinkKind::PageableToPinned, LinkKind::PinnedToPageable};
      } else if (const std::optional<LinkKind> kind = parse_link_kind(name);
                 kind && document_name(static_cast<std::size_t>(*kind)) == name) {
        kinds = {*kind};
      } else {
        invalid(path, "not a link kind");
      }
      for (const LinkSample &sample : samples_from_json(list, path))
        for (LinkKind kind : kinds)
          model.samples[static_cast<std::size_t>(kind)].push_back(sample);
    }
  }
  if (document.contains("load_pageable_device"))
    model.load_pageable_to_device =
        curve_from_json(document["load_pageable_device"], "$.load_pageable_device");
  if (document.contains("load_samples"))
    model.load_samples = samples_from_json(document["load_samples"], "$.load_samples");
  return model;
}

// ---- the shipped default --------------------------------------------------

const LinkModel &LinkModel::h200() {
  // `fhr-plan calibrate --backend cuda` on the project's H200 (the profile's
  // `measured` field says when); device-to-device links are not measured on
  // a one-GPU machine and keep the earlier benchmark figures (300 GB/s).
  static const LinkModel model = link_model_from_json(kH200Profile);
  return model;
}

} // namespace fhr
