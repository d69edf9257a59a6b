#include "admin/admin_auth.h"

#include "common/text_lines.h"

#include <openssl/sha.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kuscia_host {

using nlohmann::json;

namespace {

// The cache key of a token: its SHA-256, so that no token is kept in the clear.
std::string hashOf(const std::string& token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : digest) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string stampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ino);
}

} // namespace

const AdminAuth::Review AdminAuth::kTokenReview = {
    "tokenreview", "TokenReview", "/apis/authentication.k8s.io/v1/tokenreviews",
    "too many credentials to review: retry later", "the credentials cannot be checked now"};
const AdminAuth::Review AdminAuth::kAccessReview = {
    "subjectaccessreview", "SubjectAccessReview",
    "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    "too many requests to authorize: retry later", "the request cannot be authorized now"};

std::optional<std::string> bearerToken(std::string_view authorization) {
  std::string_view s = trimSpace(authorization);
  constexpr std::string_view kScheme = "bearer";
  if (s.size() <= kScheme.size() ||
      std::isspace(static_cast<unsigned char>(s[kScheme.size()])) == 0)
    return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != kScheme[i]) return std::nullopt;
  std::string_view token = trimSpace(s.substr(kScheme.size()));
  if (token.empty()) return std::nullopt;
  for (char c : token)
    if (std::isspace(static_cast<unsigned char>(c)) != 0 || c < 0x21 || c > 0x7e)
      return std::nullopt;
  return std::string(token);
}

Result<std::map<std::string, std::string>> parseTokenFile(std::string_view text) {
  std::map<std::string, std::string> tokens;
  std::map<std::string, int> lineOf;
  auto read = forEachLine(text, [&](int n, std::string_view line) -> Result<void> {
    std::size_t space = 0;
    while (space < line.size() && std::isspace(static_cast<unsigned char>(line[space])) == 0)
      ++space;
    std::string token(line.substr(0, space));
    std::string name(trimSpace(line.substr(space)));
    std::string at = "line " + std::to_string(n) + ": ";
    if (name.empty()) return makeError(at + "expected '<token> <name>' (a name for the logs)");
    for (char c : token)
      if (c < 0x21 || c > 0x7e)
        return makeError(at + "the token has a character that is not printable ASCII");
    if (auto [it, inserted] = lineOf.emplace(token, n); !inserted)
      return makeError(at + "the same token as line " + std::to_string(it->second));
    tokens[token] = name;
    return {};
  });
  if (!read) return makeError(read.error());
  return tokens;
}

httpd::Response statusResponse(int code, const std::string& reason, const std::string& message) {
  httpd::Response r;
  r.status = code;
  r.contentType = "application/json";
  r.body = json{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
                {"status", "Failure"}, {"message", message}, {"reason", reason},
                {"code", code}}
               .dump();
  return r;
}

AdminAuth::AdminAuth(AdminAuthOptions options, const Clock& clock, MetricsRegistry& metrics,
                     std::shared_ptr<spdlog::logger> logger)
    : options_(std::move(options)), clock_(clock), logger_(std::move(logger)),
      requests_(metrics.hostFamily(MetricKind::kCounter, "kuscia_host_admin_refused_total",
                                   "Admin requests refused, by HTTP code (401, 403, 429, 503)",
                                   {"code"})),
      reviews_(metrics.hostFamily(
          MetricKind::kCounter, "kuscia_host_admin_auth_reviews_total",
          "TokenReviews and SubjectAccessReviews asked of the cluster, by result (allowed, "
          "denied, error; throttled: not asked, over the review rate)",
          {"review", "result"})) {
  bucket_ = options_.reviewBurst;
  bucketAt_ = clock_.monotonicNanos();
  if (options_.mode == AdminAuthOptions::Mode::kToken) reloadTokens();
}

void AdminAuth::check(const httpd::Request& req, Decision done) {
  std::string path = req.path;
  auto refuse = [this](Decision& d, httpd::Response r) {
    requests_->series({std::to_string(r.status)})->add(1);
    d(std::nullopt, std::move(r));
  };
  authenticateThen(req, [this, path, done, refuse](std::optional<AdminIdentity> who,
                                                   std::optional<httpd::Response> refusal) mutable {
    if (!who) {
      if (!refusal) refusal = statusResponse(401, "Unauthorized", "Unauthorized");
      return refuse(done, std::move(*refusal));
    }
    authorize(
        *who, path,
        [done, refuse](std::optional<AdminIdentity> ok, std::optional<httpd::Response> no) mutable {
          if (ok) return done(std::move(ok), std::nullopt);
          refuse(done, std::move(*no));
        });
  });
}

void AdminAuth::authenticate(const httpd::Request& req,
                             const std::function<void(std::optional<AdminIdentity>)>& done) {
  authenticateThen(
      req, [done](std::optional<AdminIdentity> who,
                  const std::optional<httpd::Response>& /*refusal*/) { done(std::move(who)); });
}

void AdminAuth::authenticateThen(const httpd::Request& req, const Decision& done) {
  if (options_.clientCertificates && req.clientCertVerified && !req.clientCertUser.empty()) {
    AdminIdentity who{req.clientCertUser, req.clientCertGroups, "certificate"};
    who.groups.emplace_back("system:authenticated");
    return done(std::move(who), std::nullopt);
  }
  auto token = bearerToken(req.authorization);
  if (!token) return done(std::nullopt, std::nullopt);
  if (options_.mode == AdminAuthOptions::Mode::kToken) return tokenFromFile(*token, done);
  if (options_.mode == AdminAuthOptions::Mode::kKubernetes) return tokenReview(*token, done);
  done(std::nullopt, std::nullopt);
}

void AdminAuth::reloadTokens() {
  std::string stamp = stampOf(options_.tokenFile);
  if (stamp == tokenFileStamp_ && !stamp.empty()) return;
  tokenFileStamp_ = stamp;
  std::ifstream in(options_.tokenFile, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = in ? parseTokenFile(text.str())
                   : Result<std::map<std::string, std::string>>(makeError("cannot read it"));
  if (!parsed) {
    // Keep the tokens read before: a file being rewritten must not lock everyone out.
    logger_->warn("admin.tokenFile {}: {}; the tokens read before stay", options_.tokenFile,
                  parsed.error());
    return;
  }
  tokens_ = std::move(*parsed);
  logger_->info("admin.tokenFile {}: {} token(s)", options_.tokenFile, tokens_.size());
}

void AdminAuth::tokenFromFile(const std::string& token, const Decision& done) {
  std::optional<AdminIdentity> who;
  {
    std::lock_guard lock(mu_);
    reloadTokens();
    if (auto it = tokens_.find(token); it != tokens_.end())
      who = AdminIdentity{it->second, {"system:authenticated"}, "token"};
  }
  done(std::move(who), std::nullopt);
}

bool AdminAuth::takeReview(const char* kind) {
  std::lock_guard lock(mu_);
  int64_t now = clock_.monotonicNanos();
  bucket_ = std::min<double>(options_.reviewBurst, bucket_ + static_cast<double>(now - bucketAt_) /
                                                                 1e9 * options_.reviewQps);
  bucketAt_ = now;
  if (bucket_ < 1) {
    reviews_->series({kind, "throttled"})->add(1);
    return false;
  }
  bucket_ -= 1;
  return true;
}

std::optional<AdminAuth::Cached> AdminAuth::cached(std::map<std::string, Cached>& cache,
                                                   const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = cache.find(key);
  if (it == cache.end()) return std::nullopt;
  if (it->second.expires < clock_.monotonicNanos()) {
    cache.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void AdminAuth::remember(std::map<std::string, Cached>& cache, const std::string& key,
                         Cached entry) {
  auto ttl = entry.ok ? options_.allowedTtl : options_.deniedTtl;
  entry.expires =
      clock_.monotonicNanos() + std::chrono::duration_cast<std::chrono::nanoseconds>(ttl).count();
  std::lock_guard lock(mu_);
  // Bounded: expired entries go first, then the cache starts over (an attacker's random tokens
  // cannot grow it without limit).
  if (cache.size() >= 10000) {
    int64_t now = clock_.monotonicNanos();
    for (auto it = cache.begin(); it != cache.end();)
      it = it->second.expires < now ? cache.erase(it) : std::next(it);
    if (cache.size() >= 10000) cache.clear();
  }
  cache[key] = std::move(entry);
}

void AdminAuth::ask(const Review& review, const json& body, const Decision& done,
                    std::function<void(const json& status)> answered) {
  if (!takeReview(review.kind))
    return done(std::nullopt, statusResponse(429, "TooManyRequests", review.tooMany));
  options_.review(
      review.path, body.dump(),
      [this, &review, done, answered = std::move(answered)](int code, const std::string& answer) {
        json r = json::parse(answer, nullptr, false);
        if ((code != 200 && code != 201) || !r.is_object()) {
          reviews_->series({review.kind, "error"})->add(1);
          logger_->warn("{} failed (HTTP {}): {}", review.name, code, review.unavailable);
          return done(std::nullopt, statusResponse(503, "ServiceUnavailable", review.unavailable));
        }
        answered(jsonMember(r, "status"));
      });
}

void AdminAuth::tokenReview(const std::string& token, const Decision& done) {
  std::string key = hashOf(token);
  if (auto c = cached(authn_, key))
    return done(c->ok ? std::optional(c->identity) : std::nullopt, std::nullopt);
  json body = {{"apiVersion", "authentication.k8s.io/v1"},
               {"kind", "TokenReview"},
               {"spec", {{"token", token}}}};
  ask(kTokenReview, body, done, [this, key, done](const json& status) {
    Cached entry;
    entry.ok = jsonFlag(status, "authenticated");
    if (entry.ok) {
      const json& user = jsonMember(status, "user");
      entry.identity.user = jsonText(user, "username");
      entry.identity.via = "tokenreview";
      if (const json& groups = jsonMember(user, "groups"); groups.is_array())
        for (const auto& g : groups)
          if (g.is_string()) entry.identity.groups.push_back(g.get<std::string>());
      entry.ok = !entry.identity.user.empty();
    }
    reviews_->series({kTokenReview.kind, entry.ok ? "allowed" : "denied"})->add(1);
    remember(authn_, key, entry);
    done(entry.ok ? std::optional(entry.identity) : std::nullopt, std::nullopt);
  });
}

void AdminAuth::authorize(const AdminIdentity& who, const std::string& path, const Decision& done) {
  if (options_.mode != AdminAuthOptions::Mode::kKubernetes) return done(who, std::nullopt);
  std::string key = who.user + "\n" + path;
  for (const auto& g : who.groups)
    key += "\n" + g;
  auto forbidden = [who, path] {
    return statusResponse(403, "Forbidden",
                          "forbidden: User \"" + who.user + "\" cannot get path \"" + path + "\"");
  };
  if (auto c = cached(authz_, key))
    return c->ok ? done(who, std::nullopt) : done(std::nullopt, forbidden());
  json body = {{"apiVersion", "authorization.k8s.io/v1"},
               {"kind", "SubjectAccessReview"},
               {"spec",
                {{"user", who.user},
                 {"groups", who.groups},
                 {"nonResourceAttributes", {{"path", path}, {"verb", "get"}}}}}};
  ask(kAccessReview, body, done, [this, key, who, path, done, forbidden](const json& status) {
    Cached entry;
    entry.ok = jsonFlag(status, "allowed");
    reviews_->series({kAccessReview.kind, entry.ok ? "allowed" : "denied"})->add(1);
    remember(authz_, key, entry);
    if (entry.ok) return done(who, std::nullopt);
    logger_->debug("admin: {} may not get {}", who.user, path);
    done(std::nullopt, forbidden());
  });
}

} // namespace kuscia_host
