#include "fhr/runtime/snapshot.hpp"

#include "fhr/runtime/manager.hpp"

#include "clock.hpp"

namespace fhr {

namespace {
using json = nlohmann::ordered_json;

json optional_bytes(const std::optional<std::uint64_t> &bytes) {
  return bytes ? json(*bytes) : json(nullptr);
}
} // namespace

json Snapshot::to_json() const {
  json out;
  out["manager_id"] = manager_id;
  out["state_version"] = state_version;
  out["captured_at_ns"] = captured_at_ns;
  json value_list = json::array();
  for (const SnapshotValue &v : values) {
    json value;
    value["handle_id"] = v.handle_id;
    value["logical_nbytes"] = v.spec.logical_nbytes;
    value["storage_nbytes"] = v.spec.storage_nbytes;
    value["replica_mode"] = to_string(v.spec.replica_mode);
    value["recoverability"] =
        v.spec.recoverability == Recoverability::MustPreserve ? "must-preserve" : "reconstructible";
    value["has_source"] = v.has_source;
    value["source_location"] = v.source_location ? json(v.source_location->name()) : json(nullptr);
    value["discarded"] = v.discarded;
    json materializations = json::array();
    for (const SnapshotMaterialization &m : v.materializations)
      materializations.push_back(json{{"location", m.location.name()},
                                      {"logical_nbytes", m.logical_nbytes},
                                      {"storage_nbytes", m.storage_nbytes},
                                      {"charged_nbytes", m.charged_nbytes},
                                      {"use_count", m.use_count},
                                      {"hold_count", m.hold_count},
                                      {"pending_event_count", m.pending_event_count}});
    value["materializations"] = std::move(materializations);
    value_list.push_back(std::move(value));
  }
  out["values"] = std::move(value_list);
  json location_list = json::array();
  for (const SnapshotLocation &l : locations)
    location_list.push_back(json{{"location", l.location.name()},
                                 {"budget_bytes", optional_bytes(l.budget_bytes)},
                                 {"used_bytes", l.used_bytes},
                                 {"reserved_bytes", l.reserved_bytes},
                                 {"remaining_budget_bytes", optional_bytes(l.remaining_budget_bytes)},
                                 {"peak_used_bytes", l.peak_used_bytes},
                                 {"peak_charged_bytes", l.peak_charged_bytes},
                                 {"value_count", l.value_count},
                                 {"reservation_count", l.reservation_count},
                                 {"use_count", l.use_count},
                                 {"hold_count", l.hold_count},
                                 {"pending_event_count", l.pending_event_count},
                                 {"pool_in_use_bytes", optional_bytes(l.pool_in_use_bytes)},
                                 {"pool_idle_bytes", optional_bytes(l.pool_idle_bytes)},
                                 {"driver_free_bytes", optional_bytes(l.driver_free_bytes)}});
  out["locations"] = std::move(location_list);
  json reservation_list = json::array();
  for (const SnapshotReservation &r : reservations)
    reservation_list.push_back(
        json{{"location", r.location.name()}, {"nbytes", r.nbytes}, {"label", r.label}});
  out["reservations"] = std::move(reservation_list);
  return out;
}

Snapshot Manager::snapshot() const {
  auto lock = open_lock();
  const_cast<Manager *>(this)->reap(); // §14: a snapshot reaps first
  Snapshot out;
  out.manager_id = id_;
  out.state_version = state_.version();
  out.captured_at_ns = now_ns();
  out.values.reserve(records_.size());
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
      m.storage_nbytes = storage.block_size();
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
  for (LifetimeId id : state_.live_lifetimes()) {
    const LifetimeRecord &lifetime = *state_.find_lifetime(id);
    if (lifetime.kind != LifetimeKind::Reservation) continue;
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
    if (const std::optional<PoolFigures> pool = backend_.memory->pool_figures(location)) {
      l.pool_in_use_bytes = pool->in_use_bytes;
      l.pool_idle_bytes = pool->idle_bytes;
      l.driver_free_bytes = pool->driver_free_bytes;
    }
    out.locations.push_back(l);
  }
  return out;
}

} // namespace fhr
