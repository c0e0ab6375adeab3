#pragma once
/// \file
/// Pictures of an explanation (docs/pictures.md): per plan and program, a
/// memory timeline per location — charged bytes after every step and over
/// the predicted time, stacked by value, the budget as a line, the
/// predicted peak dashed, reservations shaded, the failing step marked —
/// as one self-contained HTML page (inline CSS, SVG and script: no network)
/// with hover details and a step table linked to the charts, or as one SVG
/// document for other documents.
///
/// Both read an explain document (`fhr-explain/1` or `/2`); time fields missing from it are
/// predicted with the given link model first.

#include "fhr/model/link_model.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace fhr {

/// Version of the data the HTML page embeds (id `fhr-data`) and checks its
/// charts against.
inline constexpr const char *kPicturesSchema = "fhr-pictures/1";

std::string render_html(nlohmann::ordered_json document, const LinkModel &links);
std::string render_svg(nlohmann::ordered_json document, const LinkModel &links);

} // namespace fhr
