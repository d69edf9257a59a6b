#include "otlp_encode.h"

#include <nlohmann/json.hpp>

#include <kuscia_model/json_text.h>

namespace kuscia_host::plugins::otel {

namespace {

// Protobuf wire format: varints, fixed64, fixed32 and length-delimited fields. Fields at their
// default (0, empty) are left out, as proto3 does.
class Writer {
public:
  std::string out;

  void varint(uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  void tag(uint32_t field, uint32_t wire) { varint((uint64_t{field} << 3) | wire); }
  void uintField(uint32_t field, uint64_t v) {
    if (v == 0) return;
    tag(field, 0);
    varint(v);
  }
  void fixed64(uint32_t field, uint64_t v) {
    if (v == 0) return;
    tag(field, 1);
    for (int i = 0; i < 8; ++i)
      out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void fixed32(uint32_t field, uint32_t v) {
    if (v == 0) return;
    tag(field, 5);
    for (int i = 0; i < 4; ++i)
      out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void bytes(uint32_t field, std::string_view v) {
    if (v.empty()) return;
    tag(field, 2);
    varint(v.size());
    out.append(v);
  }
  // A submessage, written even when empty (a oneof member, a repeated element).
  template <class Fn> void message(uint32_t field, Fn&& fill) {
    Writer inner;
    fill(inner);
    tag(field, 2);
    varint(inner.out.size());
    out.append(inner.out);
  }
};

template <std::size_t N> std::string_view raw(const std::array<uint8_t, N>& id) {
  return {reinterpret_cast<const char*>(id.data()), N};
}

// Span.flags: the W3C trace flags (sampled) and whether the parent is remote (bits 8 and 9).
uint32_t flagsOf(const SpanData& s) {
  constexpr uint32_t kSampled = 0x01, kHasIsRemote = 0x100, kIsRemote = 0x200;
  return kSampled | kHasIsRemote | (s.parent && s.parentRemote ? kIsRemote : 0);
}

void protoAttributes(Writer& w, uint32_t field, const std::vector<Attribute>& attributes) {
  for (const auto& a : attributes)
    w.message(field, [&](Writer& kv) {
      kv.bytes(1, a.key);
      kv.message(2, [&](Writer& any) {
        if (const auto* s = std::get_if<std::string>(&a.value)) {
          any.tag(1, 2); // string_value, written even when empty (the oneof is set)
          any.varint(s->size());
          any.out.append(*s);
        } else if (const auto* b = std::get_if<bool>(&a.value)) {
          any.tag(2, 0);
          any.varint(*b ? 1 : 0);
        } else {
          any.tag(3, 0);
          any.varint(static_cast<uint64_t>(std::get<int64_t>(a.value)));
        }
      });
    });
}

nlohmann::json jsonAttributes(const std::vector<Attribute>& attributes) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : attributes) {
    nlohmann::json value;
    if (const auto* s = std::get_if<std::string>(&a.value))
      value = {{"stringValue", *s}};
    else if (const auto* b = std::get_if<bool>(&a.value))
      value = {{"boolValue", *b}};
    else
      value = {{"intValue", std::get<int64_t>(a.value)}};
    out.push_back({{"key", a.key}, {"value", std::move(value)}});
  }
  return out;
}

constexpr int kSpanKindInternal = 1;

} // namespace

std::string encodeProtobuf(const ResourceInfo& resource, const std::vector<SpanData>& spans) {
  Writer w;
  w.message(1, [&](Writer& rs) { // ResourceSpans
    rs.message(1, [&](Writer& r) { protoAttributes(r, 1, resource.attributes); });
    rs.message(2, [&](Writer& ss) { // ScopeSpans
      ss.message(1, [&](Writer& scope) {
        scope.bytes(1, resource.scopeName);
        scope.bytes(2, resource.scopeVersion);
      });
      for (const auto& s : spans)
        ss.message(2, [&](Writer& sp) {
          sp.bytes(1, raw(s.traceId));
          sp.bytes(2, raw(s.spanId));
          if (s.parent) sp.bytes(4, raw(*s.parent));
          sp.bytes(5, s.name);
          sp.uintField(6, kSpanKindInternal);
          sp.fixed64(7, static_cast<uint64_t>(s.startNanos));
          sp.fixed64(8, static_cast<uint64_t>(s.endNanos));
          protoAttributes(sp, 9, s.attributes);
          for (const auto& e : s.events)
            sp.message(11, [&](Writer& ev) {
              ev.fixed64(1, static_cast<uint64_t>(e.timeNanos));
              ev.bytes(2, e.name);
              protoAttributes(ev, 3, e.attributes);
            });
          sp.message(15, [&](Writer& st) {
            st.bytes(2, s.statusMessage);
            st.uintField(3, static_cast<uint64_t>(s.status));
          });
          sp.fixed32(16, flagsOf(s));
        });
    });
  });
  return w.out;
}

std::string encodeJson(const ResourceInfo& resource, const std::vector<SpanData>& spans) {
  using nlohmann::json;
  json list = json::array();
  for (const auto& s : spans) {
    json span = {{"traceId", hex(s.traceId)},
                 {"spanId", hex(s.spanId)},
                 {"name", s.name},
                 {"kind", kSpanKindInternal},
                 // 64-bit integers as decimal strings (the protobuf JSON mapping).
                 {"startTimeUnixNano", std::to_string(s.startNanos)},
                 {"endTimeUnixNano", std::to_string(s.endNanos)},
                 {"attributes", jsonAttributes(s.attributes)},
                 {"flags", flagsOf(s)}};
    if (s.parent) span["parentSpanId"] = hex(*s.parent);
    json events = json::array();
    for (const auto& e : s.events)
      events.push_back({{"timeUnixNano", std::to_string(e.timeNanos)},
                        {"name", e.name},
                        {"attributes", jsonAttributes(e.attributes)}});
    if (!events.empty()) span["events"] = std::move(events);
    json status = json::object();
    if (s.status != StatusCode::kUnset) status["code"] = static_cast<int>(s.status);
    if (!s.statusMessage.empty()) status["message"] = s.statusMessage;
    span["status"] = std::move(status);
    list.push_back(std::move(span));
  }
  json scope = {{"name", resource.scopeName}};
  if (!resource.scopeVersion.empty()) scope["version"] = resource.scopeVersion;
  json request = {
      {"resourceSpans",
       json::array({{{"resource", {{"attributes", jsonAttributes(resource.attributes)}}},
                     {"scopeSpans", json::array({{{"scope", scope}, {"spans", list}}})}}})}};
  return model::dumpJson(request);
}

namespace {

bool readVarint(std::string_view& in, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    auto b = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    v |= uint64_t{b & 0x7fU} << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// Skips or reads the fields of one message; `onField` sees (field, wire, varint, bytes).
template <class Fn> bool readMessage(std::string_view in, Fn&& onField) {
  while (!in.empty()) {
    uint64_t key = 0;
    if (!readVarint(in, key)) return false;
    auto field = static_cast<uint32_t>(key >> 3);
    auto wire = static_cast<uint32_t>(key & 7);
    uint64_t v = 0;
    std::string_view bytes;
    if (wire == 0) {
      if (!readVarint(in, v)) return false;
    } else if (wire == 1 || wire == 5) {
      std::size_t n = wire == 1 ? 8 : 4;
      if (in.size() < n) return false;
      in.remove_prefix(n);
    } else if (wire == 2) {
      if (!readVarint(in, v) || v > in.size()) return false;
      bytes = in.substr(0, v);
      in.remove_prefix(v);
    } else {
      return false;
    }
    onField(field, wire, v, bytes);
  }
  return true;
}

} // namespace

ExportAnswer parseAnswer(std::string_view body, bool json) {
  ExportAnswer a;
  if (body.empty()) return a;
  if (json) {
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("partialSuccess") || !j["partialSuccess"].is_object())
      return a;
    const auto& p = j["partialSuccess"];
    if (p.contains("rejectedSpans")) {
      const auto& r = p["rejectedSpans"];
      if (r.is_number_integer())
        a.rejectedSpans = r.get<int64_t>();
      else if (r.is_string())
        try {
          a.rejectedSpans = std::stoll(r.get<std::string>());
        } catch (...) {
        }
    }
    if (p.contains("errorMessage") && p["errorMessage"].is_string())
      a.errorMessage = p["errorMessage"].get<std::string>();
    return a;
  }
  ExportAnswer parsed;
  bool ok = readMessage(body, [&](uint32_t field, uint32_t wire, uint64_t, std::string_view inner) {
    if (field != 1 || wire != 2) return;
    readMessage(inner, [&](uint32_t f, uint32_t w, uint64_t v, std::string_view bytes) {
      if (f == 1 && w == 0) parsed.rejectedSpans = static_cast<int64_t>(v);
      if (f == 2 && w == 2) parsed.errorMessage = std::string(bytes);
    });
  });
  return ok ? parsed : a;
}

} // namespace kuscia_host::plugins::otel
