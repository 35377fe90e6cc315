#include "catalog/batcher.hpp"

#include <pqxx/pqxx>

#include "common/log.hpp"

namespace vigil::catalog {

Batcher::Batcher(std::string conninfo, BatcherOptions options)
    : conninfo_(std::move(conninfo)), options_(options), thread_([this](std::stop_token st) { run(st); }) {}

Batcher::~Batcher() {
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
  std::lock_guard lock(mu_);
  if (!queue_.empty()) {
    log::error("catalog batcher stopped with mutations not committed", {{"pending", queue_.size()}});
  }
}

void Batcher::enqueue(std::string label, Mutation mutation) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back({std::move(label), std::move(mutation)});
    ++enqueued_;
  }
  wake_.notify_one();
}

void Batcher::flush() {
  std::unique_lock lock(mu_);
  const std::uint64_t target = enqueued_;
  flush_target_ = std::max(flush_target_, target);
  wake_.notify_one();
  done_.wait(lock, [&] { return finished_ >= target; });
}

void Batcher::count_finished(std::size_t committed, std::size_t rejected, std::size_t transactions) {
  {
    std::lock_guard lock(mu_);
    committed_ += committed;
    rejected_ += rejected;
    finished_ += committed + rejected;
    batches_ += transactions;
  }
  done_.notify_all();
}

std::uint64_t Batcher::committed() const {
  std::lock_guard lock(mu_);
  return committed_;
}
std::uint64_t Batcher::rejected() const {
  std::lock_guard lock(mu_);
  return rejected_;
}
std::uint64_t Batcher::batches() const {
  std::lock_guard lock(mu_);
  return batches_;
}

void Batcher::run(std::stop_token stop) {
  for (;;) {
    std::deque<Item> batch;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, stop, [&] { return !queue_.empty(); });
      if (queue_.empty()) return;  // stop requested and nothing left
      // Let the batch gather for up to max_delay, unless it is full, a flush waits, or we stop.
      const auto deadline = std::chrono::steady_clock::now() + options_.max_delay;
      wake_.wait_until(lock, stop, deadline,
                       [&] { return queue_.size() >= options_.max_batch || flush_target_ > finished_; });
      const std::size_t n = std::min(queue_.size(), options_.max_batch);
      for (std::size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    if (!commit_batch(batch, stop)) return;
  }
}

bool Batcher::commit_batch(std::deque<Item>& batch, std::stop_token stop) {
  auto backoff = std::chrono::milliseconds(50);
  int attempts_after_stop = 0;
  for (;;) {
    try {
      if (!conn_ || !conn_->is_open()) conn_ = std::make_unique<pqxx::connection>(conninfo_);
      try {
        pqxx::work tx(*conn_);
        for (auto& item : batch) item.mutation(tx);
        tx.commit();
      } catch (const pqxx::broken_connection&) {
        throw;
      } catch (const std::exception& e) {
        // One of them was refused: commit one per transaction, so only that one is lost.
        log::warn("catalog batch refused, retrying mutation by mutation", {{"error", e.what()}});
        commit_one_by_one(*conn_, batch);
        return true;
      }
      count_finished(batch.size(), 0, 1);
      batch.clear();
      return true;
    } catch (const std::exception& e) {
      // Connection trouble: keep the batch and retry; give up only when asked to stop.
      conn_.reset();
      log::warn("catalog unreachable, will retry", {{"pending", batch.size()}, {"error", e.what()}});
      if (stop.stop_requested() && ++attempts_after_stop > 3) return false;
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
  }
}

void Batcher::commit_one_by_one(pqxx::connection& conn, std::deque<Item>& batch) {
  while (!batch.empty()) {
    auto& item = batch.front();
    bool ok = true;
    try {
      pqxx::work tx(conn);
      item.mutation(tx);
      tx.commit();
    } catch (const pqxx::broken_connection&) {
      throw;  // the rest of the batch is retried by commit_batch
    } catch (const std::exception& e) {
      ok = false;
      log::error("catalog mutation rejected", {{"mutation", item.label}, {"error", e.what()}});
    }
    count_finished(ok ? 1 : 0, ok ? 0 : 1, ok ? 1 : 0);
    batch.pop_front();
  }
}

}  // namespace vigil::catalog
