#pragma once
/// \file
/// fhr::Controller: automatic residency over one manager (docs/semantics.md
/// §18.3), the seed's ResidencyController. It owns no values: from a
/// Request it derives a plan (what to evict, by the policy's order, and
/// what to bring in), checks it with the manager's explain against the
/// state version it planned on, and hands it back as a Decision; `scope`
/// commits a decision (refused as stale after any change), `use` decides,
/// commits and leases in one step.
///
/// The C++ names map 1:1 onto the seed's (Controller = ResidencyController,
/// Request = ResidencyRequest, Decision = ResidencyDecision, Eviction =
/// ResidencyEviction, Use = ResidencyUse), so that bindings stay thin.
/// Thread safety: every member may be called from any thread; the
/// controller's own lock serialises decisions and access records, and the
/// search runs on the manager's state under the manager's lock.

#include "fhr/controller/policy.hpp"
#include "fhr/controller/request.hpp"
#include "fhr/controller/search.hpp"
#include "fhr/runtime/manager.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace fhr {

/// One reclaim action of a decision and why the controller chose it.
struct Eviction {
  ActionSpec action; ///< a drop or a move
  /// The candidate's position in the policy's order when it was chosen.
  std::size_t rank = 0;
  Location released_location;
  std::uint64_t released_nbytes = 0;
  EvictionReason reason_kind = EvictionReason::OtherReplica;
  std::string reason;
};

/// A plan bound to the manager state it was derived from (§18.3 step 6).
struct Decision {
  std::uint64_t manager_id = 0;
  std::uint64_t expected_state_version = 0;
  std::uint64_t explored_states = 0;
  Request request;
  /// Reclaim actions, the request's reservations and its enter actions; no exit actions.
  PlanSpec plan;
  std::string policy_name;
  nlohmann::ordered_json policy_config;
  std::vector<Eviction> evictions;
  /// The manager's explain of `plan` at expected_state_version (feasible).
  Explanation explanation;
};

/// A consumer stream per CUDA location a Use leases at.
using ConsumerStreams = std::vector<std::pair<Location, Stream>>;

class Controller;

/// A single-use decide-commit-lease lifetime (the seed's ResidencyUse).
/// enter(): decide, enter the decision's scope, lease every requirement
/// (one lease per location, in first-seen order, CUDA leases on the given
/// consumer stream) and record the access. close(): release the leases and
/// close the scope; the values stay resident (no exit actions).
class Use {
public:
  Use(Use &&) noexcept;
  Use &operator=(Use &&) = delete;
  Use(const Use &) = delete;
  ~Use();

  /// std::logic_error on a second entry. Any failure consumes the use; a
  /// failure after the scope was entered closes it first.
  void enter();
  /// Idempotent; std::logic_error before enter(). A failing scope close
  /// (ResidencyPlanExecutionError) propagates after the leases are released.
  void close();
  /// enter(), body(), close(); if the body throws, the use is closed and the
  /// body's exception propagates.
  template <typename Body>
  void run(Body &&body);

  const Request &request() const { return request_; }
  /// The decision, once entry has made one (std::logic_error before).
  const Decision &decision() const;
  /// The bytes of a required value while the use is entered: std::logic_error
  /// outside that window, std::out_of_range for a pair the request does not name.
  std::span<const std::byte> value(const Handle &handle, Location at) const;
  /// The scope's report once closed.
  const std::optional<PlanReport> &report() const;
  const std::optional<ResidencyPlanExecutionError> &exit_error() const;

private:
  friend class Controller;
  Use(Controller &controller, Request request, ConsumerStreams consumer_streams,
      TransferStreams transfer_streams);
  void release_leases() noexcept;

  enum class Stage { Created, Entered, Closed };
  Controller *controller_;
  Request request_;
  ConsumerStreams consumer_streams_;
  TransferStreams transfer_streams_;
  Stage stage_ = Stage::Created;
  std::optional<Decision> decision_;
  std::optional<Scope> scope_;
  std::vector<Lease> leases_; ///< one per requirement location, in first-seen order
  std::optional<PlanReport> no_report_;
  std::optional<ResidencyPlanExecutionError> no_error_;
};

class Controller {
public:
  /// `policy`: DeterministicTieredLRU() when null. std::invalid_argument for
  /// a search_state_limit of 0 or a policy with a blank name. The policy's
  /// name and configuration are read once, here.
  explicit Controller(Manager &manager, std::shared_ptr<const Policy> policy = nullptr,
                      std::uint64_t search_state_limit = 100000);
  Controller(const Controller &) = delete;
  Controller &operator=(const Controller &) = delete;

  Manager &manager() const { return *manager_; }
  const Policy &policy() const { return *policy_; }
  std::uint64_t search_state_limit() const { return search_state_limit_; }

  /// Eviction hints for a live handle of this manager (ResidencyHandleError
  /// otherwise); std::invalid_argument for a blank stable key or one that
  /// another handle already has.
  void set_policy_metadata(const Handle &handle, std::int64_t priority = 0,
                           std::optional<std::string> stable_key = std::nullopt);

  /// §18.3: a plan for `request` from the current state, checked by explain.
  /// Never loads, never changes the manager. Throws ResidencyHandleError
  /// (foreign, unknown or discarded handle), ResidencyOwnershipError (an
  /// EXCLUSIVE value at two locations), ResidencyPlanError (infeasible),
  /// ResidencySearchLimitError (inconclusive), ResidencyStaleStateError (the
  /// state changed while deciding), ResidencyClosedError.
  Decision decide(const Request &request);
  /// The decision's scope, refused at entry as stale after any change since
  /// the decision. ResidencyHandleError for a decision of another manager,
  /// ResidencyPlanError for one made under another policy.
  Scope scope(const Decision &decision, TransferStreams transfer_streams = {});
  /// A Use of `request`. The consumer streams must name exactly the CUDA
  /// locations the request requires, each once (std::invalid_argument now,
  /// before any decision).
  Use use(Request request, ConsumerStreams consumer_streams = {}, TransferStreams transfer_streams = {});

  /// The access epoch of a value's last use (0: never used).
  std::uint64_t last_access_epoch(const Handle &handle) const;

private:
  friend class Use;
  void record_access(const std::vector<Handle> &handles);
  void validate_decision(const Decision &decision) const;

  Manager *manager_;
  std::shared_ptr<const Policy> policy_;
  std::string policy_name_;
  nlohmann::ordered_json policy_config_;
  std::uint64_t search_state_limit_;

  mutable std::mutex mutex_;
  /// By ValueId (handle_id - 1); values past the end have the defaults.
  std::vector<PolicyMetadata> metadata_;
  std::vector<std::uint64_t> last_access_;
  /// PolicyInputs::tie_order, rebuilt at the next decision after metadata changed.
  std::vector<std::uint32_t> tie_order_;
  bool tie_order_stale_ = false;
  std::uint64_t access_epoch_ = 0;
};

template <typename Body>
void Use::run(Body &&body) {
  enter();
  try {
    body();
  } catch (...) {
    try {
      close();
    } catch (...) { // the body's exception is the one that propagates
    }
    throw;
  }
  close();
}

} // namespace fhr
