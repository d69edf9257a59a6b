// What the bundled plugins read from outside: times as objects and annotations carry them (RFC
// 3339), each plugin's JSON config through the SDK's config reader, and timeline documents as
// another host or a merge of clusters may give them (the summary and the phases must never throw).
// The first byte picks the parser. A time that parses formats back to a text that parses to the
// same instant. A pod event's fields read off simdjson's DOM (pod_fields.h) read as parseFields'
// nlohmann DOM reads them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <kuscia_model/timeline_summary.h>

#include "fuzz_support.h"
#include "gateway_config.h"
#include "scheduler_config.h"
#include "sim_config.h"
#include "timeline_config.h"
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>
#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/pod_fields.h>

// libFuzzer's entry point: its name is not ours to choose.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace kuscia_host::model;
  using namespace kuscia_host::plugins;
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 7) {
    case 0: {
      auto t = parseTime(in);
      if (!t) return 0;
      for (auto precision :
           {TimePrecision::kSeconds, TimePrecision::kMillis, TimePrecision::kAsGiven}) {
        std::string text = formatTime(*t, precision);
        auto back = parseTime(text);
        if (!back) kh_fuzz::fail("formatted time does not parse: " + text);
        // Formatting truncates toward the past to its precision.
        int64_t unit = precision == TimePrecision::kSeconds  ? 1000000000
                       : precision == TimePrecision::kMillis ? 1000000
                                                             : 1;
        if (*back != *t - ((*t % unit) + unit) % unit)
          kh_fuzz::fail("time does not round-trip: " + std::string(in) + " -> " + text);
      }
      (void)normalizeTime(in);
      break;
    }
    case 1: (void)kuscia_host::plugins::timeline::parseTimelineConfig(in); break;
    case 2: (void)gateway::parseGatewayConfig(in); break;
    case 3: (void)scheduler::parseSchedulerConfig(in); break;
    case 4: (void)sim::parseSimConfig(in); break;
    case 6: {
      const PodFields got = readPodFields(in);
      const nlohmann::json f = parseFields(in, podFieldPointers().size());
      auto same = [](const std::string& a, const std::string& b, const char* what) {
        if (a != b) kh_fuzz::fail(std::string("pod fields: ") + what + " " + a + " against " + b);
      };
      same(got.task, fieldString(f, 0), "task");
      same(got.phase, fieldString(f, 3), "phase");
      same(got.reason, fieldString(f, 6), "reason");
      same(got.message, fieldString(f, 7), "message");
      if (got.containersStart != kuscia_host::model::timeline::containersStartTime(f[5]))
        kh_fuzz::fail("pod fields: containers' start");
      try {
        // A condition whose type is not a string makes nlohmann's value() throw; the reader
        // takes it as no type. Compared only where the DOM reading answers.
        if (got.ready.isTrue != (trueCondition(f[4], "Ready") != nullptr))
          kh_fuzz::fail("pod fields: Ready");
        if (got.scheduled.isTrue != (trueCondition(f[4], "PodScheduled") != nullptr))
          kh_fuzz::fail("pod fields: PodScheduled");
      } catch (const nlohmann::json::exception&) {
      }
      // The shorter projection of the same pod reads the same facts.
      if (f.is_array() && f.size() == podFieldPointers().size()) {
        const PodFields facts =
            readPodFacts(nlohmann::json::array({f[0], f[4], f[5]})
                             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        same(facts.task, got.task, "facts' task");
        if (facts.ready.isTrue != got.ready.isTrue ||
            facts.containersStart != got.containersStart ||
            facts.waitingReasons != got.waitingReasons)
          kh_fuzz::fail("pod facts differ from the pod fields");
      }
      break;
    }
    default: {
      auto doc = nlohmann::json::parse(in, nullptr, false);
      if (doc.is_discarded()) return 0;
      auto summary = kuscia_host::model::timeline::summarize(doc, 1700000000000000000);
      if (!summary.is_object() || !summary.contains("complete"))
        kh_fuzz::fail("a summary without \"complete\"");
      kuscia_host::model::timeline::addPhases(doc, 1700000000000000000);
      break;
    }
    }
  } catch (const kuscia_host::sdk::ConfigError&) {
    // The documented way a config is refused: it names the key.
  }
  return 0;
}
