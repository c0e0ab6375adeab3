#pragma once
/// \file
/// Which devices' next DMA in follows the processor's own work on host
/// memory: the state the time predictor (fhr/model/timeline.hpp) keeps to
/// charge LinkModel::dma_after_host_work_seconds.
///
/// On the H200 machine a DMA from pinned memory into cuda:0 took its
/// calibrated time straight after its own round trip (the calibration's
/// state), but 25-55 µs more in the copy, at 8 MiB as at 120, after the
/// processor had written host memory: a source's fill, a host copy, the
/// setup's values (docs/benchmarks.md, sixteenth to twenty-first waves).
/// The first DMA in after such work pays the extra and clears the state;
/// a copy from pageable memory into the device clears it without paying
/// (its curve is measured after a host copy, so it carries the extra),
/// while for the other devices it is the processor's work.
#include "fhr/model/link_model.hpp"
#include "fhr/model/location.hpp"

#include <bitset>

namespace fhr {

class HostWorkSinceDma {
public:
  /// `after_setup`: the processor wrote host memory before the first step
  /// (`fhr-plan run` fills the setup's values before each run), so every
  /// device's first DMA in pays.
  explicit HostWorkSinceDma(bool after_setup) {
    if (after_setup) pending_.set();
  }

  /// The processor wrote host memory: a source's fill, a copy between two
  /// host locations, a staged copy's host part out of a device.
  void processor_wrote_host() { pending_.set(); }

  /// A DMA from pinned memory into `device` starts now: the extra it pays
  /// (`links`' figure when the device's last DMA in came before host work,
  /// else 0); it leaves the device's state clear.
  double dma_into(unsigned device, const LinkModel &links) {
    const bool pays = pending_.test(device);
    pending_.reset(device);
    return pays ? links.dma_after_host_work_seconds.value_or(0) : 0;
  }

  /// A copy from pageable memory into `device` ran (staged through the
  /// runtime's bounce buffers, or below the staging threshold through the
  /// driver's): the processor wrote its bytes into pinned memory, which
  /// sets every other device's state, and its own DMAs followed that
  /// work, which its calibrated curve carries (`calibrate` measures it
  /// after a host copy): its device's state is clear.
  void copied_from_pageable_into(unsigned device) {
    pending_.set();
    pending_.reset(device);
  }

private:
  std::bitset<Location::kMaxCudaDevices> pending_;
};

} // namespace fhr
