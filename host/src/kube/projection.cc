#include "kube/projection.h"

#include <simdjson.h>

#include <charconv>
#include <nlohmann/json.hpp>

namespace kuscia_host::kube {

namespace od = simdjson::ondemand;

namespace {

enum Builtin { kName, kNamespace, kUid, kResourceVersion, kLabels, kCode, kReason, kMessage };

std::string escapeToken(const std::string& t) {
  std::string out;
  for (char c : t) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

Result<std::vector<std::string>> splitPointer(std::string_view p) {
  std::vector<std::string> tokens;
  if (p.empty() || p[0] != '/')
    return makeError("JSON pointer '" + std::string(p) + "' must start with '/'");
  std::size_t i = 1;
  while (true) {
    std::size_t j = p.find('/', i);
    std::string_view raw =
        p.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    std::string t;
    for (std::size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] != '~') {
        t += raw[k];
        continue;
      }
      if (k + 1 < raw.size() && (raw[k + 1] == '0' || raw[k + 1] == '1')) {
        t += raw[k + 1] == '0' ? '~' : '/';
        ++k;
      } else {
        return makeError("JSON pointer '" + std::string(p) + "': '~' must be followed by 0 or 1");
      }
    }
    tokens.push_back(std::move(t));
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  return tokens;
}

Error invalidJson(simdjson::error_code ec) {
  return makeError(std::string("invalid JSON: ") + simdjson::error_message(ec));
}

void trimRight(std::string_view& s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
}

} // namespace

FieldPaths::FieldPaths() {
  nodes_.emplace_back(); // root
  int metadata = child(0, "metadata", true);
  nodes_[child(metadata, "name", true)].builtin = kName;
  nodes_[child(metadata, "namespace", true)].builtin = kNamespace;
  nodes_[child(metadata, "uid", true)].builtin = kUid;
  nodes_[child(metadata, "resourceVersion", true)].builtin = kResourceVersion;
  nodes_[child(metadata, "labels", true)].builtin = kLabels;
  nodes_[child(0, "code", true)].builtin = kCode;
  nodes_[child(0, "reason", true)].builtin = kReason;
  nodes_[child(0, "message", true)].builtin = kMessage;
}

int FieldPaths::child(int node, std::string_view key, bool create) {
  for (const auto& [k, c] : nodes_[node].children)
    if (k == key) return c;
  if (!create) return -1;
  nodes_.emplace_back();
  int id = static_cast<int>(nodes_.size() - 1);
  nodes_[node].children.emplace_back(std::string(key), id);
  return id;
}

Result<std::size_t> FieldPaths::add(std::string_view pointer) {
  for (std::size_t i = 0; i < pointers_.size(); ++i)
    if (pointers_[i] == pointer) return i;
  if (pointer.empty())
    return makeError("the root JSON pointer \"\" selects the whole object: ask for the raw object "
                     "(want_raw) instead");
  auto tokens = splitPointer(pointer);
  if (!tokens) return makeError(tokens.error());
  int node = 0;
  for (const auto& t : *tokens)
    node = child(node, t, true);
  std::size_t slot = pointers_.size();
  nodes_[node].slot = static_cast<int>(slot);
  pointers_.emplace_back(pointer);
  tokens_.push_back(*tokens);
  // A slot below another slot is resolved from the upper slot's text (the walk stops there).
  for (auto& n : nodes_)
    n.deferred = false;
  for (const auto& t : tokens_) {
    int n = 0;
    for (std::size_t d = 0; d < t.size(); ++d) {
      n = child(n, t[d], false);
      if (d + 1 < t.size() && nodes_[n].slot >= 0 && nodes_[n].builtin != kLabels)
        nodes_[n].deferred = true;
    }
  }
  return slot;
}

void Projected::clear() {
  name.clear();
  namespaceName.clear();
  uid.clear();
  resourceVersion.clear();
  hasLabels = false;
  labels.clear();
  for (auto& v : values)
    v.clear();
  raw.clear();
  code = 0;
  reason.clear();
  message.clear();
}

std::string Projected::key() const {
  return namespaceName.empty() ? name : namespaceName + "/" + name;
}

struct Decoder::Impl {
  const FieldPaths& paths;
  Options options;
  od::parser parser;
  od::parser rawParser;
  std::string scratch;
  std::string rawScratch;
  std::vector<int> deferred;
  std::string error;

  Impl(const FieldPaths& p, Options o) : paths(p), options(o) {}

  bool fail(const std::string& what, simdjson::error_code ec) {
    error = what + ": " + simdjson::error_message(ec);
    return false;
  }

  static int findChild(const FieldPaths::Node& n, std::string_view key) {
    for (const auto& [k, c] : n.children)
      if (k.size() == key.size() && k == key) return c;
    return -1;
  }

  bool capture(od::value v, std::string& dst) {
    od::json_type t;
    if (auto ec = v.type().get(t)) return fail("invalid JSON", ec);
    std::string_view raw;
    if (t == od::json_type::object || t == od::json_type::array) {
      simdjson::error_code ec;
      if (t == od::json_type::object) {
        od::object o;
        ec = v.get_object().get(o);
        if (!ec) ec = o.raw_json().get(raw);
      } else {
        od::array a;
        ec = v.get_array().get(a);
        if (!ec) ec = a.raw_json().get(raw);
      }
      if (ec) return fail("invalid JSON", ec);
      dst.resize(raw.size());
      std::size_t len = 0;
      if (simdjson::minify(raw.data(), raw.size(), dst.data(), len) != simdjson::SUCCESS)
        return fail("invalid JSON", simdjson::TAPE_ERROR);
      dst.resize(len);
      return true;
    }
    raw = v.raw_json_token();
    trimRight(raw);
    dst.assign(raw);
    return true;
  }

  bool builtinString(od::value v, const char* field, std::string& dst) {
    od::json_type t;
    if (auto ec = v.type().get(t)) return fail("invalid JSON", ec);
    if (t == od::json_type::null) return true;
    std::string_view s;
    if (t != od::json_type::string || v.get_string().get(s) != simdjson::SUCCESS) {
      error = std::string(field) + " is not a string";
      return false;
    }
    dst.assign(s);
    return true;
  }

  bool walkLabels(od::value v, const FieldPaths::Node& n, Projected& out) {
    od::json_type t;
    if (auto ec = v.type().get(t)) return fail("invalid JSON", ec);
    if (t == od::json_type::null) return true;
    od::object o;
    if (t != od::json_type::object || v.get_object().get(o)) {
      error = "metadata.labels is not an object";
      return false;
    }
    bool collect = options.keepLabels || n.slot >= 0;
    for (auto f : o) {
      std::string_view k;
      if (auto ec = f.unescaped_key().get(k)) return fail("invalid JSON", ec);
      std::string key(k);
      od::value val;
      if (auto ec = f.value().get(val)) return fail("invalid JSON", ec);
      int c = findChild(n, key);
      if (c >= 0 && paths.nodes_[c].slot >= 0) {
        std::string_view tok = val.raw_json_token();
        trimRight(tok);
        out.values[paths.nodes_[c].slot].assign(tok);
      }
      std::string_view s;
      if (val.get_string().get(s)) {
        error = "metadata.labels[" + key + "] is not a string";
        return false;
      }
      if (collect) out.labels.emplace_back(std::move(key), std::string(s));
    }
    out.hasLabels = collect;
    return true;
  }

  bool walk(od::value v, int node, Projected& out) {
    const FieldPaths::Node& n = paths.nodes_[node];
    switch (n.builtin) {
    case kLabels: return walkLabels(v, n, out);
    case kName:
    case kNamespace:
    case kUid:
    case kResourceVersion:
    case kReason:
    case kMessage: {
      if (n.slot >= 0) {
        std::string_view tok = v.raw_json_token();
        trimRight(tok);
        out.values[n.slot].assign(tok);
      }
      static constexpr const char* kNames[] = {"metadata.name",
                                               "metadata.namespace",
                                               "metadata.uid",
                                               "metadata.resourceVersion",
                                               "",
                                               "",
                                               "reason",
                                               "message"};
      std::string* dst[] = {
          &out.name, &out.namespaceName, &out.uid,    &out.resourceVersion, nullptr,
          nullptr,   &out.reason,        &out.message};
      return builtinString(v, kNames[n.builtin], *dst[n.builtin]);
    }
    case kCode: {
      if (n.slot >= 0) {
        std::string_view tok = v.raw_json_token();
        trimRight(tok);
        out.values[n.slot].assign(tok);
      }
      int64_t code = 0;
      if (v.get_int64().get(code) == simdjson::SUCCESS) out.code = code;
      return true;
    }
    default: break;
    }
    if (n.slot >= 0) {
      if (!capture(v, out.values[n.slot])) return false;
      if (n.deferred) deferred.push_back(node);
      return true;
    }
    od::json_type t;
    if (auto ec = v.type().get(t)) return fail("invalid JSON", ec);
    if (t == od::json_type::object) {
      od::object o;
      if (auto ec = v.get_object().get(o)) return fail("invalid JSON", ec);
      return walkObject(o, node, out);
    }
    if (t == od::json_type::array) {
      od::array a;
      if (auto ec = v.get_array().get(a)) return fail("invalid JSON", ec);
      std::size_t index = 0;
      for (auto el : a) {
        od::value ev;
        if (auto ec = el.get(ev)) return fail("invalid JSON", ec);
        char buf[24];
        auto [end, ec2] = std::to_chars(buf, buf + sizeof buf, index++);
        (void)ec2;
        int c = findChild(n, std::string_view(buf, static_cast<std::size_t>(end - buf)));
        if (c >= 0 && !walk(ev, c, out)) return false;
      }
    }
    return true;
  }

  bool walkObject(od::object o, int node, Projected& out) {
    const FieldPaths::Node& n = paths.nodes_[node];
    for (auto f : o) {
      std::string_view k;
      if (auto ec = f.unescaped_key().get(k)) return fail("invalid JSON", ec);
      int c = findChild(n, k);
      if (c < 0) continue; // skipped without being parsed
      od::value v;
      if (auto ec = f.value().get(v)) return fail("invalid JSON", ec);
      if (!walk(v, c, out)) return false;
    }
    return true;
  }

  // Resolves slots below a slot from that slot's text (rare: both "/a" and "/a/b" declared).
  void resolveDeferred(Projected& out) {
    for (int node : deferred) {
      int slot = paths.nodes_[node].slot;
      const auto& base = paths.tokens_[slot];
      nlohmann::json doc = nlohmann::json::parse(out.values[slot], nullptr, false);
      for (std::size_t s = 0; s < paths.tokens_.size(); ++s) {
        const auto& t = paths.tokens_[s];
        if (s == static_cast<std::size_t>(slot) || t.size() <= base.size() ||
            !std::equal(base.begin(), base.end(), t.begin()))
          continue;
        std::string rest;
        for (std::size_t i = base.size(); i < t.size(); ++i) {
          rest += '/'; // appended: GCC 12 warns falsely (-Wrestrict) on "/" + a temporary
          rest += escapeToken(t[i]);
        }
        nlohmann::json::json_pointer ptr(rest);
        if (!doc.is_discarded() && doc.contains(ptr)) out.values[s] = doc.at(ptr).dump();
      }
      if (base.size() == 1 && base[0] == "metadata") metadataFrom(doc, out);
    }
    deferred.clear();
    if (int labels = labelsSlot(); labels >= 0 && out.hasLabels) {
      nlohmann::json obj = nlohmann::json::object();
      for (const auto& [k, v] : out.labels)
        obj[k] = v;
      out.values[labels] = obj.dump();
      if (!options.keepLabels) {
        out.labels.clear();
        out.hasLabels = false;
      }
    }
  }

  // A field of the whole metadata: its text was captured without walking it, so the object's
  // name, namespace, uid, resourceVersion (and labels, when collected) come from that text.
  void metadataFrom(const nlohmann::json& meta, Projected& out) {
    if (!meta.is_object()) return;
    for (auto [key, dst] :
         {std::pair{"name", &out.name}, std::pair{"namespace", &out.namespaceName},
          std::pair{"uid", &out.uid}, std::pair{"resourceVersion", &out.resourceVersion}})
      if (auto it = meta.find(key); it != meta.end() && it->is_string())
        *dst = it->get<std::string>();
    auto labels = meta.find("labels");
    if (labels == meta.end() || !labels->is_object() || !(options.keepLabels || labelsSlot() >= 0))
      return;
    out.labels.clear();
    for (const auto& [k, v] : labels->items())
      if (v.is_string()) out.labels.emplace_back(k, v.get<std::string>());
    out.hasLabels = true;
  }

  int labelsSlot() const {
    int metadata = findChild(paths.nodes_[0], "metadata");
    int labels = findChild(paths.nodes_[metadata], "labels");
    return paths.nodes_[labels].slot;
  }

  // Walks one object; with keepRaw, keeps its text too.
  bool object(od::value v, Projected& out) {
    if (!options.keepRaw) {
      od::object o;
      if (auto ec = v.get_object().get(o)) return fail("the object is not a JSON object", ec);
      return walkObject(o, 0, out);
    }
    od::object o;
    std::string_view raw;
    if (auto ec = v.get_object().get(o)) return fail("the object is not a JSON object", ec);
    if (auto ec = o.raw_json().get(raw)) return fail("invalid JSON", ec);
    out.raw.assign(raw);
    rawScratch.assign(raw);
    rawScratch.reserve(raw.size() + simdjson::SIMDJSON_PADDING);
    od::document doc;
    if (auto ec = rawParser
                      .iterate(simdjson::padded_string_view(rawScratch.data(), rawScratch.size(),
                                                            rawScratch.capacity()))
                      .get(doc))
      return fail("invalid JSON", ec);
    od::object ro;
    if (auto ec = doc.get_object().get(ro)) return fail("invalid JSON", ec);
    return walkObject(ro, 0, out);
  }

  bool checkMetadata(const Projected& out) {
    if (out.name.empty()) {
      error = "object without metadata.name";
      return false;
    }
    if (out.resourceVersion.empty()) {
      error = "object " + out.key() + " without metadata.resourceVersion";
      return false;
    }
    return true;
  }

  Result<ListMeta> listPage(std::string_view body, const std::function<void(Projected&)>& onItem,
                            const std::function<void(const std::string&)>& onBadItem);

  // Frees the parser's buffers and the scratch copy when they grew past what events need.
  void shrink() {
    constexpr std::size_t kKeepBytes = std::size_t{256} * 1024;
    if (parser.capacity() > kKeepBytes) parser = od::parser{};
    if (scratch.capacity() > kKeepBytes) std::string().swap(scratch);
  }

  std::string_view padded(std::string_view in, std::size_t capacity) {
    if (capacity >= in.size() + simdjson::SIMDJSON_PADDING) return in;
    scratch.reserve(in.size() + simdjson::SIMDJSON_PADDING);
    scratch.assign(in);
    return scratch;
  }
};

Decoder::Decoder(const FieldPaths& paths, Options options)
    : impl_(std::make_unique<Impl>(paths, options)) {}
Decoder::~Decoder() = default;

Result<WatchEventType> Decoder::decodeEvent(std::string_view frame, std::size_t capacity,
                                            Projected& out) {
  Impl& m = *impl_;
  out.clear();
  out.values.resize(m.paths.size());
  m.deferred.clear();
  std::string_view in = m.padded(frame, capacity);
  std::size_t cap = in.data() == frame.data() ? capacity : m.scratch.capacity();
  od::document doc;
  if (auto ec = m.parser.iterate(simdjson::padded_string_view(in.data(), in.size(), cap)).get(doc))
    return invalidJson(ec);
  od::object root;
  if (auto ec = doc.get_object().get(root))
    return makeError(std::string("the event is not a JSON object: ") + simdjson::error_message(ec));
  std::string type;
  bool haveObject = false;
  for (auto f : root) {
    std::string_view k;
    if (auto ec = f.unescaped_key().get(k)) return invalidJson(ec);
    if (k == "type") {
      std::string_view t;
      if (f.value().get_string().get(t)) return makeError("the event's type is not a string");
      type.assign(t);
    } else if (k == "object") {
      od::value v;
      if (auto ec = f.value().get(v)) return invalidJson(ec);
      if (!m.object(v, out)) return makeError(m.error);
      haveObject = true;
    }
  }
  // One object, nothing after it (a guessed line may hold more: see FrameSplitter).
  // (simdjson 3.0 has no document::at_end(): past the last token, current_location() says
  // OUT_OF_BOUNDS.)
  if (const char* after = nullptr; doc.current_location().get(after) != simdjson::OUT_OF_BOUNDS)
    return makeError("data after the event's object");
  if (type.empty()) return makeError("the event has no type");
  if (!haveObject) return makeError("the " + type + " event has no object");
  m.resolveDeferred(out);
  WatchEventType et = WatchEventType::kUnknown;
  if (type == "ADDED")
    et = WatchEventType::kAdded;
  else if (type == "MODIFIED")
    et = WatchEventType::kModified;
  else if (type == "DELETED")
    et = WatchEventType::kDeleted;
  else if (type == "BOOKMARK")
    et = WatchEventType::kBookmark;
  else if (type == "ERROR")
    et = WatchEventType::kError;
  if ((et == WatchEventType::kAdded || et == WatchEventType::kModified ||
       et == WatchEventType::kDeleted) &&
      !m.checkMetadata(out))
    return makeError(m.error);
  if (et == WatchEventType::kBookmark && out.resourceVersion.empty())
    return makeError("BOOKMARK without metadata.resourceVersion");
  return et;
}

Result<ListMeta> Decoder::decodeList(std::string_view body,
                                     const std::function<void(Projected&)>& onItem,
                                     const std::function<void(const std::string&)>& onBadItem) {
  auto meta = impl_->listPage(body, onItem, onBadItem);
  // A LIST page is far larger than a watch event (500 finished tasks: 1.5 MB of text, and the
  // parser's buffers several times that). The last page lets go of what was sized to the pages,
  // so that the list's buffers do not stay beside the work that follows it (L1 beside 100,000
  // finished tasks: 10 MB of a 45 MB peak); the next event's parse sizes them again.
  if (meta.ok() && meta->continueToken.empty()) impl_->shrink();
  return meta;
}

std::size_t Decoder::bufferBytes() const {
  return impl_->parser.capacity() + impl_->scratch.capacity();
}

Result<ListMeta> Decoder::Impl::listPage(std::string_view body,
                                         const std::function<void(Projected&)>& onItem,
                                         const std::function<void(const std::string&)>& onBadItem) {
  Impl& m = *this;
  std::string_view in = m.padded(body, 0);
  od::document doc;
  if (auto ec =
          m.parser.iterate(simdjson::padded_string_view(in.data(), in.size(), m.scratch.capacity()))
              .get(doc))
    return invalidJson(ec);
  od::object root;
  if (auto ec = doc.get_object().get(root))
    return makeError(std::string("the list is not a JSON object: ") + simdjson::error_message(ec));
  ListMeta meta;
  Projected item;
  for (auto f : root) {
    std::string_view k;
    if (auto ec = f.unescaped_key().get(k)) return invalidJson(ec);
    if (k == "kind") {
      std::string_view s;
      if (f.value().get_string().get(s) == simdjson::SUCCESS) meta.kind.assign(s);
    } else if (k == "metadata") {
      od::object md;
      if (f.value().get_object().get(md)) return makeError("the list's metadata is not an object");
      for (auto mf : md) {
        std::string_view mk;
        std::string_view s;
        if (auto ec = mf.unescaped_key().get(mk)) return invalidJson(ec);
        if (mk == "resourceVersion" && mf.value().get_string().get(s) == simdjson::SUCCESS)
          meta.resourceVersion.assign(s);
        else if (mk == "continue" && mf.value().get_string().get(s) == simdjson::SUCCESS)
          meta.continueToken.assign(s);
      }
    } else if (k == "items") {
      od::array items;
      od::json_type t;
      if (f.value().type().get(t) == simdjson::SUCCESS && t == od::json_type::null) continue;
      if (f.value().get_array().get(items)) return makeError("the list's items is not an array");
      for (auto el : items) {
        od::value v;
        if (auto ec = el.get(v)) return invalidJson(ec);
        item.clear();
        item.values.resize(m.paths.size());
        m.deferred.clear();
        if (!m.object(v, item)) {
          // A structural error poisons the rest of the page; a type error only this item.
          if (m.error.rfind("invalid JSON", 0) == 0) return makeError(m.error);
          onBadItem(m.error);
          continue;
        }
        m.resolveDeferred(item);
        if (!m.checkMetadata(item)) {
          onBadItem(m.error);
          continue;
        }
        onItem(item);
      }
    }
  }
  return meta;
}

} // namespace kuscia_host::kube
