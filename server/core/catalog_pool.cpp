#include "server/core/catalog_pool.hpp"

#include <sys/socket.h>

#include <pqxx/except>
#include <pqxx/nontransaction>

#include "catalog/conninfo.hpp"
#include "common/log.hpp"

namespace vigil::server {

CatalogPool::CatalogPool(std::string conninfo, std::size_t threads, int statement_timeout_ms)
    : conninfo_(catalog::with_session_limits(conninfo, 2)),
      statement_timeout_ms_(statement_timeout_ms),
      pool_(threads) {}

CatalogPool::~CatalogPool() { stop(); }

void CatalogPool::set_reachable(std::function<bool()> reachable) {
  reachable_ = std::move(reachable);
  watcher_ = std::jthread([this](std::stop_token st) { watch(st); });
}

void CatalogPool::stop() {
  pool_.stop();
  pool_.join();
  if (watcher_.joinable()) {
    watcher_.request_stop();
    watch_wake_.notify_all();
    watcher_.join();
  }
  std::lock_guard lock(mu_);
  idle_.clear();
}

void CatalogPool::watch(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    watch_wake_.wait_for(lock, stop, std::chrono::milliseconds(250), [] { return false; });
    const auto now = std::chrono::steady_clock::now();
    bool any = false;
    for (const auto& [lease, b] : busy_) any |= !b.cut && now - b.since >= kCutAfter;
    if (!any) continue;
    lock.unlock();
    const bool up = reachable_();  // outside mu_: the probe has a lock of its own
    lock.lock();
    if (up) continue;
    for (auto& [lease, b] : busy_) {
      if (b.cut || now - b.since < kCutAfter) continue;
      log::warn("catalog job unanswered while the catalog is down: its connection is cut");
      ::shutdown(b.fd, SHUT_RDWR);
      b.cut = true;
    }
  }
}

CatalogPool::JobClock::JobClock(CatalogPool& p, std::chrono::steady_clock::time_point queued)
    : pool(p), started(std::chrono::steady_clock::now()) {
  if (pool.wait_s_) pool.wait_s_->observe(std::chrono::duration<double>(started - queued).count());
}

CatalogPool::JobClock::~JobClock() {
  auto* h = ok ? pool.ok_s_ : pool.failed_s_;
  if (h) h->observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

CatalogPool::Lease::Lease(CatalogPool& pool) : pool_(pool) {
  {
    std::lock_guard lock(pool_.mu_);
    if (!pool_.idle_.empty()) {
      conn_ = std::move(pool_.idle_.back());
      pool_.idle_.pop_back();
    }
  }
  if (pool_.reachable_ && !pool_.reachable_()) {
    // Fail now rather than wait on a server that does not answer (the caller falls back or says 503).
    throw pqxx::broken_connection("the catalog is not answering (health probe); try again later");
  }
  if (!conn_ || !conn_->is_open()) {
    conn_ = std::make_unique<pqxx::connection>(pool_.conninfo_);
    pqxx::nontransaction tx(*conn_);
    tx.exec0("SET statement_timeout = " + std::to_string(pool_.statement_timeout_ms_));
  }
  std::lock_guard lock(pool_.mu_);
  pool_.busy_[this] = {conn_->sock(), std::chrono::steady_clock::now(), false};
}

CatalogPool::Lease::~Lease() {
  std::lock_guard lock(pool_.mu_);
  pool_.busy_.erase(this);  // from here the watcher does not touch this socket
  if (!keep_ || !conn_) return;
  pool_.idle_.push_back(std::move(conn_));
}

}  // namespace vigil::server
