#pragma once
/// \file
/// The manager lock of docs/semantics.md §13: a mutex whose waiters give up as
/// soon as a source callback starts. A loader runs with the lock held; if it
/// waited for a thread that is itself waiting for the lock, a plain mutex
/// would deadlock. Here starting a callback wakes every waiter, and they
/// (and anyone who arrives later) refuse until it ends.
///
/// The uncontended path is one compare-and-swap to lock and one atomic
/// operation to unlock; contended waiters sleep on a condition variable
/// (no polling, and ThreadSanitizer sees every hand-over).

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace fhr {

class CallbackGuardedMutex {
public:
  /// Takes the lock, blocking while another thread holds it. Returns false,
  /// without the lock, when a callback is running or starts meanwhile.
  bool lock_unless_callback() {
    unsigned expected = 0;
    if (state_.compare_exchange_strong(expected, kHeld, std::memory_order_acquire)) return true;
    if (expected & kCallback) return false;
    std::unique_lock gate(gate_);
    // seq_cst with unlock(): either unlock() sees this waiter and notifies
    // under the gate, or the state load below sees the lock free.
    waiters_.fetch_add(1);
    for (;;) {
      unsigned state = state_.load();
      if (state & kCallback) break;
      if (!(state & kHeld)) {
        if (state_.compare_exchange_strong(state, state | kHeld)) {
          waiters_.fetch_sub(1);
          return true;
        }
        continue;
      }
      released_.wait(gate);
    }
    waiters_.fetch_sub(1);
    return false;
  }

  void unlock() {
    state_.fetch_and(~kHeld);
    if (waiters_.load() != 0) wake(/*all=*/false);
  }

  /// Called by the lock's holder around a source callback.
  void begin_callback() {
    state_.fetch_or(kCallback);
    if (waiters_.load() != 0) wake(/*all=*/true); // waiters must now refuse
  }
  void end_callback() { state_.fetch_and(~kCallback); }
  bool callback_running() const { return (state_.load() & kCallback) != 0; }

private:
  static constexpr unsigned kHeld = 1, kCallback = 2;

  void wake(bool all) {
    { std::lock_guard gate(gate_); } // a waiter between its check and its wait has reached the wait
    if (all)
      released_.notify_all();
    else
      released_.notify_one();
  }

  std::atomic<unsigned> state_{0};
  std::atomic<unsigned> waiters_{0};
  std::mutex gate_;
  std::condition_variable released_;
};

} // namespace fhr
