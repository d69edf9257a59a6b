// The embedded API server's request semantics, independent of sockets: routing of Kubernetes
// paths, discovery, the verbs (get, list, create, update, patch, delete, watch) with the
// behaviour of a real API server (status subresource, resourceVersion preconditions, CRD pruning
// and validation, Status errors), the watch lifecycle (apiserver/watch.h) and the state every
// cluster starts with. The HTTP layer (server.h) only moves bytes, so tests drive this directly.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apiserver/resources.h"
#include "apiserver/review.h"
#include "apiserver/store.h"
#include "apiserver/watch.h"
#include "httpd/server.h"
#include "runtime/clock.h"

namespace kuscia_host::apiserver {

using ApiRequest = httpd::Request;

struct ApiResponse {
  int status = 200;
  std::string contentType = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Set for a watch: the stream to send (status 200, chunked).
  std::shared_ptr<WatchStream> watch;
  // Set with a 504 "too large resourceVersion": the version the request waits for. The server may
  // handle the request again until the store reaches it or ApiOptions::tooLargeWait passes.
  uint64_t waitsForRv = 0;
};

// One resource request, as a Kubernetes audit event names it: who asked for what, and the answer.
struct AuditRecord {
  std::string verb; // get, list, watch, create, update, patch, delete
  std::string group, resource, subresource, namespaceName, name;
  int code = 0;
  std::string userAgent;
  // Who asked: the user of a bearer token of ApiOptions::tokens, else "system:anonymous".
  std::string user;
};

struct ApiOptions {
  std::string gitVersion = "v1.30.0-kuscia-host";
  std::size_t watchQueueCapacity = 10000; // events buffered per watcher before it is closed
  // Called for every resource request once answered (discovery is not audited); any thread.
  std::function<void(const AuditRecord&)> audit;
  int defaultWatchTimeoutSeconds = 1800;
  std::chrono::milliseconds bookmarkInterval{5000};
  // How long a request for a resourceVersion newer than the store waits before the 504 (upstream
  // waits up to 3 s for its watch cache).
  std::chrono::milliseconds tooLargeWait{3000};
  // Identities for TokenReview (and bearer tokens), from --token-auth-file.
  std::map<std::string, Identity> tokens;
};

class ApiHandler {
public:
  ApiHandler(const ResourceRegistry& registry, Store& store, const Clock& clock,
             ApiOptions options);

  // Creates what every cluster starts with: the namespaces `default` and `kube-system`.
  void bootstrap();
  ApiResponse handle(const ApiRequest& req);

  const ApiOptions& options() const { return options_; }
  Store& store() { return store_; }
  const ResourceRegistry& registry() const { return registry_; }

private:
  struct Target;
  ApiResponse resourceRequest(const ApiRequest& req, const Target& t);
  ApiResponse get(const ApiRequest& req, const Target& t);
  ApiResponse list(const ApiRequest& req, const Target& t);
  ApiResponse watch(const ApiRequest& req, const Target& t);
  ApiResponse create(const ApiRequest& req, const Target& t, nlohmann::json body);
  ApiResponse update(const ApiRequest& req, const Target& t);
  ApiResponse patch(const ApiRequest& req, const Target& t);
  ApiResponse remove(const ApiRequest& req, const Target& t);
  // TokenReview and SubjectAccessReview: answered, never stored.
  ApiResponse review(const ApiRequest& req, const Target& t);
  // The 504 for a resourceVersion query parameter newer than the store, if it is one.
  std::optional<ApiResponse> tooLarge(const ApiRequest& req);

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

// Serialises `body` as a response.
ApiResponse jsonResponse(int status, const nlohmann::json& body);
// The Status response for an error.
ApiResponse errorResponse(const ApiError& e);

// Discovery and OpenAPI documents (apiserver/discovery.cc): the answer for a discovery path, or
// nullopt when `path` is not one.
// Whether the request asks for the OpenAPI v2 document as protobuf (kubectl, validating a List):
// discovery() answers it so, whatever else the server answers only as JSON.
bool acceptsOpenapiV2Protobuf(const ApiRequest& req);
std::optional<ApiResponse> discovery(const ResourceRegistry& registry, const ApiOptions& options,
                                     const ApiRequest& req);

} // namespace kuscia_host::apiserver
