// Label and field selectors from a request's query. A parsed label selector must give the same
// answer through both ways of reading labels (a JSON object and a lookup function) on a few label
// sets derived from the input itself.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "apimachinery/selector.h"
#include "fuzz_support.h"

// libFuzzer's entry point: its name is not ours to choose.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using nlohmann::json;
  using namespace kuscia_host::apimachinery;
  std::string text(reinterpret_cast<const char*>(data), size);
  if (auto fs = FieldSelector::parse(text)) {
    json pod = {{"metadata", {{"name", "p"}, {"namespace", "alice"}}}};
    (void)fs->matches(pod);
  }
  auto ls = LabelSelector::parse(text);
  if (!ls) return 0;
  // Label sets: none, fixed Kuscia labels, and the selector's own "k=v" pieces as labels.
  json sets = json::array(
      {json(nullptr), json::object(), {{"kuscia.secretflow/task-id", "t"}, {"app", "secretflow"}}});
  json own = json::object();
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find(',', start);
    std::string piece = text.substr(start, end == std::string::npos ? end : end - start);
    auto eq = piece.find('=');
    if (eq != std::string::npos) {
      std::string k = piece.substr(0, eq), v = piece.substr(eq + 1);
      own[k] = v;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  sets.push_back(own);
  for (const auto& labels : sets) {
    bool viaJson = ls->matches(labels);
    bool viaLookup = ls->matches([&](std::string_view key) -> std::optional<std::string_view> {
      if (!labels.is_object()) return std::nullopt;
      auto it = labels.find(std::string(key));
      if (it == labels.end() || !it->is_string()) return std::nullopt;
      return std::string_view(it->get_ref<const std::string&>());
    });
    if (viaJson != viaLookup) kh_fuzz::fail("the two label readings disagree on '" + text + "'");
  }
  return 0;
}
