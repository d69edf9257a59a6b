// The embedded API server's request semantics, independent of HTTP: routing of Kubernetes
// paths, discovery, and the verbs (get, list, create, update, patch, delete, watch) with the
// behaviour of a real API server (status subresource, resourceVersion preconditions, CRD pruning
// and validation, Status errors). The HTTP layer (server.h) only moves bytes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apiserver/resources.h"
#include "apiserver/store.h"
#include "runtime/clock.h"

namespace kuscia_host::apiserver {

struct ApiRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> query;
  std::string contentType;
  std::string accept;
  std::string body;
};

struct ApiResponse {
  int status = 200;
  std::string contentType = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Set for a watch: the session streams this watcher's events.
  std::shared_ptr<Watcher> watcher;
  int timeoutSeconds = 0;
  bool bookmarks = false;
};

struct ApiOptions {
  std::string gitVersion = "v1.30.0-kuscia-host";
  std::size_t watchQueueCapacity = 10000; // events buffered per watcher before it is closed
  int defaultWatchTimeoutSeconds = 1800;
};

class ApiHandler {
public:
  ApiHandler(const ResourceRegistry& registry, Store& store, const Clock& clock,
             ApiOptions options);

  // `wake` is installed in a watcher when the request is a watch.
  ApiResponse handle(const ApiRequest& req, const std::function<void()>& wake);

  Store& store() { return store_; }
  const ResourceRegistry& registry() const { return registry_; }

private:
  struct Target;
  ApiResponse discovery(const ApiRequest& req);
  ApiResponse resourceRequest(const ApiRequest& req, const Target& t,
                              const std::function<void()>& wake);
  ApiResponse list(const ApiRequest& req, const Target& t);
  ApiResponse watch(const ApiRequest& req, const Target& t, const std::function<void()>& wake);
  ApiResponse create(const ApiRequest& req, const Target& t, nlohmann::json body);
  ApiResponse update(const ApiRequest& req, const Target& t);
  ApiResponse patch(const ApiRequest& req, const Target& t);
  ApiResponse remove(const ApiRequest& req, const Target& t);

  // Applies what every write does to `next` (the object to store, given the current one):
  // immutable metadata, status subresource rules, generation, CRD pruning and validation.
  ApiResult<nlohmann::json> prepareUpdate(const Target& t, const nlohmann::json& current,
                                          nlohmann::json next, const std::string& fieldValidation,
                                          std::vector<std::string>& warnings);
  ApiResult<nlohmann::json> prepareCreate(const Target& t, nlohmann::json obj,
                                          const std::string& fieldValidation,
                                          std::vector<std::string>& warnings);
  std::optional<ApiError> pruneAndValidate(const Target& t, nlohmann::json& obj,
                                           const std::string& fieldValidation,
                                           std::vector<std::string>& warnings);
  std::string now() const;

  const ResourceRegistry& registry_;
  Store& store_;
  const Clock& clock_;
  ApiOptions options_;
};

// Go's strconv.ParseBool: 1 t T TRUE true True / 0 f F FALSE false False.
std::optional<bool> parseGoBool(const std::string& s);
// RFC 3339, UTC, whole seconds (metav1.Time).
std::string formatTime(int64_t unixNanos);

} // namespace kuscia_host::apiserver
