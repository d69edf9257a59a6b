// What otel-export reads from outside: the OTLP receiver's answer (binary protobuf or JSON), a
// Retry-After header, the endpoint URL, and timeline documents as the cluster's statuses make them
// (the spans of any document are built and encoded in both encodings without throwing, the JSON
// parses). The first byte picks the parser.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "otel_config.h"
#include "otel_spans.h"
#include "otlp_encode.h"
#include "otlp_exporter.h"

// libFuzzer's entry point: its name is not ours to choose.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace kuscia_host::plugins::otel;
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
  case 0:
  case 1: {
    ExportAnswer a = parseAnswer(in, data[0] % 5 == 1);
    (void)a;
    break;
  }
  case 2: {
    auto d = retryAfterDelay(in, std::chrono::system_clock::from_time_t(1700000000));
    if (d && d->count() < 0) kh_fuzz::fail("a negative Retry-After wait");
    break;
  }
  case 3: {
    std::string error;
    Endpoint e = parseEndpoint(std::string(in), error);
    if (e.host.empty() == error.empty()) kh_fuzz::fail("an endpoint with neither host nor error");
    if (!e.host.empty() && (e.port == 0 || e.target.empty() || e.target[0] != '/'))
      kh_fuzz::fail("an endpoint without a port or an absolute target");
    break;
  }
  default: {
    auto doc = nlohmann::json::parse(in, nullptr, false);
    if (doc.is_discarded()) return 0;
    TaskFacts task;
    task.name = "t1";
    task.namespaceName = "cross-domain";
    task.initiator = "alice";
    task.parties = {"alice", "bob"};
    task.partiesRunning = true;
    for (const char* domain : {"alice", "bob"}) {
      Plan plan = planSpans(doc, task, domain, 1700000000000000000, 30000000000, true);
      ResourceInfo resource{{{"service.name", std::string("kuscia-host")}}, "s", "1"};
      std::string proto = encodeProtobuf(resource, plan.spans);
      auto parsed = nlohmann::json::parse(encodeJson(resource, plan.spans), nullptr, false);
      if (parsed.is_discarded()) kh_fuzz::fail("the JSON encoding does not parse");
      if (!plan.spans.empty() && proto.empty()) kh_fuzz::fail("spans encoded as nothing");
      for (const auto& s : plan.spans)
        if (s.endNanos < s.startNanos && s.name == "kuscia.task.startup")
          kh_fuzz::fail("a root that ends before it starts");
    }
    break;
  }
  }
  return 0;
}
