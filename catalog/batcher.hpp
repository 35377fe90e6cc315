#pragma once
// Batched catalog commits with a bounded delay (docs/durability.md, step 6).
//
// Producers (the disk IO threads, sessions) hand over mutations without ever waiting on the
// database: enqueue() only takes a short lock. A thread of the batcher's own, with its own
// connection, commits everything queued in one transaction at most MAX_DELAY after the
// first mutation of a batch was queued (or sooner when MAX_BATCH are waiting).
//
// Nothing queued is dropped silently: a lost connection is re-established and the batch
// retried with backoff; a mutation that PostgreSQL rejects (constraint violation, bad data)
// is isolated by retrying the batch one mutation per transaction, logged at error level with
// its label, and counted in rejected(). Order is kept: mutations commit in enqueue order.
//
// Thread: enqueue()/counters from any thread; flush() from any thread but the batcher's.
// Errors: mutations throw (catalog layer); the batcher catches and handles as above.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <memory>
#include <pqxx/connection>
#include <pqxx/transaction>

namespace vigil::catalog {

struct BatcherOptions {
  std::chrono::milliseconds max_delay{1000};
  std::size_t max_batch = 1000;
  std::chrono::milliseconds max_backoff{5000};
};

class Batcher {
 public:
  using Mutation = std::function<void(pqxx::work&)>;

  Batcher(std::string conninfo, BatcherOptions options = {});
  ~Batcher();  // commits what is queued (bounded retries), then stops
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Never blocks on the database. LABEL names the mutation in logs ("close segment 12").
  void enqueue(std::string label, Mutation mutation);
  // Blocks until every mutation enqueued before this call has been committed or rejected.
  void flush();

  std::uint64_t committed() const;  // mutations committed
  std::uint64_t rejected() const;   // mutations PostgreSQL refused (logged)
  std::uint64_t batches() const;    // transactions committed

 private:
  struct Item {
    std::string label;
    Mutation mutation;
  };
  void run(std::stop_token stop);
  // Commits BATCH; returns false if it gave up because of STOP while the database was down.
  bool commit_batch(std::deque<Item>& batch, std::stop_token stop);
  void commit_one_by_one(pqxx::connection& conn, std::deque<Item>& batch);
  void count_finished(std::size_t committed, std::size_t rejected, std::size_t transactions);

  std::string conninfo_;
  BatcherOptions options_;
  mutable std::mutex mu_;
  std::condition_variable_any wake_;  // batcher: work arrived / stop
  std::condition_variable done_;      // flush(): progress made
  std::deque<Item> queue_;
  std::uint64_t enqueued_ = 0, finished_ = 0, committed_ = 0, rejected_ = 0, batches_ = 0;
  std::uint64_t flush_target_ = 0;          // flush() waits for finished_ to reach this
  std::unique_ptr<pqxx::connection> conn_;  // the batcher thread's own
  std::jthread thread_;                     // last: started after everything above exists
};

}  // namespace vigil::catalog
