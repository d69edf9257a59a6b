#include "history_api.h"

#include <kuscia_host/kube_text.hpp>
#include <kuscia_host/query.hpp>
#include <kuscia_model/job_view.h>
#include <kuscia_model/json_member.h>
#include <kuscia_model/timeline_summary.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>

#include <kuscia_model/json_text.h>
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/list_key.h>

namespace kuscia_host::plugins::history {

using nlohmann::json;

namespace {

// "Misconfigured, ImagePull, ...": the reasons a filter takes.
std::string reasonNames() {
  std::string out;
  for (std::size_t i = 0; i < model::failure::kReasonCount; ++i)
    out += std::string(i > 0 ? ", " : "") +
           model::failure::name(static_cast<model::failure::Reason>(i));
  return out;
}

constexpr int64_t kDay = 86400 * model::kSecond;

json message(std::string text) {
  return json{{"message", std::move(text)}};
}

std::string badInstant(const std::string& key) {
  return key + " must be an RFC 3339 time or a duration such as 7d, 12h, 30m";
}

} // namespace

std::optional<int64_t> parseInstant(std::string_view text, int64_t nowNanos) {
  if (auto t = sdk::parseTime(text)) return t;
  if (text.size() < 2 || text.size() > 12) return std::nullopt;
  int64_t unit = 0;
  switch (text.back()) {
  case 's': unit = model::kSecond; break;
  case 'm': unit = 60 * model::kSecond; break;
  case 'h': unit = 3600 * model::kSecond; break;
  case 'd': unit = kDay; break;
  default: return std::nullopt;
  }
  int64_t n = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (n > 100LL * 365 * kDay / unit) return std::nullopt;
  return nowNanos - n * unit;
}

json statsJson(const std::vector<StatsGroup>& groups) {
  auto round3 = [](double v) { return std::round(v * 1000) / 1000; };
  json out = json::array();
  for (const auto& g : groups) {
    json group = {{"key", g.key}, {"tasks", g.tasks}, {"complete", g.complete}};
    if (!g.day.empty()) group["day"] = g.day;
    if (!g.party.empty()) group["party"] = g.party;
    if (g.p50) group["startupSeconds"] = {{"p50", *g.p50}, {"p90", *g.p90}, {"p99", *g.p99}};
    json phases = json::object();
    for (const auto& [phase, total] : g.phaseSeconds)
      phases[phase] = {
          {"total", round3(total)},
          {"mean", round3(total / static_cast<double>(std::max<std::size_t>(g.complete, 1)))}};
    group["phaseSeconds"] = std::move(phases);
    out.push_back(std::move(group));
  }
  return out;
}

namespace {

void answer(sdk::HttpResponse& response, int status, const json& body) {
  response.status = status;
  response.contentType = "application/json";
  response.body = model::dumpJson(body);
}

void serveList(HistoryStore& store, const std::map<std::string, std::string>& query,
               sdk::HttpResponse& response, int64_t now) {
  HistoryQuery q;
  q.limit = kDefaultHistoryLimit;
  for (const auto& [key, value] : query) {
    std::string bad;
    if (key == "since" || key == "until") {
      auto t = parseInstant(value, now);
      if (!t) bad = badInstant(key);
      (key == "since" ? q.since : q.until) = t;
    } else if (key == "party") {
      q.party = value;
    } else if (key == "phase") {
      q.phase = value;
    } else if (key == "blamePhase") {
      q.blamePhase = value;
    } else if (key == "reason") {
      if (!model::failure::reasonNamed(value)) bad = "reason must be one of " + reasonNames();
      q.reason = value;
    } else if (key == "q") {
      q.prefix = value;
    } else if (key == "minStartupSeconds") {
      char* end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v))
        bad = "minStartupSeconds must be a number";
      q.minStartupSeconds = v;
    } else if (key == "limit") {
      auto n = model::parseListLimit(value, kMaxHistoryLimit);
      if (!n) bad = "limit must be an integer from 1 to " + std::to_string(kMaxHistoryLimit);
      q.limit = n.value_or(q.limit);
    } else if (key == "order") {
      if (value != "newest" && value != "slowest") bad = "order must be newest or slowest";
      q.slowest = value == "slowest";
    } else if (key == "continue") {
      auto k = model::ListKey::fromToken(value);
      if (!k) bad = "continue is not a token this list gave";
      if (k) q.after = std::pair{k->created, k->name};
    } else {
      bad = "unknown parameter " + key +
            " (since, until, party, phase, blamePhase, reason, minStartupSeconds, q, order, "
            "limit, continue)";
    }
    if (!bad.empty()) return answer(response, 400, message(bad));
  }
  if (q.slowest && q.after)
    return answer(response, 400, message("continue does not apply to order=slowest (one page)"));
  HistoryPage page = store.list(q);
  json items = json::array();
  for (auto& it : page.items) {
    json item = {{"task", it.task}, {"namespace", it.namespaceName}, {"phase", it.phase}};
    if (it.createNanos > 0)
      item["createTime"] = sdk::formatTime(it.createNanos, sdk::TimePrecision::kAsGiven);
    item["summary"] = std::move(it.summary);
    items.push_back(std::move(item));
  }
  json out = {{"items", std::move(items)}};
  if (page.next) out["continue"] = model::ListKey{page.next->first, page.next->second}.token();
  answer(response, 200, out);
}

void serveStats(HistoryStore& store, const std::map<std::string, std::string>& query,
                sdk::HttpResponse& response, int64_t now) {
  int64_t since = now - 30 * kDay, until = now;
  std::string groupBy;
  for (const auto& [key, value] : query) {
    std::string bad;
    if (key == "since" || key == "until") {
      auto t = parseInstant(value, now);
      if (!t) bad = badInstant(key);
      (key == "since" ? since : until) = t.value_or(0);
    } else if (key == "groupBy") {
      groupBy = value;
      if (groupBy != "party" && groupBy != "blamePhase" && groupBy != "reason" &&
          groupBy != "day" && groupBy != "day,party")
        bad = "groupBy must be party, blamePhase, reason, day or day,party";
    } else {
      bad = "unknown parameter " + key + " (since, until, groupBy)";
    }
    if (!bad.empty()) return answer(response, 400, message(bad));
  }
  json out = {{"since", sdk::formatTime(since, sdk::TimePrecision::kAsGiven)},
              {"until", sdk::formatTime(until, sdk::TimePrecision::kAsGiven)},
              {"groups", statsJson(store.stats(since, until, groupBy))}};
  if (!groupBy.empty()) out["groupBy"] = groupBy;
  answer(response, 200, out);
}

// /api/v1/history/jobs: the kept jobs, newest first.
void serveJobs(HistoryStore& store, const std::map<std::string, std::string>& query,
               sdk::HttpResponse& response) {
  std::size_t limit = kDefaultHistoryLimit;
  for (const auto& [key, value] : query) {
    auto n = key == "limit" ? model::parseListLimit(value, kMaxHistoryLimit) : std::nullopt;
    if (!n)
      return answer(response, 400,
                    message(key == "limit" ? "limit must be an integer from 1 to " +
                                                 std::to_string(kMaxHistoryLimit)
                                           : "unknown parameter " + key + " (limit)"));
    limit = *n;
  }
  json items = json::array();
  for (const JobRecord& j : store.jobs(limit))
    items.push_back({{"job", j.job},
                     {"namespace", j.namespaceName},
                     {"phase", j.phase},
                     {"createTime", sdk::formatTime(j.createNanos, sdk::TimePrecision::kAsGiven)}});
  answer(response, 200, json{{"items", std::move(items)}});
}

// /api/v1/history/jobs/<job>: the job's view from the job as kept and its tasks' history, the
// one function the live view uses (kuscia_model/job_view.h).
void serveJob(HistoryStore& store, const std::string& name, sdk::HttpResponse& response,
              int64_t now) {
  auto kept = model::isDnsSubdomain(name) ? store.job(name) : std::nullopt;
  if (!kept) return answer(response, 404, message("no history of job " + name));
  const model::control::Job job = model::control::jobOf(kept->object);
  std::map<std::string, json> tasks;
  for (const auto& t : job.tasks)
    if (auto doc = t.name.empty() ? std::nullopt : store.document(t.name)) {
      if (!doc->contains("summary")) (*doc)["summary"] = model::timeline::summarize(*doc, now);
      tasks[t.name] = std::move(*doc);
    }
  const auto observed = model::job::observationsOf(
      model::textOf(model::objectOf(model::objectOf(kept->object, "metadata"), "annotations"),
                    model::job::kObservedAnnotation));
  answer(response, 200, model::job::jobDocument(job, observed, tasks, now));
}

} // namespace

void serveHistory(HistoryStore& store, const sdk::HttpRequest& request, sdk::HttpResponse& response,
                  int64_t nowNanos) {
  std::string_view rest = request.path.substr(std::min(request.path.size(), kHistoryRoute.size()));
  try {
    auto query = sdk::parseQuery(request.query);
    if (rest.empty() || rest == "/") return serveList(store, query, response, nowNanos);
    if (rest == "/stats") return serveStats(store, query, response, nowNanos);
    if (rest == "/jobs" || rest == "/jobs/") return serveJobs(store, query, response);
    if (rest.rfind("/jobs/", 0) == 0)
      return serveJob(store, std::string(rest.substr(6)), response, nowNanos);
    std::string task(rest.substr(1));
    if (!model::isDnsSubdomain(task))
      return answer(response, 404, message("not a task name: " + task));
    auto doc = store.document(task);
    if (!doc) return answer(response, 404, message("no history of task " + task));
    int64_t at = nowNanos;
    if (doc->contains("recordedTime"))
      at = sdk::parseTime(doc->value("recordedTime", "")).value_or(nowNanos);
    if (!doc->contains("summary")) (*doc)["summary"] = model::timeline::summarize(*doc, at);
    model::timeline::addPhases(*doc, at);
    answer(response, 200, *doc);
  } catch (const StoreError& e) {
    answer(response, 503, message(std::string("the history database cannot answer: ") + e.what()));
  }
}

} // namespace kuscia_host::plugins::history
