#pragma once
/// \file
/// Diagnostics in the machine-readable formats: GitHub workflow commands,
/// SARIF 2.1.0 results and rules, and the `diagnostics` array of explain's
/// JSON. Also the documentation of every code (docs/diagnostics.md, built
/// into the tool) for `fhr-plan explain-code` and SARIF rule descriptions.

#include "fhr/compiler/frontend.hpp"
#include "fhr/compiler/span_table.hpp"

#include <llvm/Support/raw_ostream.h>
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace fhr {

/// Every diagnostic of one command: the files read (each with its
/// diagnostics, warnings included) and the unlocated ones.
struct DiagnosticInputs {
  std::vector<const SourceFile *> sources;
  std::vector<InputDiagnostic> unlocated;

  bool has_errors() const;
};

/// The section of docs/diagnostics.md about `code`, from its heading to the
/// next one (Markdown).
std::string_view diagnostic_documentation(DiagCode code);
/// The first paragraph of that section: what the code means.
std::string diagnostic_explanation(DiagCode code);
/// Where the section is published: FHR_DOCS_URL/diagnostics.md#CODE.
std::string diagnostic_help_uri(DiagCode code);
/// FHR_DOCS_URL/page: the installed docs (`cmake --install`), or where a
/// packager published them.
std::string docs_uri(std::string_view page);

/// `::error file=F,line=L,col=C,endLine=..,endColumn=..,title=[CODE] summary::message`
/// for every diagnostic (`::warning` for warnings); notes and hints follow
/// the message on lines of their own.
void print_diagnostics_github(llvm::raw_ostream &os, const DiagnosticInputs &inputs);
/// Escapes text for a GitHub workflow command (`property`: also ':' and ',').
std::string github_escape(const std::string &text, bool property);

/// SARIF pieces shared with check_sarif.
namespace sarif {
/// One rule per diagnostic code, in table order (index = code ordinal).
nlohmann::ordered_json diagnostic_rules();
/// An artifactLocation for a path as given: a relative URI against the
/// base id `SRCROOT` (the working directory), an absolute `file://` URI
/// (RFC 8089), or, for unnamed standard input, a description only.
nlohmann::ordered_json artifact_location(const std::string &path);
/// `originalUriBaseIds` naming the working directory as `SRCROOT`.
nlohmann::ordered_json original_uri_base_ids();
/// A region for a byte span (1-based lines and code-point columns, the end
/// exclusive).
nlohmann::ordered_json region(const SourceFile &source, ast::Span span);
/// A region for a span of a module's side table (byte columns) on the line
/// `line_text`, with its columns counted in code points as above.
nlohmann::ordered_json region(const SourceSpan &span, std::string_view line_text);
/// A stable fingerprint of `parts` (16 hex digits).
std::string fingerprint(const std::vector<std::string> &parts);
/// Results for every located diagnostic; `rule_offset` is the index of the
/// first diagnostic rule in the run's rules.
nlohmann::ordered_json diagnostic_results(const DiagnosticInputs &inputs, std::size_t rule_offset);
/// Notifications for unlocated diagnostics (command line, unreadable files).
nlohmann::ordered_json notifications(const DiagnosticInputs &inputs, std::size_t rule_offset);
} // namespace sarif

/// Adds `valid` and `diagnostics` to an explain JSON document (schema
/// fhr-explain/2): every diagnostic of every file, and `feasible` false
/// when any input is invalid.
void add_diagnostics_json(nlohmann::ordered_json &document, const DiagnosticInputs &inputs);

} // namespace fhr
