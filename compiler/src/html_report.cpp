// explain --format html: one self-contained page (docs/pictures.md).
#include "fhr/compiler/pictures.hpp"

#include "fhr/compiler/report.hpp"
#include "svg_chart.hpp"

namespace fhr {

namespace {

using json = nlohmann::ordered_json;
using namespace pictures;

constexpr const char *kStyle = R"CSS(
body { font: 13px/1.4 system-ui, "DejaVu Sans", sans-serif; margin: 16px 24px; color: #1d1d1f; background: #fff; }
h1 { font-size: 18px; margin: 0 0 4px; } h2 { font-size: 15px; margin: 22px 0 6px; }
.meta { color: #555; margin: 0 0 10px; }
.verdict-ok { color: #17703a; } .verdict-failed { color: #b3261e; font-weight: 600; }
svg.chart { display: block; margin: 4px 0 8px; overflow: visible; }
svg.chart text { font: 11px system-ui, "DejaVu Sans", sans-serif; fill: #333; }
svg.chart .chart-title { font-weight: 600; }
svg.chart .axis { stroke: #777; stroke-width: 1; }
svg.chart .budget { stroke: #b3261e; stroke-width: 1.5; }
svg.chart .budget-label { fill: #b3261e; }
svg.chart .peak { stroke: #1d1d1f; stroke-width: 1; stroke-dasharray: 4 3; }
svg.chart .failure { fill: #b3261e; fill-opacity: 0.12; stroke: #b3261e; stroke-width: 1.5; }
svg.chart .failure-label { fill: #b3261e; font-weight: 700; }
svg.chart rect.band, svg.chart rect.band-t { stroke: #fff; stroke-width: 0.4; cursor: pointer; }
svg.chart rect.hl { stroke: #000; stroke-width: 1.5; }
svg.chart rect.temporary, svg.chart rect.temporary-t { fill: none; stroke: #555; stroke-width: 1; stroke-dasharray: 3 2; }
table.steps { border-collapse: collapse; margin: 4px 0 12px; }
table.steps th, table.steps td { padding: 2px 8px; border-bottom: 1px solid #e4e4e4; text-align: left; white-space: nowrap; }
table.steps td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.steps tr.hl td { background: #fff3c4; }
table.steps tr.failed td { color: #b3261e; font-weight: 600; }
.tip { position: fixed; pointer-events: none; background: #1d1d1f; color: #fff; padding: 6px 8px; border-radius: 4px;
       font-size: 12px; white-space: pre; max-width: 60ch; z-index: 10; }
#fhr-check { color: #555; font-size: 11px; }
)CSS";

// Hover details, the links between charts and table, and the page's own
// check: every drawn element against the embedded data (tests/browser/).
constexpr const char *kScript = R"JS(
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('fhr-data').textContent);
  const tip = document.getElementById('fhr-tip');
  const near = (a, b) => Math.abs(a - b) <= 0.05;
  const problems = [];
  let checked = 0;
  function widths(unit) {
    // The width of each state's span in the chart over time (0: not drawn).
    const states = unit.steps.length + 1, end = unit.predicted_us * 1.05, out = [];
    for (let s = 0; s < states; ++s) {
      const from = s === 0 ? 0 : unit.steps[s - 1].time.commit_us;
      const to = s + 1 < states ? unit.steps[s].time.commit_us : end;
      out.push(to - from);
    }
    return out;
  }
  for (const unit of data.units) {
    const section = document.getElementById(unit.id);
    if (!section) { problems.push('no section for ' + unit.id); continue; }
    const rows = section.querySelectorAll('tbody tr');
    if (rows.length !== unit.steps.length) problems.push(unit.id + ': ' + rows.length + ' rows for ' + unit.steps.length + ' steps');
    if (unit.failure !== null) {
      const row = document.getElementById(unit.id + '-s' + unit.failure);
      if (!row || !row.classList.contains('failed')) problems.push(unit.id + ': failing row not marked');
    }
    if (!unit.drawn) continue;
    const spans = unit.predicted_us > 0 ? widths(unit) : null;
    for (const loc of unit.locations) {
      const svg = document.getElementById(loc.chart);
      if (!svg) { problems.push('no chart ' + loc.chart); continue; }
      const scale = Number(svg.dataset.scale), base = Number(svg.dataset.base);
      for (const cls of ['band', 'band-t']) {
        if (cls === 'band-t' && !spans) continue;
        let expected = 0;
        const tops = [];
        loc.bands.forEach(b => b.bytes.forEach((v, s) => { if (v > 0 && (cls === 'band' || spans[s] > 0)) ++expected; }));
        const rects = svg.querySelectorAll('rect.' + cls);
        if (rects.length !== expected) problems.push(loc.chart + ' ' + cls + ': ' + rects.length + ' rectangles, expected ' + expected);
        rects.forEach(r => {
          const s = Number(r.dataset.step), b = Number(r.dataset.band);
          const bytes = loc.bands[b] ? loc.bands[b].bytes[s] : undefined;
          if (String(bytes) !== r.dataset.bytes) problems.push(loc.chart + ': step ' + s + ' band ' + b + ' shows ' + r.dataset.bytes + ' B, data ' + bytes);
          const box = r.getBBox();
          if (!near(box.height, bytes * scale)) problems.push(loc.chart + ': step ' + s + ' band ' + b + ' is ' + box.height + ' px high, expected ' + bytes * scale);
          if (bytes * scale >= 1 && r.getBoundingClientRect().height <= 0) problems.push(loc.chart + ': step ' + s + ' not rendered');
          tops[s] = Math.min(tops[s] === undefined ? base : tops[s], box.y);
          ++checked;
        });
        tops.forEach((top, s) => {
          if (!near(base - top, loc.charged_bytes[s] * scale)) problems.push(loc.chart + ' ' + cls + ': stack of step ' + s + ' is ' + (base - top) + ' px, charged ' + loc.charged_bytes[s] * scale);
        });
      }
      // Temporary charges: outlined above the stack before their step (less
      // the reservations released just before it).
      const temporaries = svg.querySelectorAll('rect.temporary');
      const expectedTemporaries = loc.temporary_bytes.filter(v => v > 0).length;
      if (temporaries.length !== expectedTemporaries) problems.push(loc.chart + ': ' + temporaries.length + ' temporary charges drawn, expected ' + expectedTemporaries);
      temporaries.forEach(r => {
        const s = Number(r.dataset.step), bytes = loc.temporary_bytes[s];
        const box = r.getBBox();
        if (String(bytes) !== r.dataset.bytes || !near(box.height, bytes * scale) ||
            !near(box.y, base - (loc.temporary_base_bytes[s] + bytes) * scale))
          problems.push(loc.chart + ': temporary charge of step ' + s + ' misdrawn');
        ++checked;
      });
      const levels = [['budget', loc.budget_bytes], ['peak', loc.peak_charged_bytes]];
      for (const [cls, bytes] of levels) {
        const lines = svg.querySelectorAll('line.' + cls);
        if (bytes === null) { if (lines.length) problems.push(loc.chart + ': a ' + cls + ' line without a ' + cls); continue; }
        if (lines.length !== 2) { problems.push(loc.chart + ': ' + lines.length + ' ' + cls + ' lines'); continue; }
        lines.forEach(line => { if (!near(line.y1.baseVal.value, base - bytes * scale)) problems.push(loc.chart + ': ' + cls + ' line misplaced'); ++checked; });
      }
      if (unit.failure !== null) {
        const mark = svg.querySelector('rect.failure');
        if (!mark || Number(mark.dataset.step) !== unit.failure) problems.push(loc.chart + ': failing step not marked');
      }
    }
  }
  const verdict = problems.length ? 'fail' : 'ok';
  document.body.setAttribute('data-fhr-check', verdict);
  document.getElementById('fhr-check').textContent = 'fhr-check: ' + verdict + ', ' + checked + ' elements checked' +
      (problems.length ? '\n' + problems.join('\n') : '');
  problems.forEach(p => console.error('fhr-check: ' + p));

  // Hover: details beside the pointer, the step's row lit; click: go to it.
  function rowOf(el) {
    const svg = el.closest('svg.chart');
    return svg ? document.getElementById(svg.dataset.unit + '-s' + el.dataset.step) : null;
  }
  function light(unitId, step, on) {
    document.querySelectorAll('svg.chart[data-unit="' + unitId + '"] rect[data-step="' + step + '"]').forEach(r => {
      if (!r.classList.contains('failure')) r.classList.toggle('hl', on);
    });
    const row = document.getElementById(unitId + '-s' + step);
    if (row) row.classList.toggle('hl', on);
  }
  document.querySelectorAll('svg.chart rect.band, svg.chart rect.band-t').forEach(r => {
    const title = r.querySelector('title');
    const text = title ? title.textContent : '';
    if (title) title.remove(); // the page shows its own tip
    const unitId = r.closest('svg.chart').dataset.unit;
    r.addEventListener('mouseenter', () => { tip.textContent = text; tip.hidden = false; light(unitId, r.dataset.step, true); });
    r.addEventListener('mousemove', e => { tip.style.left = (e.clientX + 14) + 'px'; tip.style.top = (e.clientY + 12) + 'px'; });
    r.addEventListener('mouseleave', () => { tip.hidden = true; light(unitId, r.dataset.step, false); });
    r.addEventListener('click', () => { const row = rowOf(r); if (row) row.scrollIntoView({block: 'center'}); });
  });
  document.querySelectorAll('table.steps tbody tr').forEach(row => {
    const unitId = row.closest('section.unit').id;
    row.addEventListener('mouseenter', () => light(unitId, row.dataset.step, true));
    row.addEventListener('mouseleave', () => light(unitId, row.dataset.step, false));
  });
})();
)JS";

std::string cell(const std::string &text, bool numeric = false) {
  return std::string(numeric ? "<td class=\"num\">" : "<td>") + escape_xml(text) + "</td>";
}

std::string optional_text(const json &step, const char *key) {
  auto found = step.find(key);
  return found != step.end() && found->is_string() ? found->get<std::string>() : "-";
}

std::string unit_section(const UnitPicture &picture) {
  const json &unit = *picture.unit;
  std::string out = "<section class=\"unit\" id=\"" + picture.id + "\">\n<h2>" +
                    escape_xml(picture.kind + " \"" + picture.name + "\"") + " — <span class=\"" +
                    (picture.feasible ? "verdict-ok\">feasible" : "verdict-failed\">INFEASIBLE") + "</span>";
  if (picture.total_us > 0) out += " — predicted " + escape_xml(short_time(picture.total_us));
  out += "</h2>\n<p class=\"meta\">" + escape_xml(picture.file) + ", line " +
         std::to_string(unit.at("position").value("line", 0)) + "</p>\n";
  if (const json &failure = unit.at("failure"); failure.is_object())
    out += "<p class=\"verdict-failed\">" + escape_xml(failure.value("message", std::string())) + "</p>\n";
  for (std::size_t l : drawn_locations(picture))
    out += location_svg(picture, l).text;
  out += "<table class=\"steps\"><thead><tr><th>#</th><th>phase</th><th>step</th><th>source</th>"
         "<th>destination</th><th>bytes</th><th>result</th><th>start</th><th>end</th><th>engine</th></tr>"
         "</thead><tbody>\n";
  const json &steps = unit.at("steps");
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const json &step = steps[k];
    const std::string result = step.value("result", std::string());
    const std::string shown = result == "ok" ? "ok" : result + ": " + optional_text(step, "reason");
    const json time = step.value("time", json(nullptr));
    out += "<tr id=\"" + picture.id + "-s" + std::to_string(k + 1) + "\" data-step=\"" +
           std::to_string(k + 1) + "\"" + (result == "failed" ? " class=\"failed\"" : "") + ">" +
           cell(std::to_string(k + 1), true) + cell(optional_text(step, "phase")) +
           cell(optional_text(step, "step")) + cell(optional_text(step, "source")) +
           cell(optional_text(step, "destination")) +
           cell(format_size(step.value("storage_bytes", std::uint64_t{0})), true) + cell(shown) +
           cell(time.is_object() ? short_time(time.value("start_us", 0.0)) : "-", true) +
           cell(time.is_object() ? short_time(time.value("end_us", 0.0)) : "-", true) +
           cell(time.is_object() ? optional_text(time, "engine") : "-") + "</tr>\n";
  }
  out += "</tbody></table>\n</section>\n";
  return out;
}

} // namespace

std::string render_html(json document, const LinkModel &links) {
  add_predicted_time(document, links);
  const std::vector<UnitPicture> units = unit_pictures(document);
  std::string files;
  for (const json &file : document.at("files"))
    files += (files.empty() ? "" : ", ") + file.value("file", std::string());
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
      escape_xml("fhr explain: " + files) + "</title>\n<style>" + kStyle + "</style>\n</head>\n" +
      "<body data-fhr-check=\"pending\">\n" +
      "<svg width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\"><defs>" +
      kHatchPattern + "</defs></svg>\n<h1>" + escape_xml("fhr explain: " + files) +
      "</h1>\n<p class=\"meta\">" +
      (document.value("feasible", true) ? "every plan and program feasible"
                                        : "<span class=\"verdict-failed\">something is infeasible</span>") +
      " · times predicted with the link profile of " +
      escape_xml(document.at("links").value("machine", std::string())) + " (" +
      escape_xml(document.at("links").value("measured", std::string())) +
      ") · grey: resident before and untouched; hatched: reservations; dotted boxes: charged only while a "
      "step runs (a load's temporary replica, a refused request); red line: budget; dashed: predicted "
      "peak</p>\n";
  for (const UnitPicture &unit : units)
    out += unit_section(unit);
  const std::string data = script_json(picture_data(units));
  out += "<div id=\"fhr-tip\" class=\"tip\" hidden></div>\n<pre id=\"fhr-check\"></pre>\n"
         "<script type=\"application/json\" id=\"fhr-data\">" +
         data + "</script>\n<script>" + kScript + "</script>\n</body>\n</html>\n";
  return out;
}

} // namespace fhr
