#include "run_report.hpp"

#include "fhr/model/link_fit.hpp"

#include "fhr/compiler/explain_time.hpp"
#include "fhr/compiler/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace fhr::cli {

namespace {

using json = nlohmann::ordered_json;

std::string verdict_text(Verdict verdict, ErrorClass raised) {
  switch (verdict) {
  case Verdict::Ok: return "done";
  case Verdict::NoOp: return "no-op";
  case Verdict::Failed: return "refused (" + std::string(error_class_id(raised)) + ")";
  }
  return "?";
}

bool is_action_step(const bytecode::Module &module, const StepRecord &step) {
  return bytecode::is_action(module.code[step.instruction].opcode) && step.kind != StepKind::Preflight;
}

/// The action a step ran, as the runtime resolved it: "ensure rotkey from
/// pageable to cuda:0", "drop rotkey at cuda:0"; other steps by their kind.
std::string action_text(const bytecode::Module &module, const StepRecord &step,
                        const std::vector<DeclaredValue> &values) {
  const bytecode::Instruction &in = module.code[step.instruction];
  if (in.opcode == bytecode::Opcode::Reserve && !step.failed())
    return "reserve " + in.location.name() + " " + format_size(in.size);
  if (!is_action_step(module, step) || step.failed()) return std::string(step_kind_name(step.kind));
  std::string text = std::string(bytecode::info(in.opcode).mnemonic);
  if (in.opcode == bytecode::Opcode::MoveFrom) text = "move";
  if (step.value < values.size()) text += " " + values[step.value].display_name();
  const bool drop = in.opcode == bytecode::Opcode::Drop;
  // A drop names the location it frees, as written (`drop x at L`).
  if (step.outcome.source) text += (drop ? " at " : " from ") + step.outcome.source->name();
  if (step.outcome.destination) text += " to " + step.outcome.destination->name();
  return text;
}

std::string fixed(double number, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, number);
  return text;
}

/// Microseconds to the nanosecond: stable numbers in the documents.
double rounded_us(double us) { return std::round(us * 1e3) / 1e3; }

json optional_us(const std::optional<double> &us) { return us ? json(rounded_us(*us)) : json(nullptr); }

json window_place_json(const std::optional<WindowPlace> &place) {
  return place ? json(window_place_name(*place)) : json(nullptr);
}

json location_json(const std::optional<Location> &location) {
  return location ? json(location->name()) : json(nullptr);
}

/// Length of the union of [start, end] spans (steps of a window overlap).
double union_length(std::vector<std::pair<double, double>> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0, open_start = 0, open_end = 0;
  bool open = false;
  for (const auto &[start, end] : spans) {
    if (open && start <= open_end) {
      open_end = std::max(open_end, end);
      continue;
    }
    if (open) total += open_end - open_start;
    open_start = start;
    open_end = end;
    open = true;
  }
  return open ? total + open_end - open_start : total;
}

/// Per link, the copies, bytes and times of `steps`, by link name.
std::vector<LinkTotal> link_totals(const std::vector<AnalyzedStep> &steps) {
  std::map<std::string, LinkTotal> by_link;
  for (const AnalyzedStep &step : steps) {
    if (step.transfer == StepTransfer::None) continue;
    LinkTotal &total = by_link[step.link];
    total.link = step.link;
    ++total.copies;
    total.bytes += step.bytes;
    total.measured_us += step.measured_duration_us().value_or(0);
    total.predicted_us += step.predicted_duration_us().value_or(0);
  }
  std::vector<LinkTotal> out;
  for (auto &[name, total] : by_link)
    out.push_back(total);
  return out;
}

} // namespace

std::optional<double> AnalyzedStep::predicted_duration_us() const {
  if (!predicted) return std::nullopt;
  return (predicted->commit_seconds - predicted->start_seconds) * 1e6;
}

std::optional<double> AnalyzedStep::measured_duration_us() const {
  if (!repeated_durations_us.empty()) return fhr::median(repeated_durations_us);
  if (!measured_start_us || !measured_end_us) return std::nullopt;
  return *measured_end_us - *measured_start_us;
}

std::optional<double> AnalyzedStep::predicted_before_copy_us() const {
  if (!predicted || !predicted->engine) return std::nullopt;
  return (predicted->copy_issue_seconds - predicted->start_seconds) * 1e6;
}

std::optional<SourceFills> source_fills(const AnalyzedRun &run) {
  SourceFills fills;
  for (const AnalyzedStep &step : run.steps) {
    if (step.transfer != StepTransfer::Load || !step.predicted || !step.measured_start_us) continue;
    ++fills.loads;
    fills.bytes += step.bytes;
    fills.measured_us += step.measured_source_load_us;
    fills.predicted_us += step.predicted->source_load_seconds * 1e6;
  }
  if (fills.loads == 0) return std::nullopt;
  return fills;
}

std::string source_fills_text(const SourceFills &fills) {
  std::string text = "source fills: " + std::to_string(fills.loads) +
                     (fills.loads == 1 ? " load, " : " loads, ") +
                     human_bytes(static_cast<double>(fills.bytes)) + " in " + human_time(fills.measured_us) +
                     " measured, " + human_time(fills.predicted_us) + " predicted";
  if (const std::optional<double> percent = fills.error_percent()) {
    char error[32];
    std::snprintf(error, sizeof error, " (%+.1f%%)", *percent);
    text += error;
  }
  return text + ": the host's memory against the profile's";
}

std::optional<double> AnalyzedStep::predicted_transfer_us() const {
  const std::optional<double> duration = predicted_duration_us();
  if (!duration) return std::nullopt;
  return *duration - predicted->source_load_seconds * 1e6;
}

std::optional<double> AnalyzedStep::measured_transfer_us() const {
  if (!repeated_durations_us.empty()) {
    // Per repetition, then the median: a slow fill and a fast copy of two
    // different repetitions do not make one transfer.
    std::vector<double> transfers;
    for (std::size_t r = 0; r < repeated_durations_us.size(); ++r)
      transfers.push_back(repeated_durations_us[r] - repeated_source_loads_us[r]);
    return fhr::median(std::move(transfers));
  }
  const std::optional<double> duration = measured_duration_us();
  if (!duration) return std::nullopt;
  return *duration - measured_source_load_us;
}

AnalyzedRun analyze_run(const std::string &file, const bytecode::Module &module, const ExecutionCheck &check,
                        const json *explanation, const LinkModel &links, const TimelineOptions &options) {
  AnalyzedRun run;
  run.file = file;
  run.kind = check.kind;
  run.name = check.name;
  run.check = &check;
  const std::vector<StepRecord> &steps = check.run.steps;

  // The prediction's time comes from the explanation when it has exactly
  // the steps the model predicted for this run (a plan refused by its
  // preflight is explained step by step, but runs as one refused step).
  std::optional<UnitMemory> memory;
  Timeline timeline;
  if (explanation && explanation->at("steps").size() == check.predicted.steps.size()) {
    memory = unit_memory(*explanation, MemorySeries::Totals);
    timeline = unit_timeline(*explanation, *memory, links, options);
    run.timed = true;
    run.predicted_us = timeline.total_seconds * 1e6;
  }
  if (check.warm_up) run.warm_up_measured_us = static_cast<double>(check.warm_up->duration_ns) / 1e3;
  std::uint64_t origin_ns = 0;
  for (const StepTiming &t : check.run.timings)
    if (t.completed_at_ns != 0 && (origin_ns == 0 || t.started_at_ns < origin_ns))
      origin_ns = t.started_at_ns;

  std::vector<std::pair<double, double>> measured_spans;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const StepRecord &step = steps[i];
    const bytecode::Instruction &in = module.code[step.instruction];
    AnalyzedStep row;
    row.line = in.line;
    row.phase = std::string(step_kind_name(step.kind));
    row.index = step.index;
    row.action = action_text(module, step, check.values);
    if (is_action_step(module, step) && step.value < module.value_count) {
      row.value = step.value < check.values.size() ? check.values[step.value].display_name() : "";
      // What crosses the link: the manager allocates and copies a value's
      // logical bytes (its storage size is what the budget charges).
      row.bytes = module.declaration_of(step.value).spec.logical_nbytes;
    } else if (in.opcode == bytecode::Opcode::Reserve) {
      row.bytes = in.size;
    }
    row.source = step.outcome.source;
    row.destination = step.outcome.destination;
    if (i < check.predicted.steps.size())
      row.predicted_result =
          verdict_text(check.predicted.steps[i].outcome.verdict, check.predicted.steps[i].raised);
    row.measured_result = verdict_text(step.outcome.verdict, step.raised);
    if (memory && i < memory->transfers.size()) {
      row.transfer = memory->transfers[i];
      row.predicted = timeline.steps[i];
    } else if (is_action_step(module, step) && step.outcome.verdict == Verdict::Ok && row.source &&
               row.destination) {
      row.transfer = StepTransfer::Copy; // unexplained: an executed ensure, copy or move copies
    }
    if (step.outcome.verdict != Verdict::Ok || !row.source || !row.destination)
      row.transfer = StepTransfer::None;
    if (i < check.run.timings.size() && check.run.timings[i].completed_at_ns != 0) {
      const StepTiming &t = check.run.timings[i];
      row.measured_start_us =
          static_cast<double>(t.started_at_ns - std::min(t.started_at_ns, origin_ns)) / 1e3;
      row.measured_end_us =
          static_cast<double>(t.completed_at_ns - std::min(t.completed_at_ns, origin_ns)) / 1e3;
      row.measured_source_load_us = static_cast<double>(t.source_load_ns) / 1e3;
      if (t.copy_issued_at_ns >= t.started_at_ns && t.copy_issued_at_ns != 0)
        row.measured_before_copy_us = static_cast<double>(t.copy_issued_at_ns - t.started_at_ns) / 1e3;
      run.span_us = std::max(run.span_us, *row.measured_end_us);
      measured_spans.emplace_back(*row.measured_start_us, *row.measured_end_us);
    }
    if (row.transfer != StepTransfer::None) {
      row.link = transfer_link_name(row.transfer, *row.source, *row.destination);
      run.bytes_moved += row.bytes;
    }
    run.steps.push_back(std::move(row));
  }
  // Without overlap every step runs alone and nothing is compared.
  if (run.timed && options.overlap) {
    run.windows_compared = true;
    for (const WindowDifference &difference : window_differences(timeline, check.run))
      run.window_differences.push_back(difference.step);
    for (std::size_t k = 0; k < run.steps.size() && k < timeline.steps.size(); ++k) {
      AnalyzedStep &row = run.steps[k];
      row.predicted_window = predicted_step_place(timeline, k);
      row.ran_window = ran_step_place(check.run, k);
      run.windows_predicted += row.predicted_window == WindowPlace::Opens;
      run.windows_ran += row.ran_window == WindowPlace::Opens;
    }
  }
  run.measured_us = union_length(std::move(measured_spans));
  run.links = link_totals(run.steps);
  if (const StepRecord *failed = check.run.failure())
    run.stopped_line = module.code[failed->instruction].line;
  return run;
}

AnalyzedRun combine_repetitions(std::vector<AnalyzedRun> repetitions) {
  if (repetitions.size() == 1) return std::move(repetitions.front());
  if (!repetitions.back().check->agrees()) {
    // The last one differs from the prediction (the ones before it agreed):
    // it is reported as it ran, the totals of all beside it.
    AnalyzedRun run = std::move(repetitions.back());
    for (const AnalyzedRun &repetition : repetitions)
      run.repeated_measured_us.push_back(repetition.measured_us);
    run.representative = repetitions.size() - 1;
    run.differing_repetition = true;
    return run;
  }
  std::vector<std::size_t> by_total(repetitions.size());
  for (std::size_t r = 0; r < by_total.size(); ++r)
    by_total[r] = r;
  std::stable_sort(by_total.begin(), by_total.end(), [&](std::size_t a, std::size_t b) {
    return repetitions[a].measured_us < repetitions[b].measured_us;
  });
  const std::size_t representative = by_total[(by_total.size() - 1) / 2];
  AnalyzedRun run = repetitions[representative];
  run.representative = representative;
  for (const AnalyzedRun &repetition : repetitions)
    run.repeated_measured_us.push_back(repetition.measured_us);
  for (std::size_t k = 0; k < run.steps.size(); ++k) {
    AnalyzedStep &step = run.steps[k];
    if (!step.measured_duration_us()) continue;
    std::vector<double> durations, source_loads, before_copy;
    for (const AnalyzedRun &repetition : repetitions) {
      if (k >= repetition.steps.size() || repetition.steps[k].action != step.action) continue;
      const AnalyzedStep &same = repetition.steps[k];
      if (const std::optional<double> duration = same.measured_duration_us()) {
        durations.push_back(*duration);
        source_loads.push_back(same.measured_source_load_us);
        if (same.measured_before_copy_us) before_copy.push_back(*same.measured_before_copy_us);
      }
    }
    step.measured_source_load_us = fhr::median(source_loads);
    step.measured_before_copy_us =
        before_copy.empty() ? std::nullopt : std::optional<double>(fhr::median(before_copy));
    step.repeated_before_copy_us = std::move(before_copy);
    step.repeated_durations_us = std::move(durations);
    step.repeated_source_loads_us = std::move(source_loads);
  }
  run.links = link_totals(run.steps);
  return run;
}

std::vector<LinkTotal> merge_links(const std::vector<AnalyzedRun> &runs) {
  std::map<std::string, LinkTotal> by_link;
  for (const AnalyzedRun &run : runs)
    for (const LinkTotal &link : run.links) {
      LinkTotal &total = by_link[link.link];
      total.link = link.link;
      total.copies += link.copies;
      total.bytes += link.bytes;
      total.measured_us += link.measured_us;
      total.predicted_us += link.predicted_us;
    }
  std::vector<LinkTotal> out;
  for (auto &[name, total] : by_link)
    out.push_back(total);
  return out;
}

std::string human_bytes(double bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? fixed(bytes, 0) + " B" : fixed(bytes, 1) + " " + units[unit];
}

std::string human_time(double us) {
  if (us >= 1e6) return fixed(us / 1e6, 2) + " s";
  if (us >= 1e3) return fixed(us / 1e3, 1) + " ms";
  return fixed(us, 1) + " us";
}

std::string link_text(const LinkTotal &link) {
  std::string text =
      link.link + " " + human_bytes(static_cast<double>(link.bytes)) + " in " + human_time(link.measured_us);
  if (link.measured_us > 0)
    text += " (" + fixed(static_cast<double>(link.bytes) / (link.measured_us * 1e3), 2) + " GB/s)";
  return text;
}

json run_document(const std::vector<AnalyzedRun> &runs, const std::string &backend, const LinkModel &links,
                  double wall_us, int exit_code) {
  auto link_json = [](const LinkTotal &link) {
    return json{{"link", link.link},
                {"copies", link.copies},
                {"bytes", link.bytes},
                {"measured_us", rounded_us(link.measured_us)},
                {"predicted_us", rounded_us(link.predicted_us)},
                {"measured_gbps", link.measured_us > 0
                                      ? json(static_cast<double>(link.bytes) / (link.measured_us * 1e3))
                                      : json(nullptr)}};
  };
  json out;
  out["schema"] = "fhr-run/1";
  out["backend"] = backend;
  out["links_profile"] = json{{"machine", links.machine}, {"measured", links.measured}};
  json run_list = json::array();
  std::uint64_t bytes_moved = 0;
  for (const AnalyzedRun &run : runs) {
    const ExecutionCheck &check = *run.check;
    json r;
    r["file"] = run.file;
    r["kind"] = run.kind;
    r["name"] = run.name;
    r["memory"] = check.sizes_only ? "sizes-only" : "bytes";
    r["setup_completed"] = check.setup.completed;
    r["completed"] = check.setup.completed && check.run.completed;
    r["agrees"] = check.agrees();
    r["differences"] = check.differences;
    r["content_checks"] = check.content_checks;
    r["content_checked"] = check.content_checked == ContentChecks::AtEnd ? "end" : "transitions";
    json steps = json::array();
    for (const AnalyzedStep &s : run.steps) {
      json step;
      step["line"] = s.line;
      step["phase"] = s.phase;
      step["index"] = s.index;
      step["action"] = s.action;
      step["value"] = s.value.empty() ? json(nullptr) : json(s.value);
      step["source"] = location_json(s.source);
      step["destination"] = location_json(s.destination);
      step["bytes"] = s.bytes;
      step["transfer"] = step_transfer_name(s.transfer);
      step["link"] = s.link.empty() ? json(nullptr) : json(s.link);
      json predicted{{"result", s.predicted_result.empty() ? json(nullptr) : json(s.predicted_result)}};
      if (s.predicted) {
        predicted["start_us"] = rounded_us(s.predicted->start_seconds * 1e6);
        predicted["copy_start_us"] = rounded_us(s.predicted->copy_start_seconds * 1e6);
        predicted["allocation_us"] = rounded_us(s.predicted->allocation_seconds * 1e6);
        predicted["source_load_us"] = rounded_us(s.predicted->source_load_seconds * 1e6);
        add_dma_extra_json(predicted, s.predicted->dma_extra);
        predicted["before_copy_us"] = optional_us(s.predicted_before_copy_us());
        predicted["end_us"] = rounded_us(s.predicted->end_seconds * 1e6);
        predicted["commit_us"] = rounded_us(s.predicted->commit_seconds * 1e6);
        predicted["duration_us"] = optional_us(s.predicted_duration_us());
        predicted["transfer_us"] = optional_us(s.predicted_transfer_us());
        predicted["engine"] = s.predicted->engine ? json(engine_name(*s.predicted->engine)) : json(nullptr);
        predicted["window"] = s.predicted->window ? json(*s.predicted->window) : json(nullptr);
      }
      predicted["window_place"] = window_place_json(s.predicted_window);
      step["predicted"] = std::move(predicted);
      step["measured"] =
          json{{"result", s.measured_result},
               {"start_us", optional_us(s.measured_start_us)},
               {"end_us", optional_us(s.measured_end_us)},
               {"duration_us", optional_us(s.measured_duration_us())},
               {"source_load_us",
                s.measured_start_us ? json(rounded_us(s.measured_source_load_us)) : json(nullptr)},
               {"transfer_us", optional_us(s.measured_transfer_us())},
               {"before_copy_us", optional_us(s.measured_before_copy_us)},
               {"window_place", window_place_json(s.ran_window)}};
      if (!s.repeated_durations_us.empty()) {
        json durations = json::array(), source_loads = json::array();
        for (std::size_t k = 0; k < s.repeated_durations_us.size(); ++k) {
          durations.push_back(rounded_us(s.repeated_durations_us[k]));
          source_loads.push_back(rounded_us(s.repeated_source_loads_us[k]));
        }
        json before_copy = json::array();
        for (double us : s.repeated_before_copy_us)
          before_copy.push_back(rounded_us(us));
        step["measured"]["repetitions"] = json{{"duration_us", std::move(durations)},
                                               {"source_load_us", std::move(source_loads)},
                                               {"before_copy_us", std::move(before_copy)}};
      }
      const std::optional<double> p = s.predicted_duration_us(), m = s.measured_duration_us();
      step["error_us"] = p && m ? json(rounded_us(*m - *p)) : json(nullptr);
      step["error_percent"] = p && m && *p > 0 ? json(rounded_us((*m - *p) / *p * 100)) : json(nullptr);
      steps.push_back(std::move(step));
    }
    r["steps"] = std::move(steps);
    if (run.windows_compared) {
      json differing = json::array();
      for (std::size_t k : run.window_differences)
        differing.push_back(k + 1);
      r["windows"] = json{{"predicted", run.windows_predicted},
                          {"ran", run.windows_ran},
                          {"differing_steps", std::move(differing)}};
    } else {
      r["windows"] = nullptr;
    }
    json peaks = json::array();
    for (const ExecutionCheck::Peak &peak : check.peaks)
      peaks.push_back(json{{"location", peak.location.name()},
                           {"predicted_bytes", peak.predicted},
                           {"measured_bytes", peak.measured}});
    r["peaks"] = std::move(peaks);
    r["warnings"] = check.warnings ? json(*check.warnings) : json::array();
    r["stopped"] = run.stopped_line
                       ? json{{"line", *run.stopped_line}, {"message", check.run.failure_message}}
                       : json(nullptr);
    if (!check.setup.completed)
      r["stopped"] = json{{"line", nullptr}, {"message", "setup: " + check.setup.failure_message}};
    r["totals"] =
        json{{"predicted_us", run.timed ? json(rounded_us(run.predicted_us)) : json(nullptr)},
             {"measured_us", rounded_us(run.measured_us)},
             {"span_us", rounded_us(run.span_us)},
             {"between_steps_us", rounded_us(run.span_us - run.measured_us)},
             {"error_us", run.timed ? json(rounded_us(run.measured_us - run.predicted_us)) : json(nullptr)},
             {"error_percent",
              run.timed && run.predicted_us > 0
                  ? json(rounded_us((run.measured_us - run.predicted_us) / run.predicted_us * 100))
                  : json(nullptr)},
             {"bytes_moved", run.bytes_moved}};
    if (const std::optional<SourceFills> fills = source_fills(run))
      r["totals"]["source_fills"] = json{{"loads", fills->loads},
                                         {"bytes", fills->bytes},
                                         {"measured_us", rounded_us(fills->measured_us)},
                                         {"predicted_us", rounded_us(fills->predicted_us)},
                                         {"error_percent", optional_us(fills->error_percent())}};
    else
      r["totals"]["source_fills"] = nullptr;
    if (!run.repeated_measured_us.empty()) {
      json totals = json::array();
      for (double us : run.repeated_measured_us)
        totals.push_back(rounded_us(us));
      r["repetitions"] = json{{"count", run.repeated_measured_us.size()},
                              {"representative", run.representative + 1},
                              {"differing", run.differing_repetition},
                              {"measured_us", std::move(totals)}};
    }
    r["warm_up"] = check.warm_up ? json{{"reserved_bytes", check.warm_up->reserved_bytes()},
                                        {"predicted_us", optional_us(run.warm_up_predicted_us)},
                                        {"measured_us", optional_us(run.warm_up_measured_us)}}
                                 : json(nullptr);
    json link_list = json::array();
    for (const LinkTotal &link : run.links)
      link_list.push_back(link_json(link));
    r["links"] = std::move(link_list);
    bytes_moved += run.bytes_moved;
    run_list.push_back(std::move(r));
  }
  out["runs"] = std::move(run_list);
  json all_links = json::array();
  for (const LinkTotal &link : merge_links(runs))
    all_links.push_back(link_json(link));
  out["totals"] = json{{"wall_us", rounded_us(wall_us)}, {"bytes_moved", bytes_moved}, {"links", all_links}};
  out["exit"] = exit_code;
  return out;
}

TraceDocument run_trace(const std::vector<AnalyzedRun> &runs) {
  TraceDocument trace;
  if (!runs.empty()) trace.title = runs.front().file;
  double offset = 0; // runs one after another, predicted and measured from the same moment
  for (const AnalyzedRun &run : runs) {
    const std::string unit = run.kind + " " + run.name;
    for (TraceSpan::Origin origin : {TraceSpan::Origin::Predicted, TraceSpan::Origin::Measured}) {
      const bool predicted = origin == TraceSpan::Origin::Predicted;
      if (predicted && !run.timed) continue;
      TraceSpan whole{origin,
                      "plans and programs",
                      unit,
                      offset,
                      offset + (predicted ? run.predicted_us : run.span_us),
                      json{{"file", run.file}, {"agrees", run.check->agrees()}}};
      trace.spans.push_back(std::move(whole));
    }
    for (std::size_t k = 0; k < run.steps.size(); ++k) {
      const AnalyzedStep &s = run.steps[k];
      const json args{{"step", k + 1},
                      {"line", s.line},
                      {"phase", s.phase},
                      {"bytes", s.bytes},
                      {"link", s.link},
                      {"predicted", s.predicted_result},
                      {"measured", s.measured_result}};
      const bool lifetime = s.phase == "acquire" || s.phase == "hold";
      const std::optional<CopyQueue> engine =
          s.transfer != StepTransfer::None ? engine_of(*s.source, *s.destination) : std::nullopt;
      if (s.predicted) {
        const double start = offset + s.predicted->start_seconds * 1e6;
        const double copy_start = offset + s.predicted->copy_start_seconds * 1e6;
        const double end = offset + s.predicted->end_seconds * 1e6;
        const double commit = offset + s.predicted->commit_seconds * 1e6;
        trace.spans.push_back(
            TraceSpan{TraceSpan::Origin::Predicted, "steps", s.action, start, commit, args});
        if (s.predicted->engine)
          trace.spans.push_back(TraceSpan{TraceSpan::Origin::Predicted, engine_name(*s.predicted->engine),
                                          s.action, copy_start, end, args});
        // A copy in a window is in place before the steps ahead of it committed.
        if (commit > end)
          trace.spans.push_back(
              TraceSpan{TraceSpan::Origin::Predicted, "event waits", "wait: " + s.action, end, commit, args});
        if (lifetime)
          trace.spans.push_back(
              TraceSpan{TraceSpan::Origin::Predicted, "leases", s.action, start, commit, args});
        if (s.predicted_result.rfind("refused", 0) == 0)
          trace.instants.push_back(
              TraceInstant{TraceSpan::Origin::Predicted, "steps", "FAILED: " + s.action, start, args});
      }
      if (s.measured_start_us) {
        const double start = offset + *s.measured_start_us, end = offset + *s.measured_end_us;
        trace.spans.push_back(TraceSpan{TraceSpan::Origin::Measured, "steps", s.action, start, end, args});
        if (engine)
          trace.spans.push_back(
              TraceSpan{TraceSpan::Origin::Measured, engine_name(*engine), s.action, start, end, args});
        if (lifetime)
          trace.spans.push_back(TraceSpan{TraceSpan::Origin::Measured, "leases", s.action, start, end, args});
      }
      if (s.measured_result.rfind("refused", 0) == 0)
        trace.instants.push_back(TraceInstant{TraceSpan::Origin::Measured, "steps", "FAILED: " + s.action,
                                              offset + s.measured_start_us.value_or(run.span_us), args});
    }
    offset += std::max(run.predicted_us, run.span_us);
  }
  return trace;
}

} // namespace fhr::cli
