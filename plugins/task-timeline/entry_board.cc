#include "entry_board.h"

#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/control_plane.h>

namespace kuscia_host::plugins::timeline {

nlohmann::json EntryFacts::toJson() const {
  using sdk::formatTime;
  using sdk::TimePrecision;
  nlohmann::json out = nlohmann::json::object();
  if (firstReady) out["firstReadyTime"] = formatTime(*firstReady, TimePrecision::kAsGiven);
  if (containersStart)
    out["containersStartTime"] = formatTime(*containersStart, TimePrecision::kAsGiven);
  const model::Instant reservation[] = {reserving, reserved, schedulable};
  for (std::size_t i = 0; i < std::size(reservation); ++i)
    if (reservation[i])
      out[model::control::kReservationTimes[i]] =
          formatTime(*reservation[i], TimePrecision::kAsGiven);
  if (facts) facts->fill(out);
  if (waiting)
    out["waiting"] = {{"phase", waiting->phase},
                      {"reason", waiting->reason},
                      {"message", waiting->message},
                      {"since", waiting->sinceNanos}};
  return out;
}

void EntryBoard::put(const std::string& key, EntryFacts facts) {
  std::lock_guard lock(mu_);
  entries_.insert_or_assign(std::string_view(key), std::move(facts));
}

void EntryBoard::erase(std::string_view key) {
  std::lock_guard lock(mu_);
  entries_.erase(key);
}

std::size_t EntryBoard::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

void EntryBoard::addDomain(const std::string& domain) {
  std::lock_guard lock(mu_);
  domains_.insert(domain);
}

void EntryBoard::removeDomain(const std::string& domain) {
  std::lock_guard lock(mu_);
  if (auto it = domains_.find(domain); it != domains_.end()) domains_.erase(it);
}

bool EntryBoard::hasDomain(std::string_view domain) const {
  std::lock_guard lock(mu_);
  return domains_.find(domain) != domains_.end();
}

bool EntryBoard::isFirst(std::string_view domain) const {
  std::lock_guard lock(mu_);
  return !domains_.empty() && *domains_.begin() == domain;
}

bool EntryBoard::keeps(const std::string& domain,
                       const std::set<std::string, std::less<>>& taskDomains) const {
  std::lock_guard lock(mu_);
  for (const auto& d : domains_) // in order: the first of the task's is the keeper
    if (taskDomains.count(d) > 0) return d == domain;
  return false;
}

} // namespace kuscia_host::plugins::timeline
