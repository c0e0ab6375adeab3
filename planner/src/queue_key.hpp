#pragma once
// A copy queue of the link model (fhr/model/link_model.hpp) as a small
// integer, for the planner's per-queue tables (prefetch's free engine time,
// the schedule clock): the host copy threads, then each device's inbound
// and outbound engine.
#include "fhr/model/link_model.hpp"

namespace fhr::planner {

inline int queue_key(const CopyQueue &queue) {
  switch (queue.kind) {
  case CopyQueue::Kind::Inbound: return static_cast<int>(2 * queue.device);
  case CopyQueue::Kind::Outbound: return static_cast<int>(2 * queue.device + 1);
  case CopyQueue::Kind::HostThreads: return -1;
  }
  return -1;
}

} // namespace fhr::planner
