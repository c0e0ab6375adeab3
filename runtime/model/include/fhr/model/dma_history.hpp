#pragma once
/// \file
/// What a DMA between pinned memory and a device, or a staged copy from
/// pageable memory into one, meets beyond its link's curve: the state the
/// time predictor (fhr/model/timeline.hpp) keeps, in plan order, to charge
/// LinkModel::dma_after_host_work_seconds, LinkModel::dma_cold_value_seconds,
/// LinkModel::dma_follow_on_seconds and
/// LinkModel::staged_after_host_work_seconds.
///
/// `calibrate` measures each link's curve on values that go round the
/// links one after another: every DMA of a value follows its own previous
/// copy, with nothing of the processor's in between. A plan's DMAs meet
/// other states, and on the H200 machine three of them took longer
/// (docs/benchmarks.md, sixteenth to twenty-third waves):
///  - the first DMA into a device after the processor's own work on host
///    memory (a source's fill, a host copy, a staged copy's host part, the
///    setup's values): 25-55 µs more in the copy, at 8 MiB as at 120;
///  - a DMA either way of a value whose bytes have not crossed the link
///    between the host and the device since such work (10 and 16 MiB
///    values moved in or out after 120 MiB key loads, or first moved after
///    the setup placed them): 9-33 µs more. Straight after other values'
///    DMAs alone it took its calibrated time;
///  - a DMA of a value straight after its own DMA that met one of those two
///    states, the device's last copy (its move out straight after such a
///    move in): 7.6-13.9 µs more in the copy in one call, where its later
///    round trips took their curve (twenty-third wave: twelve such steps in
///    each of four calls, their median 4.3-10.5 µs over the prediction and
///    6.0-11.3 µs above the other small warm DMAs'). After another value's
///    round trip its move out took its curve.
///  - a staged copy from pageable memory into a device that is the
///    device's first DMA in after the processor's work on host memory
///    other than its own value's (the setup's fill, a host copy or a load
///    of another value that did not end in that device): 51-155 µs more
///    at 8-15 MiB in two calls, 4-21% more from 16 MiB (thirtieth wave).
///    The staged curve is measured after the value's own host copy (into
///    pageable memory), and a load's after its own fill: that work is in
///    the curves. The state is the step's whether or not the profile has
///    the figure, as the others' are.
/// A DMA that meets more than one state pays the first that applies: after
/// host work (measured on a value the work left cold; a warm value's first
/// DMA in after the work, say one moved out of the device and back, pays
/// it too: rare, and not measured), a cold value, a follow-on. A follow-on
/// makes no other on its device. The processor's work leaves every value
/// cold; a copy of a value between the host and a device that ends with
/// the device's DMA (a DMA either way, a staged copy into the device, a
/// load's copy into it) leaves it warm there. A copy between two devices
/// leaves the values' state as it is (no host memory on its way; not
/// measured: one GPU) and is each device's last copy. Only a move out
/// straight after a move in was measured as a follow-on; the rule takes the
/// other orders (a move in straight after a cold move out, a value loaded
/// again after a drop) and the two engines of a window alike, unmeasured.
#include "fhr/model/action.hpp"
#include "fhr/model/link_model.hpp"
#include "fhr/model/location.hpp"

#include <array>
#include <bitset>
#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

namespace fhr {

/// The state a DMA between pinned memory and a device meets, whether or
/// not the profile has its figure (explain's and run's `dma_state`).
enum class DmaState : std::uint8_t { None, AfterHostWork, ColdValue, FollowOn };

/// "none", "after-host-work", "cold-value", "follow-on".
inline std::string_view dma_state_name(DmaState state) {
  switch (state) {
  case DmaState::None: break;
  case DmaState::AfterHostWork: return "after-host-work";
  case DmaState::ColdValue: return "cold-value";
  case DmaState::FollowOn: return "follow-on";
  }
  return "none";
}

/// What one DMA pays beyond its curve, and the state it met; at most one of
/// the three figures is charged.
struct DmaExtra {
  DmaState state = DmaState::None;
  double after_host_work_seconds = 0; ///< a staged copy's figure too (copied_from_pageable_into)
  double cold_value_seconds = 0;
  double follow_on_seconds = 0;
  double seconds() const { return after_host_work_seconds + cold_value_seconds + follow_on_seconds; }
};

class DmaHistory {
public:
  /// What came before the first step.
  enum class Before {
    /// The processor wrote host memory (`fhr-plan run` fills the setup's
    /// values before each run): every value is cold and every device's
    /// first DMA in pays the extra after host work.
    HostWork,
    /// Every value's own DMAs and nothing else (the calibration's
    /// windows, whose values went round before them).
    OwnDmas,
  };

  explicit DmaHistory(Before before) : all_warm_(before == Before::OwnDmas) {
    if (before == Before::HostWork) host_work_pending_.set();
  }

  /// The processor wrote host memory: a source's fill, a copy between two
  /// host locations, a staged copy's host part out of a device; `own`: the
  /// value whose bytes it wrote (none: the setup's, or anything else).
  void processor_wrote_host(std::optional<ValueId> own = std::nullopt) {
    host_work_pending_.set();
    warm_.clear();
    all_warm_ = false;
    ++host_work_count_; // forgets every device's last copy (last_copy())
    last_host_work_value_ = own;
  }

  /// A DMA of `value` between pinned memory and `device` starts now, into
  /// the device when `into_device`: the state it meets and the extra it
  /// pays. After host work (the device's first DMA in since the
  /// processor's work): that figure, or for a profile without it a cold
  /// value's when the value is cold too; else a cold value's; else, when
  /// the device's last copy was the value's own DMA that met one of those
  /// two states, the follow-on figure; or none. It leaves the value warm on
  /// the device, and a DMA in clears the device's host work.
  DmaExtra dma(ValueId value, unsigned device, bool into_device, const LinkModel &links) {
    const bool cold = !is_warm(value, device);
    const std::optional<LastCopy> last = last_copy(device);
    DmaExtra extra;
    if (into_device && host_work_pending_.test(device)) {
      extra.state = DmaState::AfterHostWork;
      if (links.dma_after_host_work_seconds)
        extra.after_host_work_seconds = *links.dma_after_host_work_seconds;
      else if (cold)
        extra.cold_value_seconds = links.dma_cold_value_seconds.value_or(0);
    } else if (cold) {
      extra.state = DmaState::ColdValue;
      extra.cold_value_seconds = links.dma_cold_value_seconds.value_or(0);
    } else if (last && last->value == value && last->met_extra_state) {
      extra.state = DmaState::FollowOn;
      extra.follow_on_seconds = links.dma_follow_on_seconds.value_or(0);
    }
    if (into_device) host_work_pending_.reset(device);
    warm_.insert({value, device});
    last_copy_[device] =
        LastCopy{value, extra.state == DmaState::AfterHostWork || extra.state == DmaState::ColdValue,
                 host_work_count_};
    return extra;
  }

  /// A copy between two devices ran (over their own link, no host memory
  /// on its way): the state of the values stays as it was, and it is each
  /// device's last copy (it runs on their copy engines), so the DMA after
  /// it is no follow-on.
  void peer_copy(ValueId value, unsigned from_device, unsigned to_device) {
    last_copy_[from_device] = LastCopy{value, false, host_work_count_};
    last_copy_[to_device] = LastCopy{value, false, host_work_count_};
  }

  /// A copy of `value` from pageable memory into `device` ran (`staged`
  /// through the runtime's bounce buffers, or below the staging threshold
  /// through the driver's; a load's copy too): the processor wrote its
  /// bytes into pinned memory, then the device's DMAs took them. Its curve
  /// is measured after the processor's work on the value's own bytes, and
  /// then it pays nothing. A staged copy that is the device's first DMA in
  /// since the processor's work on other bytes (per device, as a DMA's
  /// extra after host work: a copy into the device in between, a load's
  /// too, clears it) meets the state after host work and pays
  /// LinkModel::staged_after_host_work_seconds: one figure at every size
  /// (measured at 16 MiB), on its engine as the DMAs' extras are, and no
  /// follow-on after it (not measured). It leaves the other devices after
  /// host work, every other value cold, and its value warm on its device.
  DmaExtra copied_from_pageable_into(ValueId value, unsigned device, bool staged, const LinkModel &links) {
    DmaExtra extra;
    if (staged && host_work_pending_.test(device) && last_host_work_value_ != value) {
      extra.state = DmaState::AfterHostWork;
      extra.after_host_work_seconds = links.staged_after_host_work_seconds.value_or(0);
    }
    processor_wrote_host(value);
    host_work_pending_.reset(device);
    warm_.insert({value, device});
    last_copy_[device] = LastCopy{value, false, host_work_count_};
    return extra;
  }

  /// Applies a copy of `value` from `from` to `to` and returns what its DMA pays beyond its curve: a DMA
  /// between pinned memory and a device is dma(); a copy from pageable memory into a device is the
  /// processor's work and then its device's DMA (`staged`: through the runtime's bounce buffers,
  /// is_staged_copy()); a copy that writes host memory on the processor (a memcpy between host locations, a
  /// staged copy's host part out of a device) is the processor's work; a copy between two devices is each
  /// device's last copy. Only a DMA pays.
  DmaExtra copy(ValueId value, Location from, Location to, bool staged, const LinkModel &links) {
    const std::optional<LinkKind> link = link_between(from, to);
    if (!link) return {}; // a location to itself: nothing crosses a link
    switch (*link) {
    case LinkKind::PinnedToDevice: return dma(value, to.device(), true, links);
    case LinkKind::DeviceToPinned: return dma(value, from.device(), false, links);
    case LinkKind::PageableToDevice: return copied_from_pageable_into(value, to.device(), staged, links);
    case LinkKind::PageableToPinned:
    case LinkKind::PinnedToPageable:
    case LinkKind::DeviceToPageable: processor_wrote_host(value); break;
    case LinkKind::DeviceToDevice: peer_copy(value, from.device(), to.device()); break;
    }
    return {};
  }

  /// Applies a load of `value`: its source fills storage at `source` (the
  /// processor's work), then, when `destination` differs, copy() takes it
  /// there: from a pageable source it pays nothing beyond its load curve,
  /// from a pinned one it is a DMA after that work.
  DmaExtra load(ValueId value, Location source, Location destination, const LinkModel &links) {
    processor_wrote_host(value);
    // After its own fill: a staged copy's extra never applies.
    return destination == source ? DmaExtra{} : copy(value, source, destination, false, links);
  }

private:
  bool is_warm(ValueId value, unsigned device) const { return all_warm_ || warm_.contains({value, device}); }

  /// A device's last copy over its links (a DMA to or from pinned memory,
  /// a copy from pageable memory, a peer copy): its value, and whether it
  /// was a DMA that met the state of after host work or of a cold value.
  struct LastCopy {
    ValueId value;
    bool met_extra_state = false;
    /// host_work_count_ when it ran: the processor's work since forgets it.
    std::uint64_t host_work = 0;
  };
  /// The device's last copy since the processor's last work on host memory.
  std::optional<LastCopy> last_copy(unsigned device) const {
    const std::optional<LastCopy> &last = last_copy_[device];
    return last && last->host_work == host_work_count_ ? last : std::nullopt;
  }

  std::bitset<Location::kMaxCudaDevices> host_work_pending_;
  std::array<std::optional<LastCopy>, Location::kMaxCudaDevices> last_copy_{};
  /// How many times the processor wrote host memory (processor_wrote_host):
  /// one count, where clearing every device's last copy cost a pass over
  /// all of them per fill.
  std::uint64_t host_work_count_ = 0;
  /// (value, device): the value's bytes crossed the link between the host
  /// and the device since the processor's last work on host memory.
  std::set<std::pair<ValueId, unsigned>> warm_;
  bool all_warm_;
  /// Whose bytes the processor's last work on host memory wrote (none: the
  /// setup's, which wrote every value's).
  std::optional<ValueId> last_host_work_value_;
};

} // namespace fhr
