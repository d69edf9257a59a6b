#include "history_reader.h"

#include <pthread.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "history_api.h"

namespace kuscia_host::plugins::history {

namespace {

sdk::HttpResponse unavailable(const std::string& why) {
  sdk::HttpResponse r;
  r.status = 503;
  r.body = nlohmann::json{{"message", why}}.dump();
  return r;
}

} // namespace

void answerFromStore(std::unique_ptr<HistoryStore>& store,
                     const std::function<std::unique_ptr<HistoryStore>()>& open,
                     const sdk::HttpRequest& request, sdk::HttpResponse& response,
                     int64_t nowNanos) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      if (!store) store = open();
    } catch (const StoreError& e) {
      response = unavailable(std::string("the history database cannot answer: ") + e.what());
      return;
    }
    serveHistory(*store, request, response, nowNanos);
    if (response.status != 503) return;
    store.reset();
  }
}

HistoryReader::HistoryReader(Open open, Now now, std::size_t maxWaiting)
    : open_(std::move(open)), now_(std::move(now)), maxWaiting_(maxWaiting),
      thread_([this] { run(); }) {}

HistoryReader::~HistoryReader() {
  std::deque<Job> left;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    left.swap(jobs_);
  }
  cv_.notify_all();
  for (auto& job : left)
    job.answer.respond(unavailable("task-history is stopping"));
  thread_.join();
}

void HistoryReader::submit(const sdk::HttpRequest& request, sdk::DeferredResponse answer) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_ && jobs_.size() < maxWaiting_) {
      jobs_.push_back(Job{std::string(request.method), std::string(request.path),
                          std::string(request.query), std::move(answer)});
      cv_.notify_one();
      return;
    }
  }
  answer.respond(unavailable("task-history is answering " + std::to_string(maxWaiting_) +
                             " requests already: try again shortly"));
}

void HistoryReader::run() {
  pthread_setname_np(pthread_self(), "history-reader"); // as the writer's thread is named
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return; // stopping, nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    sdk::HttpResponse response;
    try {
      answerFromStore(store_, open_, {job.method, job.path, job.query}, response, now_());
    } catch (const std::exception& e) {
      response = unavailable(std::string("the history query failed: ") + e.what());
    }
    job.answer.respond(response);
  }
}

} // namespace kuscia_host::plugins::history
