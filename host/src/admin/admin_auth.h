// Who may read the admin server, decided per request as Kubernetes' own components do it
// (kube-controller-manager's delegated authentication and authorization, kube-rbac-proxy):
//  - authentication: a client certificate signed by the configured client CA (its CN is the
//    user, each O a group), else a bearer token: from the token file (auth: token; re-read when
//    it changes), or reviewed by the cluster with a TokenReview (auth: kubernetes);
//  - authorization: auth: token allows every authenticated identity; auth: kubernetes asks the
//    cluster with a SubjectAccessReview for the non-resource URL (the path) and verb get;
//  - review results are cached (allowed 10 s, denied 2 s, as the delegating authenticator and
//    authorizer do by default), and review calls are rate-limited (beyond it: 429) and counted;
//  - a refusal answers 401 or 403 with a JSON Status as the API server does. Tokens never reach
//    a log line or a metric: the caches key them by a hash.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <spdlog/logger.h>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "httpd/server.h"
#include "metrics/registry.h"
#include "runtime/clock.h"

namespace kuscia_host {

// The identity a request was authenticated as.
struct AdminIdentity {
  std::string user;
  std::vector<std::string> groups;
  std::string via; // "certificate", "token" or "tokenreview"
};

// The token of an Authorization header "Bearer <token>" (scheme case-insensitive); nullopt for
// anything else.
std::optional<std::string> bearerToken(std::string_view authorization);

// A token file: one "<token> <name>" per line (the name is what the logs say), blank lines and
// '#' comments ignored. The error names the line, never a token. Returns token -> name.
Result<std::map<std::string, std::string>> parseTokenFile(std::string_view text);

// A refusal as the API server words it: {"kind":"Status",...,"reason":"Unauthorized"|...}.
httpd::Response statusResponse(int code, const std::string& reason, const std::string& message);

struct AdminAuthOptions {
  enum class Mode { kNone, kToken, kKubernetes };
  Mode mode = Mode::kNone;
  std::string tokenFile;           // kToken
  bool clientCertificates = false; // a verified client certificate authenticates
  // kKubernetes: POSTs `body` (a TokenReview or SubjectAccessReview) to `path` of the cluster;
  // `done` gets the HTTP code (0: no answer) and the body.
  using ReviewDone = std::function<void(int code, std::string body)>;
  std::function<void(const std::string& path, std::string body, ReviewDone done)> review;
  double reviewQps = 20; // review calls per second, beyond `reviewBurst`: 429
  int reviewBurst = 50;
  std::chrono::seconds allowedTtl{10};
  std::chrono::seconds deniedTtl{2};
};

class AdminAuth {
public:
  // A decision: the identity to serve the request as, or the answer that refuses it.
  using Decision =
      std::function<void(std::optional<AdminIdentity>, std::optional<httpd::Response>)>;

  AdminAuth(AdminAuthOptions options, const Clock& clock, MetricsRegistry& metrics,
            std::shared_ptr<spdlog::logger> logger);

  bool enabled() const { return options_.mode != AdminAuthOptions::Mode::kNone; }
  // Authenticates and authorizes a GET of req.path; `done` runs once, on any thread.
  void check(const httpd::Request& req, Decision done);
  // Authentication alone (for /readyz?verbose and the like, authorized as their path).
  void authenticate(const httpd::Request& req,
                    const std::function<void(std::optional<AdminIdentity>)>& done);

private:
  struct Cached {
    bool ok = false;
    AdminIdentity identity;
    int64_t expires = 0;
  };
  // Authentication; a refusal other than 401 (429, 503) comes as the answer.
  void authenticateThen(const httpd::Request& req, const Decision& done);
  void authorize(const AdminIdentity& who, const std::string& path, const Decision& done);
  void tokenFromFile(const std::string& token, const Decision& done);
  void tokenReview(const std::string& token, const Decision& done);
  // One kind of review the cluster is asked: its metric label, its name in logs, its path, and
  // what a refusal says when over the rate (429) or without a usable answer (503).
  struct Review {
    const char* kind;
    const char* name;
    const char* path;
    const char* tooMany;
    const char* unavailable;
  };
  static const Review kTokenReview, kAccessReview;
  // Asks the cluster `review` (rate-limited, counted): `answered` gets the answer's status, or
  // `done` the refusal (429 over the rate, 503 without a usable answer).
  void ask(const Review& review, const nlohmann::json& body, const Decision& done,
           std::function<void(const nlohmann::json& status)> answered);
  // A review call may be made now (token bucket); counts a throttled one.
  bool takeReview(const char* kind);
  std::optional<Cached> cached(std::map<std::string, Cached>& cache, const std::string& key);
  void remember(std::map<std::string, Cached>& cache, const std::string& key, Cached entry);
  // Re-reads the token file when its size or modification time changed.
  void reloadTokens();

  AdminAuthOptions options_;
  const Clock& clock_;
  std::shared_ptr<spdlog::logger> logger_;
  MetricFamily* requests_;
  MetricFamily* reviews_;
  std::mutex mu_;
  std::map<std::string, std::string> tokens_; // token -> name
  std::string tokenFileStamp_;
  std::map<std::string, Cached> authn_; // sha256(token) -> result
  std::map<std::string, Cached> authz_; // user, groups, path -> result
  double bucket_ = 0;
  int64_t bucketAt_ = 0;
};

} // namespace kuscia_host
