#include "time_commands.hpp"

#include "fhr/compiler/explain_time.hpp"
#include "fhr/compiler/output.hpp"
#include "fhr/compiler/pictures.hpp"
#include "fhr/compiler/report.hpp"
#include "fhr/compiler/trace.hpp"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <stdexcept>

namespace fhr::cli {

std::optional<LinkModel> load_profile(const std::string &profile) {
  if (profile.empty() || profile == "h200") return LinkModel::h200();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFile(profile);
  if (!buffer) {
    report_error(llvm::createStringError(buffer.getError(), "cannot read link profile '%s': %s",
                                         profile.c_str(), buffer.getError().message().c_str()));
    return std::nullopt;
  }
  try {
    return link_model_from_json((*buffer)->getBuffer().str());
  } catch (const std::invalid_argument &error) {
    report_error(
        llvm::createStringError(std::errc::invalid_argument, "%s: %s", profile.c_str(), error.what()));
    return std::nullopt;
  }
}

bool write_output(const std::string &path, const std::string &text) {
  if (path.empty() || path == "-") {
    llvm::outs() << text;
    llvm::outs().flush();
    return true;
  }
  // Written beside the target and renamed: a reader never sees half a page.
  const std::string temporary = path + ".tmp";
  {
    std::error_code error;
    llvm::raw_fd_ostream out(temporary, error);
    if (error) {
      report_error(
          llvm::createStringError(error, "cannot write '%s': %s", path.c_str(), error.message().c_str()));
      return false;
    }
    out << text;
    out.close();
    if (out.has_error()) {
      report_error(llvm::createStringError(out.error(), "cannot write '%s'", path.c_str()));
      out.clear_error();
      return false;
    }
  }
  if (std::error_code error = llvm::sys::fs::rename(temporary, path)) {
    report_error(
        llvm::createStringError(error, "cannot write '%s': %s", path.c_str(), error.message().c_str()));
    return false;
  }
  return true;
}

std::optional<double> parse_percent(const std::string &text) {
  std::string number = text;
  if (!number.empty() && number.back() == '%') number.pop_back();
  char *end = nullptr;
  const double value = number.empty() ? 0 : std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !(value >= 0)) {
    report_error(llvm::createStringError(std::errc::invalid_argument,
                                         "invalid percentage '%s' (expected e.g. 5%% or 0.5)", text.c_str()));
    return std::nullopt;
  }
  return value;
}

bool parse_size_option(const std::string &option, const std::string &text, std::uint64_t &bytes) {
  // The language's size syntax, through the --budget parser.
  llvm::Expected<BudgetOverride> parsed = parse_budget_override("pageable=" + text);
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    report_error(llvm::createStringError(std::errc::invalid_argument, "%s: invalid size '%s' (e.g. 1GiB)",
                                         option.c_str(), text.c_str()));
    return false;
  }
  bytes = parsed->budget_bytes;
  return true;
}

namespace {
/// explain --profile in text: after the tables, each unit's predicted time.
void print_predicted_time(const nlohmann::ordered_json &document) {
  llvm::outs() << "\npredicted time (link profile: " << document["links"].value("machine", std::string())
               << ")\n";
  for (const auto &file : document.at("files")) {
    for (const auto &unit : file.at("units")) {
      std::uint64_t copied = 0;
      std::size_t copies = 0;
      for (const auto &step : unit.at("steps"))
        if (step.contains("time") && step["time"]["engine"].is_string()) {
          copied += step.value("logical_bytes", step.value("storage_bytes", std::uint64_t{0}));
          ++copies;
        }
      llvm::outs() << "  " << file.value("file", std::string()) << ": " << unit.value("kind", std::string())
                   << " \"" << unit.value("name", std::string())
                   << "\": " << llvm::format("%.1f", unit.value("predicted_us", 0.0)) << " us, " << copies
                   << " copies of " << format_size(copied) << "\n";
    }
  }
}
} // namespace

int run_explain_pictures(const CommonOptions &options, const TimeOptions &time) {
  const std::optional<LinkModel> links = load_profile(time.profile);
  if (!links) return kBadInput;
  if (options.format == "text") {
    const int status = run_explain(options);
    if (status == kBadInput) return status;
    CommonOptions json_options = options;
    json_options.format = "json";
    // run_explain printed the diagnostics already.
    LoadedFiles loaded = load_files(json_options, /*print_diagnostics=*/false);
    nlohmann::ordered_json document = explain_json(analyse_files(loaded, ReportDetail::AllSteps));
    add_predicted_time(document, *links);
    print_predicted_time(document);
    llvm::outs().flush();
    return status;
  }
  LoadedFiles loaded = load_files(options);
  if (!loaded.ok) return kBadInput; // nothing written for input with errors
  std::vector<FileReport> reports = analyse_files(loaded, ReportDetail::AllSteps);
  bool feasible = true;
  for (const FileReport &r : reports)
    feasible = feasible && r.feasible;
  nlohmann::ordered_json document = explain_json(reports);
  std::string picture;
  if (options.format == "json" || options.format == "trace") {
    add_predicted_time(document, *links);
    picture = json_text(options.format == "json" ? document : trace_json(predicted_trace(document))) + "\n";
  } else {
    picture = options.format == "svg" ? render_svg(std::move(document), *links)
                                      : render_html(std::move(document), *links);
  }
  if (!write_output(time.output, picture)) return kBadInput;
  return feasible ? kFeasible : kInfeasible;
}

} // namespace fhr::cli
