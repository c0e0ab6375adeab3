#include "fhr/runtime/manager.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <unordered_map>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace fhr {

namespace {

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

std::uint64_t next_manager_id() {
  static std::atomic<std::uint64_t> counter{1};
  return counter.fetch_add(1);
}

/// The value id that no manager ever registers: what a foreign or unknown
/// handle maps to inside a plan, so that the simulator reports a handle error
/// at its step (§10.2) instead of refusing the whole plan up front.
constexpr ValueId kUnresolvable = ~ValueId{0};

class FileSource final : public Source {
public:
  FileSource(std::string path, std::uint64_t offset) : path_(std::move(path)), offset_(offset) {}
  void load(std::span<std::byte> destination) override {
    std::ifstream in(path_, std::ios::binary);
    if (!in) throw BackendError("cannot open '" + path_ + "'");
    in.seekg(static_cast<std::streamoff>(offset_));
    in.read(reinterpret_cast<char *>(destination.data()), static_cast<std::streamsize>(destination.size()));
    if (static_cast<std::size_t>(in.gcount()) != destination.size())
      throw BackendError("'" + path_ + "' holds fewer than " + std::to_string(destination.size()) +
                         " bytes at offset " + std::to_string(offset_));
  }

private:
  std::string path_;
  std::uint64_t offset_;
};

} // namespace

std::shared_ptr<Source> make_file_source(std::string path, std::uint64_t offset) {
  return std::make_shared<FileSource>(std::move(path), offset);
}

/// The physical side of one transition. Storage that is loaded or copied
/// waits here until the model installs it; whatever is still here when a
/// transition fails is freed with this object.
class Manager::Hooks final : public TransitionHooks {
public:
  explicit Hooks(Manager &manager) : manager_(manager) {}

  void load(ValueId value, Location location) override {
    Record &record = manager_.records_[value];
    Storage storage = manager_.backend_->allocate(location, logical_bytes(value));
    manager_.backend_->before_load();
    record.source->load(storage.bytes());
    pending_.emplace_back(location, std::move(storage));
  }

  void copy(ValueId value, Location from, Location to) override {
    const Storage *source = pending(from);
    if (!source) source = manager_.replica(value, from);
    Storage destination = manager_.backend_->allocate(to, logical_bytes(value));
    manager_.backend_->copy(*source, destination);
    pending_.emplace_back(to, std::move(destination));
  }

  void install(ValueId value, Location location) override {
    auto it =
        std::find_if(pending_.begin(), pending_.end(), [&](const auto &p) { return p.first == location; });
    manager_.records_[value].replicas.emplace_back(location, std::move(it->second));
    pending_.erase(it);
  }

  void remove(ValueId value, Location location) override {
    auto &replicas = manager_.records_[value].replicas;
    replicas.erase(
        std::find_if(replicas.begin(), replicas.end(), [&](const auto &r) { return r.first == location; }));
  }

private:
  std::size_t logical_bytes(ValueId value) const {
    return static_cast<std::size_t>(manager_.state_.value(value).spec.logical_nbytes);
  }
  const Storage *pending(Location location) const {
    for (const auto &[at, storage] : pending_)
      if (at == location) return &storage;
    return nullptr;
  }

  Manager &manager_;
  std::vector<std::pair<Location, Storage>> pending_;
};

Manager::Manager(ManagerOptions options)
    : id_(next_manager_id()), backend_(options.backend ? std::move(options.backend) : make_host_backend()),
      state_(backend_->devices()), trace_capacity_(options.trace_capacity) {
  for (const auto &[location, budget] : options.budgets) {
    validate(location);
    state_.set_budget(location, budget);
  }
}

Manager::~Manager() = default;

std::uint64_t Manager::state_version() const {
  auto lock = open_lock();
  return state_.version();
}

std::vector<Location> Manager::locations() const {
  std::lock_guard lock(mutex_);
  return state_.registry();
}

void Manager::validate(Location location) const {
  if (Outcome valid = state_.validate(location); valid.failed()) throw_failure(valid, {}, FailureDetail{});
}

ValueId Manager::resolve(const Handle &handle) const {
  if (handle.manager_id != id_)
    throw ResidencyHandleError("handle belongs to manager " + std::to_string(handle.manager_id) +
                               ", not to manager " + std::to_string(id_));
  const ValueId value = resolve_for_plan(handle);
  if (value == kUnresolvable)
    throw ResidencyHandleError("unknown handle " + std::to_string(handle.handle_id));
  return value;
}

ValueId Manager::resolve_for_plan(const Handle &handle) const {
  if (handle.manager_id != id_) return kUnresolvable;
  for (ValueId value = 0; value < records_.size(); ++value)
    if (records_[value].handle_id == handle.handle_id && handle.handle_id != 0) return value;
  return kUnresolvable;
}

std::string Manager::value_name(ValueId value) const {
  return value < records_.size() ? "#" + std::to_string(records_[value].handle_id) : "?";
}

Storage *Manager::replica(ValueId value, Location at) {
  for (auto &[location, storage] : records_[value].replicas)
    if (location == at) return &storage;
  return nullptr;
}

const Storage *Manager::replica(ValueId value, Location at) const {
  return const_cast<Manager *>(this)->replica(value, at);
}

Handle Manager::adopt(std::byte *data, std::size_t nbytes, Location at, Storage::Release deleter,
                      ReplicaMode mode) {
  auto lock = open_lock();
  validate(at);
  const ValueSpec spec{nbytes, nbytes, mode, Recoverability::MustPreserve};
  const auto value = static_cast<ValueId>(records_.size());
  FailureDetail detail;
  // The caller keeps the buffer if adopt fails: the Storage that frees it is
  // made only once the model has admitted and installed the value.
  if (Outcome outcome = state_.adopt(value, spec, at, &detail); outcome.failed())
    throw_failure(outcome, {}, detail);
  Record record;
  record.handle_id = next_handle_id_++;
  record.replicas.emplace_back(at, Storage(data, nbytes, at, std::move(deleter)));
  records_.push_back(std::move(record));
  return Handle{id_, records_.back().handle_id};
}

Handle Manager::register_source(const ValueSpec &spec, std::shared_ptr<Source> source,
                                Location source_location) {
  if (!source) throw std::invalid_argument("register_source needs a source");
  if (spec.storage_nbytes < spec.logical_nbytes)
    throw std::invalid_argument("storage_nbytes must be at least logical_nbytes");
  auto lock = open_lock();
  validate(source_location);
  if (spec.recoverability != Recoverability::Reconstructible)
    throw std::invalid_argument("register_source needs a RECONSTRUCTIBLE value spec");
  const auto value = static_cast<ValueId>(records_.size());
  state_.register_source(value, spec, source_location);
  Record record;
  record.handle_id = next_handle_id_++;
  record.source = std::move(source);
  records_.push_back(std::move(record));
  return Handle{id_, records_.back().handle_id};
}

TransitionReport Manager::run_transition(const Action &action) {
  TransitionReport report;
  report.started_at_ns = now_ns();
  FailureDetail detail;
  Outcome outcome;
  {
    Hooks hooks(*this);
    outcome = state_.apply(action, &detail, &hooks);
  }
  if (outcome.failed()) throw_failure(outcome, MessageContext{value_name(action.value), {}}, detail);
  const ValueSpec &spec = state_.value(action.value).spec;
  report.action = action.kind == ActionKind::Copy ? ActionKind::Ensure : action.kind;
  report.value = action.value;
  report.no_op = outcome.verdict == Verdict::NoOp;
  report.source = outcome.source;
  report.destination = outcome.destination;
  report.logical_nbytes = spec.logical_nbytes;
  report.storage_nbytes = spec.storage_nbytes;
  if (report.no_op) report.reason = describe(outcome, {});
  report.completed_at_ns = now_ns();
  record_trace(report);
  return report;
}

TransitionReport Manager::ensure(const Handle &handle, Location at) {
  auto lock = open_lock();
  return run_transition(Action{ActionKind::Ensure, resolve(handle), at, std::nullopt});
}

TransitionReport Manager::copy(const Handle &handle, Location to) {
  auto lock = open_lock();
  return run_transition(Action{ActionKind::Copy, resolve(handle), to, std::nullopt});
}

TransitionReport Manager::move(const Handle &handle, Location to, std::optional<Location> from) {
  auto lock = open_lock();
  return run_transition(Action{ActionKind::Move, resolve(handle), to, from});
}

TransitionReport Manager::drop(const Handle &handle, Location at) {
  auto lock = open_lock();
  return run_transition(Action{ActionKind::Drop, resolve(handle), at, std::nullopt});
}

TransitionReport Manager::discard(const Handle &handle) {
  auto lock = open_lock();
  return run_transition(Action{ActionKind::Discard, resolve(handle), Location{}, std::nullopt});
}

std::vector<Action> Manager::to_actions(std::span<const ActionSpec> specs) const {
  std::vector<Action> actions;
  actions.reserve(specs.size());
  for (const ActionSpec &spec : specs)
    actions.push_back(Action{spec.kind, resolve_for_plan(spec.handle), spec.location, spec.from});
  return actions;
}

Explanation Manager::explain(const PlanSpec &plan, std::optional<std::uint64_t> expected_state_version) {
  if (plan.name.find_first_not_of(" \t\n") == std::string::npos)
    throw std::invalid_argument("a plan needs a non-blank name");
  auto lock = open_lock();
  if (expected_state_version && *expected_state_version != state_.version())
    throw ResidencyStaleStateError(*expected_state_version, state_.version());
  const std::vector<Action> reclaim = to_actions(plan.reclaim), enter = to_actions(plan.enter),
                            exit = to_actions(plan.exit);
  Simulator simulator(state_);
  return simulator.explain(PlanView{reclaim, plan.reservations, enter, exit});
}

PlanReport Manager::execute_actions(std::span<const ActionSpec> specs, const std::string &name,
                                    std::optional<std::uint64_t> expected_state_version) {
  if (name.find_first_not_of(" \t\n") == std::string::npos)
    throw std::invalid_argument("an action list needs a non-blank name");
  auto lock = open_lock();
  if (expected_state_version && *expected_state_version != state_.version())
    throw ResidencyStaleStateError(*expected_state_version, state_.version());
  const std::vector<Action> actions = to_actions(specs);
  Simulator simulator(state_);
  const Explanation preflight = simulator.explain(PlanView{{}, {}, actions, {}});
  if (!preflight.feasible) {
    const SimulatedStep &failed = *preflight.first_failure();
    throw ResidencyPlanError(
        "plan '" + name + "' is infeasible at action " + std::to_string(failed.index) + ": " +
        describe(failed.outcome, {value_name(actions[failed.index].value), {}}, &preflight.failure_detail));
  }
  PlanReport report;
  report.plan_name = name;
  report.started_at_ns = now_ns();
  run_phase(name, ExecutionPhase::Execute, specs, report);
  report.completed_at_ns = now_ns();
  return report;
}

void Manager::run_phase(const std::string &plan_name, ExecutionPhase phase,
                        std::span<const ActionSpec> actions, PlanReport &report) {
  for (std::size_t i = 0; i < actions.size(); ++i) {
    ResidencyPlanExecutionError::Details details;
    try {
      // Resolved now: exit actions run without a new preflight, so a handle
      // discarded by the body must fail here as a handle error.
      const Action action{actions[i].kind, resolve(actions[i].handle), actions[i].location, actions[i].from};
      report.transitions.push_back(run_transition(action));
      continue;
    } catch (const ResidencyError &error) {
      details.detail = error.what();
      details.cause = error.error_class();
    } catch (const std::exception &error) {
      details.detail = error.what();
    }
    details.plan_name = plan_name;
    details.phase = phase;
    details.failed_action_index = i;
    report.completed_at_ns = now_ns();
    details.partial_report = report;
    throw ResidencyPlanExecutionError(std::move(details));
  }
}

void Manager::release_all(std::vector<LifetimeId> &lifetimes) {
  for (auto it = lifetimes.rbegin(); it != lifetimes.rend(); ++it)
    state_.release(*it);
  lifetimes.clear();
}

Scope Manager::scope(PlanSpec plan, std::optional<std::uint64_t> expected_state_version) {
  if (plan.name.find_first_not_of(" \t\n") == std::string::npos)
    throw std::invalid_argument("a plan needs a non-blank name");
  for (const Reservation &r : plan.reservations)
    if (r.label.find_first_not_of(" \t\n") == std::string::npos)
      throw std::invalid_argument("a reservation needs a non-blank label");
  return Scope(*this, std::move(plan), expected_state_version);
}

Scope::Scope(Scope &&other) noexcept
    : manager_(other.manager_), plan_(std::move(other.plan_)),
      expected_state_version_(other.expected_state_version_), stage_(other.stage_),
      entered_(std::move(other.entered_)), reservations_(std::move(other.reservations_)),
      report_(std::move(other.report_)), exit_error_(std::move(other.exit_error_)) {
  other.stage_ = Stage::Closed;
  other.reservations_.clear();
}

Scope::~Scope() {
  if (stage_ != Stage::Entered) return;
  std::lock_guard lock(manager_->mutex_);
  if (!manager_->closed_) manager_->release_all(reservations_);
}

void Scope::enter() {
  if (stage_ != Stage::Created) throw std::logic_error("scope '" + plan_.name + "' entered twice");
  stage_ = Stage::Closed; // any failure below consumes the scope
  Manager &m = *manager_;
  auto lock = m.open_lock();
  if (expected_state_version_ && *expected_state_version_ != m.state_.version())
    throw ResidencyStaleStateError(*expected_state_version_, m.state_.version());
  const std::vector<Action> reclaim = m.to_actions(plan_.reclaim), enter = m.to_actions(plan_.enter),
                            exit = m.to_actions(plan_.exit);
  Simulator simulator(m.state_);
  const Explanation preflight = simulator.explain(PlanView{reclaim, plan_.reservations, enter, exit});
  if (!preflight.feasible) {
    const SimulatedStep &failed = *preflight.first_failure();
    const std::string label = failed.phase == Phase::Reserve ? plan_.reservations[failed.index].label : "";
    throw ResidencyPlanError("plan '" + plan_.name + "' is infeasible in phase " +
                             std::string(phase_name(failed.phase)) + " at step " +
                             std::to_string(failed.index) + ": " +
                             describe(failed.outcome, {{}, label}, &preflight.failure_detail));
  }
  entered_.plan_name = plan_.name;
  entered_.started_at_ns = now_ns();
  m.run_phase(plan_.name, ExecutionPhase::Reclaim, plan_.reclaim, entered_);
  for (std::size_t i = 0; i < plan_.reservations.size(); ++i) {
    const Reservation &r = plan_.reservations[i];
    LifetimeId id = 0;
    FailureDetail detail;
    if (Outcome outcome = m.state_.reserve(r.location, r.nbytes, r.label, &id, &detail); outcome.failed()) {
      m.release_all(reservations_);
      ResidencyPlanExecutionError::Details details;
      details.plan_name = plan_.name;
      details.phase = ExecutionPhase::Reserve;
      details.failed_reservation_index = i;
      details.partial_report = entered_;
      details.detail = describe(outcome, {{}, r.label}, &detail);
      details.cause = outcome.error;
      throw ResidencyPlanExecutionError(std::move(details));
    }
    reservations_.push_back(id);
  }
  try {
    m.run_phase(plan_.name, ExecutionPhase::Enter, plan_.enter, entered_);
  } catch (...) {
    m.release_all(reservations_);
    throw;
  }
  stage_ = Stage::Entered;
}

void Scope::close() {
  if (stage_ == Stage::Created) throw std::logic_error("scope '" + plan_.name + "' closed before entry");
  if (stage_ == Stage::Closed) return;
  stage_ = Stage::Closed;
  Manager &m = *manager_;
  auto lock = m.open_lock();
  // Exit runs without a new preflight (§12.3); reservations go either way.
  try {
    m.run_phase(plan_.name, ExecutionPhase::Exit, plan_.exit, entered_);
  } catch (...) {
    m.release_all(reservations_);
    throw;
  }
  m.release_all(reservations_);
  entered_.completed_at_ns = now_ns();
  report_ = std::move(entered_);
}

std::uint64_t Manager::content_checksum(const Handle &handle, Location at) const {
  auto lock = open_lock();
  const ValueId value = resolve(handle);
  const Storage *storage = replica(value, at);
  if (!storage)
    throw ResidencyUnavailableError("value " + value_name(value) + " is not resident at " + at.name());
  return XXH64(storage->bytes().data(), storage->size(), 0);
}

LocationAccount Manager::account(Location location) const {
  auto lock = open_lock();
  return state_.account(location);
}

std::vector<Location> Manager::replicas(const Handle &handle) const {
  auto lock = open_lock();
  std::vector<Location> out;
  for (const auto &[location, storage] : records_[resolve(handle)].replicas)
    out.push_back(location);
  return out;
}

std::vector<ValueId> Manager::protect_values(std::span<const Handle> handles) const {
  if (handles.empty()) throw std::invalid_argument("a lease or hold needs at least one handle");
  std::vector<ValueId> values;
  for (const Handle &handle : handles)
    values.push_back(resolve(handle));
  return values;
}

Lease Manager::acquire(std::span<const Handle> handles, Location at) {
  auto lock = open_lock();
  const std::vector<ValueId> values = protect_values(handles);
  validate(at);
  if (at.is_cuda()) throw std::invalid_argument("CUDA leases need a consumer stream (not supported yet)");
  LifetimeId id = 0;
  ValueId failed = 0;
  if (Outcome outcome = state_.protect(LifetimeKind::Lease, values, at, &id, &failed); outcome.failed())
    throw_failure(outcome, MessageContext{value_name(failed), {}}, FailureDetail{});
  std::vector<Handle> unique;
  for (const Handle &handle : handles)
    if (std::find(unique.begin(), unique.end(), handle) == unique.end()) unique.push_back(handle);
  return Lease(this, id, std::move(unique), at);
}

Hold Manager::hold(std::span<const Handle> handles, Location at) {
  auto lock = open_lock();
  const std::vector<ValueId> values = protect_values(handles);
  validate(at);
  LifetimeId id = 0;
  ValueId failed = 0;
  if (Outcome outcome = state_.protect(LifetimeKind::Hold, values, at, &id, &failed); outcome.failed())
    throw_failure(outcome, MessageContext{value_name(failed), {}}, FailureDetail{});
  return Hold(this, id);
}

ActiveReservation Manager::reserve(Location at, std::uint64_t nbytes, const std::string &label) {
  if (label.find_first_not_of(" \t\n") == std::string::npos)
    throw std::invalid_argument("a reservation needs a non-blank label");
  auto lock = open_lock();
  validate(at);
  LifetimeId id = 0;
  FailureDetail detail;
  if (Outcome outcome = state_.reserve(at, nbytes, label, &id, &detail); outcome.failed())
    throw_failure(outcome, MessageContext{{}, label}, detail);
  return ActiveReservation(this, id);
}

void Manager::release(LifetimeId id) {
  std::lock_guard lock(mutex_);
  if (!closed_) state_.release(id); // close() already let go of everything
}

bool Manager::lifetime_active(LifetimeId id) const {
  std::lock_guard lock(mutex_);
  return !closed_ && state_.lifetime(id).state == LifetimeState::Active;
}

std::unique_lock<std::mutex> Manager::open_lock() const {
  std::unique_lock lock(mutex_);
  if (closed_) throw ResidencyClosedError("manager " + std::to_string(id_) + " is closed");
  return lock;
}

bool Manager::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

void Manager::close(bool /*wait*/, bool force) {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  std::size_t leases = 0, pending = 0, holds = 0, reservations = 0;
  for (LifetimeId id = 0; id < state_.lifetime_count(); ++id) {
    const LifetimeRecord &lifetime = state_.lifetime(id);
    if (lifetime.state == LifetimeState::Released) continue;
    switch (lifetime.kind) {
    case LifetimeKind::Lease: ++(lifetime.state == LifetimeState::Pending ? pending : leases); break;
    case LifetimeKind::Hold: ++holds; break;
    case LifetimeKind::Reservation: ++reservations; break;
    }
  }
  if (!force && leases + pending + holds + reservations > 0)
    throw ResidencyInUseError(
        "cannot close manager " + std::to_string(id_) + ": active_leases=" + std::to_string(leases) +
        ", pending_leases=" + std::to_string(pending) + ", holds=" + std::to_string(holds) +
        ", reservations=" + std::to_string(reservations));
  records_.clear(); // frees every replica
  state_.close();
  closed_ = true;
}

Lifetime::Lifetime(Lifetime &&other) noexcept
    : manager_(std::exchange(other.manager_, nullptr)), id_(other.id_) {}

Lifetime &Lifetime::operator=(Lifetime &&other) noexcept {
  if (this != &other) {
    release();
    manager_ = std::exchange(other.manager_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

Lifetime::~Lifetime() { release(); }

void Lifetime::release() {
  if (manager_) manager_->release(id_);
}

bool Lifetime::active() const { return manager_ && manager_->lifetime_active(id_); }

std::span<const std::byte> Lease::value(const Handle &handle) const {
  if (!active()) throw ResidencyLifetimeClosedError("the lease was released");
  if (std::find(handles_.begin(), handles_.end(), handle) == handles_.end())
    throw std::out_of_range("the lease does not hold this handle");
  auto lock = manager_->open_lock();
  return manager_->replica(manager_->resolve(handle), location_)->bytes();
}

Snapshot Manager::snapshot() const {
  auto lock = open_lock();
  Snapshot out;
  out.manager_id = id_;
  out.state_version = state_.version();
  out.captured_at_ns = now_ns();
  std::vector<std::uint32_t> values_at(Location::kCount, 0);
  std::vector<Protection> tokens_at(Location::kCount);
  for (ValueId value = 0; value < records_.size(); ++value) {
    const ValueRecord &model = state_.value(value);
    if (model.status == ValueStatus::Unregistered) continue;
    SnapshotValue v;
    v.handle_id = records_[value].handle_id;
    v.spec = model.spec;
    v.has_source = model.source_location.has_value();
    v.source_location = model.source_location;
    v.discarded = model.status == ValueStatus::Discarded;
    for (const auto &[location, storage] : records_[value].replicas) {
      SnapshotMaterialization m;
      m.location = location;
      m.logical_nbytes = model.spec.logical_nbytes;
      m.storage_nbytes = storage.size();
      m.charged_nbytes = model.spec.storage_nbytes;
      for (const Protection &p : model.protections)
        if (p.location == location) {
          m.use_count = p.use_count;
          m.hold_count = p.hold_count;
          m.pending_event_count = p.pending_count;
        }
      ++values_at[location.index()];
      Protection &sum = tokens_at[location.index()];
      sum.use_count += m.use_count;
      sum.hold_count += m.hold_count;
      sum.pending_count += m.pending_event_count;
      v.materializations.push_back(m);
    }
    out.values.push_back(std::move(v));
  }
  std::vector<std::uint32_t> reservations_at(Location::kCount, 0);
  for (LifetimeId id = 0; id < state_.lifetime_count(); ++id) {
    const LifetimeRecord &lifetime = state_.lifetime(id);
    if (lifetime.kind != LifetimeKind::Reservation || lifetime.state != LifetimeState::Active) continue;
    ++reservations_at[lifetime.location.index()];
    out.reservations.push_back(SnapshotReservation{lifetime.location, lifetime.nbytes, lifetime.label});
  }
  for (Location location : state_.registry()) {
    const LocationAccount &account = state_.account(location);
    SnapshotLocation l;
    l.location = location;
    l.budget_bytes = account.budget_bytes;
    l.used_bytes = account.used_bytes;
    l.reserved_bytes = account.reserved_bytes;
    if (account.budget_bytes) l.remaining_budget_bytes = *account.budget_bytes - account.charged_bytes();
    l.peak_used_bytes = account.peak_used_bytes;
    l.peak_charged_bytes = account.peak_charged_bytes;
    l.value_count = values_at[location.index()];
    l.reservation_count = reservations_at[location.index()];
    l.use_count = tokens_at[location.index()].use_count;
    l.hold_count = tokens_at[location.index()].hold_count;
    l.pending_event_count = tokens_at[location.index()].pending_count;
    out.locations.push_back(l);
  }
  return out;
}

void Manager::record_trace(const TransitionReport &report) {
  if (trace_capacity_ == 0) return;
  if (trace_.size() == trace_capacity_) trace_.pop_front();
  trace_.push_back(report);
}

std::vector<TransitionReport> Manager::trace() const {
  std::lock_guard lock(mutex_); // still readable after close (§15, quirk)
  return {trace_.begin(), trace_.end()};
}

void Manager::clear_trace() {
  std::lock_guard lock(mutex_);
  trace_.clear();
}

} // namespace fhr
