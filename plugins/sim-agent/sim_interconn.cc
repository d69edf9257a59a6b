#include "sim_interconn.h"

#include <map>
#include <mutex>

namespace kuscia_host::plugins::sim {

namespace {

struct Summary {
  std::map<std::string, std::string> reserved; // party -> when
  std::string schedulable;
};

struct Summaries {
  std::mutex mu;
  std::map<std::string, Summary> byTask;
};

Summaries& summaries() {
  static Summaries s;
  return s;
}

} // namespace

void Interconn::reserved(const std::string& task, const std::string& party, const std::string& at) {
  Summaries& s = summaries();
  std::lock_guard lock(s.mu);
  s.byTask[task].reserved.try_emplace(party, at);
}

void Interconn::schedulable(const std::string& task, const std::string& at) {
  Summaries& s = summaries();
  std::lock_guard lock(s.mu);
  std::string& to = s.byTask[task].schedulable;
  if (to.empty()) to = at;
}

std::optional<std::string> Interconn::reservedAt(const std::string& task,
                                                 const std::string& party) {
  Summaries& s = summaries();
  std::lock_guard lock(s.mu);
  auto t = s.byTask.find(task);
  if (t == s.byTask.end()) return std::nullopt;
  auto p = t->second.reserved.find(party);
  if (p == t->second.reserved.end()) return std::nullopt;
  return p->second;
}

std::optional<std::string> Interconn::schedulableAt(const std::string& task) {
  Summaries& s = summaries();
  std::lock_guard lock(s.mu);
  auto t = s.byTask.find(task);
  if (t == s.byTask.end() || t->second.schedulable.empty()) return std::nullopt;
  return t->second.schedulable;
}

} // namespace kuscia_host::plugins::sim
