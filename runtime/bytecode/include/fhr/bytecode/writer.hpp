#pragma once
/// \file
/// The bytecode writer: the one encoder of the format in format.hpp, beside
/// the loader and over the same types. write_module() turns a Module (what
/// load_module returns, or what the compiler's lowering builds) into the
/// bytes of a `.fhrb` file; load_module(write_module(m)) gives m back, and a
/// module that was loaded writes back to the same bytes.
///
/// The writer encodes, it does not verify: the loader does that for every
/// module, written here or not.

#include "fhr/bytecode/module.hpp"

#include <vector>

namespace fhr::bytecode {

/// The module's bytes: header with the payload's checksum, section table,
/// then STRINGS, MACHINE, DECLS, CODE, PLANS, PROGRAMS, LINES.
/// \pre the instruction ranges of setup, the plans and the programs
/// partition `module.code` in that order (as load_module guarantees).
std::vector<char> write_module(const Module &module);

} // namespace fhr::bytecode
