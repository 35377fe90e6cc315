#pragma once
// Batched catalog commits with a bounded delay (docs/durability.md, step 6), which keep the
// catalog off the video path through a database outage (docs/catalog.md, "When the catalog is
// down").
//
// Producers (the disk IO threads, sessions) hand over rows without ever waiting on the
// database: enqueue() only takes a short lock. A thread of the batcher's own, with its own
// connection, commits everything queued in one transaction at most MAX_DELAY after the
// first row of a batch was queued (or sooner when MAX_BATCH are waiting).
//
// Nothing queued is dropped silently: a lost connection, or one to a server that refuses writes
// (a read-only standby: a catalog failover, docs/catalog.md "PostgreSQL high availability"), is
// re-established and the batch retried with backoff; a row that PostgreSQL rejects (constraint violation, bad data) is
// isolated by retrying the batch one row per transaction, logged at error level with its label,
// and counted in rejected(). Order is kept: rows commit in enqueue order.
//
// The spool: with a SPOOL_PATH, rows (PendingRow) that wait longer than SPOOL_AFTER, or any at
// all once a commit has failed, are appended to the spool file (catalog/spool.hpp) and made
// durable by a second thread, which never waits on the database. A commit that has not answered
// within COMMIT_TIMEOUT (a hung server: no error ever comes) has its connection cut and is
// retried (sooner when REACHABLE says the catalog is not answering). At stop, what cannot be
// committed within STOP_GRACE is left in the spool, and the next
// Batcher on the same file (the next start of vigild) commits it first, in order. The spool is
// emptied once everything in it is committed. Rows given as plain Mutations (tests, one-off
// work) cannot be spooled: if they are still waiting at stop they are reported lost.
//
// Thread: enqueue()/counters from any thread; flush() from any thread but the batcher's.
// Errors: rows throw (catalog layer); the batcher catches and handles as above. A spool that
// cannot be written is logged (the rows stay in memory and are retried).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <pqxx/connection>
#include <pqxx/transaction>
#include <string>
#include <thread>

#include "catalog/pending_rows.hpp"
#include "catalog/spool.hpp"

namespace vigil::catalog {

struct BatcherOptions {
  std::chrono::milliseconds max_delay{1000};
  std::size_t max_batch = 1000;
  std::chrono::milliseconds max_backoff{5000};
  std::filesystem::path spool_path{};                // empty: no spool (rows wait in memory only)
  std::chrono::milliseconds spool_after{2000};       // rows waiting longer go to the spool
  std::chrono::milliseconds commit_timeout{30'000};  // a commit silent this long is cut and retried
  std::chrono::milliseconds stop_grace{2000};        // at stop: to commit what waits, then spool it
  std::size_t backlog_limit = 100'000;               // rows waiting beyond which backlogged() is true
  // Is the catalog answering (vigild: CatalogHealth's probe, which has deadlines)? While it says
  // no, the batcher does not try to connect (a connection attempt to a frozen server blocks for
  // the connect timeout), a commit in flight longer than SPOOL_AFTER is cut, and a stop does not
  // wait for a commit. Unset: always yes.
  std::function<bool()> reachable{};
  // A row of stream STREAM_ID was refused for its stale ownership epoch and written marked
  // (catalog::Applied, docs/nodes.md): the node must stop that camera. Called on the batcher's
  // thread while the row's transaction is open (again if its batch is retried): it must not block.
  std::function<void(std::int64_t stream_id)> fenced{};
};

class Batcher {
 public:
  using Mutation = std::function<void(pqxx::work&)>;

  // Rows left in OPTIONS.spool_path by an earlier Batcher are committed first.
  Batcher(std::string conninfo, BatcherOptions options = {});
  // Commits what is queued for up to STOP_GRACE (not at all while the database is known down);
  // what is left goes to the spool. Bounded: STOP_GRACE plus at most one connection attempt
  // (connect_timeout: 2 s).
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Never blocks on the database or the disk. Returns the row's place in the order (for durable()).
  std::uint64_t enqueue(PendingRow row);
  // Row SEQ is committed (or rejected) or in the spool: it survives a stop or a crash.
  bool durable(std::uint64_t seq) const;
  // Row SEQ is no longer waiting: committed (or rejected), so readers of the catalog see it.
  bool done(std::uint64_t seq) const;
  // Spool what waits now rather than after SPOOL_AFTER (a caller about to act on a row's durability).
  void spool_soon();
  // Kept in memory only. LABEL names the mutation in logs ("close segment 12").
  void enqueue(std::string label, Mutation mutation);
  // Blocks until every row enqueued before this call has been committed or rejected.
  void flush();

  std::uint64_t committed() const;  // rows committed
  std::uint64_t rejected() const;   // rows PostgreSQL refused (logged)
  std::uint64_t batches() const;    // transactions committed
  std::size_t waiting() const;      // rows not committed yet
  std::size_t spooled() const;      // of those, rows in the spool
  bool down() const;                // the last commit attempt failed to reach the catalog
  // More than BACKLOG_LIMIT rows wait: the catalog has been down for long (new work should wait).
  bool backlogged() const;

 private:
  struct Item {
    std::uint64_t seq = 0;
    std::string label;
    Mutation mutation;
    std::string encoded;  // the spool record; empty for a plain Mutation
    bool spooled = false;
    std::chrono::steady_clock::time_point queued_at;
  };
  using Batch = std::vector<std::shared_ptr<Item>>;
  void push(std::shared_ptr<Item> item);
  void applied(const Applied& a) const;  // tells options_.fenced
  void load_spool();
  void run(std::stop_token stop);
  // Commits BATCH (the front of pending_); false if it gave up because of STOP.
  bool commit_batch(Batch& batch, std::stop_token stop);
  // Row by row, taking each off BATCH once finished (a broken connection retries only the rest).
  void commit_one_by_one(Batch& batch);
  // COUNT rows off the front of pending_, COMMITTED of them committed, in TRANSACTIONS.
  void finished(std::size_t count, std::size_t committed, std::size_t transactions);
  void connect();
  bool reachable() const { return !options_.reachable || options_.reachable(); }
  void disconnect();
  void run_spooler(std::stop_token stop);
  // Cuts a hung commit; spools what waits (FORCE: everything); empties a spool all committed.
  void spool_pass(bool force);

  std::string conninfo_;
  BatcherOptions options_;
  mutable std::mutex mu_;
  std::condition_variable_any wake_;           // committer: work arrived / stop
  std::condition_variable_any spool_wake_;     // spooler: the catalog went down / rows committed
  std::condition_variable done_;               // flush() and the destructor: progress made
  std::deque<std::shared_ptr<Item>> pending_;  // in enqueue order; the committer's batch is at the front
  std::uint64_t next_seq_ = 1;
  std::uint64_t enqueued_ = 0, finished_ = 0, committed_ = 0, rejected_ = 0, batches_ = 0;
  std::uint64_t flush_target_ = 0;   // flush() waits for finished_ to reach this
  std::size_t spooled_pending_ = 0;  // items in pending_ that are in the spool
  bool down_ = false;                // the last attempt could not reach the catalog
  bool hurry_ = false;               // spool_soon() was asked
  bool committer_done_ = false;
  // The commit in flight, for the spooler's timeout and the destructor (guarded by mu_).
  int busy_fd_ = -1;
  std::optional<std::chrono::steady_clock::time_point> busy_since_;
  bool busy_cut_ = false;
  std::unique_ptr<pqxx::connection> conn_;  // the committer's own
  std::optional<Spool> spool_;              // the spooler's (and the constructor's, the destructor's)
  std::jthread thread_;                     // the committer
  std::jthread spooler_;
};

}  // namespace vigil::catalog
