// The built-in source: a value's bytes read from a file.
#include "fhr/runtime/backend_error.hpp"
#include "fhr/runtime/source.hpp"

#include <fstream>

namespace fhr {

namespace {

class FileSource final : public Source {
public:
  FileSource(std::string path, std::uint64_t offset) : path_(std::move(path)), offset_(offset) {}
  void load(std::span<std::byte> destination) override {
    std::ifstream in(path_, std::ios::binary);
    if (!in) throw BackendError("cannot open '" + path_ + "'");
    in.seekg(static_cast<std::streamoff>(offset_));
    in.read(reinterpret_cast<char *>(destination.data()), static_cast<std::streamsize>(destination.size()));
    if (static_cast<std::size_t>(in.gcount()) != destination.size())
      throw BackendError("'" + path_ + "' holds fewer than " + std::to_string(destination.size()) +
                         " bytes at offset " + std::to_string(offset_));
  }

private:
  std::string path_;
  std::uint64_t offset_;
};

} // namespace

std::shared_ptr<Source> make_file_source(std::string path, std::uint64_t offset) {
  return std::make_shared<FileSource>(std::move(path), offset);
}

} // namespace fhr
