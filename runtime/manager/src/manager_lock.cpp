// The manager lock and the reentrancy rules of docs/semantics.md §13.
#include "fhr/runtime/manager.hpp"

#include <iostream>

namespace fhr {

Manager::StateLock::StateLock(const Manager &manager) : manager_(&manager) {
  auto refuse = [&](const char *why) {
    manager_ = nullptr;
    throw ResidencyReentrancyError("manager " + std::to_string(manager.id_) + ": " + why);
  };
  // The lock's holder is the only thread that can find itself as the owner.
  if (manager.lock_owner_.load(std::memory_order_relaxed) == std::this_thread::get_id())
    refuse(manager.mutex_.callback_running() ? "a source callback is running"
                                             : "re-entered an active transition");
  if (!manager.mutex_.lock_unless_callback()) refuse("a source callback is running");
  manager.lock_owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
}

void Manager::StateLock::unlock() {
  if (!manager_) return;
  manager_->lock_owner_.store(std::thread::id{}, std::memory_order_relaxed);
  manager_->mutex_.unlock();
  manager_ = nullptr;
}

Manager::StateLock Manager::lock_state() const { return StateLock(*this); }

Manager::StateLock Manager::open_lock() const {
  StateLock lock(*this);
  if (closed_) throw ResidencyClosedError("manager " + std::to_string(id_) + " is closed");
  return lock;
}

void Manager::warn(const std::string &message) const {
  if (message.empty()) return;
  if (warning_handler_)
    warning_handler_(message);
  else
    std::cerr << "fhr: warning: " << message << '\n';
}

bool Manager::closed() const {
  auto lock = lock_state();
  return closed_;
}

} // namespace fhr
