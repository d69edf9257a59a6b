#include <kuscia_model/kuscia_model.h>

#include <algorithm>

#include <kuscia_model/json_text.h>
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/status_entries.h>
#include <kuscia_model/status_patch.h>
#include <kuscia_model/write_contest.h>

namespace kuscia_host::model {

using nlohmann::json;

std::optional<int64_t> entryTime(const json* entry, std::string_view field) {
  if (entry == nullptr || !entry->is_object()) return std::nullopt;
  auto it = entry->find(field);
  if (it == entry->end() || !it->is_string()) return std::nullopt;
  return parseTime(it->get_ref<const std::string&>());
}

bool entryHas(const json* entry, std::string_view field) {
  if (entry == nullptr || !entry->is_object()) return false;
  auto it = entry->find(field);
  return it != entry->end() && !it->is_null();
}

// An entry read once for one question: the EntryClock versions below decide.
bool sameIncarnation(const json* entry, std::optional<int64_t> createNanos) {
  return sameIncarnation(EntryClock(entry), createNanos);
}

bool setEntryTime(StatusPatch::Entry* patch, const json* entry, TimeField field,
                  std::optional<int64_t> want, bool clearStale, bool forwardOnly) {
  return setEntryTime(patch, EntryClock(entry), field, want, clearStale, forwardOnly);
}

EntryClock::EntryClock(const json* entry) {
  if (entry == nullptr || !entry->is_object()) return;
  present_ = true;
  for (TimeField f :
       {TimeField::kCreate, TimeField::kSchedule, TimeField::kStart, TimeField::kReady}) {
    auto it = entry->find(fieldName(f));
    if (it == entry->end() || it->is_null()) continue;
    has_ |= bit(f);
    if (it->is_string())
      if (auto t = parseTime(it->get_ref<const std::string&>()))
        times_[static_cast<std::size_t>(f)] = *t;
  }
}

std::optional<int64_t> EntryClock::time(TimeField field) const {
  return times_[static_cast<std::size_t>(field)];
}

bool sameIncarnation(const EntryClock& entry, std::optional<int64_t> createNanos) {
  if (!entry.present()) return false;
  auto t = entry.time(TimeField::kCreate);
  return !t || !createNanos || *t == *createNanos;
}

bool setEntryTime(StatusPatch::Entry* patch, const EntryClock& entry, TimeField field,
                  std::optional<int64_t> want, bool clearStale, bool forwardOnly) {
  if (want) {
    auto have = entry.time(field);
    if (have && (sameTime(*have, *want) || (forwardOnly && *have > *want))) return false;
    if (patch != nullptr) patch->set(field, *want);
    return true;
  }
  if (clearStale && entry.has(field)) {
    if (patch != nullptr) patch->set(field, StatusPatch::kClear);
    return true;
  }
  return false;
}

const json* trueCondition(const json& conditions, std::string_view type) {
  const json* c = findCondition(conditions, type);
  return c != nullptr && c->value("status", "") == "True" ? c : nullptr;
}

bool endpointsHaveAddress(const json& subsets) {
  if (!subsets.is_array()) return false;
  return std::any_of(subsets.begin(), subsets.end(), [](const json& s) {
    if (!s.is_object()) return false;
    auto a = s.find("addresses");
    return a != s.end() && a->is_array() && !a->empty();
  });
}

bool cachedEndpointsHaveAddress(const sdk::Host& host, uint64_t subscription,
                                const std::string& key) {
  bool address = false;
  host.cacheGet(subscription, key, [&address](const sdk::Object& o) {
    // Read off the text: a gateway asks on every event of a service or its Endpoints.
    if (auto spans = arrayElements(o.fieldsJson); spans && spans->size() == 1)
      if (auto has = subsetsHaveAddress((*spans)[0])) {
        address = *has;
        return;
      }
    address = endpointsHaveAddress(parseFields(o.fieldsJson, 1)[0]);
  });
  return address;
}

void TaskMembers::remove(const std::string& key, const std::string& task) {
  if (task.empty()) return;
  auto m = members_.find(task);
  if (m == members_.end()) return;
  m->second.erase(key);
  if (m->second.empty()) members_.erase(m);
}

const std::set<std::string>& TaskMembers::members(const std::string& task) const {
  static const std::set<std::string> none;
  auto it = members_.find(task);
  return it == members_.end() ? none : it->second;
}

void TaskIndex::assign(const std::string& key, const std::string& task) {
  auto it = taskOf_.find(key);
  if (it != taskOf_.end()) {
    if (it->second == task) return;
    members_.remove(key, it->second);
    if (task.empty()) {
      taskOf_.erase(it);
      return;
    }
    it->second = task;
  } else if (task.empty()) {
    return;
  } else {
    taskOf_.emplace(key, task);
  }
  members_.add(key, task);
}

namespace {

sdk::KubeRequest statusPatchOf(const std::string& taskNamespace, const std::string& task) {
  return kusciaMergePatch(kKusciaTasks, taskNamespace, task, "status", "{\"status\":");
}

} // namespace

sdk::KubeRequest kusciaMergePatch(const char* resource, const std::string& ns,
                                  const std::string& name, const char* subresource,
                                  std::string body) {
  sdk::KubeRequest r;
  r.verb = KH_KUBE_PATCH;
  r.group = kKusciaGroup;
  r.version = kKusciaVersion;
  r.resource = resource;
  r.namespaceName = ns;
  r.name = name;
  r.subresource = subresource;
  r.patchType = KH_PATCH_MERGE;
  r.body = std::move(body);
  return r;
}

sdk::KubeRequest taskStatusPatch(const std::string& taskNamespace, const std::string& task,
                                 const json& status) {
  // As json{{"status", status}} dumps, uncopied.
  sdk::KubeRequest r = statusPatchOf(taskNamespace, task);
  appendJson(r.body, status);
  r.body += '}';
  return r;
}

sdk::KubeRequest taskStatusPatch(const std::string& taskNamespace, const std::string& task,
                                 const StatusPatch& status) {
  sdk::KubeRequest r = statusPatchOf(taskNamespace, task);
  // An entry's text is about 150 bytes with all its times: written once, not grown.
  r.body.reserve(r.body.size() + 160 * status.entries().size() + 64);
  status.appendJson(r.body);
  r.body += '}';
  return r;
}

} // namespace kuscia_host::model
