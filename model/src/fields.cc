// parseJson and parseFields (kuscia.h): JSON text (the projected fields of every event a bundled
// plugin handles, task-history's stored documents) read by simdjson and built into the nlohmann
// DOM the plugins use.
//
// nlohmann's own parser reads a character at a time (its lexer building each token by push_back)
// and was about a tenth of L1's instructions. simdjson finds the structure and unescapes strings
// in bulk; what is left is building the DOM, which both need. The DOM is the one nlohmann's parser
// makes: non-negative integers unsigned, objects keyed in order with the last of a repeated key
// kept (one difference: "-0" is an unsigned zero here, a signed one there; equal, printed alike).
// What simdjson refuses (an integer beyond 64 bits, which nlohmann reads as a double; text that
// is not JSON) goes to nlohmann's parser.
#include <simdjson.h>

#include <string>

#include <kuscia_model/kuscia.h>
#include <kuscia_model/status_entries.h>

namespace kuscia_host::model {

namespace {

using nlohmann::json;
namespace dom = simdjson::dom;

json build(dom::element e) {
  switch (e.type()) {
  case dom::element_type::ARRAY: {
    json out = json::array();
    auto& items = out.get_ref<json::array_t&>();
    for (dom::element v : dom::array(e))
      items.push_back(build(v));
    return out;
  }
  case dom::element_type::OBJECT: {
    json out = json::object();
    auto& members = out.get_ref<json::object_t&>();
    for (dom::key_value_pair kv : dom::object(e))
      members.insert_or_assign(std::string(kv.key), build(kv.value));
    return out;
  }
  case dom::element_type::STRING: return std::string(std::string_view(e));
  case dom::element_type::INT64: {
    auto v = int64_t(e);
    return v >= 0 ? json(static_cast<uint64_t>(v)) : json(v);
  }
  case dom::element_type::UINT64: return uint64_t(e);
  case dom::element_type::DOUBLE: return double(e);
  case dom::element_type::BOOL: return bool(e);
  case dom::element_type::NULL_VALUE: return nullptr;
  }
  return nullptr;
}

} // namespace

nlohmann::json parseJson(std::string_view text) {
  // One parser and one padded copy per thread, reused: their buffers grow to the largest text.
  thread_local dom::parser parser;
  thread_local std::string padded;
  padded.assign(text);
  padded.resize(text.size() + simdjson::SIMDJSON_PADDING);
  dom::element root;
  if (parser.parse(padded.data(), text.size(), false).get(root) == simdjson::SUCCESS)
    return build(root);
  return json::parse(text, nullptr, false);
}

nlohmann::json parseFields(std::string_view fieldsJson, std::size_t count) {
  json j = parseJson(fieldsJson);
  if (!j.is_array() || j.size() != count) return json::array_t(count, nullptr);
  return j;
}

EventFields::EventFields(std::string_view fieldsJson, std::size_t count) {
  if (auto spans = arrayElements(fieldsJson); spans && spans->size() == count) {
    spans_ = std::move(*spans);
    values_.resize(count);
  } else {
    whole_ = parseFields(fieldsJson, count);
  }
}

const nlohmann::json& EventFields::value(std::size_t i) {
  static const json kNull;
  if (spans_.empty()) return i < whole_.size() ? whole_[i] : kNull;
  if (i >= spans_.size()) return kNull;
  if (!values_[i]) {
    values_[i] = parseJson(spans_[i]);
    if (values_[i]->is_discarded()) *values_[i] = nullptr; // as parseFields reads bad text
  }
  return *values_[i];
}

std::optional<std::string_view> EventFields::view(std::size_t i, std::string& decoded) const {
  if (spans_.empty()) {
    if (i < whole_.size() && whole_[i].is_string())
      return std::string_view(whole_[i].get_ref<const std::string&>());
    return std::nullopt;
  }
  return i < spans_.size() ? stringView(spans_[i], decoded) : std::nullopt;
}

bool EventFields::isNull(std::size_t i) const {
  if (spans_.empty()) return i >= whole_.size() || whole_[i].is_null();
  return i >= spans_.size() || spans_[i] == "null";
}

std::optional<std::string> EventFields::text(std::size_t i) const {
  std::string decoded;
  auto v = view(i, decoded);
  return v ? std::optional<std::string>(*v) : std::nullopt;
}

} // namespace kuscia_host::model
