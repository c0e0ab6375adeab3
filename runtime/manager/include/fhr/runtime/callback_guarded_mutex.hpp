#pragma once
/// \file
/// The manager lock of SEMANTICS.md §13: a mutex whose waiters give up as
/// soon as a source callback starts. A loader runs with the lock held; if it
/// waited for a thread that is itself waiting for the lock, a plain mutex
/// would deadlock. Here starting a callback wakes every waiter, and they
/// (and anyone who arrives later) refuse until it ends.
///
/// Built from a small mutex and a condition variable rather than a polling
/// timed lock, so that waiting costs no CPU and ThreadSanitizer sees every
/// acquisition.

#include <condition_variable>
#include <mutex>

namespace fhr {

class CallbackGuardedMutex {
public:
  /// Takes the lock, blocking while another thread holds it. Returns false,
  /// without the lock, when a callback is running or starts meanwhile.
  bool lock_unless_callback() {
    std::unique_lock gate(gate_);
    for (;;) {
      if (callback_) return false;
      if (!held_) break;
      ++waiters_;
      released_.wait(gate);
      --waiters_;
    }
    held_ = true;
    return true;
  }

  void unlock() {
    std::unique_lock gate(gate_);
    held_ = false;
    const bool wake = waiters_ > 0;
    gate.unlock();
    if (wake) released_.notify_one();
  }

  /// Called by the lock's holder around a source callback.
  void begin_callback() {
    std::unique_lock gate(gate_);
    callback_ = true;
    const bool wake = waiters_ > 0;
    gate.unlock();
    if (wake) released_.notify_all(); // waiters must now refuse
  }
  void end_callback() {
    std::lock_guard gate(gate_);
    callback_ = false;
  }
  bool callback_running() const {
    std::lock_guard gate(gate_);
    return callback_;
  }

private:
  mutable std::mutex gate_;
  std::condition_variable released_;
  bool held_ = false;
  bool callback_ = false;
  unsigned waiters_ = 0;
};

} // namespace fhr
