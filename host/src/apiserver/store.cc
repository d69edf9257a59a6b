#include "apiserver/store.h"

#include <algorithm>

#include "common/base64.h"

namespace kuscia_host::apiserver {

using nlohmann::json;

namespace {

std::string objectKey(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

std::shared_ptr<const std::string> serialize(const json& object) {
  return std::make_shared<const std::string>(
      object.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::shared_ptr<const std::string> eventLine(const std::string& type,
                                             const std::string& objectText) {
  auto s = std::make_shared<std::string>();
  s->reserve(objectText.size() + 32);
  *s += R"({"type":")";
  *s += type;
  *s += R"(","object":)";
  *s += objectText;
  *s += "}\n";
  return s;
}

std::shared_ptr<const std::string> eventLine(const std::string& type, const json& object) {
  return eventLine(type, *serialize(object));
}

StoredObject stored(json object) {
  auto text = serialize(object);
  return {std::make_shared<const json>(std::move(object)), std::move(text)};
}

} // namespace

bool WatchFilter::matches(const WatchEvent& e) const {
  if (e.resource != resource || !e.object) return false;
  const auto& meta = (*e.object)["metadata"];
  if (!namespaceName.empty() && meta.value("namespace", "") != namespaceName) return false;
  if (!labels.empty() && !labels.matches(meta.contains("labels") ? meta["labels"] : json()))
    return false;
  return fields.matches(*e.object);
}

Watcher::Watcher(WatchFilter filter, std::size_t capacity)
    : filter_(std::move(filter)), capacity_(capacity) {}

void Watcher::setWake(std::function<void()> wake) {
  std::lock_guard lock(mu_);
  wake_ = std::move(wake);
}

void Watcher::push(const WatchEvent& e) {
  if (filter_.matches(e)) pushLine(e.line);
}

void Watcher::pushLine(std::shared_ptr<const std::string> line) {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    if (closed_ || overflowed_) return;
    if (queue_.size() >= capacity_) {
      overflowed_ = true;
      queue_.clear();
    } else {
      queue_.push_back(std::move(line));
    }
    wake = wake_;
  }
  if (wake) wake();
}

bool Watcher::drain(std::vector<std::shared_ptr<const std::string>>& out) {
  std::lock_guard lock(mu_);
  if (overflowed_ || closed_) return false;
  while (!queue_.empty()) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return true;
}

void Watcher::close() {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    queue_.clear();
    wake = wake_;
  }
  if (wake) wake();
}

bool Watcher::overflowed() const {
  std::lock_guard lock(mu_);
  return overflowed_;
}

bool Watcher::closed() const {
  std::lock_guard lock(mu_);
  return closed_ || overflowed_;
}

Store::Store(std::size_t historyLimit) : historyLimit_(historyLimit) {}

uint64_t Store::currentRv() const {
  std::lock_guard lock(mu_);
  return rv_;
}

ApiResult<StoredObject> Store::get(const ResourceInfo& r, const std::string& ns,
                                   const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(&r);
  if (it != objects_.end())
    if (auto o = it->second.find(objectKey(ns, name)); o != it->second.end()) return o->second;
  return notFound(r, name);
}

ApiResult<ListResult> Store::list(const ResourceInfo& r, const std::string& ns,
                                  const apimachinery::LabelSelector& labels,
                                  const apimachinery::FieldSelector& fields, int64_t limit,
                                  const std::string& continueToken) const {
  std::lock_guard lock(mu_);
  ListResult out;
  out.rv = rv_;
  std::string start;
  if (!continueToken.empty()) {
    json token;
    try {
      token = json::parse(base64Decode(continueToken).value_or(""));
      out.rv = token.at("rv").get<uint64_t>();
      start = token.at("start").get<std::string>();
    } catch (const std::exception&) {
      return badRequest("continue key is not valid: " + continueToken);
    }
    if (out.rv < compactedRv_)
      return expired("The provided continue parameter is too old to display a consistent list "
                     "result. You can start a new list without the continue parameter.");
  }
  auto it = objects_.find(&r);
  if (it == objects_.end()) return out;
  const Objects& objs = it->second;
  auto begin = start.empty() ? objs.begin() : objs.upper_bound(start);
  if (!ns.empty() && start.empty()) begin = objs.lower_bound(ns + "/");
  for (auto o = begin; o != objs.end(); ++o) {
    if (!ns.empty() && o->first.compare(0, ns.size() + 1, ns + "/") != 0) break;
    const auto& meta = (*o->second.object)["metadata"];
    if (!labels.empty() && !labels.matches(meta.contains("labels") ? meta["labels"] : json()))
      continue;
    if (!fields.matches(*o->second.object)) continue;
    if (limit > 0 && static_cast<int64_t>(out.items.size()) == limit) {
      // Count the rest only when cheap to say something useful.
      int64_t remaining = 0;
      for (auto rest = o; rest != objs.end(); ++rest) {
        if (!ns.empty() && rest->first.compare(0, ns.size() + 1, ns + "/") != 0) break;
        ++remaining;
      }
      out.remaining = remaining;
      std::string last = std::prev(o)->first;
      out.continueToken = base64Encode(json({{"rv", out.rv}, {"start", last}}).dump());
      break;
    }
    out.items.push_back(o->second.text);
  }
  return out;
}

void Store::emit(const ResourceInfo& r, const std::string& type, const StoredObject& object,
                 uint64_t rv) {
  WatchEvent e;
  e.rv = rv;
  e.resource = &r;
  e.type = type;
  e.line = eventLine(type, *object.text);
  e.object = object.object;
  for (auto& w : watchers_)
    w->push(e);
  if (observer_) observer_(e);
  history_.push_back(std::move(e));
  while (history_.size() > historyLimit_) {
    compactedRv_ = history_.front().rv;
    history_.pop_front();
  }
  watchers_.erase(
      std::remove_if(watchers_.begin(), watchers_.end(), [](const auto& w) { return w->closed(); }),
      watchers_.end());
}

ApiResult<StoredObject> Store::mutate(const ResourceInfo& r, const std::string& ns,
                                      const std::string& name, const Mutator& mutator) {
  std::lock_guard lock(mu_);
  Objects& objs = objects_[&r];
  std::string key = objectKey(ns, name);
  auto it = objs.find(key);
  const json* current = it == objs.end() ? nullptr : it->second.object.get();
  auto next = mutator(current);
  if (!next.ok()) return next.error();
  if (!next->has_value()) { // delete
    if (current == nullptr) return notFound(r, name);
    json last = *it->second.object;
    objs.erase(it);
    uint64_t rv = ++rv_;
    last["metadata"]["resourceVersion"] = std::to_string(rv);
    StoredObject gone = stored(std::move(last));
    emit(r, "DELETED", gone, rv);
    return gone;
  }
  json obj = std::move(*next.value());
  if (current != nullptr) {
    // Compare as if the resourceVersion were the current one: nothing changed, no write.
    obj["metadata"]["resourceVersion"] = (*current)["metadata"]["resourceVersion"];
    if (obj == *current) return it->second;
  }
  uint64_t rv = ++rv_;
  obj["metadata"]["resourceVersion"] = std::to_string(rv);
  bool added = current == nullptr;
  StoredObject& slot = objs[key];
  slot = stored(std::move(obj));
  emit(r, added ? "ADDED" : "MODIFIED", slot, rv);
  return slot;
}

void Store::deleteNamespaceContents(const std::string& ns) {
  std::lock_guard lock(mu_);
  for (auto& [res, objs] : objects_) {
    if (!res->namespaced) continue;
    for (auto it = objs.lower_bound(ns + "/");
         it != objs.end() && it->first.compare(0, ns.size() + 1, ns + "/") == 0;) {
      json last = *it->second.object;
      it = objs.erase(it);
      uint64_t rv = ++rv_;
      last["metadata"]["resourceVersion"] = std::to_string(rv);
      emit(*res, "DELETED", stored(std::move(last)), rv);
    }
  }
}

ApiResult<std::shared_ptr<Watcher>> Store::watch(WatchFilter filter, const std::string& rvText,
                                                 std::size_t capacity) {
  uint64_t from = 0;
  bool replay = rvText.empty() || rvText == "0";
  if (!replay) {
    try {
      std::size_t used = 0;
      from = std::stoull(rvText, &used);
      if (used != rvText.size()) throw std::invalid_argument(rvText);
    } catch (const std::exception&) {
      return badRequest("invalid resource version: " + rvText);
    }
  }
  auto w = std::make_shared<Watcher>(std::move(filter), capacity);
  std::lock_guard lock(mu_);
  if (replay) {
    if (auto it = objects_.find(w->filter().resource); it != objects_.end()) {
      w->addCapacity(it->second.size()); // the initial replay never overflows the queue
      for (const auto& [key, obj] : it->second) {
        WatchEvent e;
        e.resource = w->filter().resource;
        e.object = obj.object;
        if (!w->filter().matches(e)) continue;
        w->pushLine(eventLine("ADDED", *obj.text));
      }
    }
  } else {
    if (from < compactedRv_)
      return expired("too old resource version: " + std::to_string(from) + " (" +
                     std::to_string(compactedRv_ + 1) + ")");
    if (from > rv_) return tooLargeResourceVersion(from, rv_);
    for (const auto& e : history_)
      if (e.rv > from) w->push(e);
  }
  watchers_.push_back(w);
  return w;
}

void Store::unwatch(const std::shared_ptr<Watcher>& w) {
  w->close();
  std::lock_guard lock(mu_);
  watchers_.erase(std::remove(watchers_.begin(), watchers_.end(), w), watchers_.end());
}

void Store::bookmark(const std::shared_ptr<Watcher>& w) {
  std::lock_guard lock(mu_);
  const ResourceInfo* r = w->filter().resource;
  json obj = {{"kind", r->kind},
              {"apiVersion", r->apiVersion()},
              {"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
  w->pushLine(eventLine("BOOKMARK", obj));
}

void Store::compact() {
  std::lock_guard lock(mu_);
  history_.clear();
  compactedRv_ = rv_;
}

void Store::dropWatchers() {
  std::vector<std::shared_ptr<Watcher>> all;
  {
    std::lock_guard lock(mu_);
    all.swap(watchers_);
  }
  for (auto& w : all)
    w->close();
}

void Store::injectLine(const std::string& bytes) {
  auto line = std::make_shared<const std::string>(bytes);
  std::lock_guard lock(mu_);
  for (auto& w : watchers_)
    w->pushLine(line);
}

void Store::setObserver(Observer observer) {
  std::lock_guard lock(mu_);
  observer_ = std::move(observer);
}

std::size_t Store::watcherCount() const {
  std::lock_guard lock(mu_);
  return watchers_.size();
}

} // namespace kuscia_host::apiserver
