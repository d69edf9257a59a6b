#include "plugin_host/kube_bridge.h"

#include <vector>

#include "apimachinery/selector.h"

namespace kuscia_host {

namespace {

// `record` as `sub` sees it, written over o's strings (their capacity kept: an instance's events
// of one turn reuse them instead of allocating four strings each).
void render(const kube::Subscription& sub, const kube::Record& record, KubeObject& o) {
  kube::PlainRecord r(record); // one unpacking for the fields and the raw object
  o.key.assign(r->key());
  r->uidInto(o.uid);
  o.resourceVersion.assign(r->resourceVersion());
  sub.fieldsJsonInto(*r, o.fieldsJson);
  if (sub.spec().wantRaw)
    o.rawJson.assign(r->raw());
  else
    o.rawJson.clear();
}

KubeObject view(const kube::Subscription& sub, const kube::Record& record) {
  KubeObject o;
  render(sub, record, o);
  return o;
}

} // namespace

void KubeObject::materialize() {
  if (!record || subscription == nullptr) return;
  render(*subscription, *record, *this);
  // The strings hold what the plugin reads; the record is not held longer than it was queued.
  record = kube::RecordPtr();
  subscription = nullptr;
}

Result<uint64_t> KubeClientBridge::subscribe(kube::SubscriptionSpec spec, EventSink sink) {
  return client_.subscribe(std::move(spec),
                           [sink = std::move(sink)](const kube::Subscription& s, kube::ChangeType t,
                                                    const kube::RecordPtr& r) {
                             KubeObject o;
                             if (r) {
                               o.record = r;
                               o.subscription = &s;
                             }
                             sink(s.id(), t, std::move(o));
                           });
}

KubeBridge::Lookup KubeClientBridge::get(uint64_t subscription, std::string_view key,
                                         const Visitor& visit) {
  auto [informer, sub] = client_.find(subscription);
  if (!informer) return Lookup::kNotFound;
  kube::RecordPtr r = informer->get(key);
  if (!r || !sub->matches(*r)) return Lookup::kNotFound;
  // Rendered over the strings of this thread's last lookup (plugins look objects up on most of
  // their events: four strings allocated and freed each time otherwise); a lookup made from
  // inside a visitor renders its own.
  thread_local KubeObject scratch;
  thread_local bool inUse = false;
  if (inUse) {
    visit(view(*sub, *r));
    return Lookup::kOk;
  }
  inUse = true;
  struct Release {
    ~Release() { inUse = false; }
  } release;
  render(*sub, *r, scratch);
  visit(scratch);
  return Lookup::kOk;
}

KubeBridge::Lookup KubeClientBridge::list(uint64_t subscription, const std::string& labelSelector,
                                          const Visitor& visit) {
  auto found = client_.find(subscription);
  const auto& informer = found.first;
  const auto& sub = found.second;
  if (!informer) return Lookup::kOk; // not started yet: nothing cached
  auto sel = apimachinery::LabelSelector::parse(labelSelector);
  if (!sel) return Lookup::kBadSelector;
  // Snapshot first: the visitor may call back into the host.
  std::vector<kube::RecordPtr> matching;
  bool labelsMissing = false;
  informer->forEach([&](const kube::RecordPtr& r) {
    if (!sub->matches(*r)) return;
    if (!sel->empty()) {
      if (!r->hasLabels()) {
        labelsMissing = true;
        return;
      }
      if (!sel->matches([&r](std::string_view k) { return r->label(k); })) return;
    }
    matching.push_back(r);
  });
  if (labelsMissing) return Lookup::kNoLabels;
  for (const auto& r : matching)
    if (visit(view(*sub, *r))) break;
  return Lookup::kOk;
}

KubeBridge::Lookup KubeClientBridge::release(uint64_t subscription, std::string_view key,
                                             std::string_view rv) {
  auto [informer, sub] = client_.find(subscription);
  if (!informer) return Lookup::kNotFound;
  switch (informer->release(*sub, key, rv)) {
  case kube::Informer::Release::kReleased: return Lookup::kOk;
  case kube::Informer::Release::kStale: return Lookup::kStale;
  case kube::Informer::Release::kNotFound: break;
  }
  return Lookup::kNotFound;
}

Result<void> KubeClientBridge::request(const kube::KubeRequest& req,
                                       std::function<void(kube::KubeResult)> done) {
  return client_.request(req, std::move(done));
}

} // namespace kuscia_host
