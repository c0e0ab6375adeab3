// Every diagnostic code is documented with an example.
#include "fhr/dsl/diagnostics.hpp"

#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

TEST_CASE("docs/diagnostics.md lists every code") {
  std::ifstream file(FHR_SOURCE_DIR "/docs/diagnostics.md");
  REQUIRE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  for (fhr::DiagCode code : fhr::all_diag_codes()) {
    const std::string heading = "## " + fhr::diag_code_text(code).str();
    CHECK_MESSAGE(text.str().find(heading) != std::string::npos, heading << " is missing");
  }
}

namespace {
std::string read_file(const std::filesystem::path &path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

/// Every tracked-looking text file of the tree, build folders and
/// third-party copies left out.
std::vector<std::filesystem::path> source_files() {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path root = FHR_SOURCE_DIR;
  for (const char *folder : {"dsl", "compiler", "runtime", "tools", "tests", "bench", "examples", "docs",
                             "fuzz", "scripts", "editors", "cmake"}) {
    if (!std::filesystem::exists(root / folder)) continue;
    for (const auto &entry : std::filesystem::recursive_directory_iterator(root / folder)) {
      const std::string extension = entry.path().extension().string();
      if (entry.is_regular_file() && (extension == ".cpp" || extension == ".hpp" || extension == ".md" ||
                                      extension == ".def" || extension == ".sh" || extension == ".py" ||
                                      extension == ".txt" || extension == ".fhr" || extension == ".pyi"))
        files.push_back(entry.path());
    }
  }
  files.push_back(root / "README.md");
  return files;
}
} // namespace

TEST_CASE("every section reference names a section of docs/semantics.md") {
  const std::string semantics = read_file(FHR_SOURCE_DIR "/docs/semantics.md");
  REQUIRE(!semantics.empty());
  // "\xC2\xA7" is the UTF-8 section sign; a reference is it followed by N or N.M.
  const std::string sign = "\xC2\xA7";
  std::size_t references = 0;
  for (const std::filesystem::path &path : source_files()) {
    const std::string text = read_file(path);
    for (std::size_t at = text.find(sign); at != std::string::npos; at = text.find(sign, at + 1)) {
      std::size_t end = at + sign.size();
      auto digits = [&] {
        const std::size_t begin = end;
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])))
          ++end;
        return end > begin;
      };
      if (!digits()) continue;
      if (end + 1 < text.size() && text[end] == '.' &&
          std::isdigit(static_cast<unsigned char>(text[end + 1]))) {
        ++end;
        digits();
      }
      const std::string section = text.substr(at + sign.size(), end - at - sign.size());
      const bool top = section.find('.') == std::string::npos;
      const std::string heading = top ? "\n## " + section + ". " : "\n### " + section + " ";
      ++references;
      CHECK_MESSAGE(semantics.find(heading) != std::string::npos,
                    path.string() << " cites \xC2\xA7" << section
                                  << ", which docs/semantics.md does not have");
    }
  }
  CHECK(references > 100);
}

TEST_CASE("no file of the repository points outside it") {
  const std::string outside = std::string("../") + "shared";
  for (const std::filesystem::path &path : source_files())
    CHECK_MESSAGE(read_file(path).find(outside) == std::string::npos, path.string()
                                                                          << " refers to " << outside);
}
