#include "fhr/compiler/output.hpp"

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

/// GitHub workflow commands need %, CR and LF escaped in the message, and
/// also ',' and ':' in properties.
std::string github_escape(const std::string &text, bool property) {
  std::string out;
  for (char c : text) {
    if (c == '%')
      out += "%25";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\n')
      out += "%0A";
    else if (property && c == ':')
      out += "%3A";
    else if (property && c == ',')
      out += "%2C";
    else
      out += c;
  }
  return out;
}

} // namespace

void print_check_text(llvm::raw_ostream &os, const std::vector<FileReport> &reports) {
  for_each_failure(
      reports, [&](const FileReport &report, const ReportUnit &unit, unsigned line, unsigned column) {
        os << report.file << ':' << line << ':' << column << ": error: " << failure_summary(unit) << '\n';
      });
}

void print_check_github(llvm::raw_ostream &os, const std::vector<FileReport> &reports) {
  for_each_failure(
      reports, [&](const FileReport &report, const ReportUnit &unit, unsigned line, unsigned column) {
        os << "::error file=" << github_escape(report.file, true) << ",line=" << line << ",col=" << column
           << ",title=" << github_escape("fhr-plan check: " + unit.name, true)
           << "::" << github_escape(failure_summary(unit), false) << '\n';
      });
}

nlohmann::ordered_json check_sarif(const std::vector<FileReport> &reports, const std::string &version) {
  using json = nlohmann::ordered_json;
  json results = json::array();
  for_each_failure(reports, [&](const FileReport &report, const ReportUnit &unit, unsigned line,
                                unsigned column) {
    const ReportStep &step = unit.steps[*unit.failure];
    json result;
    result["ruleId"] = "fhr/" + std::string(error_class_id(step.error));
    result["level"] = "error";
    result["message"] = json{{"text", failure_summary(unit)}};
    result["locations"] = json::array(
        {json{{"physicalLocation", json{{"artifactLocation", json{{"uri", report.file}}},
                                        {"region", json{{"startLine", line}, {"startColumn", column}}}}}}});
    results.push_back(std::move(result));
  });
  json rules = json::array();
  for (ErrorClass error : {ErrorClass::Budget, ErrorClass::Handle, ErrorClass::Unavailable, ErrorClass::InUse,
                           ErrorClass::Ownership, ErrorClass::InvalidArgument}) {
    rules.push_back(json{{"id", "fhr/" + std::string(error_class_id(error))},
                         {"shortDescription", json{{"text", std::string(error_class_name(error)) +
                                                                " predicted by the residency simulator"}}}});
  }
  json run;
  run["tool"] = json{{"driver", json{{"name", "fhr-plan"}, {"version", version}, {"rules", rules}}}};
  run["results"] = std::move(results);
  json log;
  log["$schema"] = "https://json.schemastore.org/sarif-2.1.0.json";
  log["version"] = "2.1.0";
  log["runs"] = json::array({std::move(run)});
  return log;
}

} // namespace fhr
