#include <kuscia_model/pod_fields.h>

#include <simdjson.h>

#include <kuscia_host/kube_text.hpp>

#include <algorithm>

#include <kuscia_model/kuscia.h>

namespace kuscia_host::model {

namespace {

namespace dom = simdjson::dom;

// The fields a projection may hold; kPointers below names each one's JSON pointer.
enum Field {
  kTask,
  kCreate,
  kStart,
  kPhase,
  kConditions,
  kContainers,
  kReason,
  kMessage,
  kFieldCount
};

// The member `key` of an object, the last of repeated ones (as the nlohmann DOM keeps it).
std::optional<dom::element> member(dom::element object, std::string_view key) {
  dom::object o;
  if (object.get(o) != simdjson::SUCCESS) return std::nullopt;
  std::optional<dom::element> found;
  for (dom::key_value_pair kv : o)
    if (kv.key == key) found = kv.value;
  return found;
}

// A string member's value; "" when absent or not a string.
std::string stringOf(std::optional<dom::element> e) {
  std::string_view s;
  if (e && e->get(s) == simdjson::SUCCESS) return std::string(s);
  return {};
}

TimeText timeOf(std::optional<dom::element> e) {
  TimeText t;
  if (!e || e->is_null()) return t;
  std::string_view s;
  if (e->get(s) == simdjson::SUCCESS) {
    t.kind = TimeText::kString;
    t.text = s;
  } else {
    t.kind = TimeText::kOther;
    t.text = simdjson::minify(*e);
  }
  return t;
}

// The first Ready and the first PodScheduled condition, in one walk of each condition's members
// (a member repeated in a condition reads as its last, as member() reads it).
void readConditions(dom::element conditions, PodFields& out) {
  dom::array a;
  if (conditions.get(a) != simdjson::SUCCESS) return;
  bool ready = false, scheduled = false;
  for (dom::element c : a) {
    dom::object o;
    if (c.get(o) != simdjson::SUCCESS) continue;
    std::optional<dom::element> type, status, reason, message, transition;
    for (dom::key_value_pair kv : o) {
      if (kv.key == "type")
        type = kv.value;
      else if (kv.key == "status")
        status = kv.value;
      else if (kv.key == "reason")
        reason = kv.value;
      else if (kv.key == "message")
        message = kv.value;
      else if (kv.key == "lastTransitionTime")
        transition = kv.value;
    }
    std::string_view t;
    if (!type || type->get(t) != simdjson::SUCCESS) continue;
    PodCondition* into = nullptr;
    if (t == "Ready" && !ready) {
      ready = true;
      into = &out.ready;
    } else if (t == "PodScheduled" && !scheduled) {
      scheduled = true;
      into = &out.scheduled;
    } else {
      continue;
    }
    const std::string statusText = stringOf(status);
    into->isTrue = statusText == "True";
    into->isFalse = statusText == "False";
    std::string_view r;
    if (reason && reason->get(r) == simdjson::SUCCESS) into->reason = std::string(r);
    into->message = stringOf(message);
    into->lastTransitionTime = timeOf(transition);
    if (ready && scheduled) return;
  }
}

// state.<which> of a container status, when it is an object.
std::optional<dom::element> stateOf(dom::element container, std::string_view which) {
  auto state = member(container, "state");
  if (!state || !state->is_object()) return std::nullopt;
  auto s = member(*state, which);
  if (!s || !s->is_object()) return std::nullopt;
  return s;
}

void readContainers(dom::element containers, PodFields& out) {
  dom::array a;
  if (containers.get(a) != simdjson::SUCCESS) return;
  // Every container running: the latest start.
  std::optional<int64_t> latest;
  bool all = a.size() > 0;
  for (dom::element c : a) {
    auto running = stateOf(c, "running");
    std::string_view started;
    auto at = running ? member(*running, "startedAt") : std::nullopt;
    if (!at || at->get(started) != simdjson::SUCCESS) {
      all = false;
      break;
    }
    auto t = sdk::parseTime(started);
    if (!t) {
      all = false;
      break;
    }
    latest = latest ? std::max(*latest, *t) : *t;
  }
  if (all) out.containersStart = latest;
  // The first waiting reason; and every one.
  bool first = true;
  for (dom::element c : a) {
    auto waiting = stateOf(c, "waiting");
    if (!waiting) continue;
    std::string reason = stringOf(member(*waiting, "reason"));
    std::string message = stringOf(member(*waiting, "message"));
    if (first) {
      out.containerWaiting = true;
      out.waitingReason = reason;
      out.waitingMessage = message;
      first = reason.empty();
    }
    if (!reason.empty()) out.waitingReasons.emplace_back(std::move(reason), std::move(message));
  }
}

// The fields of a projection, in its order.
constexpr Field kTimelineLayout[] = {kTask,       kCreate,     kStart,  kPhase,
                                     kConditions, kContainers, kReason, kMessage};
constexpr Field kFactsLayout[] = {kTask, kConditions, kContainers};

// Each field's JSON pointer, by Field.
constexpr const char* kPointers[kFieldCount] = {
    kTaskIdPointer,       "/metadata/creationTimestamp", "/status/startTime", "/status/phase",
    "/status/conditions", "/status/containerStatuses",   "/status/reason",    "/status/message"};

// The pointers a projection of `layout` asks the host for, in its order.
template <std::size_t N> std::vector<std::string> pointersOf(const Field (&layout)[N]) {
  std::vector<std::string> out;
  out.reserve(N);
  for (Field f : layout)
    out.emplace_back(kPointers[f]);
  return out;
}

void read(dom::array fields, PodFields& out, const Field* layout) {
  std::size_t i = 0;
  for (dom::element f : fields) {
    switch (layout[i++]) {
    case kTask: out.task = stringOf(f); break;
    case kCreate: out.create = timeOf(f); break;
    case kStart: out.start = timeOf(f); break;
    case kPhase: out.phase = stringOf(f); break;
    case kConditions: readConditions(f, out); break;
    case kContainers: readContainers(f, out); break;
    case kReason: out.reason = stringOf(f); break;
    case kMessage: out.message = stringOf(f); break;
    default: break;
    }
  }
}

} // namespace

std::vector<std::string> podFieldPointers() {
  return pointersOf(kTimelineLayout);
}

namespace {

// The fields of a pod event projected as `layout` says.
template <std::size_t N> PodFields readWith(std::string_view fieldsJson, const Field (&layout)[N]) {
  // One parser and one padded copy per thread, reused: their buffers grow to the largest text.
  thread_local dom::parser parser;
  thread_local std::string padded;
  PodFields out;
  auto readText = [&out, &layout](std::string_view text) {
    padded.assign(text);
    padded.resize(text.size() + simdjson::SIMDJSON_PADDING);
    dom::element root;
    if (parser.parse(padded.data(), text.size(), false).get(root) != simdjson::SUCCESS)
      return false;
    dom::array a;
    if (root.get(a) == simdjson::SUCCESS && a.size() == N) read(a, out, layout);
    return true;
  };
  if (readText(fieldsJson)) return out;
  // What simdjson refuses but nlohmann reads (an integer beyond 64 bits, read as a double): its
  // DOM written back as text simdjson reads. Text that is not JSON has no field.
  nlohmann::json whole = parseJson(fieldsJson);
  if (whole.is_array())
    readText(whole.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return out;
}

} // namespace

PodFields readPodFields(std::string_view fieldsJson) {
  return readWith(fieldsJson, kTimelineLayout);
}

std::vector<std::string> podFactPointers() {
  return pointersOf(kFactsLayout);
}

PodFields readPodFacts(std::string_view fieldsJson) {
  return readWith(fieldsJson, kFactsLayout);
}

} // namespace kuscia_host::model
