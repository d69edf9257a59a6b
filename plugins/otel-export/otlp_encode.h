// OTLP trace requests in both encodings the specification defines (ExportTraceServiceRequest as
// binary protobuf, and as OTLP/JSON), and the receiver's answer (ExportTraceServiceResponse's
// partial_success). Hand-written wire encoding of the few messages needed: no protobuf runtime.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "otel_spans.h"

namespace kuscia_host::plugins::otel {

// The resource and instrumentation scope every span of one exporter shares.
struct ResourceInfo {
  std::vector<Attribute> attributes;
  std::string scopeName;
  std::string scopeVersion;
};

std::string encodeProtobuf(const ResourceInfo& resource, const std::vector<SpanData>& spans);
std::string encodeJson(const ResourceInfo& resource, const std::vector<SpanData>& spans);

// What a 2xx answer said: spans the receiver rejected (partial success) and its message. A body
// that is empty, or not a response of the encoding, is full success as far as the client can
// tell (the specification: the client MUST NOT retry a 2xx).
struct ExportAnswer {
  int64_t rejectedSpans = 0;
  std::string errorMessage;
};
ExportAnswer parseAnswer(std::string_view body, bool json);

} // namespace kuscia_host::plugins::otel
