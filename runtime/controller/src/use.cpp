// Controller::use (§18.3): decide, enter the scope, lease every
// requirement, record the access; on close release the leases and close
// the scope (no exit actions: the values stay cached).
#include "fhr/controller/controller.hpp"

#include <algorithm>
#include <exception>

namespace fhr {

Use::Use(Controller &controller, Request request, ConsumerStreams consumer_streams,
         TransferStreams transfer_streams)
    : controller_(&controller), request_(std::move(request)), consumer_streams_(std::move(consumer_streams)),
      transfer_streams_(std::move(transfer_streams)) {}

Use::Use(Use &&other) noexcept
    : controller_(other.controller_), request_(std::move(other.request_)),
      consumer_streams_(std::move(other.consumer_streams_)),
      transfer_streams_(std::move(other.transfer_streams_)),
      stage_(std::exchange(other.stage_, Stage::Closed)), decision_(std::move(other.decision_)),
      scope_(std::move(other.scope_)), leases_(std::move(other.leases_)) {
  other.scope_.reset();
  other.leases_.clear();
}

Use::~Use() {
  if (stage_ != Stage::Entered) return;
  stage_ = Stage::Closed;
  release_leases();
  try {
    scope_->close();
  } catch (...) { // nothing to report to from a destructor; the scope keeps its exit_error
  }
}

void Use::enter() {
  if (stage_ != Stage::Created) throw std::logic_error("use '" + request_.name() + "' entered twice");
  stage_ = Stage::Closed; // any failure below consumes the use
  decision_.emplace(controller_->decide(request_));
  scope_.emplace(controller_->scope(*decision_, transfer_streams_));
  scope_->enter();
  std::vector<Handle> accessed;
  try {
    // One lease per location, in the order the request first names it.
    std::vector<Location> order;
    for (const Requirement &r : request_.requirements())
      if (std::find(order.begin(), order.end(), r.location) == order.end()) order.push_back(r.location);
    for (Location at : order) {
      std::vector<Handle> handles;
      for (const Requirement &r : request_.requirements())
        if (r.location == at) handles.push_back(r.handle);
      Stream stream;
      for (const auto &[location, s] : consumer_streams_)
        if (location == at) stream = s;
      leases_.push_back(controller_->manager().acquire(handles, at, stream));
    }
    for (const Requirement &r : request_.requirements())
      if (std::find(accessed.begin(), accessed.end(), r.handle) == accessed.end())
        accessed.push_back(r.handle);
  } catch (...) {
    release_leases();
    try {
      scope_->close();
    } catch (...) { // the acquisition failure is the one that propagates
    }
    throw;
  }
  controller_->record_access(accessed);
  stage_ = Stage::Entered;
}

void Use::release_leases() noexcept {
  for (auto it = leases_.rbegin(); it != leases_.rend(); ++it) {
    try {
      it->release();
    } catch (...) { // left active, the lease releases itself when destroyed
    }
  }
}

void Use::close() {
  if (stage_ == Stage::Created) throw std::logic_error("use '" + request_.name() + "' closed before entry");
  if (stage_ == Stage::Closed) return;
  stage_ = Stage::Closed;
  std::exception_ptr lease_failure;
  for (auto it = leases_.rbegin(); it != leases_.rend(); ++it) {
    try {
      it->release();
    } catch (...) {
      if (!lease_failure) lease_failure = std::current_exception();
    }
  }
  scope_->close();
  if (lease_failure) std::rethrow_exception(lease_failure);
}

const Decision &Use::decision() const {
  if (!decision_)
    throw std::logic_error("use '" + request_.name() + "' has no decision before it is entered");
  return *decision_;
}

std::span<const std::byte> Use::value(const Handle &handle, Location at) const {
  if (stage_ != Stage::Entered)
    throw std::logic_error("the values of use '" + request_.name() + "' exist only while it is entered");
  const std::vector<Requirement> &required = request_.requirements();
  if (std::find(required.begin(), required.end(), Requirement{handle, at}) == required.end())
    throw std::out_of_range("use '" + request_.name() + "' does not require value " +
                            std::to_string(handle.handle_id) + " at " + at.name());
  for (const Lease &lease : leases_)
    if (lease.location() == at) return lease.value(handle);
  throw std::out_of_range("use '" + request_.name() + "' holds no lease at " + at.name());
}

const std::optional<PlanReport> &Use::report() const { return scope_ ? scope_->report() : no_report_; }

const std::optional<ResidencyPlanExecutionError> &Use::exit_error() const {
  return scope_ ? scope_->exit_error() : no_error_;
}

} // namespace fhr
