#include "svg_chart.hpp"

#include "fhr/compiler/human_size.hpp"
#include "fhr/compiler/pictures.hpp"
#include "fhr/compiler/report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace fhr::pictures {

namespace {

using json = nlohmann::ordered_json;

constexpr double kGap = 20, kLegendRow = 16;

std::string px(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", value);
  return buffer;
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.10g", value);
  return buffer;
}

double top_bytes(const LocationMemory &location) {
  std::uint64_t top = std::max<std::uint64_t>(location.peak_charged_bytes, location.budget_bytes.value_or(0));
  for (std::uint64_t charged : location.charged_bytes)
    top = std::max(top, charged);
  return top == 0 ? 1.0 : static_cast<double>(top) * 1.08;
}

double scale_of(const LocationMemory &location) { return kChartHeight / top_bytes(location); }

std::string step_label(const UnitPicture &picture, std::size_t state) {
  if (state == 0) return "before the first step";
  const json &step = picture.unit->at("steps")[state - 1];
  return "after step " + std::to_string(state) + " (" + step.value("phase", std::string()) +
         "): " + step.value("step", std::string());
}

std::string band_title(const MemoryBand &band) {
  switch (band.kind) {
  case MemoryBand::Kind::Before: return "resident before, not touched";
  case MemoryBand::Kind::Reservation: return "reservation " + band.name;
  case MemoryBand::Kind::Value: return band.name;
  }
  return band.name;
}

/// One stacked chart: columns (`x`, `width`) of states drawn bottom-up.
void draw_stacks(std::string &out, const UnitPicture &picture, const LocationMemory &location,
                 double origin_x, const char *css_class,
                 const std::vector<std::pair<double, double>> &columns) {
  const double scale = scale_of(location);
  const double base = kTop + kChartHeight;
  for (std::size_t state = 0; state < columns.size(); ++state) {
    const auto [x, width] = columns[state];
    if (width <= 0) continue;
    double y = base;
    for (std::size_t b = 0; b < location.bands.size(); ++b) {
      const MemoryBand &band = location.bands[b];
      const std::uint64_t bytes = band.bytes[state];
      if (bytes == 0) continue;
      const double height = static_cast<double>(bytes) * scale;
      y -= height;
      out += "<rect class=\"" + std::string(css_class) + "\" data-step=\"" + std::to_string(state) +
             "\" data-band=\"" + std::to_string(b) + "\" data-bytes=\"" + std::to_string(bytes) + "\" x=\"" +
             px(origin_x + x) + "\" y=\"" + px(y) + "\" width=\"" + px(width) + "\" height=\"" + px(height) +
             "\" fill=\"" + band_fill(band) + "\"><title>" +
             escape_xml(step_label(picture, state) + "\n" + band_title(band) + ": " + format_size(bytes) +
                        "\n" + location.location + " charged " + format_size(location.charged_bytes[state])) +
             "</title></rect>\n";
    }
  }
}

/// Temporary charges of a step (a load's replica at its source, a failing
/// request) drawn outlined above the stack they came on top of.
void draw_temporaries(std::string &out, const UnitPicture &picture, const LocationMemory &location,
                      double origin_x, const char *css_class,
                      const std::vector<std::pair<double, double>> &columns) {
  const double scale = scale_of(location);
  const double base = kTop + kChartHeight;
  for (std::size_t state = 1; state < columns.size(); ++state) {
    const std::uint64_t bytes = location.temporary_bytes[state];
    const auto [x, width] = columns[state];
    if (bytes == 0 || width <= 0) continue;
    const double below = static_cast<double>(location.temporary_base_bytes[state]) * scale;
    const double height = static_cast<double>(bytes) * scale;
    const bool failed = picture.memory.failure && *picture.memory.failure + 1 == state;
    out +=
        "<rect class=\"" + std::string(css_class) + "\" data-step=\"" + std::to_string(state) +
        "\" data-bytes=\"" + std::to_string(bytes) + "\" x=\"" + px(origin_x + x) + "\" y=\"" +
        px(base - below - height) + "\" width=\"" + px(width) + "\" height=\"" + px(height) + "\"><title>" +
        escape_xml(step_label(picture, state) + "\n" +
                   (failed ? "requested and refused: " : "temporary while it loads: ") + format_size(bytes)) +
        "</title></rect>\n";
  }
}

void draw_frame(std::string &out, const LocationMemory &location, double origin_x, const std::string &x_label,
                const std::string &x_end) {
  const double scale = scale_of(location);
  const double base = kTop + kChartHeight;
  out += "<line class=\"axis\" x1=\"" + px(origin_x) + "\" y1=\"" + px(base) + "\" x2=\"" +
         px(origin_x + kChartWidth) + "\" y2=\"" + px(base) + "\"/>\n";
  out += "<line class=\"axis\" x1=\"" + px(origin_x) + "\" y1=\"" + px(kTop) + "\" x2=\"" + px(origin_x) +
         "\" y2=\"" + px(base) + "\"/>\n";
  const double top = top_bytes(location) / 1.08;
  for (double fraction : {0.0, 0.5, 1.0}) {
    const double bytes = top * fraction;
    const double y = base - bytes * scale;
    out += "<text class=\"tick\" x=\"" + px(origin_x - 4) + "\" y=\"" + px(y + 4) +
           "\" text-anchor=\"end\">" + escape_xml(short_size(static_cast<std::uint64_t>(bytes))) +
           "</text>\n";
  }
  out += "<text class=\"tick\" x=\"" + px(origin_x) + "\" y=\"" + px(base + 16) + "\">0</text>\n";
  out += "<text class=\"tick\" x=\"" + px(origin_x + kChartWidth) + "\" y=\"" + px(base + 16) +
         "\" text-anchor=\"end\">" + escape_xml(x_end) + "</text>\n";
  out += "<text class=\"axis-label\" x=\"" + px(origin_x + kChartWidth / 2) + "\" y=\"" + px(base + 16) +
         "\" text-anchor=\"middle\">" + escape_xml(x_label) + "</text>\n";
  auto level = [&](const char *css_class, std::uint64_t bytes, const std::string &label) {
    const double y = base - static_cast<double>(bytes) * scale;
    out += "<line class=\"" + std::string(css_class) + "\" data-bytes=\"" + std::to_string(bytes) +
           "\" x1=\"" + px(origin_x) + "\" y1=\"" + px(y) + "\" x2=\"" + px(origin_x + kChartWidth) +
           "\" y2=\"" + px(y) + "\"><title>" + escape_xml(label) + "</title></line>\n";
    // The budget's label at the right, the peak's at the left: they may meet.
    const bool right = std::string(css_class) == "budget";
    out += "<text class=\"" + std::string(css_class) + "-label\" x=\"" +
           px(right ? origin_x + kChartWidth - 2 : origin_x + 4) + "\" y=\"" + px(y - 3) +
           "\" text-anchor=\"" + (right ? "end" : "start") + "\">" + escape_xml(label) + "</text>\n";
  };
  if (location.budget_bytes)
    level("budget", *location.budget_bytes, "budget " + format_size(*location.budget_bytes));
  level("peak", location.peak_charged_bytes, "peak " + format_size(location.peak_charged_bytes));
}

} // namespace

std::string escape_xml(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

std::string short_size(std::uint64_t bytes) {
  const auto [value, unit] = scale_binary(bytes);
  char buffer[32];
  if (bytes < 1024 || value >= 100 || value == static_cast<double>(static_cast<std::uint64_t>(value)))
    std::snprintf(buffer, sizeof buffer, "%.0f %s", value, unit);
  else
    std::snprintf(buffer, sizeof buffer, "%.1f %s", value, unit);
  return buffer;
}

std::string short_time(double microseconds) {
  char buffer[32];
  if (microseconds >= 1e6)
    std::snprintf(buffer, sizeof buffer, "%.3g s", microseconds / 1e6);
  else if (microseconds >= 1e3)
    std::snprintf(buffer, sizeof buffer, "%.3g ms", microseconds / 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.3g us", microseconds);
  return buffer;
}

std::string band_fill(const MemoryBand &band) {
  if (band.kind == MemoryBand::Kind::Before) return "#b9b9b9";
  if (band.kind == MemoryBand::Kind::Reservation) return "url(#fhr-hatch)";
  // FNV-1a of the name, of the family for members (rk[3]): a value has the
  // same colour in every chart, a family one hue with alternating shades.
  const std::size_t bracket = band.name.find('[');
  const std::string family = band.name.substr(0, bracket);
  std::uint32_t hash = 2166136261u;
  for (unsigned char c : family)
    hash = (hash ^ c) * 16777619u;
  unsigned lightness = 46 + (hash >> 9) % 12;
  if (bracket != std::string::npos) {
    const unsigned index = static_cast<unsigned>(std::atoi(band.name.c_str() + bracket + 1));
    lightness = index % 2 == 0 ? 44 : 60;
  }
  return "hsl(" + std::to_string(hash % 360) + ",55%," + std::to_string(lightness) + "%)";
}

std::vector<UnitPicture> unit_pictures(const json &document) {
  std::vector<UnitPicture> out;
  for (const json &file : document.at("files")) {
    for (const json &unit : file.at("units")) {
      UnitPicture picture;
      picture.file = file.value("file", std::string());
      picture.kind = unit.value("kind", std::string());
      picture.name = unit.value("name", std::string());
      picture.feasible = unit.value("feasible", true);
      picture.unit = &unit;
      picture.memory = unit_memory(unit);
      for (const json &step : unit.at("steps")) {
        const json time = step.value("time", json::object());
        picture.commit_us.push_back(time.value("commit_us", 0.0));
        picture.start_us.push_back(time.value("start_us", 0.0));
        picture.end_us.push_back(time.value("end_us", 0.0));
      }
      picture.total_us = unit.value("predicted_us", 0.0);
      picture.id = "u" + std::to_string(out.size());
      out.push_back(std::move(picture));
    }
  }
  return out;
}

std::vector<std::size_t> drawn_locations(const UnitPicture &picture) {
  std::vector<std::size_t> out;
  for (std::size_t l = 0; l < picture.memory.locations.size(); ++l) {
    const LocationMemory &location = picture.memory.locations[l];
    const bool charged = std::any_of(location.charged_bytes.begin(), location.charged_bytes.end(),
                                     [](std::uint64_t bytes) { return bytes > 0; });
    if (charged || location.budget_bytes || location.peak_charged_bytes > 0) out.push_back(l);
  }
  return out;
}

ChartSvg location_svg(const UnitPicture &picture, std::size_t l) {
  const LocationMemory &location = picture.memory.locations[l];
  const std::size_t states = picture.memory.steps + 1;
  const double second_x = kLeft + kChartWidth + kRight + kGap + kLeft;
  // The legend: one swatch per band, wrapped.
  std::string legend;
  double legend_x = kLeft, legend_y = kTop + kChartHeight + kBottom + 12;
  auto shown = [](const MemoryBand &band) {
    return std::any_of(band.bytes.begin(), band.bytes.end(), [](std::uint64_t bytes) { return bytes > 0; });
  };
  auto family_of = [](const MemoryBand &band) {
    const std::size_t bracket = band.name.find('[');
    return band.kind == MemoryBand::Kind::Value && bracket != std::string::npos ? band.name.substr(0, bracket)
                                                                                : std::string();
  };
  for (std::size_t b = 0; b < location.bands.size(); ++b) {
    const MemoryBand &band = location.bands[b];
    if (!shown(band)) continue;
    std::string label = band.kind == MemoryBand::Kind::Value ? band.name : band_title(band);
    // Members of one family that follow each other share one entry.
    if (const std::string family = family_of(band); !family.empty()) {
      std::size_t members = 1;
      while (b + 1 < location.bands.size() && family_of(location.bands[b + 1]) == family) {
        members += shown(location.bands[b + 1]) ? 1 : 0;
        ++b;
      }
      if (members > 1) label = family + "[...] (" + std::to_string(members) + " values)";
    }
    const double width = 18 + 6.6 * static_cast<double>(label.size()) + 14;
    if (legend_x + width > second_x + kChartWidth) {
      legend_x = kLeft;
      legend_y += kLegendRow;
    }
    legend += "<rect class=\"swatch\" x=\"" + px(legend_x) + "\" y=\"" + px(legend_y - 9) +
              "\" width=\"12\" height=\"10\" fill=\"" + band_fill(band) + "\"/><text class=\"legend\" x=\"" +
              px(legend_x + 16) + "\" y=\"" + px(legend_y) + "\">" + escape_xml(label) + "</text>\n";
    legend_x += width;
  }
  const double width = second_x + kChartWidth + kRight;
  const double height = legend_y + 8;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"" + picture.id + "-l" +
                    std::to_string(l) + "\" data-unit=\"" + picture.id + "\" data-location=\"" +
                    escape_xml(location.location) + "\" data-scale=\"" + number(scale_of(location)) +
                    "\" data-base=\"" + px(kTop + kChartHeight) + "\" width=\"" + px(width) + "\" height=\"" +
                    px(height) + "\" viewBox=\"0 0 " + px(width) + " " + px(height) + "\">\n";
  out += "<text class=\"chart-title\" x=\"" + px(kLeft) + "\" y=\"11\">" +
         escape_xml(location.location + " — charged bytes over steps") + "</text>\n";
  out += "<text class=\"chart-title\" x=\"" + px(second_x) + "\" y=\"11\">" +
         escape_xml(location.location + " — over predicted time") + "</text>\n";

  if (picture.memory.steps + 1 > kMaxDrawnSteps + 1) {
    out += "<text class=\"note\" x=\"" + px(kLeft + 8) + "\" y=\"" + px(kTop + 40) + "\">" +
           escape_xml(std::to_string(picture.memory.steps) + " steps: too many to draw (see the table)") +
           "</text>\n";
  } else {
    // Over steps: one column per state, before the first step and after each.
    const double column = kChartWidth / static_cast<double>(states);
    std::vector<std::pair<double, double>> columns;
    for (std::size_t s = 0; s < states; ++s)
      columns.emplace_back(static_cast<double>(s) * column + column * 0.07, column * 0.86);
    if (picture.memory.failure) {
      const double x = kLeft + static_cast<double>(*picture.memory.failure + 1) * column;
      out += "<rect class=\"failure\" data-step=\"" + std::to_string(*picture.memory.failure + 1) +
             "\" x=\"" + px(x) + "\" y=\"" + px(kTop) + "\" width=\"" + px(column) + "\" height=\"" +
             px(kChartHeight) + "\"><title>" +
             escape_xml("step " + std::to_string(*picture.memory.failure + 1) + " failed: " +
                        picture.unit->at("steps")[*picture.memory.failure].value("reason", std::string())) +
             "</title></rect>\n<text class=\"failure-label\" x=\"" + px(x + column / 2) + "\" y=\"" +
             px(kTop + 12) + "\" text-anchor=\"middle\">FAILED</text>\n";
    }
    draw_stacks(out, picture, location, kLeft, "band", columns);
    draw_temporaries(out, picture, location, kLeft, "temporary", columns);
    // Over time: the state after step k holds from its commit to the next.
    if (picture.total_us > 0) {
      const double end = picture.total_us * 1.05;
      const double per_us = kChartWidth / end;
      std::vector<std::pair<double, double>> spans;
      for (std::size_t s = 0; s < states; ++s) {
        const double from = s == 0 ? 0.0 : picture.commit_us[s - 1];
        const double to = s + 1 < states ? picture.commit_us[s] : end;
        spans.emplace_back(from * per_us, (to - from) * per_us);
      }
      draw_stacks(out, picture, location, second_x, "band-t", spans);
      std::vector<std::pair<double, double>> running(states, {0.0, 0.0});
      for (std::size_t s = 1; s < states; ++s)
        running[s] = {picture.start_us[s - 1] * per_us,
                      std::max(picture.end_us[s - 1] - picture.start_us[s - 1], 0.0) * per_us};
      draw_temporaries(out, picture, location, second_x, "temporary-t", running);
    } else {
      out += "<text class=\"note\" x=\"" + px(second_x + 8) + "\" y=\"" + px(kTop + 40) +
             "\">nothing is copied: no predicted time</text>\n";
    }
  }
  draw_frame(out, location, kLeft, "step", std::to_string(picture.memory.steps));
  draw_frame(out, location, second_x, "predicted time", short_time(picture.total_us * 1.05));
  out += legend;
  out += "</svg>\n";
  return ChartSvg{std::move(out), width, height};
}

std::string script_json(const json &data) {
  std::string text = data.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    // "</script>" inside a string would end the element: "<\/" is the same JSON.
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') {
      out += "<\\/";
      ++i;
      continue;
    }
    out += text[i];
  }
  return out;
}

json picture_data(const std::vector<UnitPicture> &pictures) {
  json units = json::array();
  for (const UnitPicture &picture : pictures) {
    json unit;
    unit["id"] = picture.id;
    unit["file"] = picture.file;
    unit["kind"] = picture.kind;
    unit["name"] = picture.name;
    unit["feasible"] = picture.feasible;
    unit["predicted_us"] = picture.total_us;
    unit["failure"] = picture.memory.failure ? json(*picture.memory.failure + 1) : json(nullptr);
    unit["drawn"] = picture.memory.steps <= kMaxDrawnSteps;
    json steps = json::array();
    const json &explained = picture.unit->at("steps");
    for (std::size_t k = 0; k < explained.size(); ++k) {
      const json &step = explained[k];
      json row;
      row["phase"] = step.value("phase", std::string());
      row["step"] = step.value("step", std::string());
      row["source"] = step.value("source", json(nullptr));
      row["destination"] = step.value("destination", json(nullptr));
      row["storage_bytes"] = step.value("storage_bytes", std::uint64_t{0});
      row["result"] = step.value("result", std::string());
      row["reason"] = step.value("reason", json(nullptr));
      row["value"] = picture.memory.values[k];
      row["time"] = step.value("time", json(nullptr));
      steps.push_back(std::move(row));
    }
    unit["steps"] = std::move(steps);
    json locations = json::array();
    for (std::size_t l : drawn_locations(picture)) {
      const LocationMemory &memory = picture.memory.locations[l];
      json location;
      location["location"] = memory.location;
      location["chart"] = picture.id + "-l" + std::to_string(l);
      location["budget_bytes"] = memory.budget_bytes ? json(*memory.budget_bytes) : json(nullptr);
      location["peak_charged_bytes"] = memory.peak_charged_bytes;
      location["charged_bytes"] = memory.charged_bytes;
      location["temporary_bytes"] = memory.temporary_bytes;
      location["temporary_base_bytes"] = memory.temporary_base_bytes;
      json bands = json::array();
      for (const MemoryBand &band : memory.bands)
        bands.push_back({{"kind", band.kind == MemoryBand::Kind::Before        ? "before"
                                  : band.kind == MemoryBand::Kind::Reservation ? "reservation"
                                                                               : "value"},
                         {"name", band.name},
                         {"bytes", band.bytes}});
      location["bands"] = std::move(bands);
      locations.push_back(std::move(location));
    }
    unit["locations"] = std::move(locations);
    units.push_back(std::move(unit));
  }
  return json{{"schema", kPicturesSchema}, {"units", std::move(units)}};
}

} // namespace fhr::pictures
