// Decoding on the watch hot path: simdjson On-Demand walks each watch event or LIST page once
// and extracts only the JSON pointers the subscribers declared (plus the metadata every cache
// entry needs). No DOM is built; values come out as their raw JSON text.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace kuscia_host::kube {

// The union of the JSON pointers (RFC 6901) the subscribers of one informer declared, compiled
// into a trie. Slot i is the i-th distinct pointer added.
class FieldPaths {
public:
  FieldPaths();
  // Adds a pointer ("/status/phase"; "~1" is "/", "~0" is "~"), returning its slot; the same
  // pointer always gets the same slot. The root pointer "" is refused (ask for the raw object).
  Result<std::size_t> add(std::string_view pointer);
  std::size_t size() const { return pointers_.size(); }
  const std::string& pointer(std::size_t slot) const { return pointers_[slot]; }

private:
  friend class Decoder;
  struct Node {
    std::vector<std::pair<std::string, int>> children;
    int slot = -1;         // a user slot captured here
    int builtin = -1;      // a built-in field (see Decoder)
    bool deferred = false; // a slot with descendants: they are resolved from its text
  };
  int child(int node, std::string_view key, bool create);
  std::vector<Node> nodes_;
  std::vector<std::string> pointers_;
  std::vector<std::vector<std::string>> tokens_; // unescaped reference tokens per slot
};

// One decoded object: metadata, labels (when kept) and the raw JSON of each declared field
// ("" when the pointer does not resolve). Reused between objects to avoid allocations.
struct Projected {
  std::string name;
  std::string namespaceName;
  std::string uid;
  std::string resourceVersion;
  bool hasLabels = false;
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::string> values;
  std::string raw; // the whole object, when asked for
  // For a Status (watch ERROR events, failed pages): code, reason and message.
  int64_t code = 0;
  std::string reason;
  std::string message;
  void clear();
  // "<namespace>/<name>", or "<name>" when cluster-scoped.
  std::string key() const;
};

// The type of one event on a watch stream, as the API server sends it (informer.h's ChangeType is
// what the informer then delivers to subscribers).
enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError, kUnknown };

struct ListMeta {
  std::string resourceVersion;
  std::string continueToken;
  std::string kind;
};

class Decoder {
public:
  struct Options {
    bool keepLabels = false;
    bool keepRaw = false;
  };
  Decoder(const FieldPaths& paths, Options options);
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Decodes one watch event. `capacity` is how many bytes are readable from frame.data() (at
  // least frame.size() + 64 avoids a copy). Errors say what is wrong with the event.
  Result<WatchEventType> decodeEvent(std::string_view frame, std::size_t capacity, Projected& out);

  // Decodes a LIST page item by item. onItem runs for every well-formed item; onBadItem with a
  // reason for every item skipped. A malformed page is an error.
  Result<ListMeta> decodeList(std::string_view body, const std::function<void(Projected&)>& onItem,
                              const std::function<void(const std::string&)>& onBadItem);
  // Bytes the decoder holds for parsing (the parser's buffers and its padded copy): sized to the
  // largest text parsed since the last page of a list, which lets go of what a page needed.
  std::size_t bufferBytes() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace kuscia_host::kube
