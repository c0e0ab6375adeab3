#pragma once
/// \file
/// The man page and the bash and zsh completions of fhr-plan, generated from
/// the LLVM option tables that parse the command line, so that they list
/// exactly the verbs and options the tool accepts.

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <string>
#include <vector>

namespace fhr::cli {

struct OptionValue {
  std::string name;
  std::string description;
};

/// What the option tables do not say by themselves: the values of the
/// enumerated options (read from their parsers) and of verb arguments.
struct Reference {
  std::string overview;
  std::map<const llvm::cl::Option *, std::vector<OptionValue>> values;
  std::map<std::string, std::vector<OptionValue>> values_per_verb;
};

/// One option of one verb as the parser knows it.
struct OptionInfo {
  std::string name;  ///< without dashes: "format", "o", "W"
  std::string value; ///< value placeholder, empty for a flag
  std::string description;
  bool prefix = false; ///< -WFLAG
  std::vector<OptionValue> values;

  /// "--format=<value>", "-o <OUT.fhrb>", "-W<FLAG>", "--check".
  std::string spelling() const;
};

struct VerbInfo {
  std::string name;
  std::string description;
  std::string arguments; ///< "<file.fhr | - >..."
  std::vector<OptionInfo> options;
  std::vector<OptionValue> argument_values;
};

/// Every verb with its options, in name order (generic options left out).
std::vector<VerbInfo> verbs(const Reference &reference);

void print_man_page(llvm::raw_ostream &os, const Reference &reference, const std::string &version);
void print_completion(llvm::raw_ostream &os, const Reference &reference, const std::string &shell);

} // namespace fhr::cli
