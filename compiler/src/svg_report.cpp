// explain --format svg: the charts of every plan and program in one SVG
// document, for documents and reviews (docs/pictures.md).
#include "fhr/compiler/pictures.hpp"

#include "svg_chart.hpp"

#include <algorithm>
#include <cstdio>

namespace fhr {

namespace {
using json = nlohmann::ordered_json;
using namespace pictures;

constexpr const char *kSvgStyle = R"CSS(
text { font: 11px "DejaVu Sans", sans-serif; fill: #333; }
.unit-title { font-size: 14px; font-weight: 600; fill: #1d1d1f; }
.unit-failed { fill: #b3261e; }
.chart-title { font-weight: 600; }
.axis { stroke: #777; stroke-width: 1; }
.budget { stroke: #b3261e; stroke-width: 1.5; } .budget-label { fill: #b3261e; }
.peak { stroke: #1d1d1f; stroke-width: 1; stroke-dasharray: 4 3; }
.failure { fill: #b3261e; fill-opacity: 0.12; stroke: #b3261e; stroke-width: 1.5; }
.failure-label { fill: #b3261e; font-weight: 700; }
rect.band, rect.band-t { stroke: #fff; stroke-width: 0.4; }
)CSS";

std::string px(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", value);
  return buffer;
}
} // namespace

std::string render_svg(json document, const LinkModel &links) {
  add_predicted_time(document, links);
  const std::vector<UnitPicture> units = unit_pictures(document);
  std::string body;
  double y = 8, width = 400;
  for (const UnitPicture &unit : units) {
    std::string title = unit.kind + " \"" + unit.name + "\" (" + unit.file + ")" +
                        (unit.feasible ? ": feasible" : ": INFEASIBLE");
    if (unit.total_us > 0) title += ", predicted " + short_time(unit.total_us);
    y += 18;
    body += "<text class=\"unit-title" + std::string(unit.feasible ? "" : " unit-failed") +
            "\" x=\"8\" y=\"" + px(y) + "\">" + escape_xml(title) + "</text>\n";
    y += 6;
    for (std::size_t l : drawn_locations(unit)) {
      const ChartSvg chart = location_svg(unit, l);
      // A nested <svg> placed at its offset keeps each chart's coordinates.
      std::string text = chart.text;
      text.insert(text.find(' '), " x=\"0\" y=\"" + px(y) + "\"");
      body += text;
      y += chart.height;
      width = std::max(width, chart.width);
    }
  }
  y += 8;
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         px(width) + "\" height=\"" + px(y) + "\" viewBox=\"0 0 " + px(width) + " " + px(y) + "\">\n<style>" +
         kSvgStyle + "</style>\n<defs>" + kHatchPattern +
         "</defs>\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n" + body + "</svg>\n";
}

} // namespace fhr
