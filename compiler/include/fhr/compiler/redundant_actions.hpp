#pragma once
/// \file
/// W0006: an `ensure` (or `copy`) whose values are already resident at its
/// destination, or a `drop` of a replica that is not there, as the
/// simulator finds them in the state each step really sees: setup's run,
/// every program's run, and the explanation against setup of a plan that
/// no program runs. A statement is reported when it did nothing in every
/// run that reached it; the iterations of a loop are one statement,
/// counted as errors are.

#include "fhr/compiler/analysis.hpp"
#include "fhr/compiler/frontend.hpp"
#include "fhr/dsl/diagnostics.hpp"

namespace fhr {

/// Reports W0006 into `source` for the statements of `module` (lowered from
/// that source) that `analysis` found to do nothing.
void report_redundant_actions(SourceFile &source, const VerifiedModule &module, const Analysis &analysis);

} // namespace fhr
