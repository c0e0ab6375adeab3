#pragma once
// The memory timeline charts shared by the HTML page and the SVG document:
// one SVG fragment per location of a unit, and the data both are drawn
// from (which the HTML page embeds and checks its charts against).
#include "fhr/compiler/explain_time.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace fhr::pictures {

/// One plan or program, ready to draw.
struct UnitPicture {
  std::string file, kind, name;
  bool feasible = true;
  const nlohmann::ordered_json *unit = nullptr;
  UnitMemory memory;
  /// Per step: when it committed (µs); the state after step k holds from
  /// commit[k] to commit[k + 1].
  std::vector<double> commit_us;
  std::vector<double> start_us, end_us; ///< per step: when its copy ran
  double total_us = 0;
  std::string id; ///< "u3": element ids of this unit start with it
};

/// Every unit of a document whose steps carry `time`.
std::vector<UnitPicture> unit_pictures(const nlohmann::ordered_json &document);

/// Geometry of one chart, in pixels.
inline constexpr double kChartWidth = 540, kChartHeight = 150, kLeft = 64, kTop = 16, kBottom = 26,
                        kRight = 12;
inline constexpr std::size_t kMaxDrawnSteps = 2000; ///< larger units are summarised, not drawn

/// Locations worth a chart: charged at some step, or budgeted.
std::vector<std::size_t> drawn_locations(const UnitPicture &picture);

/// `<svg>` of one location: the chart over steps beside the chart over
/// predicted time. Elements carry data-* attributes that name the step,
/// band and bytes they show; `<title>` children give hover details.
struct ChartSvg {
  std::string text;
  double width = 0, height = 0;
};
ChartSvg location_svg(const UnitPicture &picture, std::size_t location);

/// JSON for a `<script type="application/json">` element ("</" escaped).
std::string script_json(const nlohmann::ordered_json &data);

/// The hatch pattern reservations are filled with (id fhr-hatch).
inline constexpr const char *kHatchPattern =
    "<pattern id=\"fhr-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
    "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fde3c0\"/>"
    "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#e8912d\" stroke-width=\"3\"/></pattern>";

/// The embedded data (schema fhr-pictures/1): per unit, steps with times,
/// locations with budget, peak, scale and bands.
nlohmann::ordered_json picture_data(const std::vector<UnitPicture> &pictures);

/// Colour of a band: grey for what was there before, hatched for
/// reservations, a stable hue per value name otherwise.
std::string band_fill(const MemoryBand &band);

std::string escape_xml(const std::string &text);
/// "259 MiB", "1.5 GiB": short sizes for axes and labels.
std::string short_size(std::uint64_t bytes);
/// "4.93 ms", "12.0 us".
std::string short_time(double microseconds);

} // namespace fhr::pictures
