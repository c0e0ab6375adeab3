// The controller's search (§18.3 steps 2–4): simulate the whole request;
// where a location is short of room, try each legal reclaim of each
// candidate in the policy's order, depth first, and simulate again; a
// failed state is remembered and never explored twice.
//
// The state is the model State the search starts from plus an overlay of
// what the reclaim actions so far changed, undone on the way back, so that
// a step of the search costs what it changes rather than a copy of every
// value. A state's identity (the memo key) is the set of (value, location)
// pairs where it differs from the start.
#include "fhr/controller/search.hpp"

#include "fhr/runtime/errors.hpp"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <unordered_set>

namespace fhr {

std::string eviction_reason_text(EvictionReason reason, Location destination) {
  switch (reason) {
  case EvictionReason::OtherReplica: return "another replica keeps the value";
  case EvictionReason::SourceRebuilds: return "its registered source can rebuild the value";
  case EvictionReason::SoleReplicaMoved: return "its only replica moves to " + destination.name();
  }
  return {};
}

namespace {

/// A callable borrowed for the duration of a call: the search's continuations.
class Continuation {
public:
  template <typename F>
  Continuation(F &&f) // NOLINT(google-explicit-constructor): lambdas convert implicitly
      : object_(std::addressof(f)),
        call_([](void *object) { return (*static_cast<std::remove_reference_t<F> *>(object))(); }) {}
  /// True when the search succeeded and must stop.
  bool operator()() const { return call_(object_); }

private:
  void *object_;
  bool (*call_)(void *);
};

struct Shortfall {
  Location location;
  std::uint64_t additional = 0;
  std::string stage;
};

/// Thrown through the search when it reaches its state limit, or the
/// bottom of its thread's stack.
struct LimitReached {
  std::string detail;
};

/// The calling thread's stack: its lowest address (0 when unknown) and its
/// size. Found once per thread: for the main thread glibc reads
/// /proc/self/maps.
struct ThreadStack {
  std::uintptr_t bottom = 0;
  std::size_t size = 0;
};
ThreadStack thread_stack() {
  thread_local const ThreadStack stack = [] {
    ThreadStack found;
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return found;
    void *address = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attributes, &address, &size) == 0)
      found = {reinterpret_cast<std::uintptr_t>(address), size};
    pthread_attr_destroy(&attributes);
    return found;
  }();
  return stack;
}

/// Stack the search keeps free below its deepest frame: room to build the
/// limit's message and unwind in every build (an AddressSanitizer frame of
/// the search takes several kilobytes), a quarter of a smaller stack.
std::size_t stack_reserve(std::size_t stack_size) {
  return std::min<std::size_t>(512 * 1024, stack_size / 4);
}

using Key = std::vector<std::uint64_t>;
struct KeyHash {
  std::size_t operator()(const Key &key) const {
    std::uint64_t h = 0x9e3779b97f4a7c15ull ^ key.size();
    for (std::uint64_t word : key) {
      h ^= word + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdull;
    }
    return static_cast<std::size_t>(h ^ (h >> 32));
  }
};
constexpr std::uint64_t kSeparator = std::numeric_limits<std::uint64_t>::max();

std::uint64_t pair_code(ValueId value, Location location) {
  return (std::uint64_t{value} << 8) | location.index();
}

/// Values the search may not pick as victims and (value, location) pairs
/// being moved, for one branch of the search.
struct Exclusions {
  std::vector<ValueId> blocked;
  std::vector<std::uint64_t> active;
  bool is_blocked(ValueId value) const {
    return std::find(blocked.begin(), blocked.end(), value) != blocked.end();
  }
  bool is_active(ValueId value, Location location) const {
    return std::find(active.begin(), active.end(), pair_code(value, location)) != active.end();
  }
};

class Search {
public:
  Search(const State &state, const SearchRequest &request, const Policy &policy, const PolicyInputs &inputs,
         std::uint64_t limit)
      : state_(state), request_(request), policy_(policy), inputs_(inputs), limit_(limit),
        slot_(state.value_count(), -1) {
    for (const auto &[value, location] : request.requirements) {
      auto it = std::lower_bound(required_.begin(), required_.end(), value,
                                 [](const auto &entry, ValueId v) { return entry.first < v; });
      if (it == required_.end() || it->first != value) it = required_.insert(it, {value, LocationSet{}});
      it->second.insert(location);
      required_locations_.insert(location);
    }
  }

  SearchResult run() {
    try {
      if (search_request()) {
        result_.explored_states = explored_;
        return std::move(result_);
      }
    } catch (const LimitReached &limit) {
      throw ResidencySearchLimitError(std::string(request_.name), limit_, explored_, limit.detail);
    }
    throw ResidencyPlanError("Automatic residency request '" + std::string(request_.name) +
                             "' is infeasible: " + failure_);
  }

private:
  // ---- the state: the start plus the overlay ------------------------------
  const LocationSet &resident(ValueId value) const {
    return slot_[value] < 0 ? state_.value(value).resident : overlay_[static_cast<std::size_t>(slot_[value])];
  }
  void set_resident(ValueId value, LocationSet after) {
    const LocationSet before = resident(value);
    before.for_each([&](Location l) {
      if (!after.contains(l)) toggle_difference(pair_code(value, l));
    });
    after.for_each([&](Location l) {
      if (!before.contains(l)) toggle_difference(pair_code(value, l));
    });
    if (slot_[value] < 0) {
      slot_[value] = static_cast<std::int32_t>(overlay_.size());
      overlay_.push_back(after);
    } else {
      overlay_[static_cast<std::size_t>(slot_[value])] = after;
    }
  }
  void toggle_difference(std::uint64_t code) {
    const auto it = std::lower_bound(difference_.begin(), difference_.end(), code);
    if (it != difference_.end() && *it == code)
      difference_.erase(it);
    else
      difference_.insert(it, code);
  }
  std::uint64_t storage(ValueId value) const { return state_.value(value).spec.storage_nbytes; }
  std::uint64_t used(Location l) const {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(state_.account(l).used_bytes) +
                                      used_delta_[l.index()]);
  }
  std::uint64_t reserved(Location l) const {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(state_.account(l).reserved_bytes) +
                                      reserved_delta_[l.index()]);
  }
  /// §18.3's capacity check: used + reserved + additional <= budget, as
  /// the model spells it (LocationAccount::fits, whose limit holds
  /// unbudgeted locations too).
  bool fits(Location l, std::uint64_t additional) const {
    LocationAccount account;
    account.budget_bytes = state_.account(l).budget_bytes;
    account.used_bytes = used(l);
    account.reserved_bytes = reserved(l);
    return account.fits(additional);
  }
  LocationSet required_at(ValueId value) const {
    const auto it = std::lower_bound(required_.begin(), required_.end(), value,
                                     [](const auto &entry, ValueId v) { return entry.first < v; });
    return it != required_.end() && it->first == value ? it->second : LocationSet{};
  }

  void count(const std::string &objective) {
    if (explored_ >= limit_) throw LimitReached{"it was still looking for " + objective};
    ++explored_;
  }

  /// Each reclaim the search tries nests a level deeper (a request that
  /// evicts a thousand values goes a thousand reclaims down): it stops,
  /// inconclusive, before its thread's stack runs out, where it would have
  /// crashed (3,000 to 3,500 levels on an 8 MiB stack in an optimised
  /// build, a few hundred under AddressSanitizer). How deep it may go so
  /// depends on the thread's stack and the build; the limit error says
  /// which stop it met.
  void check_stack() const {
    const ThreadStack stack = thread_stack();
    const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    // Off a known stack (a fiber's, say) the check does not apply.
    if (stack.bottom != 0 && frame >= stack.bottom && frame - stack.bottom < stack.size &&
        frame - stack.bottom < stack_reserve(stack.size))
      throw LimitReached{"it nested reclaims as deep as its thread's stack allows (" +
                         std::to_string(reclaim_.size()) + " reclaims in the plan so far)"};
  }

  // ---- reclaim actions and their undo -------------------------------------
  struct Applied {
    ValueId value;
    LocationSet before;
    Location freed, filled;
    bool fills = false;
  };
  Applied apply_drop(ValueId value, Location at, std::size_t rank, EvictionReason reason) {
    Applied applied{value, resident(value), at, at, false};
    LocationSet after = applied.before;
    after.erase(at);
    set_resident(value, after);
    used_delta_[at.index()] -= static_cast<std::int64_t>(storage(value));
    const Action action{ActionKind::Drop, value, at, std::nullopt};
    reclaim_.push_back(action);
    evictions_.push_back(PlannedEviction{action, rank, at, storage(value), reason});
    return applied;
  }
  Applied apply_move(ValueId value, Location to, Location from, std::size_t rank) {
    Applied applied{value, resident(value), from, to, !resident(value).contains(to)};
    LocationSet after = applied.before;
    if (applied.fills) {
      after.insert(to);
      used_delta_[to.index()] += static_cast<std::int64_t>(storage(value));
    }
    after.erase(from);
    set_resident(value, after);
    used_delta_[from.index()] -= static_cast<std::int64_t>(storage(value));
    const Action action{ActionKind::Move, value, to, from};
    reclaim_.push_back(action);
    evictions_.push_back(
        PlannedEviction{action, rank, from, storage(value), EvictionReason::SoleReplicaMoved});
    return applied;
  }
  void undo(const Applied &applied) {
    set_resident(applied.value, applied.before);
    used_delta_[applied.freed.index()] += static_cast<std::int64_t>(storage(applied.value));
    if (applied.fills)
      used_delta_[applied.filled.index()] -= static_cast<std::int64_t>(storage(applied.value));
    reclaim_.pop_back();
    evictions_.pop_back();
  }

  // ---- simulating the request (§18.3 step 2) -------------------------------
  /// Simulates the request on the current state and leaves the state as it
  /// was. Fills `enter` and returns nothing when it fits.
  std::optional<Shortfall> simulate(std::vector<Action> &enter) {
    std::vector<std::pair<ValueId, LocationSet>> restore;
    std::vector<std::pair<Location, std::int64_t>> used_changes, reserved_changes;
    const auto change_used = [&](Location l, std::int64_t delta) {
      used_delta_[l.index()] += delta;
      used_changes.emplace_back(l, delta);
    };
    const auto change_reserved = [&](Location l, std::int64_t delta) {
      reserved_delta_[l.index()] += delta;
      reserved_changes.emplace_back(l, delta);
    };
    const auto change_resident = [&](ValueId value, LocationSet after) {
      restore.emplace_back(value, resident(value));
      set_resident(value, after);
    };
    std::optional<Shortfall> shortfall;
    for (const Reservation &r : request_.reservations) {
      if (!fits(r.location, r.nbytes)) {
        shortfall = Shortfall{r.location, r.nbytes, "reservation '" + r.label + "'"};
        break;
      }
      change_reserved(r.location, static_cast<std::int64_t>(r.nbytes));
    }
    for (std::size_t i = 0; !shortfall && i < request_.requirements.size(); ++i) {
      const auto &[value, destination] = request_.requirements[i];
      LocationSet here = resident(value);
      if (here.contains(destination)) continue;
      const ValueRecord &record = state_.value(value);
      const auto charge = static_cast<std::int64_t>(record.spec.storage_nbytes);
      std::optional<Location> source = here.first();
      const bool reconstruct = !source;
      if (reconstruct) {
        if (!record.source_location)
          throw ResidencyUnavailableError("value " + std::to_string(value + 1) +
                                          " has no materialization and no source to rebuild it from");
        source = record.source_location;
        if (!fits(*source, record.spec.storage_nbytes)) {
          shortfall = Shortfall{*source, record.spec.storage_nbytes,
                                "loading value " + std::to_string(value + 1) + " from its source"};
          break;
        }
        change_reserved(*source, charge);
        // Loaded where it is needed: one charge there, not two (§4.5).
        if (*source == destination) change_reserved(*source, -charge);
      }
      if (!fits(destination, record.spec.storage_nbytes)) {
        shortfall =
            Shortfall{destination, record.spec.storage_nbytes,
                      "materializing value " + std::to_string(value + 1) + " at " + destination.name()};
        break;
      }
      change_used(destination, charge);
      here.insert(destination);
      if (reconstruct && *source != destination) change_reserved(*source, -charge);
      if (record.spec.replica_mode == ReplicaMode::Exclusive) {
        enter.push_back(Action{ActionKind::Move, value, destination,
                               reconstruct ? std::nullopt : std::optional<Location>(source)});
        if (!reconstruct) {
          here.erase(*source);
          change_used(*source, -charge);
        }
      } else {
        enter.push_back(Action{ActionKind::Ensure, value, destination, std::nullopt});
      }
      change_resident(value, here);
    }
    for (auto it = restore.rbegin(); it != restore.rend(); ++it)
      set_resident(it->first, it->second);
    for (const auto &[l, delta] : used_changes)
      used_delta_[l.index()] -= delta;
    for (const auto &[l, delta] : reserved_changes)
      reserved_delta_[l.index()] -= delta;
    if (shortfall) enter.clear();
    return shortfall;
  }

  // ---- candidates in the policy's order ------------------------------------
  /// The tiered-LRU key (tiered_lru_less on numbers): priority, epoch (0:
  /// never, before every real epoch), the tie-break position, and the
  /// value last, so that the order is total even where the caller's
  /// tie_order is not a permutation.
  struct LruKey {
    std::int64_t priority;
    std::uint64_t epoch;
    std::uint64_t tie;
    ValueId value;
  };
  static bool earlier(const LruKey &a, const LruKey &b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.epoch != b.epoch) return a.epoch < b.epoch;
    if (a.tie != b.tie) return a.tie < b.tie;
    return a.value < b.value;
  }
  LruKey lru_key(ValueId v) const {
    const PolicyInputs &in = inputs_;
    LruKey key{0, 0, 0, v};
    if (v < in.metadata.size()) key.priority = in.metadata[v].priority;
    if (v < in.last_access.size()) key.epoch = in.last_access[v];
    key.tie = v < in.tie_order.size() ? in.tie_order[v] : std::uint64_t{v} + in.tie_order.size();
    return key;
  }
  /// Every value's key in tiered-LRU order, sorted once per search, the
  /// first time a level walks past the victims of its pass.
  const std::vector<LruKey> &lru_order() {
    if (lru_order_.empty() && state_.value_count() > 0) {
      lru_order_.reserve(state_.value_count());
      for (ValueId v = 0; v < state_.value_count(); ++v)
        lru_order_.push_back(lru_key(v));
      std::sort(lru_order_.begin(), lru_order_.end(), earlier);
    }
    return lru_order_;
  }

  /// The unprotected replicas at a location, ordered by the policy, those
  /// the request itself needs there last. The search below a candidate
  /// changes the state and undoes its changes before the next candidate
  /// is asked for, so the candidates are those of the state the order was
  /// made in.
  ///
  /// With the tiered-LRU key the order is found as it is walked and holds
  /// no list: a level's first four victims by one pass over the values
  /// (most searches need one), the later ones from the search's one
  /// sorted order. A search
  /// that nests a reclaim per evicted value (thousands, where a request
  /// evicts thousands) so keeps a few words per level, not a list of
  /// every candidate. Another policy orders a list made here.
  class CandidateOrder {
  public:
    CandidateOrder(Search &search, Location at, const Exclusions &exclusions)
        : search_(search), at_(at), exclusions_(exclusions), lazy_(search.policy_.orders_by_tiered_lru_key()),
          any_required_here_(search.required_locations_.contains(at)) {
      if (lazy_) return;
      std::array<std::vector<ValueId>, 2> values; // ordinary, then required endpoints
      const auto count = static_cast<ValueId>(search.state_.value_count());
      for (ValueId v = 0; v < count; ++v) {
        const std::optional<std::size_t> group = group_of(v);
        if (group) values[*group].push_back(v);
      }
      for (const std::vector<ValueId> &group : values)
        order_with_policy(group);
    }
    std::optional<ValueId> next() {
      if (!lazy_) return position_ < ordered_.size() ? std::optional(ordered_[position_++]) : std::nullopt;
      // Required endpoints form a group of their own only where the
      // request requires something here.
      for (const unsigned groups = any_required_here_ ? 2 : 1; group_ < groups; ++group_) {
        if (const std::optional<ValueId> victim = next_in_group()) return victim;
      }
      return std::nullopt;
    }

  private:
    /// The victims a level's one pass keeps, earliest first: most levels
    /// stop after their first, and a level that walks past these goes on
    /// in the search's sorted order.
    static constexpr std::size_t kPassVictims = 4;

    /// The value's group (0 ordinary, 1 a required endpoint here) when it
    /// is a candidate in the current state; none when it is not. Inlined:
    /// the first victim's pass asks it of every value, and a call each
    /// made `decide` on 1,000 values 80% slower (bench/controller_bench).
    [[gnu::always_inline]] std::optional<std::size_t> group_of(ValueId v) const {
      const ValueRecord &record = search_.state_.value(v);
      if (!search_.resident(v).contains(at_) || record.protected_at.contains(at_)) return std::nullopt;
      if (!exclusions_.blocked.empty() && exclusions_.is_blocked(v)) return std::nullopt;
      return any_required_here_ && search_.required_at(v).contains(at_) ? 1 : 0;
    }
    std::optional<ValueId> next_in_group() {
      if (!passed_) pass();
      if (taken_ < kept_) return found(pass_victims_[taken_++]);
      // Fewer candidates than the pass keeps: the group is done.
      if (kept_ < kPassVictims) return found(std::nullopt);
      const std::vector<LruKey> &order = search_.lru_order();
      // Resume the sorted order just after the last victim.
      if (cursor_ == kNoCursor)
        cursor_ = static_cast<std::size_t>(
            std::upper_bound(order.begin(), order.end(), search_.lru_key(last_), earlier) - order.begin());
      for (; cursor_ < order.size(); ++cursor_) {
        const ValueId v = order[cursor_].value;
        if (group_of(v) == group_) {
          ++cursor_;
          return found(v);
        }
      }
      return found(std::nullopt);
    }
    /// One pass over the values: the group's candidates with the earliest
    /// keys, up to kPassVictims of them, in order. Their keys stay in this
    /// call's frame: the order is in every frame of the search's
    /// recursion, so what it keeps costs depth.
    void pass() {
      const std::size_t group = group_;
      std::array<LruKey, kPassVictims> keys{};
      std::size_t kept = 0;
      const auto count = static_cast<ValueId>(search_.state_.value_count());
      for (ValueId v = 0; v < count; ++v) {
        if (group_of(v) != group) continue;
        const LruKey key = search_.lru_key(v);
        if (kept == kPassVictims && !earlier(key, keys[kPassVictims - 1])) continue;
        std::size_t at = kept < kPassVictims ? kept++ : kPassVictims - 1;
        for (; at > 0 && earlier(key, keys[at - 1]); --at)
          keys[at] = keys[at - 1];
        keys[at] = key;
      }
      for (std::size_t i = 0; i < kept; ++i)
        pass_victims_[i] = keys[i].value;
      kept_ = static_cast<std::uint8_t>(kept);
      taken_ = 0;
      passed_ = true;
    }
    /// The victim found, remembered as the last; none ends the group, and
    /// the next group starts with its own pass.
    std::optional<ValueId> found(std::optional<ValueId> victim) {
      if (victim) {
        last_ = *victim;
        return victim;
      }
      passed_ = false;
      cursor_ = kNoCursor;
      return std::nullopt;
    }

    void order_with_policy(const std::vector<ValueId> &values) {
      if (values.empty()) return;
      const PolicyInputs &in = search_.inputs_;
      std::vector<EvictionCandidate> candidates;
      candidates.reserve(values.size());
      for (ValueId v : values) {
        EvictionCandidate c;
        c.handle = Handle{in.manager_id, std::uint64_t{v} + 1};
        c.location = at_;
        c.charged_nbytes = search_.storage(v);
        c.registration_index = v;
        if (v < in.last_access.size() && in.last_access[v] != 0) c.last_access_epoch = in.last_access[v];
        if (v < in.metadata.size()) c.metadata = in.metadata[v];
        candidates.push_back(std::move(c));
      }
      const std::vector<EvictionCandidate> ordered = search_.policy_.order_candidates(candidates);
      // Each candidate exactly once: `values` ascends, so a lookup finds its slot.
      std::vector<bool> seen(values.size(), false);
      bool valid = ordered.size() == values.size();
      for (std::size_t i = 0; valid && i < ordered.size(); ++i) {
        const EvictionCandidate &c = ordered[i];
        const auto it = std::lower_bound(values.begin(), values.end(), c.registration_index);
        const std::size_t slot = static_cast<std::size_t>(it - values.begin());
        valid = it != values.end() && *it == c.registration_index && !seen[slot] && c.location == at_ &&
                c.handle == candidates[slot].handle;
        if (valid) {
          seen[slot] = true;
          ordered_.push_back(values[slot]);
        }
      }
      if (!valid)
        throw std::runtime_error("policy '" + search_.policy_.name() +
                                 "' must return every eviction candidate exactly once");
    }

    Search &search_;
    Location at_;
    const Exclusions &exclusions_;
    bool lazy_;
    bool any_required_here_;
    // The tiered-LRU walk, kept small (an order is in every frame of the
    // search's recursion): the group walked (ordinary, then required
    // endpoints), whether its pass was made, the victims the pass kept and
    // how many of them were taken, the last victim, and where in the
    // sorted order the walk goes on.
    static constexpr std::size_t kNoCursor = std::numeric_limits<std::size_t>::max();
    std::uint8_t group_ = 0;
    bool passed_ = false;
    std::uint8_t kept_ = 0, taken_ = 0;
    std::array<ValueId, kPassVictims> pass_victims_{};
    ValueId last_ = 0;
    std::size_t cursor_ = kNoCursor;
    // Another policy's order.
    std::vector<ValueId> ordered_;
    std::size_t position_ = 0;
  };

  // ---- the search (§18.3 step 3) ------------------------------------------
  Key request_key() const { return difference_; }
  Key capacity_key(Location at, std::uint64_t additional, const Exclusions &exclusions) const {
    Key key = difference_;
    key.push_back(kSeparator);
    key.push_back(at.index());
    key.push_back(additional);
    key.push_back(kSeparator);
    std::vector<ValueId> blocked = exclusions.blocked;
    std::sort(blocked.begin(), blocked.end());
    key.insert(key.end(), blocked.begin(), blocked.end());
    key.push_back(kSeparator);
    std::vector<std::uint64_t> active = exclusions.active;
    std::sort(active.begin(), active.end());
    key.insert(key.end(), active.begin(), active.end());
    return key;
  }

  /// Tries the whole request from the current state; true on success (the
  /// result is filled), false with failure_ set.
  bool search_request() {
    if (failed_requests_.contains(difference_)) {
      failure_ = "an equivalent state was already exhausted";
      return false;
    }
    // A state the search is already in, further up its path: reclaims that
    // lead back to it (a value moved out and, to make room elsewhere, moved
    // back in) would recurse until the stack ran out. Going round adds
    // nothing, so that way fails and the search tries the next.
    const auto [entry, entered] = requests_on_path_.insert(request_key());
    if (!entered) {
      failure_ = "the reclaims lead back to a state the search is already in";
      return false;
    }
    // The path's copy is the level's key (a set's elements stay where they
    // are): one copy of the state's difference per level, not two.
    const Key &key = *entry;
    const OnPath leave{requests_on_path_, key};
    count("a plan for the whole request");
    std::vector<Action> enter;
    const std::optional<Shortfall> shortfall = simulate(enter);
    if (!shortfall) {
      result_.reclaim = reclaim_;
      result_.evictions = evictions_;
      result_.enter = std::move(enter);
      return true;
    }
    std::string failures;
    const Exclusions none;
    CandidateOrder order(*this, shortfall->location, none);
    std::size_t rank = 0;
    for (std::optional<ValueId> victim = order.next(); victim; victim = order.next(), ++rank) {
      bool produced = false;
      const bool done = reclaim_states(*victim, shortfall->location, rank, none, [&] {
        produced = true;
        if (search_request()) return true;
        note_failure(failures, *victim, failure_);
        return false;
      });
      if (done) return true;
      if (!produced) note_failure(failures, *victim, "no legal drop or fallback transition");
    }
    failed_requests_.insert(key); // a copy: the path still holds the key
    const Location at = shortfall->location;
    const std::uint64_t limit = state_.account(at).limit_bytes();
    failure_ = at.name() + " cannot admit " + std::to_string(shortfall->additional) + " bytes for " +
               shortfall->stage + " (budget " + std::to_string(limit) + ", used " + std::to_string(used(at)) +
               ", reserved " + std::to_string(reserved(at)) +
               ") and no invariant-valid victim sequence satisfies the whole request" +
               (failures.empty() ? "" : " (" + failures + ")");
    return false;
  }

  /// Each legal way to reclaim `victim`'s replica at `at` (a drop, or a
  /// move to a requested destination or a fallback tier, making room there
  /// first), handed to `next` in order; true as soon as `next` succeeds.
  bool reclaim_states(ValueId victim, Location at, std::size_t rank, const Exclusions &exclusions,
                      Continuation next) {
    if (exclusions.is_active(victim, at)) return false;
    check_stack();
    const ValueRecord &record = state_.value(victim);
    LocationSet others = resident(victim);
    others.erase(at);
    const bool another_replica = !others.empty();
    if (another_replica || record.source_location) {
      const Applied applied = apply_drop(
          victim, at, rank, another_replica ? EvictionReason::OtherReplica : EvictionReason::SourceRebuilds);
      const bool done = next();
      undo(applied);
      if (done) return true;
      if (another_replica) return false; // a replica elsewhere: the drop is the only option tried
    }
    std::vector<Location> destinations;
    LocationSet requested = required_at(victim);
    requested.erase(at);
    requested.for_each([&](Location l) { destinations.push_back(l); });
    for (Location l : policy_.fallback_locations(at))
      if (std::find(destinations.begin(), destinations.end(), l) == destinations.end())
        destinations.push_back(l);
    Exclusions inner = exclusions;
    inner.blocked.push_back(victim);
    inner.active.push_back(pair_code(victim, at));
    for (Location destination : destinations) {
      const std::uint64_t additional = resident(victim).contains(destination) ? 0 : storage(victim);
      const bool done = capacity_states(destination, additional, inner, [&] {
        if (!resident(victim).contains(at)) return false;
        const Applied applied = apply_move(victim, destination, at, rank);
        const bool moved_and_done = next();
        undo(applied);
        return moved_and_done;
      });
      if (done) return true;
    }
    return false;
  }

  /// Each state reachable by reclaiming at `at` in which `additional` more
  /// bytes fit there, handed to `next`; true as soon as `next` succeeds.
  bool capacity_states(Location at, std::uint64_t additional, const Exclusions &exclusions,
                       Continuation next) {
    if (fits(at, additional)) return next();
    Key candidate_key = capacity_key(at, additional, exclusions);
    if (failed_capacities_.contains(candidate_key)) return false;
    // Room-making that leads back to a state it is already making room in
    // (a value moved to a tier, another moved back to its requested
    // destination to make room there) would go round until the stack ran
    // out; the frame further up goes on to the same states, so this way
    // fails. Unlike a request, room found does not end the search, so a
    // failure that a cut caused is not remembered: from another path the
    // state may have room.
    const auto [entry, entered] = capacities_on_path_.insert(std::move(candidate_key));
    if (!entered) {
      ++capacity_cuts_;
      return false;
    }
    const Key &key = *entry;
    const OnPath leave{capacities_on_path_, key};
    const std::uint64_t cuts_before = capacity_cuts_;
    count("room for " + std::to_string(additional) + " bytes at " + at.name());
    bool produced = false;
    CandidateOrder order(*this, at, exclusions);
    std::size_t rank = 0;
    for (std::optional<ValueId> victim = order.next(); victim; victim = order.next(), ++rank) {
      if (exclusions.is_active(*victim, at)) continue;
      const bool done = reclaim_states(*victim, at, rank, exclusions, [&] {
        return capacity_states(at, additional, exclusions, [&] {
          produced = true;
          return next();
        });
      });
      if (done) return true;
    }
    if (!produced && capacity_cuts_ == cuts_before) failed_capacities_.insert(key);
    return false;
  }

  static void note_failure(std::string &failures, ValueId victim, const std::string &why) {
    constexpr std::size_t kMessageLimit = 600; // nested failures would grow without bound
    if (failures.size() >= kMessageLimit) {
      if (!failures.ends_with("; ...")) failures += "; ...";
      return;
    }
    if (!failures.empty()) failures += "; ";
    failures += "value " + std::to_string(victim + 1) + ": " + why.substr(0, kMessageLimit / 2);
  }

  const State &state_;
  const SearchRequest &request_;
  const Policy &policy_;
  const PolicyInputs &inputs_;
  std::uint64_t limit_;
  std::uint64_t explored_ = 0;

  std::vector<std::int32_t> slot_; ///< overlay_ index per value, -1: as in state_
  std::vector<LocationSet> overlay_;
  std::array<std::int64_t, Location::kCount> used_delta_{}, reserved_delta_{};
  Key difference_; ///< sorted pair codes where the state differs from state_
  std::vector<std::pair<ValueId, LocationSet>> required_;
  LocationSet required_locations_;

  std::vector<Action> reclaim_;
  std::vector<PlannedEviction> evictions_;
  std::vector<LruKey> lru_order_; ///< lru_order(), made on first use
  std::unordered_set<Key, KeyHash> failed_requests_, failed_capacities_;
  /// The request states and the room-making states on the search's
  /// current path, and how many times room-making was cut for going round.
  std::unordered_set<Key, KeyHash> requests_on_path_, capacities_on_path_;
  std::uint64_t capacity_cuts_ = 0;
  /// Takes a state off the path when its search returns (or throws);
  /// `key` is the path's own element, found before it is erased.
  struct OnPath {
    std::unordered_set<Key, KeyHash> &path;
    const Key &key;
    ~OnPath() { path.erase(path.find(key)); }
  };
  std::string failure_;
  SearchResult result_;
};

} // namespace

std::vector<std::uint32_t> tiered_lru_tie_order(std::span<const PolicyMetadata> metadata) {
  bool keyed = false;
  for (const PolicyMetadata &m : metadata)
    keyed = keyed || m.stable_key.has_value();
  if (!keyed) return {};
  std::vector<std::uint32_t> by_key(metadata.size());
  for (std::uint32_t v = 0; v < by_key.size(); ++v)
    by_key[v] = v;
  std::sort(by_key.begin(), by_key.end(), [&](std::uint32_t a, std::uint32_t b) {
    const std::optional<std::string> &ka = metadata[a].stable_key, &kb = metadata[b].stable_key;
    if (ka.has_value() != kb.has_value()) return ka.has_value();
    if (ka && *ka != *kb) return *ka < *kb;
    return a < b;
  });
  std::vector<std::uint32_t> position(metadata.size());
  for (std::uint32_t i = 0; i < by_key.size(); ++i)
    position[by_key[i]] = i;
  return position;
}

SearchResult search_request(const State &state, const SearchRequest &request, const Policy &policy,
                            const PolicyInputs &inputs, std::uint64_t state_limit) {
  if (state_limit == 0) throw std::invalid_argument("search_state_limit must be positive");
  return Search(state, request, policy, inputs, state_limit).run();
}

} // namespace fhr
