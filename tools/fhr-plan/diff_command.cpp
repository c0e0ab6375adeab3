// fhr-plan diff OLD NEW and check --baseline DIR (docs/ci.md).
#include "time_commands.hpp"

#include "fhr/compiler/diff.hpp"
#include "fhr/compiler/explain_time.hpp"
#include "fhr/compiler/output.hpp"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

namespace fhr::cli {

namespace {

using json = nlohmann::ordered_json;

/// An explain document from a plan file (or module), or from an explain
/// JSON file (`.json`, schema fhr-explain/2, or /1 as stored before: their
/// units are the same) such as a stored baseline.
std::optional<json> explanation_of(const std::string &path, const CommonOptions &options) {
  if (llvm::StringRef(path).endswith(".json")) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer) {
      report_error(llvm::createStringError(buffer.getError(), "cannot read '%s': %s", path.c_str(),
                                           buffer.getError().message().c_str()));
      return std::nullopt;
    }
    json document = json::parse((*buffer)->getBuffer().begin(), (*buffer)->getBuffer().end(), nullptr, false);
    const std::string schema = document.is_object() ? document.value("schema", std::string()) : std::string();
    if (document.is_discarded() || !document.is_object() ||
        (schema != kExplainSchema && schema != "fhr-explain/1") || !document.contains("files")) {
      report_error(llvm::createStringError(std::errc::invalid_argument,
                                           "%s: not an explain document (schema %s)", path.c_str(),
                                           kExplainSchema));
      return std::nullopt;
    }
    return document;
  }
  CommonOptions one = options;
  one.files = {path};
  LoadedFiles loaded = load_files(one);
  if (!loaded.ok) return std::nullopt;
  return explain_json(analyse_files(loaded, ReportDetail::AllSteps));
}

/// Predicted time on both sides with one profile, so that times compare.
bool add_time(json &document, const LinkModel &links) {
  try {
    add_predicted_time(document, links);
    return true;
  } catch (const json::exception &error) {
    report_error(
        llvm::createStringError(std::errc::invalid_argument, "malformed explain document: %s", error.what()));
    return false;
  }
}

std::string render(const PlanDiff &diff, const GateVerdict &verdict, const std::string &format) {
  if (format == "json") return json_text(diff_json(diff, verdict)) + "\n";
  if (format == "markdown") return diff_markdown(diff, verdict);
  return diff_text(diff, verdict);
}

} // namespace

int run_diff(const std::string &old_path, const std::string &new_path, const CommonOptions &options,
             const DiffOptions &diff_options) {
  const std::optional<LinkModel> links = load_profile(diff_options.profile);
  if (!links) return kBadInput;
  std::optional<json> old_document = explanation_of(old_path, options);
  std::optional<json> new_document = explanation_of(new_path, options);
  if (!old_document || !new_document) return kBadInput;
  if (!add_time(*old_document, *links) || !add_time(*new_document, *links)) return kBadInput;
  const PlanDiff diff = diff_explanations(*old_document, *new_document);
  const GateVerdict verdict = apply_gates(diff, DiffGates{diff_options.max_peak_increase_percent});
  llvm::outs() << render(diff, verdict, diff_options.format);
  llvm::outs().flush();
  return verdict.failed ? kInfeasible : kFeasible;
}

int run_check_baseline(const CommonOptions &options, const std::string &baseline,
                       const DiffOptions &diff_options) {
  int status = run_check(options);
  if (status == kBadInput) return status;
  for (const std::string &path : options.files) {
    // The baseline of plans/a.fhr is DIR/a.fhr.json (an explain document) or DIR/a.fhr.
    llvm::SmallString<256> stored(baseline);
    llvm::sys::path::append(stored, llvm::sys::path::filename(path));
    std::string old_path = std::string(stored) + ".json";
    if (!llvm::sys::fs::exists(old_path)) old_path = std::string(stored);
    if (!llvm::sys::fs::exists(old_path)) {
      llvm::outs() << "fhr-plan check: " << path << ": no baseline in " << baseline << "\n";
      continue;
    }
    llvm::outs() << "fhr-plan check: " << path << " against " << old_path << "\n";
    const int compared = run_diff(old_path, path, options, diff_options);
    if (compared == kBadInput) return kBadInput;
    status = std::max(status, compared);
  }
  return status;
}

} // namespace fhr::cli
