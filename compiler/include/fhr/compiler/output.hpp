#pragma once
/// \file
/// The output formats of `fhr-plan explain` and `fhr-plan check`. All are
/// byte-for-byte deterministic; docs/explain.md and
/// docs/explain-json.md describe them.

#include "fhr/compiler/report.hpp"

#include <llvm/Support/raw_ostream.h>
#include <nlohmann/json.hpp>

#include <vector>

namespace fhr {

/// Version of the JSON schema of `explain --format json`.
inline constexpr const char *kExplainSchema = "fhr-explain/2";

/// Prints the text report of one file, unit by unit: every step (runs of
/// one family instruction that behave alike as one row, `×N`), the peaks
/// per location and the failure.
void print_explain_text(llvm::raw_ostream &os, const VerifiedModule &module, const Analysis &analysis);
/// `explain --summary`: one line per plan and program with its verdict and,
/// per location, the peak, the budget and the headroom at the peak.
void print_explain_summary(llvm::raw_ostream &os, const VerifiedModule &module, const Analysis &analysis);
nlohmann::ordered_json explain_json(const std::vector<FileReport> &reports);

/// Serialises JSON output. Names and labels come from user files and may hold
/// invalid UTF-8; such bytes become U+FFFD instead of aborting the dump.
std::string json_text(const nlohmann::ordered_json &document);

/// One line per failing plan, program or setup: `file:line:col: error: ...`.
void print_check_text(llvm::raw_ostream &os, const std::vector<FileReport> &reports);
/// GitHub workflow commands: `::error file=...,line=...,col=...,title=...::message`.
void print_check_github(llvm::raw_ostream &os, const std::vector<FileReport> &reports);
struct DiagnosticInputs;
/// SARIF 2.1.0 log: one result per diagnostic (errors and warnings of every
/// input) and per failure, rules with their documentation.
nlohmann::ordered_json check_sarif(const std::vector<FileReport> &reports,
                                   const DiagnosticInputs &diagnostics, const std::string &version);

} // namespace fhr
