#include "fhr/runtime/fault_injection.hpp"

#include <string>

namespace fhr {

void FaultPlan::fail_on(BackendOperation operation, std::uint64_t nth) {
  std::lock_guard lock(mutex_);
  const auto kind = static_cast<unsigned>(operation);
  armed_at_[kind] = nth == 0 ? 0 : performed_[kind] + nth;
}

void FaultPlan::step(BackendOperation operation) {
  std::lock_guard lock(mutex_);
  const auto kind = static_cast<unsigned>(operation);
  ++performed_[kind];
  if (armed_at_[kind] != 0 && performed_[kind] == armed_at_[kind]) {
    armed_at_[kind] = 0;
    static const char *const names[kKinds] = {"allocation", "copy", "source load", "event recording",
                                              "copy completion"};
    throw BackendError(std::string("injected failure of ") + names[kind] + " " +
                       std::to_string(performed_[kind]));
  }
}

std::uint64_t FaultPlan::count(BackendOperation operation) const {
  std::lock_guard lock(mutex_);
  return performed_[static_cast<unsigned>(operation)];
}

Storage FaultInjectingMemory::allocate(Location location, std::size_t nbytes) {
  faults_->step(BackendOperation::Allocate);
  return inner_->allocate(location, nbytes);
}

void FaultInjectingCopies::copy(const Storage &from, Storage &to, Stream stream) {
  faults_->step(BackendOperation::Copy);
  inner_->copy(from, to, stream);
}

CopyInFlight FaultInjectingCopies::begin_copy(const Storage &from, Storage &to, Stream stream) {
  faults_->step(BackendOperation::Copy);
  return inner_->begin_copy(from, to, stream);
}

CopyInFlight FaultInjectingCopies::begin_lone_copy(const Storage &from, Storage &to, Stream stream) {
  faults_->step(BackendOperation::Copy);
  return inner_->begin_lone_copy(from, to, stream);
}

void FaultInjectingCopies::finish_copy(CopyInFlight copy) {
  inner_->finish_copy(copy); // the copy must be over before its storage may go
  faults_->step(BackendOperation::CopyCompletion);
}

Event FaultInjectingStreams::record_event(Stream stream) {
  faults_->step(BackendOperation::RecordEvent);
  return inner_->record_event(stream);
}

void FaultInjectingSource::load(std::span<std::byte> destination) {
  faults_->step(BackendOperation::Load);
  inner_->load(destination);
}

BackendInterfaces inject_faults(const BackendInterfaces &inner, std::shared_ptr<FaultPlan> faults) {
  if (!inner.memory || !inner.copies || !inner.streams)
    throw std::invalid_argument("inject_faults needs all three interfaces");
  return BackendInterfaces(std::make_shared<FaultInjectingMemory>(inner.memory, faults),
                           std::make_shared<FaultInjectingCopies>(inner.copies, faults),
                           std::make_shared<FaultInjectingStreams>(inner.streams, faults));
}

} // namespace fhr
