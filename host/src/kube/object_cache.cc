#include "kube/object_cache.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace kuscia_host::kube {

std::optional<std::string_view> Record::label(std::string_view name) const {
  // Labels are stored as "key\0value\0" pairs.
  std::string_view all = slot(kLabels);
  while (!all.empty()) {
    std::size_t k = all.find('\0');
    std::size_t v = all.find('\0', k + 1);
    if (all.substr(0, k) == name) return all.substr(k + 1, v - k - 1);
    all.remove_prefix(v + 1);
  }
  return std::nullopt;
}

bool Record::sameContent(const Record& o) const {
  if (count_ != o.count_ || hasLabels_ != o.hasLabels_) return false;
  for (uint32_t i = 0; i < count_; ++i)
    if (i != kResourceVersion && slot(i) != o.slot(i)) return false;
  return true;
}

RecordPtr RecordPtr::make(const Projected& p, bool keepRaw) {
  std::string key = p.key();
  std::string labels;
  if (p.hasLabels)
    for (const auto& [k, v] : p.labels) {
      labels.append(k).push_back('\0');
      labels.append(v).push_back('\0');
    }
  const uint32_t count = Record::kFirstField + static_cast<uint32_t>(p.values.size());
  std::size_t payload = key.size() + p.uid.size() + p.resourceVersion.size() + labels.size() +
                        (keepRaw ? p.raw.size() : 0);
  for (const auto& v : p.values)
    payload += v.size();
  payload += count; // a NUL after every slot
  std::size_t total = sizeof(Record) + sizeof(uint32_t) * (count + 1) + payload;
  void* mem = ::operator new(total);
  auto* r = new (mem) Record();
  r->count_ = count;
  r->bytes_ = static_cast<uint32_t>(total);
  r->hasLabels_ = p.hasLabels;
  uint32_t* off = r->offsets();
  char* out = const_cast<char*>(r->data());
  uint32_t pos = 0;
  auto put = [&](uint32_t i, std::string_view s) {
    off[i] = pos;
    if (!s.empty()) std::memcpy(out + pos, s.data(), s.size());
    pos += static_cast<uint32_t>(s.size());
    out[pos++] = '\0';
  };
  put(Record::kKey, key);
  put(Record::kUid, p.uid);
  put(Record::kResourceVersion, p.resourceVersion);
  put(Record::kLabels, labels);
  put(Record::kRaw, keepRaw ? std::string_view(p.raw) : std::string_view());
  for (std::size_t i = 0; i < p.values.size(); ++i)
    put(Record::kFirstField + static_cast<uint32_t>(i), p.values[i]);
  off[count] = pos;
  RecordPtr ptr;
  ptr.r_ = r;
  return ptr;
}

void RecordPtr::release() {
  if (r_ != nullptr && r_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    r_->~Record();
    ::operator delete(static_cast<void*>(r_));
  }
  r_ = nullptr;
}

RecordPtr ObjectCache::put(RecordPtr record) {
  std::string_view key = record->key();
  bytes_ += record->bytes();
  auto it = map_.find(key);
  if (it == map_.end()) {
    map_.emplace(key, std::move(record));
    return {};
  }
  // The index key views the old record: re-key the node to the new one.
  auto node = map_.extract(it);
  RecordPtr old = std::move(node.mapped());
  bytes_ -= old->bytes();
  node.key() = record->key();
  node.mapped() = std::move(record);
  map_.insert(std::move(node));
  return old;
}

RecordPtr ObjectCache::erase(std::string_view key) {
  auto it = map_.find(key);
  if (it == map_.end()) return {};
  RecordPtr old = std::move(it->second);
  map_.erase(it);
  bytes_ -= old->bytes();
  return old;
}

RecordPtr ObjectCache::get(std::string_view key) const {
  auto it = map_.find(key);
  return it == map_.end() ? RecordPtr() : it->second;
}

} // namespace kuscia_host::kube
