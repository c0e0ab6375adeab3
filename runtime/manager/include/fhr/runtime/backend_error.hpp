#pragma once
/// \file
/// The error of the memory, copy and stream machinery underneath a manager
/// (not a residency rule): what a memory resource, a copy engine, stream
/// support or a source throws when the system refuses.

#include <stdexcept>

namespace fhr {

class BackendError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace fhr
