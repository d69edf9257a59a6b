#include "plugin_host/routes.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace kuscia_host {

using nlohmann::json;

namespace {

RouteAnswer message(int status, const std::string& text) {
  return {status, "application/json", json{{"message", text}}.dump()};
}

bool overlaps(const std::string& a, const std::string& b) {
  return a.rfind(b, 0) == 0 || b.rfind(a, 0) == 0;
}

} // namespace

Result<void> PluginRoutes::add(const std::string& prefix, RouteServer* server) {
  if (prefix.empty() || prefix[0] != '/')
    return makeError("route prefix '" + prefix + "' must be an absolute path");
  for (const char* reserved : {"/livez", "/readyz", "/metrics"})
    if (overlaps(prefix, reserved))
      return makeError("route prefix '" + prefix + "' overlaps the host's " + reserved);
  std::lock_guard lock(mu_);
  for (const auto& [other, servers] : routes_) {
    if (!overlaps(prefix, other) || servers.empty()) continue;
    if (other != prefix || servers.front()->routePlugin() != server->routePlugin())
      return makeError("route prefix '" + prefix + "' overlaps '" + other + "' of " +
                       servers.front()->routeOwner());
  }
  routes_[prefix].push_back(server);
  return {};
}

std::vector<std::string> PluginRoutes::prefixes() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [prefix, servers] : routes_)
    out.push_back(prefix);
  return out;
}

RouteAnswer PluginRoutes::merge(const std::vector<RouteAnswer>& answers) {
  if (answers.size() == 1) return answers.front();
  json merged;
  bool any = false;
  const RouteAnswer* firstError = nullptr;
  for (const auto& a : answers) {
    if (a.status < 200 || a.status > 299) {
      if (a.status != 404 && firstError == nullptr) firstError = &a;
      continue;
    }
    json body = json::parse(a.body, nullptr, false);
    if (!body.is_object()) {
      // Not JSON (a page, say): instances of one plugin that answer alike answer as one.
      bool alike = std::all_of(answers.begin(), answers.end(), [&](const RouteAnswer& o) {
        return o.status == a.status && o.contentType == a.contentType && o.body == a.body;
      });
      if (alike) return a;
      return message(500, "plugin answers cannot be merged: one is not a JSON object");
    }
    if (!any)
      merged = std::move(body);
    else
      merged.merge_patch(body);
    any = true;
  }
  if (any) return {200, "application/json", merged.dump()};
  if (firstError != nullptr) return *firstError;
  return answers.empty() ? message(404, "not found") : answers.front();
}

void PluginRoutes::serve(const std::string& prefix, const RouteRequest& request,
                         std::function<void(RouteAnswer)> reply, const Arm& arm) const {
  std::vector<RouteServer*> servers;
  {
    std::lock_guard lock(mu_);
    if (auto it = routes_.find(prefix); it != routes_.end()) servers = it->second;
  }
  if (servers.empty()) return reply(message(404, "not found: " + request.path));
  struct Gather {
    std::mutex mu;
    std::vector<RouteAnswer> answers;
    std::size_t pending;
    bool done = false;
    std::function<void(RouteAnswer)> reply;
  };
  auto g = std::make_shared<Gather>();
  g->answers.resize(servers.size()); // status 0 until answered
  for (auto& a : g->answers)
    a.status = 0;
  g->pending = servers.size();
  g->reply = std::move(reply);
  auto finish = [g](RouteAnswer a) {
    std::function<void(RouteAnswer)> r;
    {
      std::lock_guard lock(g->mu);
      if (g->done) return;
      g->done = true;
      r = std::move(g->reply);
    }
    r(std::move(a));
  };
  arm(limits_.timeout, [g, finish, servers] {
    std::string late;
    {
      std::lock_guard lock(g->mu);
      if (g->done) return;
      for (std::size_t i = 0; i < servers.size(); ++i)
        if (g->answers[i].status == 0)
          late += (late.empty() ? "" : ", ") + servers[i]->routeOwner();
    }
    finish(message(503, "no answer in time from " + late));
  });
  const std::size_t maxBody = limits_.maxBodyBytes;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    RouteServer* server = servers[i];
    // The answer may come from a plugin's thread (a deferred answer): it names the instance
    // without touching it.
    server->serveRoute(request,
                       [g, i, finish, maxBody, owner = server->routeOwner()](RouteAnswer a) {
                         if (a.body.size() > maxBody)
                           a = message(500, "the answer of " + owner + " is over the limit of " +
                                                std::to_string(maxBody) + " bytes");
                         std::vector<RouteAnswer> all;
                         {
                           std::lock_guard lock(g->mu);
                           if (g->done) return;
                           g->answers[i] = std::move(a);
                           if (--g->pending > 0) return;
                           all = g->answers;
                         }
                         finish(merge(all));
                       });
  }
}

} // namespace kuscia_host
