#include "plugin_host/plugin_kube.h"

#include <algorithm>
#include <utility>

#include "apimachinery/selector.h"

namespace kuscia_host {

namespace {

std::string str(const char* p) {
  return p != nullptr ? std::string(p) : std::string();
}

// Calls the visitor with `o`; true when the visitor asks to stop.
bool visitObject(const KubeObject& o, kh_object_visitor_t visitor, void* user) {
  kh_object_t obj{};
  obj.struct_size = sizeof obj;
  obj.key = o.key.c_str();
  obj.uid = o.uid.c_str();
  obj.resource_version = o.resourceVersion.c_str();
  obj.fields_json = o.fieldsJson.c_str();
  obj.fields_json_len = o.fieldsJson.size();
  return visitor(user, &obj) != 0;
}

} // namespace

PluginKube::PluginKube(KubeBridge* bridge, std::string domain, Callbacks callbacks)
    : bridge_(bridge), domain_(std::move(domain)), cb_(std::move(callbacks)) {}

kh_status_t PluginKube::subscribe(const kh_subscription_t* sub, uint64_t* outId, std::string& err) {
  if (bridge_ == nullptr) {
    err = "subscribe: no cluster is configured (cluster.embedded, kubeconfig or inCluster)";
    return KH_ERR_UNAVAILABLE;
  }
  if (!creating_) {
    err = "subscribe is only allowed in on_create";
    return KH_ERR_FAILED_PRECONDITION;
  }
  if (sub == nullptr || outId == nullptr || !KH_HAS_FIELD(sub, kh_subscription_t, want_raw) ||
      sub->version == nullptr || sub->resource == nullptr ||
      (sub->field_count > 0 && sub->fields == nullptr)) {
    err = "subscribe: the subscription is NULL, too small, or lacks version, resource or fields";
    return KH_ERR_INVALID_ARGUMENT;
  }
  kube::SubscriptionSpec spec;
  spec.group = str(sub->group);
  spec.version = sub->version;
  spec.resource = sub->resource;
  switch (sub->scope) {
  case KH_SCOPE_DOMAIN: spec.namespaceName = domain_; break;
  case KH_SCOPE_NAMESPACE:
    if (sub->namespace_name == nullptr || sub->namespace_name[0] == '\0') {
      err = "subscribe: KH_SCOPE_NAMESPACE needs namespace_name";
      return KH_ERR_INVALID_ARGUMENT;
    }
    spec.namespaceName = sub->namespace_name;
    break;
  case KH_SCOPE_ALL: break;
  default:
    err = "subscribe: unknown scope " + std::to_string(sub->scope);
    return KH_ERR_INVALID_ARGUMENT;
  }
  spec.labelSelector = str(sub->label_selector);
  for (std::size_t i = 0; i < sub->field_count; ++i) {
    if (sub->fields[i] == nullptr) {
      err = "subscribe: fields[" + std::to_string(i) + "] is NULL";
      return KH_ERR_INVALID_ARGUMENT;
    }
    spec.fields.emplace_back(sub->fields[i]);
  }
  spec.wantRaw = sub->want_raw != 0;
  bool labels = !spec.labelSelector.empty() || std::find(spec.fields.begin(), spec.fields.end(),
                                                         "/metadata/labels") != spec.fields.end();
  auto id =
      bridge_->subscribe(std::move(spec), [this](uint64_t s, kube::ChangeType t, KubeObject&& o) {
        deliver(s, t, std::move(o));
      });
  if (!id) {
    err = "subscribe: " + id.error();
    return KH_ERR_INVALID_ARGUMENT;
  }
  std::lock_guard lock(mu_);
  subscriptions_[*id] = labels;
  *outId = *id;
  return KH_OK;
}

// A change is handed to the plugin as the ABI's event type of the same value.
static_assert(static_cast<kh_event_type_t>(kube::ChangeType::kAdded) == KH_EVENT_ADDED);
static_assert(static_cast<kh_event_type_t>(kube::ChangeType::kModified) == KH_EVENT_MODIFIED);
static_assert(static_cast<kh_event_type_t>(kube::ChangeType::kDeleted) == KH_EVENT_DELETED);
static_assert(static_cast<kh_event_type_t>(kube::ChangeType::kSynced) == KH_EVENT_SYNCED);

void PluginKube::deliver(uint64_t subscription, kube::ChangeType type, KubeObject&& object) {
  if (stopping_ || !cb_.event) return;
  Queued q;
  q.subscription = subscription;
  q.type = type;
  if (object.record && object.subscription != nullptr) {
    q.record = std::move(object.record); // rendered for this subscriber when it runs
    q.view = object.subscription;
  } else {
    q.object = std::make_unique<KubeObject>(std::move(object));
  }
  bool post = false;
  {
    std::lock_guard lock(queueMu_);
    queue_.push_back(std::move(q));
    if (cb_.queued) cb_.queued(queue_.size()); // under the lock: reports stay in order
    post = !std::exchange(drainPosted_, true);
  }
  if (post) cb_.post([this] { drain(); });
}

void PluginKube::drain() {
  // A bounded turn, so that timers and results of the same instance are not held behind a
  // whole initial list.
  constexpr int kPerTurn = 64;
  // One object for the turn's events: each is rendered over the last one's strings.
  KubeObject o;
  for (int n = 0; n < kPerTurn; ++n) {
    Queued q;
    {
      std::lock_guard lock(queueMu_);
      if (queue_.empty() || stopping_) {
        queue_.clear();
        drainPosted_ = false;
        if (cb_.queued) cb_.queued(0);
        return;
      }
      q = std::move(queue_.front());
      queue_.pop_front();
      if (cb_.queued) cb_.queued(queue_.size());
    }
    if (q.object) {
      o = std::move(*q.object);
    } else {
      o.record = std::move(q.record);
      o.subscription = q.view;
    }
    o.materialize();
    kh_event_t ev{};
    ev.struct_size = sizeof ev;
    ev.subscription_id = q.subscription;
    ev.type = static_cast<kh_event_type_t>(q.type);
    ev.key = o.key.c_str();
    ev.uid = o.uid.c_str();
    ev.resource_version = o.resourceVersion.c_str();
    ev.fields_json = q.type == kube::ChangeType::kSynced ? "" : o.fieldsJson.c_str();
    ev.fields_json_len = q.type == kube::ChangeType::kSynced ? 0 : o.fieldsJson.size();
    if (!o.rawJson.empty()) {
      ev.raw_json = o.rawJson.c_str();
      ev.raw_json_len = o.rawJson.size();
    }
    cb_.event(ev);
  }
  {
    std::lock_guard lock(queueMu_);
    if (queue_.empty()) {
      drainPosted_ = false;
      return;
    }
  }
  cb_.post([this] { drain(); }); // the rest after what else waits on the executor
}

bool PluginKube::owns(uint64_t id) const {
  std::lock_guard lock(mu_);
  return subscriptions_.count(id) > 0;
}

kh_status_t PluginKube::cacheGet(uint64_t subscription, const char* key,
                                 kh_object_visitor_t visitor, void* user) {
  if (bridge_ == nullptr) return KH_ERR_UNAVAILABLE;
  if (key == nullptr || visitor == nullptr) {
    cb_.callError("cache_get");
    return KH_ERR_INVALID_ARGUMENT;
  }
  if (!owns(subscription)) return KH_ERR_NOT_FOUND;
  auto found = bridge_->get(subscription, key,
                            [&](const KubeObject& o) { return visitObject(o, visitor, user); });
  return found == KubeBridge::Lookup::kOk ? KH_OK : KH_ERR_NOT_FOUND;
}

kh_status_t PluginKube::cacheList(uint64_t subscription, const char* selector,
                                  kh_object_visitor_t visitor, void* user) {
  if (bridge_ == nullptr) return KH_ERR_UNAVAILABLE;
  if (visitor == nullptr) {
    cb_.callError("cache_list");
    return KH_ERR_INVALID_ARGUMENT;
  }
  bool labels = false;
  {
    std::lock_guard lock(mu_);
    auto it = subscriptions_.find(subscription);
    if (it == subscriptions_.end()) return KH_ERR_NOT_FOUND;
    labels = it->second;
  }
  // The selector is judged before anything is cached, as it will be after.
  auto sel = apimachinery::LabelSelector::parse(str(selector));
  if (!sel) {
    cb_.callError("cache_list");
    return KH_ERR_INVALID_ARGUMENT;
  }
  if (!sel->empty() && !labels) {
    cb_.callError("cache_list");
    return KH_ERR_FAILED_PRECONDITION;
  }
  switch (bridge_->list(subscription, str(selector),
                        [&](const KubeObject& o) { return visitObject(o, visitor, user); })) {
  case KubeBridge::Lookup::kOk: return KH_OK;
  case KubeBridge::Lookup::kNotFound: return KH_ERR_NOT_FOUND;
  case KubeBridge::Lookup::kBadSelector:
    cb_.callError("cache_list");
    return KH_ERR_INVALID_ARGUMENT;
  case KubeBridge::Lookup::kNoLabels:
    cb_.callError("cache_list");
    return KH_ERR_FAILED_PRECONDITION;
  case KubeBridge::Lookup::kStale: break; // not a list's answer
  }
  return KH_ERR_INTERNAL;
}

kh_status_t PluginKube::cacheRelease(uint64_t subscription, const char* key,
                                     const char* resourceVersion) {
  if (bridge_ == nullptr) return KH_ERR_UNAVAILABLE;
  if (key == nullptr || resourceVersion == nullptr) {
    cb_.callError("cache_release");
    return KH_ERR_INVALID_ARGUMENT;
  }
  if (!owns(subscription)) return KH_ERR_NOT_FOUND;
  switch (bridge_->release(subscription, key, resourceVersion)) {
  case KubeBridge::Lookup::kOk: return KH_OK;
  case KubeBridge::Lookup::kStale: return KH_ERR_STALE;
  case KubeBridge::Lookup::kNotFound:
  case KubeBridge::Lookup::kBadSelector:
  case KubeBridge::Lookup::kNoLabels: break;
  }
  return KH_ERR_NOT_FOUND;
}

kh_status_t PluginKube::request(const kh_kube_request_t* req, uint64_t* outId, std::string& err) {
  if (bridge_ == nullptr) {
    err = "kube_request: no cluster is configured (cluster.embedded, kubeconfig or inCluster)";
    return KH_ERR_UNAVAILABLE;
  }
  if (stopping_) {
    err = "kube_request: the instance is stopping";
    return KH_ERR_FAILED_PRECONDITION;
  }
  if (req == nullptr || outId == nullptr || !KH_HAS_FIELD(req, kh_kube_request_t, user_tag)) {
    err = "kube_request: the request is NULL or too small";
    return KH_ERR_INVALID_ARGUMENT;
  }
  kube::KubeRequest w;
  switch (req->verb) {
  case KH_KUBE_PATCH: w.verb = kube::KubeRequest::Verb::kPatch; break;
  case KH_KUBE_CREATE: w.verb = kube::KubeRequest::Verb::kCreate; break;
  case KH_KUBE_DELETE: w.verb = kube::KubeRequest::Verb::kDelete; break;
  default:
    err = "kube_request: unknown verb " + std::to_string(req->verb);
    return KH_ERR_INVALID_ARGUMENT;
  }
  if (w.verb == kube::KubeRequest::Verb::kPatch) {
    if (req->patch_type == KH_PATCH_MERGE)
      w.patchType = kube::KubeRequest::PatchType::kMerge;
    else if (req->patch_type == KH_PATCH_JSON)
      w.patchType = kube::KubeRequest::PatchType::kJson;
    else {
      err = "kube_request: unknown patch type " + std::to_string(req->patch_type);
      return KH_ERR_INVALID_ARGUMENT;
    }
  }
  w.group = str(req->group);
  w.version = str(req->version);
  w.resource = str(req->resource);
  w.namespaceName = str(req->namespace_name);
  w.name = str(req->name);
  w.subresource = str(req->subresource);
  if (req->body != nullptr) w.body.assign(req->body, req->body_len);
  w.resourceVersion = str(req->resource_version);
  w.abandoned = [flag = abandoned_] { return flag->load(); };
  uint64_t id;
  {
    std::lock_guard lock(mu_);
    id = ++nextRequestId_;
    pending_[id] = req->user_tag;
  }
  auto sent = bridge_->request(w, [this, id](kube::KubeResult r) {
    cb_.post([this, id, r = std::move(r)] { complete(id, r); });
  });
  if (!sent) {
    std::lock_guard lock(mu_);
    pending_.erase(id);
    err = "kube_request: " + sent.error();
    return KH_ERR_INVALID_ARGUMENT;
  }
  *outId = id;
  return KH_OK;
}

void PluginKube::complete(uint64_t id, const kube::KubeResult& result) {
  uint64_t tag;
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return; // already completed when the instance stopped
    tag = it->second;
    pending_.erase(it);
  }
  kh_kube_result_t r{};
  r.struct_size = sizeof r;
  r.request_id = id;
  r.user_tag = tag;
  r.http_code = result.httpCode;
  r.body = result.body.c_str();
  r.body_len = result.body.size();
  r.message = result.message.c_str();
  cb_.result(r);
}

void PluginKube::failPending() {
  std::map<uint64_t, uint64_t> pending;
  {
    std::lock_guard lock(mu_);
    pending.swap(pending_);
  }
  for (const auto& [id, tag] : pending) {
    kh_kube_result_t r{};
    r.struct_size = sizeof r;
    r.request_id = id;
    r.user_tag = tag;
    r.http_code = 0;
    r.body = "";
    r.message = "the instance stopped before the request completed";
    cb_.result(r);
  }
}

std::size_t PluginKube::pending() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

} // namespace kuscia_host
