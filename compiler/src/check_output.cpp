#include "fhr/compiler/output.hpp"

#include "fhr/compiler/diagnostic_output.hpp"

#include <algorithm>
#include <iterator>

namespace fhr {

namespace {

/// Calls f(report, unit, line, column) for each failing unit in file order.
template <typename F>
void for_each_failure(const std::vector<FileReport> &reports, F &&f) {
  for (const FileReport &report : reports)
    for (const ReportUnit &unit : report.units) {
      if (!unit.failure) continue;
      const SourceSpan &span = unit.steps[*unit.failure].span;
      f(report, unit, span.line, span.column);
    }
}

/// The failure's notes as diagnostics print them after a message: one
/// "\nnote: file:line:col: ..." line each (GitHub shows them under it).
std::string note_lines(const FileReport &report, const ReportUnit &unit) {
  std::string lines;
  for (const FailureNote &note : failure_notes(unit))
    lines += "\nnote: " + report.file + ":" + std::to_string(note.statement->span.line) + ":" +
             std::to_string(note.statement->span.column) + ": " + note.message;
  return lines;
}

} // namespace

void print_check_text(llvm::raw_ostream &os, const std::vector<FileReport> &reports) {
  for_each_failure(
      reports, [&](const FileReport &report, const ReportUnit &unit, unsigned line, unsigned column) {
        os << report.file << ':' << line << ':' << column << ": error: " << failure_summary(unit) << '\n';
        for (const FailureNote &note : failure_notes(unit))
          os << report.file << ':' << note.statement->span.line << ':' << note.statement->span.column
             << ": note: " << note.message << '\n';
      });
}

void print_check_github(llvm::raw_ostream &os, const std::vector<FileReport> &reports) {
  for_each_failure(
      reports, [&](const FileReport &report, const ReportUnit &unit, unsigned line, unsigned column) {
        os << "::error file=" << github_escape(report.file, true) << ",line=" << line << ",col=" << column
           << ",title=" << github_escape("fhr-plan check: " + unit.name, true)
           << "::" << github_escape(failure_summary(unit) + note_lines(report, unit), false) << '\n';
      });
}

nlohmann::ordered_json check_sarif(const std::vector<FileReport> &reports,
                                   const DiagnosticInputs &diagnostics, const std::string &version) {
  using json = nlohmann::ordered_json;
  // Rules: the simulator's error classes, then every diagnostic code.
  const ErrorClass classes[] = {ErrorClass::Budget, ErrorClass::Handle,    ErrorClass::Unavailable,
                                ErrorClass::InUse,  ErrorClass::Ownership, ErrorClass::InvalidArgument};
  json rules = json::array();
  for (ErrorClass error : classes) {
    const std::string text = std::string(error_class_name(error)) + " predicted by the residency simulator";
    rules.push_back(json{{"id", "fhr/" + std::string(error_class_id(error))},
                         {"shortDescription", json{{"text", text}}},
                         {"fullDescription", json{{"text", text + " (docs/semantics.md gives the rules)"}}},
                         {"helpUri", docs_uri("explain.md")},
                         {"defaultConfiguration", json{{"level", "error"}}}});
  }
  const std::size_t diagnostic_rules_offset = rules.size();
  for (json &rule : sarif::diagnostic_rules())
    rules.push_back(std::move(rule));
  json results = sarif::diagnostic_results(diagnostics, diagnostic_rules_offset);
  for_each_failure(reports, [&](const FileReport &report, const ReportUnit &unit, unsigned, unsigned) {
    const ReportStep &step = unit.steps[*unit.failure];
    const auto index = static_cast<std::size_t>(
        std::find(std::begin(classes), std::end(classes), step.error) - std::begin(classes));
    json result;
    result["ruleId"] = "fhr/" + std::string(error_class_id(step.error));
    if (index < std::size(classes)) result["ruleIndex"] = index;
    result["level"] = "error";
    result["message"] = json{{"text", failure_summary(unit)}};
    result["locations"] = json::array(
        {json{{"physicalLocation", json{{"artifactLocation", sarif::artifact_location(report.file)},
                                        {"region", sarif::region(step.span, unit.failure_excerpt)}}}}});
    json related = json::array();
    for (const FailureNote &note : failure_notes(unit))
      related.push_back(json{{"id", related.size()},
                             {"physicalLocation",
                              json{{"artifactLocation", sarif::artifact_location(report.file)},
                                   {"region", sarif::region(note.statement->span, note.statement->excerpt)}}},
                             {"message", json{{"text", note.message}}}});
    if (!related.empty()) result["relatedLocations"] = std::move(related);
    result["partialFingerprints"] =
        json{{"fhrFailure/v1",
              sarif::fingerprint({std::string(error_class_id(step.error)), unit.name, step.text})}};
    results.push_back(std::move(result));
  });
  json run;
  run["tool"] = json{{"driver", json{{"name", "fhr-plan"}, {"version", version}, {"rules", rules}}}};
  json invocation{{"executionSuccessful", !diagnostics.has_errors()}};
  if (!diagnostics.unlocated.empty())
    invocation["toolExecutionNotifications"] = sarif::notifications(diagnostics, diagnostic_rules_offset);
  run["invocations"] = json::array({std::move(invocation)});
  run["originalUriBaseIds"] = sarif::original_uri_base_ids();
  run["columnKind"] = "unicodeCodePoints";
  run["results"] = std::move(results);
  json log;
  log["$schema"] = "https://json.schemastore.org/sarif-2.1.0.json";
  log["version"] = "2.1.0";
  log["runs"] = json::array({std::move(run)});
  return log;
}

} // namespace fhr
