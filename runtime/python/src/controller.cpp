// The §18 controller for Python (docs/python.md, "The controller"):
// `_Controller` over fhr::Controller, `_TieredLRU` over the reference
// policy, the policy adapter that lets a Python class rank candidates, and
// `_Use` over fhr::Use. The records (requests, decisions, evictions) and
// the argument checks a reference user expects are in fhr/_controller.py.
#include "binding.hpp"
#include "lifetimes.hpp"

#include "fhr/controller/controller.hpp"

#include <unordered_map>

namespace fhr::python {

namespace {

/// Python value <-> JSON, through the json module (configurations are
/// small and read once per controller or decision).
nlohmann::ordered_json to_json(py::handle value) {
  const std::string text = py::module_::import("json").attr("dumps")(value).cast<std::string>();
  return nlohmann::ordered_json::parse(text);
}
py::object from_json(const nlohmann::ordered_json &value) {
  return py::module_::import("json").attr("loads")(value.dump());
}

std::vector<Location> to_locations(py::handle sequence, const char *what) {
  std::vector<Location> out;
  for (py::handle item : sequence)
    out.push_back(to_location(item, what));
  return out;
}

/// A policy a Python user wrote (a subclass of fhr.ResidencyPolicy). The
/// controller calls it from decide(), on the thread that decides, while it
/// holds the manager's lock and without the GIL: each call takes the GIL,
/// and a Python exception is stashed and re-raised unchanged once decide
/// returns to Python. Candidates reach Python as fhr.EvictionCandidate
/// records; the policy returns them reordered.
class PythonPolicy final : public Policy {
public:
  PythonPolicy(py::object policy, py::object manager_object)
      : policy_(std::move(policy)), manager_object_(std::move(manager_object)),
        manager_(&manager_object_.cast<PyManager &>()) {
    py::object name = policy_.attr("name");
    if (!py::isinstance<py::str>(name)) throw py::type_error("a residency policy's name must be a string");
    name_ = name.cast<std::string>();
    config_ = to_json(policy_.attr("config_identity")());
  }
  ~PythonPolicy() override {
    py::gil_scoped_acquire gil;
    policy_ = py::object();
    manager_object_ = py::object();
  }

  std::string name() const override { return name_; }
  nlohmann::ordered_json config_identity() const override { return config_; }

  std::vector<Location> fallback_locations(Location location) const override {
    py::gil_scoped_acquire gil;
    try {
      return to_locations(policy_.attr("fallback_locations")(location_object(location)),
                          "a fallback location");
    } catch (py::error_already_set &error) {
      stash_and_throw(error);
    }
  }

  std::vector<EvictionCandidate> order_candidates(std::vector<EvictionCandidate> candidates) const override {
    py::gil_scoped_acquire gil;
    try {
      static py::handle record = python_class("fhr._controller", "EvictionCandidate").release();
      py::list offered;
      std::unordered_map<PyObject *, std::size_t> index;
      for (std::size_t i = 0; i < candidates.size(); ++i) {
        const EvictionCandidate &c = candidates[i];
        const auto &epoch = c.last_access_epoch;
        py::object object = record(
            py::arg("handle") = manager_->meta(c.handle).handle,
            py::arg("location") = location_object(c.location), py::arg("charged_nbytes") = c.charged_nbytes,
            py::arg("registration_index") = c.registration_index,
            py::arg("last_access_epoch") = epoch ? py::object(py::int_(*epoch)) : py::object(py::none()),
            py::arg("priority") = c.metadata.priority,
            py::arg("stable_key") =
                c.metadata.stable_key ? py::object(py::str(*c.metadata.stable_key)) : py::object(py::none()));
        index.emplace(object.ptr(), i);
        offered.append(object);
      }
      py::object ordered = policy_.attr("order_candidates")(py::tuple(offered));
      std::vector<EvictionCandidate> out;
      std::vector<bool> seen(candidates.size(), false);
      for (py::handle item : ordered) {
        auto it = index.find(item.ptr());
        if (it == index.end() || seen[it->second])
          throw py::value_error("policy '" + name_ +
                                "': order_candidates must return each candidate it was given exactly once");
        seen[it->second] = true;
        out.push_back(candidates[it->second]);
      }
      if (out.size() != candidates.size())
        throw py::value_error("policy '" + name_ + "': order_candidates returned " +
                              std::to_string(out.size()) + " of " + std::to_string(candidates.size()) +
                              " candidates");
      return out;
    } catch (py::error_already_set &error) {
      stash_and_throw(error);
    } catch (py::builtin_exception &error) {
      error.set_error();
      py::error_already_set raised;
      stash_and_throw(raised);
    }
  }

private:
  py::object policy_;
  py::object manager_object_;
  PyManager *manager_;
  std::string name_;
  nlohmann::ordered_json config_;
};

/// Gives every value the runtime registered its Python handle.
void sync_values(PyManager &manager) {
  manager.fill_to(without_gil([&] { return manager.runtime().snapshot().values.size(); }));
}

bool same_candidate(const EvictionCandidate &a, const EvictionCandidate &b) {
  return a.handle == b.handle && a.location == b.location && a.charged_nbytes == b.charged_nbytes &&
         a.registration_index == b.registration_index && a.last_access_epoch == b.last_access_epoch &&
         a.metadata == b.metadata;
}

struct PyTieredLRU {
  std::shared_ptr<const DeterministicTieredLRU> policy;
};

struct PyDecision {
  Decision decision;
};

struct PyController {
  py::object manager_object;
  std::unique_ptr<Controller> controller;
  PyManager &manager() { return manager_object.cast<PyManager &>(); }
  ~PyController() {
    py::gil_scoped_release release;
    controller.reset();
  }
};

/// The native Request of a ResidencyRequest (its constructor checks the
/// §18 rules); `handle_of` gives a requirement's native handle.
template <typename HandleOf>
Request request_from(py::handle request, HandleOf handle_of) {
  std::vector<Requirement> requirements;
  for (py::handle r : request.attr("requirements"))
    requirements.push_back(Requirement{handle_of(r.attr("handle")),
                                       to_location(r.attr("location"), "a requirement's location")});
  std::vector<Reservation> reservations;
  for (py::handle r : request.attr("reservations"))
    reservations.push_back(Reservation{to_location(r.attr("location"), "a reservation's location"),
                                       r.attr("nbytes").cast<std::uint64_t>(),
                                       r.attr("label").cast<std::string>()});
  return Request(request.attr("name").cast<std::string>(), std::move(requirements), std::move(reservations));
}

Request to_request(PyManager &manager, py::handle request) {
  return request_from(request, [&](py::handle h) { return manager.plan_handle(h); });
}

/// The plan's reclaim and enter actions as Python objects (the order of a scope's sequence).
std::vector<py::object> plan_sequence(py::handle plan) {
  std::vector<py::object> sequence;
  for (const char *phase : {"reclaim", "enter", "exit"})
    for (py::handle action : plan.attr(phase))
      sequence.push_back(py::reinterpret_borrow<py::object>(action));
  return sequence;
}

const char *reason_kind_name(EvictionReason reason) {
  switch (reason) {
  case EvictionReason::OtherReplica: return "other-replica";
  case EvictionReason::SourceRebuilds: return "source-rebuilds";
  case EvictionReason::SoleReplicaMoved: return "sole-replica-moved";
  }
  return "";
}

/// fhr.ResidencyDecision of a runtime decision; `request` is the Python
/// request it answers.
py::object decision_object(PyManager &manager, Decision decision, py::object request) {
  py::object plan = plan_object(manager, decision.plan);
  const std::vector<py::object> sequence = plan_sequence(plan);
  py::object explanation = make_explanation(manager, plan, decision.explanation, decision.plan, sequence);
  py::list evictions;
  py::object eviction = python_class("fhr._controller", "ResidencyEviction");
  for (const Eviction &e : decision.evictions)
    evictions.append(eviction(py::arg("action") = action_object(manager, e.action), py::arg("rank") = e.rank,
                              py::arg("released_location") = location_object(e.released_location),
                              py::arg("released_nbytes") = e.released_nbytes,
                              py::arg("reason_kind") = reason_kind_name(e.reason_kind),
                              py::arg("reason") = e.reason));
  py::object policy_config = from_json(decision.policy_config);
  const std::uint64_t version = decision.expected_state_version;
  const std::uint64_t explored = decision.explored_states;
  const std::string policy_name = decision.policy_name;
  return python_class("fhr._controller", "ResidencyDecision")(
      py::arg("manager_id") = manager.id_text(), py::arg("expected_state_version") = version,
      py::arg("explored_states") = explored, py::arg("request") = std::move(request), py::arg("plan") = plan,
      py::arg("policy_name") = policy_name, py::arg("policy_config") = policy_config,
      py::arg("evictions") = py::tuple(evictions), py::arg("explanation") = explanation,
      py::arg("_native") = py::cast(PyDecision{std::move(decision)}));
}

/// The runtime's side of a ResidencyUse: fhr::Use plus the Python objects
/// its values and records are made of.
struct PyUse {
  py::object controller_object; ///< keeps the controller (and its manager) alive
  py::object request;
  std::vector<py::object> streams; ///< the stream objects, alive while the use is
  std::optional<Use> use;
  py::object decision = py::none();
  py::object plan = py::none();
  ~PyUse() {
    py::gil_scoped_release release;
    use.reset();
  }
  PyManager &manager() { return controller_object.cast<PyController &>().manager(); }
};

} // namespace

void bind_controller(py::module_ &m) {
  m.def(
      "_check_request",
      [](py::handle request) {
        // A Request needs no manager: its handle ids are the handles' own.
        (void)request_from(request, [](py::handle h) { return as_handle(h).handle; });
      },
      py::arg("request"));

  py::class_<PyTieredLRU>(m, "_TieredLRU", "The runtime's DeterministicTieredLRU.")
      .def(py::init([](py::handle tiers) {
             DeterministicTieredLRU::Tiers native;
             for (py::handle item : tiers) {
               py::tuple pair = py::reinterpret_borrow<py::tuple>(item);
               native.emplace_back(to_location(pair[0], "a fallback tier's source"),
                                   to_locations(pair[1], "a fallback tier's destination"));
             }
             return PyTieredLRU{std::make_shared<const DeterministicTieredLRU>(std::move(native))};
           }),
           py::arg("fallback_tiers"))
      .def_property_readonly("name", [](const PyTieredLRU &p) { return p.policy->name(); })
      .def("config_identity", [](const PyTieredLRU &p) { return from_json(p.policy->config_identity()); })
      .def("fallback_locations",
           [](const PyTieredLRU &p, py::handle location) {
             py::list out;
             for (Location l : p.policy->fallback_locations(to_location(location, "a location")))
               out.append(location_object(l));
             return py::tuple(out);
           })
      .def("order", [](const PyTieredLRU &p, py::handle candidates) {
        // EvictionCandidate records, in the order of §18.2.
        std::vector<EvictionCandidate> native;
        std::vector<py::object> objects;
        for (py::handle c : candidates) {
          EvictionCandidate e;
          e.handle = as_handle(c.attr("handle")).handle;
          e.location = to_location(c.attr("location"), "a candidate's location");
          e.charged_nbytes = c.attr("charged_nbytes").cast<std::uint64_t>();
          e.registration_index = c.attr("registration_index").cast<std::uint64_t>();
          e.last_access_epoch = c.attr("last_access_epoch").cast<std::optional<std::uint64_t>>();
          e.metadata.priority = c.attr("priority").cast<std::int64_t>();
          e.metadata.stable_key = c.attr("stable_key").cast<std::optional<std::string>>();
          native.push_back(std::move(e));
          objects.push_back(py::reinterpret_borrow<py::object>(c));
        }
        // The policy's own order, mapped back onto the records (equal
        // candidates are interchangeable).
        const std::vector<EvictionCandidate> ordered = p.policy->order_candidates(native);
        std::vector<bool> taken(native.size(), false);
        std::vector<std::size_t> order;
        for (const EvictionCandidate &c : ordered)
          for (std::size_t i = 0; i < native.size(); ++i)
            if (!taken[i] && same_candidate(native[i], c)) {
              taken[i] = true;
              order.push_back(i);
              break;
            }
        py::list out;
        for (std::size_t i : order)
          out.append(objects[i]);
        return py::tuple(out);
      });

  py::class_<PyDecision>(m, "_Decision", "The runtime's side of a ResidencyDecision.");

  py::class_<PyController>(m, "_Controller", "The runtime's side of a ResidencyController.")
      .def(py::init([](py::object manager_object, py::object policy, std::uint64_t limit) {
             PyManager &manager = manager_object.cast<PyManager &>();
             manager.check_open();
             std::shared_ptr<const Policy> native;
             if (py::isinstance<PyTieredLRU>(policy))
               native = policy.cast<const PyTieredLRU &>().policy;
             else
               native = std::make_shared<const PythonPolicy>(policy, manager_object);
             auto controller = std::make_unique<Controller>(manager.runtime(), std::move(native), limit);
             auto bound = std::make_unique<PyController>();
             bound->manager_object = manager_object;
             bound->controller = std::move(controller);
             return bound;
           }),
           py::arg("manager"), py::arg("policy"), py::arg("search_state_limit"))
      .def(
          "set_policy_metadata",
          [](PyController &c, py::handle handle, std::int64_t priority,
             std::optional<std::string> stable_key) {
            const Handle h = c.manager().resolve(handle);
            without_gil([&] { c.controller->set_policy_metadata(h, priority, stable_key); });
          },
          py::arg("handle"), py::arg("priority"), py::arg("stable_key"))
      .def(
          "decide",
          [](PyController &c, py::object request) {
            PyManager &manager = c.manager();
            Request native = to_request(manager, request);
            // Candidates and actions name values by their Python handles:
            // values a module run registered get theirs now, not under the lock.
            sync_values(manager);
            Decision decision = without_gil([&] { return c.controller->decide(native); });
            return decision_object(manager, std::move(decision), std::move(request));
          },
          py::arg("request"))
      .def(
          "scope",
          [](PyController &c, py::handle decision, py::handle streams_object) {
            PyManager &manager = c.manager();
            // Held here: the reference below points into this object.
            const py::object native_object = decision.attr("_native");
            const PyDecision &native = native_object.cast<const PyDecision &>();
            py::object plan = decision.attr("plan");
            TransferStreams streams = to_transfer_streams(manager, streams_object);
            Scope scope =
                without_gil([&] { return c.controller->scope(native.decision, std::move(streams)); });
            return py::cast(new PyScope(c.manager_object, std::move(scope), plan, plan_sequence(plan)),
                            py::return_value_policy::take_ownership);
          },
          py::arg("decision"), py::arg("transfer_streams"))
      .def(
          "use",
          [](py::object self, py::object request, py::handle consumer_streams, py::handle transfer_streams) {
            PyController &c = self.cast<PyController &>();
            PyManager &manager = c.manager();
            auto use = std::make_unique<PyUse>();
            use->controller_object = self;
            use->request = request;
            ConsumerStreams consumers;
            if (!consumer_streams.is_none())
              for (py::handle item : consumer_streams.attr("items")()) {
                py::tuple pair = py::reinterpret_borrow<py::tuple>(item);
                consumers.emplace_back(to_location(pair[0], "a consumer_streams key"),
                                       to_stream(pair[1], manager.cuda_backend()));
                use->streams.push_back(py::reinterpret_borrow<py::object>(pair[1]));
              }
            TransferStreams transfers = to_transfer_streams(manager, transfer_streams);
            if (!transfer_streams.is_none())
              for (py::handle stream : transfer_streams.attr("values")())
                use->streams.push_back(py::reinterpret_borrow<py::object>(stream));
            Request native = to_request(manager, request);
            use->use.emplace(
                c.controller->use(std::move(native), std::move(consumers), std::move(transfers)));
            return use;
          },
          py::arg("request"), py::arg("consumer_streams"), py::arg("transfer_streams"))
      .def("last_access_epoch", [](PyController &c, py::handle handle) {
        const Handle h = c.manager().resolve(handle);
        return without_gil([&] { return c.controller->last_access_epoch(h); });
      });

  py::class_<PyUse>(m, "_Use", "The runtime's side of a ResidencyUse.")
      .def("enter",
           [](PyUse &u) {
             PyManager &manager = u.manager();
             sync_values(manager);
             without_gil([&] { u.use->enter(); });
             u.decision = decision_object(manager, u.use->decision(), u.request);
             u.plan = u.decision.attr("plan");
           })
      .def("close",
           [](PyUse &u) -> py::object {
             PyManager &manager = u.manager();
             try {
               without_gil([&] { u.use->close(); });
             } catch (const ResidencyPlanExecutionError &error) {
               raise_with_cause(make_execution_error(manager, error, plan_sequence(u.plan), u.plan, 0),
                                error);
             }
             const std::optional<PlanReport> &report = u.use->report();
             return report ? make_plan_report(manager, *report, plan_sequence(u.plan)) : py::none();
           })
      .def_property_readonly("decision", [](PyUse &u) { return u.decision; })
      .def("value", [](PyUse &u, py::handle handle, py::handle at) {
        PyManager &manager = u.manager();
        const Handle h = manager.resolve(handle);
        const Location location = to_location(at, "at");
        std::span<const std::byte> bytes;
        try {
          bytes = u.use->value(h, location);
        } catch (const std::out_of_range &error) {
          throw py::key_error(error.what());
        } catch (const std::logic_error &error) {
          throw std::runtime_error(error.what());
        }
        return manager.value_at(h, location, bytes);
      });
}

} // namespace fhr::python
