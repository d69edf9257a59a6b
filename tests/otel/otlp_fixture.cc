// Sends the spans of a known timeline through otel-export's own span model and exporter, for the
// OTLP tests (tests/otel/otlp_e2e.py): the requests it makes are compared with the official SDK's,
// and its behaviour against receivers that fail is observed from the outside.
//
// usage: otlp_fixture <fixture.json> <domain> '<plugin config JSON>' [--repeat N] [--wait-ms N]
//                     [--mode centralized|p2p]
// Prints the exporter's counters as JSON once every span is accounted for (exported, failed or
// dropped) or --wait-ms (default 60000) passed; exit 0, or 2 on a usage or config error.
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <kuscia_host/kube_text.hpp>

#include "otel_config.h"
#include "otel_spans.h"
#include "otlp_exporter.h"

using namespace kuscia_host::plugins::otel;
using nlohmann::json;

namespace {

int run(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: otlp_fixture <fixture.json> <domain> '<config JSON>' [--repeat N] "
                 "[--wait-ms N] [--mode M]\n";
    return 2;
  }
  std::string domain = argv[2];
  int repeat = 1;
  int waitMs = 60000;
  std::string mode = "centralized";
  for (int i = 4; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--repeat")
      repeat = std::stoi(argv[i + 1]);
    else if (flag == "--wait-ms")
      waitMs = std::stoi(argv[i + 1]);
    else if (flag == "--mode")
      mode = argv[i + 1];
    else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  json fixture = json::parse(text.str());
  OtelConfig config;
  try {
    config = parseOtelConfig(argv[3]);
  } catch (const std::exception& e) {
    std::cerr << "config: " << e.what() << "\n";
    return 2;
  }
  const json& t = fixture["task"];
  TaskFacts task;
  task.name = t["name"];
  task.namespaceName = t["namespace"];
  task.uid = t.value("uid", "");
  task.initiator = t["initiator"];
  task.job = t.value("job", "");
  task.parties = t["parties"].get<std::vector<std::string>>();
  int64_t now = *kuscia_host::sdk::parseTime(fixture["now"].get<std::string>());
  Plan plan = planSpans(fixture["documents"][domain], task, domain, now,
                        config.stuckAfterSeconds * int64_t{1000000000}, mode == "p2p");
  OtlpExporter exporter(config, resourceOf(config, domain, mode));
  exporter.start();
  for (int i = 0; i < repeat; ++i)
    exporter.enqueue(plan.spans);
  const uint64_t total = plan.spans.size() * static_cast<uint64_t>(repeat);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(waitMs);
  OtlpExporter::Counters c;
  while (std::chrono::steady_clock::now() < deadline) {
    c = exporter.snapshot();
    if (c.exported + c.failed + c.dropped >= total) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  exporter.stop();
  c = exporter.snapshot();
  std::cout << json{{"spans", total},
                    {"exported", c.exported},
                    {"failed", c.failed},
                    {"dropped", c.dropped},
                    {"requests", c.requests},
                    {"retries", c.retries},
                    {"queueDepth", c.queueDepth},
                    {"lastError", c.lastError},
                    {"lastPartial", c.lastPartial},
                    {"finished", plan.finished}}
                   .dump()
            << std::endl;
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "otlp_fixture: " << e.what() << "\n";
    return 2;
  }
}
