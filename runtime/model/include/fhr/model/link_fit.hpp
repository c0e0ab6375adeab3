#pragma once
/// \file
/// Size classes from measurements (`fhr-plan calibrate`, docs/links.md):
/// piecewise linear through the medians of consecutive sizes, so that the
/// profile reproduces every measured size exactly and interpolates between.
///
/// With medians t_0 … t_m at sizes n_0 < … < n_m, class i (i = 1 … m)
/// covers (n_{i-1}, n_i] (class 1 also every size up to n_1, class m every
/// size above n_{m-1}: it is the unbounded one) and costs the line through
/// (n_{i-1}, t_{i-1}) and (n_i, t_i): bandwidth 1 / slope, latency its
/// intercept. A segment whose intercept would be negative keeps latency 0
/// and the bandwidth that reaches t_i at n_i; one whose time does not grow
/// (noise, or a faster method from n_i on) costs t_i flat.

#include "fhr/model/link_model.hpp"

#include <span>
#include <vector>

namespace fhr {

/// The median of `values` (the mean of the middle two for an even count):
/// the figure a calibration keeps of repeated measurements, and a merge of
/// calibrations of theirs. \pre !values.empty().
double median(std::vector<double> values);

/// \pre at least one sample, sizes strictly ascending, times positive.
LinkCurve fit_link_curve(std::span<const LinkSample> samples);

/// An allocation's cost, fixed and per byte, from blocks of two sizes: the
/// line through them. Where noise tips it (no growth with size, or a fixed
/// part below nothing), the line through the origin and the larger block
/// instead, which still gives the larger block its measured cost.
/// \pre 0 < small_bytes < large_bytes.
AllocationCost fit_allocation_cost(std::uint64_t small_bytes, double small_seconds, std::uint64_t large_bytes,
                                   double large_seconds);

} // namespace fhr
