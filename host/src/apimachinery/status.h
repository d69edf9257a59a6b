// metav1.Status: the error body every Kubernetes API server answers with, built by the embedded
// API server and read by the client.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace kuscia_host::apimachinery {

// A failure as the API answers it: HTTP code, reason (NotFound, Conflict, Expired, ...), a
// message for people, and details {name, group, kind, causes}.
struct Status {
  int code = 500;
  std::string reason;
  std::string message;
  nlohmann::json details; // null or an object
};

// The Status object for `s` (kind Status, status Failure).
nlohmann::json statusJson(const Status& s);
// A Status with status Success (what DELETE and the fault endpoints answer).
nlohmann::json successJson(const std::string& message);

// The message of a Status body, when `body` is one.
std::optional<std::string> statusMessage(const std::string& body);

} // namespace kuscia_host::apimachinery
