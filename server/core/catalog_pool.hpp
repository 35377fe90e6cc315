#pragma once
// The catalog pool: the only threads that talk to PostgreSQL. Network coroutines hand
// catalog work here and await the result, so no Asio thread ever blocks on the database.
//
// Thread: run() may be awaited from any Asio executor; FN runs on a pool thread with a
// connection no other thread uses meanwhile. Errors: FN's exceptions (pqxx::*) propagate
// to the awaiting coroutine (catalog layer policy: exceptions). With metrics set, each job's
// wait for a pool thread and its run time (by outcome) are observed into histograms.
//
// During a database outage (docs/catalog.md, "When the catalog is down") no job waits for ever
// and no pool thread is held: with set_reachable(), a job that starts while the catalog is
// reported down fails at once (pqxx::broken_connection), and a job already running that has not
// finished after kCutAfter while it is reported down has its connection's socket shut down (a
// frozen server answers nothing, not even an error), so it fails and its caller answers "catalog
// unavailable" or uses what it already knows. Connections use connect_timeout=2.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <pqxx/connection>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "server/core/metrics.hpp"

namespace vigil::server {

class CatalogPool {
 public:
  // THREADS pool threads; statements running longer than STATEMENT_TIMEOUT_MS are cancelled.
  CatalogPool(std::string conninfo, std::size_t threads, int statement_timeout_ms = 10000);
  ~CatalogPool();  // waits for running work
  CatalogPool(const CatalogPool&) = delete;
  CatalogPool& operator=(const CatalogPool&) = delete;

  // Before the first run(): WAIT observes each job's time in the queue, OK and FAILED its run
  // time on the pool thread (connecting included) when it returned or threw.
  void set_metrics(metrics::Histogram& wait, metrics::Histogram& ok, metrics::Histogram& failed) noexcept {
    wait_s_ = &wait;
    ok_s_ = &ok;
    failed_s_ = &failed;
  }

  template <class Fn>
  auto run(Fn fn) -> boost::asio::awaitable<std::invoke_result_t<Fn&, pqxx::connection&>> {
    using R = std::invoke_result_t<Fn&, pqxx::connection&>;
    const auto queued = std::chrono::steady_clock::now();
    // co_spawn onto the pool: the body runs on a pool thread, and the awaiting coroutine
    // resumes on its own executor with the value or the exception.
    // FN must capture only references (to what outlives the co_await) or trivially
    // destructible values: GCC 12 destroys the captures of a function object passed by value
    // into a coroutine (co_spawn's entry point) twice; a captured std::string crashed vigild.
    return boost::asio::co_spawn(
        pool_,
        [this, fn = std::move(fn), queued]() mutable -> boost::asio::awaitable<R> {
          JobClock clock(*this, queued);
          Lease lease(*this);
          if constexpr (std::is_void_v<R>) {
            fn(lease.conn());
            lease.keep();
            clock.ok = true;
            co_return;
          } else {
            R out = fn(lease.conn());
            lease.keep();
            clock.ok = true;
            co_return out;
          }
        },
        boost::asio::use_awaitable);
  }

  // Before the first run(): is the catalog answering (CatalogHealth's probe)?
  void set_reachable(std::function<bool()> reachable);

  void stop();  // no new work; joins the threads (hung jobs are cut if the catalog is down)

  static constexpr std::chrono::milliseconds kCutAfter{1000};

 private:
  // One connection out of the free list for the duration of a job. A connection whose job
  // threw is dropped rather than returned (it may be broken or mid-transaction).
  class Lease {
   public:
    explicit Lease(CatalogPool& pool);
    ~Lease();
    pqxx::connection& conn() { return *conn_; }
    void keep() { keep_ = true; }

   private:
    CatalogPool& pool_;
    std::unique_ptr<pqxx::connection> conn_;
    bool keep_ = false;
  };
  friend class Lease;
  struct Busy {
    int fd = -1;
    std::chrono::steady_clock::time_point since;
    bool cut = false;
  };
  void watch(std::stop_token stop);

  // Times one job from its start on a pool thread; observes when destroyed (also by an exception).
  struct JobClock {
    JobClock(CatalogPool& pool, std::chrono::steady_clock::time_point queued);
    ~JobClock();
    JobClock(const JobClock&) = delete;
    JobClock& operator=(const JobClock&) = delete;
    CatalogPool& pool;
    std::chrono::steady_clock::time_point started;
    bool ok = false;
  };

  metrics::Histogram* wait_s_ = nullptr;
  metrics::Histogram* ok_s_ = nullptr;
  metrics::Histogram* failed_s_ = nullptr;
  std::string conninfo_;
  int statement_timeout_ms_;
  boost::asio::thread_pool pool_;
  std::mutex mu_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  std::function<bool()> reachable_;
  std::map<const void*, Busy> busy_;  // by Lease, guarded by mu_
  std::condition_variable_any watch_wake_;
  std::jthread watcher_;  // cuts hung jobs; started by set_reachable
};

}  // namespace vigil::server
