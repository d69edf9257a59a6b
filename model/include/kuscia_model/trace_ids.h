// The ids of a task's trace, derived, never random, so that every party's host computes the same
// trace id for a task, a restarted host re-sends the same span ids, and a histogram's exemplar
// (task-timeline) names the trace otel-export sends:
//   trace id = the first 16 bytes of SHA-256("kuscia-host/trace/v1\n" + task name)
//   span id  = the first 8 bytes of SHA-256("kuscia-host/span/v1\n" + hex(trace id) + "\n" +
//              party + "\n" + entry + "\n" + incarnation + "\n" + kind)
// An all-zero id (never seen) would be made 1 in its last byte. otel-export's otel_spans.h says
// which party, entry, incarnation and kind each span takes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kuscia_host::model {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

TraceId traceIdOf(std::string_view task);
SpanId spanIdOf(const TraceId& trace, std::string_view party, std::string_view entry,
                std::string_view incarnation, std::string_view kind);

// Lowercase hexadecimal, two digits a byte (W3C Trace Context, OTLP/JSON, exemplars).
std::string hex(const uint8_t* data, std::size_t n);
template <std::size_t N> std::string hex(const std::array<uint8_t, N>& id) {
  return hex(id.data(), N);
}

} // namespace kuscia_host::model
