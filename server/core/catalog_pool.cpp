#include "server/core/catalog_pool.hpp"

#include <pqxx/nontransaction>

namespace vigil::server {

CatalogPool::CatalogPool(std::string conninfo, std::size_t threads, int statement_timeout_ms)
    : conninfo_(std::move(conninfo)), statement_timeout_ms_(statement_timeout_ms), pool_(threads) {}

CatalogPool::~CatalogPool() { stop(); }

void CatalogPool::stop() {
  pool_.stop();
  pool_.join();
  std::lock_guard lock(mu_);
  idle_.clear();
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
  if (!conn_ || !conn_->is_open()) {
    conn_ = std::make_unique<pqxx::connection>(pool_.conninfo_);
    pqxx::nontransaction tx(*conn_);
    tx.exec0("SET statement_timeout = " + std::to_string(pool_.statement_timeout_ms_));
  }
}

CatalogPool::Lease::~Lease() {
  if (!keep_ || !conn_) return;
  std::lock_guard lock(pool_.mu_);
  pool_.idle_.push_back(std::move(conn_));
}

}  // namespace vigil::server
