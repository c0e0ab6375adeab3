#include "fhr/model/host_work_state.hpp"

namespace fhr {

double HostWorkSinceDma::dma_into(unsigned device, const LinkModel &links) {
  const bool pays = pending_.test(device);
  pending_.reset(device);
  return pays ? links.dma_after_host_work_seconds.value_or(0) : 0;
}

} // namespace fhr
