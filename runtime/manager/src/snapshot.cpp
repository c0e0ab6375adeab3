#include "fhr/runtime/snapshot.hpp"

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
                                 {"pending_event_count", l.pending_event_count}});
  out["locations"] = std::move(location_list);
  json reservation_list = json::array();
  for (const SnapshotReservation &r : reservations)
    reservation_list.push_back(
        json{{"location", r.location.name()}, {"nbytes", r.nbytes}, {"label", r.label}});
  out["reservations"] = std::move(reservation_list);
  return out;
}

} // namespace fhr
