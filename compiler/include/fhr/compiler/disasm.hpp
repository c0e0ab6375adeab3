#pragma once
/// \file
/// Prints a verified bytecode module as `.fhr` text that compiles back to the
/// same bytes: sizes exact, families and ranges as written, and `@line`
/// directives that give every statement its original source line.

#include "fhr/bytecode/module.hpp"

#include <string>

namespace fhr {

std::string disassemble(const bytecode::Module &module, const std::string &origin);

} // namespace fhr
