#include "fhr/compiler/diagnostic_output.hpp"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/xxhash.h>

#ifndef FHR_DOCS_URL
#define FHR_DOCS_URL "file:///usr/local/share/doc/fhr"
#endif

namespace fhr {

namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kDiagnosticsDoc =
#include "diagnostics_md.inc"
    ;

/// Whether the source is standard input without a name.
bool unnamed_stdin(llvm::StringRef name) { return name == "<stdin>"; }

std::string severity_text(Severity severity) { return severity == Severity::Error ? "error" : "warning"; }

/// The message with what `print` shows beside it.
std::string full_message(const Diagnostic &d) {
  std::string message = d.message;
  if (d.occurrences > 1) message += " (in " + std::to_string(d.occurrences) + " iterations)";
  if (d.promoted) message += " [-Werror=" + warning_flag(d.code).str() + "]";
  return message;
}

json position(const SourceFile &source, std::uint32_t offset) {
  const auto [line, column] = source.line_and_column(offset);
  return json{{"line", line}, {"column", column}};
}

/// RFC 3986 percent-encoding of a path (unreserved characters and '/' kept).
std::string percent_encode(llvm::StringRef path) {
  std::string out;
  for (char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    if (llvm::isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += c;
    } else {
      out += '%';
      out += llvm::hexdigit(byte >> 4);
      out += llvm::hexdigit(byte & 15);
    }
  }
  return out;
}

} // namespace

bool DiagnosticInputs::has_errors() const {
  for (const SourceFile *source : sources)
    if (source->has_errors()) return true;
  for (const InputDiagnostic &d : unlocated)
    if (d.severity == Severity::Error) return true;
  return false;
}

std::string_view diagnostic_documentation(DiagCode code) {
  const std::string heading = "\n## " + diag_code_text(code).str() + ":";
  const std::size_t start = kDiagnosticsDoc.find(heading);
  if (start == std::string_view::npos) return {};
  const std::size_t end = kDiagnosticsDoc.find("\n## ", start + heading.size());
  std::string_view section =
      kDiagnosticsDoc.substr(start + 1, end == std::string_view::npos ? end : end - start);
  // Each heading has an anchor line before it (`<a id="E0009"></a>`): the
  // next section's is not part of this one.
  for (bool trimmed = true; trimmed;) {
    trimmed = false;
    while (!section.empty() && (section.back() == '\n' || section.back() == ' '))
      section.remove_suffix(1);
    const std::size_t last_line = section.rfind('\n');
    if (last_line != std::string_view::npos && section.substr(last_line + 1).starts_with("<a id=")) {
      section = section.substr(0, last_line);
      trimmed = true;
    }
  }
  return section;
}

std::string diagnostic_explanation(DiagCode code) {
  std::string_view section = diagnostic_documentation(code);
  const std::size_t body = section.find("\n\n");
  if (body == std::string_view::npos) return diag_code_summary(code).str();
  section.remove_prefix(body + 2);
  std::string paragraph(section.substr(0, section.find("\n\n")));
  std::replace(paragraph.begin(), paragraph.end(), '\n', ' ');
  return paragraph;
}

std::string docs_uri(std::string_view page) { return std::string(FHR_DOCS_URL) + "/" + std::string(page); }

std::string diagnostic_help_uri(DiagCode code) {
  return docs_uri("diagnostics.md#" + diag_code_text(code).str());
}

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

void print_diagnostics_github(llvm::raw_ostream &os, const DiagnosticInputs &inputs) {
  for (const InputDiagnostic &d : inputs.unlocated) {
    os << "::" << severity_text(d.severity) << ' ';
    if (!d.file.empty()) os << "file=" << github_escape(d.file, true) << ',';
    os << "title="
       << github_escape("[" + diag_code_text(d.code).str() + "] " + diag_code_summary(d.code).str(), true)
       << "::" << github_escape(d.message, false) << '\n';
  }
  for (const SourceFile *source : inputs.sources)
    for (const Diagnostic &d : source->diagnostics()) {
      const auto [line, column] = source->line_and_column(d.span.begin);
      const auto [end_line, end_column] = source->line_and_column(std::max(d.span.end, d.span.begin));
      std::string message = full_message(d);
      for (const DiagnosticNote &note : d.notes) {
        const auto [note_line, note_column] = source->line_and_column(note.span.begin);
        message += "\nnote: " + source->name().str() + ":" + std::to_string(note_line) + ":" +
                   std::to_string(note_column) + ": " + note.message;
      }
      if (!d.hint.empty()) message += "\nnote: " + d.hint;
      os << "::" << severity_text(d.severity) << " file=" << github_escape(source->name().str(), true)
         << ",line=" << line << ",col=" << column;
      if (end_line == line)
        os << ",endColumn=" << end_column;
      else
        os << ",endLine=" << end_line << ",endColumn=" << end_column;
      os << ",title="
         << github_escape("[" + diag_code_text(d.code).str() + "] " + diag_code_summary(d.code).str(), true)
         << "::" << github_escape(message, false) << '\n';
    }
}

namespace sarif {

json diagnostic_rules() {
  json rules = json::array();
  for (DiagCode code : all_diag_codes()) {
    json rule;
    rule["id"] = diag_code_text(code).str();
    rule["shortDescription"] = json{{"text", diag_code_summary(code).str()}};
    rule["fullDescription"] = json{{"text", diagnostic_explanation(code)}};
    rule["helpUri"] = diagnostic_help_uri(code);
    rule["defaultConfiguration"] = json{{"level", diag_code_is_warning(code) ? "warning" : "error"}};
    if (diag_code_is_warning(code)) rule["properties"] = json{{"flag", "-W" + warning_flag(code).str()}};
    rules.push_back(std::move(rule));
  }
  return rules;
}

json artifact_location(const std::string &path) {
  if (unnamed_stdin(path)) return json{{"description", json{{"text", "standard input"}}}};
  if (llvm::sys::path::is_absolute(path)) return json{{"uri", "file://" + percent_encode(path)}};
  llvm::SmallString<256> relative(path);
  llvm::sys::path::remove_dots(relative, true);
  return json{{"uri", percent_encode(relative)}, {"uriBaseId", "SRCROOT"}};
}

json original_uri_base_ids() {
  llvm::SmallString<256> cwd;
  if (llvm::sys::fs::current_path(cwd)) cwd = "/";
  std::string uri = "file://" + percent_encode(cwd);
  if (uri.back() != '/') uri += '/';
  return json{
      {"SRCROOT", json{{"uri", uri}, {"description", json{{"text", "the directory fhr-plan ran in"}}}}}};
}

json region(const SourceFile &source, ast::Span span) {
  const auto [line, column] = source.line_and_column(span.begin);
  const auto [end_line, end_column] = source.line_and_column(std::max(span.end, span.begin));
  json out{{"startLine", line}, {"startColumn", column}};
  if (end_line != line) out["endLine"] = end_line;
  out["endColumn"] = end_column;
  return out;
}

json region(const SourceSpan &span, std::string_view line_text) {
  // 1-based byte column -> 1-based code-point column (continuation bytes
  // 10xxxxxx start no character).
  auto code_points = [&](std::uint32_t byte_column) {
    std::uint32_t column = 1;
    const std::size_t end = std::min<std::size_t>(byte_column == 0 ? 0 : byte_column - 1, line_text.size());
    for (std::size_t i = 0; i < end; ++i)
      if ((static_cast<unsigned char>(line_text[i]) & 0xC0) != 0x80) ++column;
    return column + static_cast<std::uint32_t>(
                        byte_column - 1 > line_text.size() ? byte_column - 1 - line_text.size() : 0);
  };
  json out{{"startLine", span.line}, {"startColumn", code_points(span.column)}};
  out["endColumn"] = code_points(std::max(span.end_column, span.column));
  return out;
}

std::string fingerprint(const std::vector<std::string> &parts) {
  std::string joined;
  for (const std::string &part : parts) {
    joined += part;
    joined += '\x1f';
  }
  return llvm::utohexstr(llvm::xxHash64(joined), true, 16);
}

json diagnostic_results(const DiagnosticInputs &inputs, std::size_t rule_offset) {
  json results = json::array();
  for (const SourceFile *source : inputs.sources)
    for (const Diagnostic &d : source->diagnostics()) {
      const std::string file = source->name().str();
      json location{{"physicalLocation", json{{"artifactLocation", artifact_location(file)},
                                              {"region", region(*source, d.span)}}}};
      json result;
      result["ruleId"] = diag_code_text(d.code).str();
      result["ruleIndex"] = rule_offset + static_cast<unsigned>(d.code);
      result["level"] = severity_text(d.severity);
      std::string text = full_message(d);
      if (!d.hint.empty()) text += "; " + d.hint;
      result["message"] = json{{"text", text}};
      result["locations"] = json::array({location});
      if (!d.notes.empty()) {
        json related = json::array();
        for (std::size_t i = 0; i < d.notes.size(); ++i)
          related.push_back(json{{"id", i},
                                 {"physicalLocation", json{{"artifactLocation", artifact_location(file)},
                                                           {"region", region(*source, d.notes[i].span)}}},
                                 {"message", json{{"text", d.notes[i].message}}}});
        result["relatedLocations"] = std::move(related);
      }
      if (d.fix) {
        json deleted = region(*source, d.fix->span);
        result["fixes"] = json::array(
            {json{{"description", json{{"text", "write '" + d.fix->replacement + "'"}}},
                  {"artifactChanges",
                   json::array({json{
                       {"artifactLocation", artifact_location(file)},
                       {"replacements",
                        json::array({json{{"deletedRegion", deleted},
                                          {"insertedContent", json{{"text", d.fix->replacement}}}}})}}})}}});
      }
      if (d.occurrences > 1) result["occurrenceCount"] = d.occurrences;
      // Stable across edits elsewhere in the file: the code, the message and
      // the text of the line, not the line number.
      result["partialFingerprints"] = json{
          {"fhrDiagnostic/v1", fingerprint({diag_code_text(d.code).str(), d.message,
                                            llvm::StringRef(source->line_text(d.span.begin)).trim().str()})}};
      results.push_back(std::move(result));
    }
  return results;
}

json notifications(const DiagnosticInputs &inputs, std::size_t rule_offset) {
  json out = json::array();
  for (const InputDiagnostic &d : inputs.unlocated) {
    json notification;
    notification["descriptor"] =
        json{{"id", diag_code_text(d.code).str()}, {"index", rule_offset + static_cast<unsigned>(d.code)}};
    notification["level"] = severity_text(d.severity);
    notification["message"] = json{{"text", d.message}};
    if (!d.file.empty())
      notification["locations"] =
          json::array({json{{"physicalLocation", json{{"artifactLocation", artifact_location(d.file)}}}}});
    out.push_back(std::move(notification));
  }
  return out;
}

} // namespace sarif

void add_diagnostics_json(json &document, const DiagnosticInputs &inputs) {
  json diagnostics = json::array();
  for (const InputDiagnostic &d : inputs.unlocated)
    diagnostics.push_back(json{{"file", d.file.empty() ? json(nullptr) : json(d.file)},
                               {"severity", severity_text(d.severity)},
                               {"code", diag_code_text(d.code).str()},
                               {"message", d.message},
                               {"occurrences", 1},
                               {"position", nullptr},
                               {"end", nullptr},
                               {"notes", json::array()},
                               {"hint", nullptr},
                               {"fix", nullptr},
                               {"help", "docs/diagnostics.md#" + diag_code_text(d.code).str()}});
  for (const SourceFile *source : inputs.sources)
    for (const Diagnostic &d : source->diagnostics()) {
      json notes = json::array();
      for (const DiagnosticNote &note : d.notes)
        notes.push_back(json{{"message", note.message}, {"position", position(*source, note.span.begin)}});
      json fix = nullptr;
      if (d.fix)
        fix = json{{"position", position(*source, d.fix->span.begin)},
                   {"end", position(*source, d.fix->span.end)},
                   {"replacement", d.fix->replacement}};
      diagnostics.push_back(json{{"file", source->name().str()},
                                 {"severity", severity_text(d.severity)},
                                 {"code", diag_code_text(d.code).str()},
                                 {"message", d.message},
                                 {"occurrences", d.occurrences},
                                 {"position", position(*source, d.span.begin)},
                                 {"end", position(*source, std::max(d.span.end, d.span.begin))},
                                 {"notes", std::move(notes)},
                                 {"hint", d.hint.empty() ? json(nullptr) : json(d.hint)},
                                 {"fix", std::move(fix)},
                                 {"help", "docs/diagnostics.md#" + diag_code_text(d.code).str()}});
    }
  const bool valid = !inputs.has_errors();
  json out;
  out["schema"] = document.value("schema", "");
  out["valid"] = valid;
  for (auto it = document.begin(); it != document.end(); ++it)
    if (it.key() != "schema") out[it.key()] = it.value();
  if (!valid) out["feasible"] = false;
  out["diagnostics"] = std::move(diagnostics);
  document = std::move(out);
}

} // namespace fhr
