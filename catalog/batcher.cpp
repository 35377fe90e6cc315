#include "catalog/batcher.hpp"

#include <sys/socket.h>

#include <pqxx/pqxx>
#include <system_error>

#include "catalog/conninfo.hpp"
#include "common/log.hpp"

namespace vigil::catalog {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kConnectTimeoutS = 2;  // libpq's minimum

// A server that refuses every write (SQLSTATE 25006: a hot standby, after a catalog failover or
// with --db naming a replica) is the wrong server, not a bad row: the batch is kept and retried
// on a new connection, which libpq's target_session_attrs=read-write points at the primary.
// Taken for a refused row, the whole batch would be rejected one row at a time and lost.
bool read_only_server(const std::exception& e) {
  const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e);
  return sql && sql->sqlstate() == "25006";
}

}  // namespace

Batcher::Batcher(std::string conninfo, BatcherOptions options)
    : conninfo_(with_session_limits(conninfo, kConnectTimeoutS)), options_(std::move(options)) {
  if (!options_.spool_path.empty()) load_spool();
  thread_ = std::jthread([this](std::stop_token st) { run(st); });
  spooler_ = std::jthread([this](std::stop_token st) { run_spooler(st); });
}

void Batcher::load_spool() {
  auto contents = Spool::read(options_.spool_path);
  std::size_t undecodable = 0;
  for (auto& record : contents.records) {
    auto row = decode(record);
    if (!row) {
      ++undecodable;
      continue;
    }
    auto item = std::make_shared<Item>();
    item->label = label(*row);
    item->mutation = [this, r = std::move(*row)](pqxx::work& tx) { applied(apply(tx, r)); };
    item->encoded = std::move(record);
    item->spooled = true;
    ++spooled_pending_;
    push(std::move(item));
  }
  if (undecodable || contents.unreadable_bytes) {
    // Kept aside, not emptied with the rest once the readable rows are committed.
    auto aside = options_.spool_path;
    aside += ".damaged";
    std::error_code ec;
    std::filesystem::copy_file(options_.spool_path, aside, std::filesystem::copy_options::overwrite_existing, ec);
    log::error("catalog spool: some of it cannot be read; the file is kept aside",
               {{"spool", options_.spool_path.string()},
                {"copy", aside.string()},
                {"undecodable_rows", undecodable},
                {"unreadable_bytes", contents.unreadable_bytes}});
  }
  spool_.emplace(options_.spool_path);
  if (!pending_.empty()) {
    log::info("catalog rows from the spool are committed first",
              {{"rows", pending_.size()}, {"spool", options_.spool_path.string()}});
  }
}

Batcher::~Batcher() {
  thread_.request_stop();
  wake_.notify_all();
  {
    // A catalog that does not answer gets no grace: its commit would not finish anyway.
    const auto grace = reachable() ? options_.stop_grace : std::chrono::milliseconds(0);
    std::unique_lock lock(mu_);
    if (!done_.wait_for(lock, grace, [&] { return committer_done_; }) && busy_fd_ >= 0) {
      // A commit the database does not answer: cut it (the committer sees a broken connection).
      log::warn("catalog commit still waiting at stop: its connection is cut", {{"rows", pending_.size()}});
      ::shutdown(busy_fd_, SHUT_RDWR);
    }
  }
  thread_.join();
  spooler_.request_stop();
  spool_wake_.notify_all();
  spooler_.join();
  spool_pass(true);
  std::lock_guard lock(mu_);
  if (pending_.empty()) return;
  std::size_t lost = 0;
  for (const auto& item : pending_) lost += item->spooled ? 0 : 1;
  if (spooled_pending_ > 0) {
    log::warn("catalog rows not committed at stop are kept in the spool for the next start",
              {{"rows", spooled_pending_}, {"spool", options_.spool_path.string()}});
  }
  if (lost > 0) {
    log::error("catalog batcher stopped with rows neither committed nor spooled", {{"rows", lost}});
  }
}

void Batcher::push(std::shared_ptr<Item> item) {
  item->seq = next_seq_++;
  item->queued_at = Clock::now();
  pending_.push_back(std::move(item));
  ++enqueued_;
}

void Batcher::applied(const Applied& a) const {
  if (a.fenced_stream && options_.fenced) options_.fenced(*a.fenced_stream);
}

std::uint64_t Batcher::enqueue(PendingRow row) {
  auto item = std::make_shared<Item>();
  item->label = label(row);
  if (spool_) item->encoded = encode(row);
  item->mutation = [this, r = std::move(row)](pqxx::work& tx) { applied(apply(tx, r)); };
  std::uint64_t seq = 0;
  {
    std::lock_guard lock(mu_);
    push(item);
    seq = item->seq;
  }
  wake_.notify_one();
  return seq;
}

bool Batcher::done(std::uint64_t seq) const {
  std::lock_guard lock(mu_);
  return pending_.empty() || pending_.front()->seq > seq;
}

bool Batcher::durable(std::uint64_t seq) const {
  std::lock_guard lock(mu_);
  for (const auto& item : pending_) {
    if (item->seq == seq) return item->spooled;
    if (item->seq > seq) break;
  }
  return true;  // no longer waiting: committed or rejected
}

void Batcher::spool_soon() {
  {
    std::lock_guard lock(mu_);
    hurry_ = true;
  }
  spool_wake_.notify_all();
}

void Batcher::enqueue(std::string label, Mutation mutation) {
  auto item = std::make_shared<Item>();
  item->label = std::move(label);
  item->mutation = std::move(mutation);
  {
    std::lock_guard lock(mu_);
    push(std::move(item));
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

void Batcher::finished(std::size_t count, std::size_t committed, std::size_t transactions) {
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < count && !pending_.empty(); ++i) {
      if (pending_.front()->spooled) --spooled_pending_;
      pending_.pop_front();
    }
    committed_ += committed;
    rejected_ += count - committed;
    finished_ += count;
    batches_ += transactions;
  }
  done_.notify_all();
  spool_wake_.notify_all();
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
std::size_t Batcher::waiting() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}
std::size_t Batcher::spooled() const {
  std::lock_guard lock(mu_);
  return spooled_pending_;
}
bool Batcher::down() const {
  std::lock_guard lock(mu_);
  return down_;
}
bool Batcher::backlogged() const {
  std::lock_guard lock(mu_);
  return pending_.size() >= options_.backlog_limit;
}

void Batcher::run(std::stop_token stop) {
  for (;;) {
    Batch batch;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, stop, [&] { return !pending_.empty(); });
      // Stopping: nothing left, or the catalog is down and what is left goes to the spool.
      if (pending_.empty() || (stop.stop_requested() && down_)) break;
      // Let the batch gather for up to max_delay, unless it is full, a flush waits, or we stop.
      const auto deadline = Clock::now() + options_.max_delay;
      wake_.wait_until(lock, stop, deadline,
                       [&] { return pending_.size() >= options_.max_batch || flush_target_ > finished_; });
      const std::size_t n = std::min(pending_.size(), options_.max_batch);
      batch.assign(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    if (!commit_batch(batch, stop)) break;
  }
  {
    std::lock_guard lock(mu_);
    committer_done_ = true;
  }
  done_.notify_all();
}

void Batcher::connect() {
  if (conn_ && conn_->is_open()) return;
  disconnect();
  auto conn = std::make_unique<pqxx::connection>(conninfo_);
  std::lock_guard lock(mu_);
  busy_fd_ = conn->sock();
  conn_ = std::move(conn);
}

void Batcher::disconnect() {
  std::unique_ptr<pqxx::connection> old;
  {
    // Once busy_fd_ is cleared nobody shuts the socket down: it can be closed (and its number reused).
    std::lock_guard lock(mu_);
    busy_fd_ = -1;
    old = std::move(conn_);
  }
}

bool Batcher::commit_batch(Batch& batch, std::stop_token stop) {
  auto backoff = std::chrono::milliseconds(50);
  const auto busy = [&](bool on) {
    std::lock_guard lock(mu_);
    busy_since_ = on ? std::optional(Clock::now()) : std::nullopt;
    busy_cut_ = false;
  };
  for (;;) {
    bool was_down = false;
    {
      std::lock_guard lock(mu_);
      was_down = down_;
    }
    if (was_down && !reachable()) {
      // Still down by the health probe: no connection attempt (it would block), wait.
      if (stop.stop_requested()) return false;
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, stop, backoff, [] { return false; });
      if (stop.stop_requested()) return false;
      backoff = std::min(backoff * 2, options_.max_backoff);
      continue;
    }
    try {
      connect();
      busy(true);
      try {
        pqxx::work tx(*conn_);
        for (auto& item : batch) item->mutation(tx);
        tx.commit();
      } catch (const pqxx::broken_connection&) {
        throw;
      } catch (const pqxx::in_doubt_error&) {
        throw;  // retried: the rows are idempotent (pending_rows.hpp)
      } catch (const std::exception& e) {
        if (!conn_->is_open() || read_only_server(e)) throw;
        // One of them was refused: commit one per transaction, so only that one is lost.
        log::warn("catalog batch refused, retrying row by row", {{"error", e.what()}});
        commit_one_by_one(batch);
        busy(false);
        return true;
      }
      busy(false);
      {
        std::lock_guard lock(mu_);
        was_down = std::exchange(down_, false);
      }
      if (was_down) log::info("catalog reachable again: waiting rows are committed", {{"rows", waiting()}});
      finished(batch.size(), batch.size(), 1);
      return true;
    } catch (const std::exception& e) {
      // Connection trouble (or a commit cut for taking too long): keep the batch and retry.
      busy(false);
      disconnect();
      {
        std::lock_guard lock(mu_);
        was_down = std::exchange(down_, true);
      }
      spool_wake_.notify_all();
      if (!was_down) {
        log::warn("catalog unreachable: rows wait (in the spool) and are retried",
                  {{"pending", waiting()}, {"error", e.what()}});
      } else {
        log::debug("catalog still unreachable", {{"pending", waiting()}, {"error", e.what()}});
      }
      if (stop.stop_requested()) return false;
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, stop, backoff, [] { return false; });
      if (stop.stop_requested()) return false;
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
  }
}

void Batcher::commit_one_by_one(Batch& batch) {
  while (!batch.empty()) {
    const auto item = batch.front();
    bool ok = true;
    try {
      pqxx::work tx(*conn_);
      item->mutation(tx);
      tx.commit();
    } catch (const pqxx::broken_connection&) {
      throw;  // the rest of the batch is retried by commit_batch
    } catch (const pqxx::in_doubt_error&) {
      throw;
    } catch (const std::exception& e) {
      if (!conn_->is_open() || read_only_server(e)) throw;
      ok = false;
      log::error("catalog row rejected", {{"row", item->label}, {"error", e.what()}});
    }
    finished(1, ok ? 1 : 0, ok ? 1 : 0);
    batch.erase(batch.begin());
  }
}

void Batcher::run_spooler(std::stop_token stop) {
  const auto tick = std::min<std::chrono::milliseconds>(options_.spool_after / 4 + std::chrono::milliseconds(1),
                                                        std::chrono::milliseconds(250));
  while (!stop.stop_requested()) {
    spool_pass(false);
    std::unique_lock lock(mu_);
    spool_wake_.wait_for(lock, stop, tick, [] { return false; });
  }
}

void Batcher::spool_pass(bool force) {
  std::vector<std::string> records;
  std::uint64_t last_seq = 0;
  bool empty_it = false;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    const auto busy_for = busy_since_ ? now - *busy_since_ : Clock::duration::zero();
    if (busy_since_ && !busy_cut_ && busy_fd_ >= 0 &&
        (busy_for >= options_.commit_timeout || (busy_for >= options_.spool_after && !reachable()))) {
      log::warn("catalog commit unanswered: its connection is cut and the batch retried",
                {{"waited_ms", std::chrono::duration_cast<std::chrono::milliseconds>(busy_for).count()}});
      ::shutdown(busy_fd_, SHUT_RDWR);
      busy_cut_ = true;
    }
    if (!spool_) return;
    const bool waited = !pending_.empty() && now - pending_.front()->queued_at >= options_.spool_after;
    if (force || down_ || waited || std::exchange(hurry_, false)) {
      for (const auto& item : pending_) {
        if (item->spooled || item->encoded.empty()) continue;
        records.push_back(item->encoded);
        last_seq = item->seq;
      }
    }
    empty_it = records.empty() && spooled_pending_ == 0 && spool_->bytes() > 0;
  }
  if (!records.empty()) {
    try {
      spool_->append(records);
    } catch (const std::exception& e) {
      log::error("catalog spool cannot be written; rows wait in memory",
                 {{"rows", records.size()}, {"error", e.what()}});
      return;
    }
    std::lock_guard lock(mu_);
    for (const auto& item : pending_) {
      if (item->seq > last_seq) break;
      if (item->spooled || item->encoded.empty()) continue;
      item->spooled = true;
      ++spooled_pending_;
    }
    log::debug("catalog rows spooled", {{"rows", records.size()}, {"spool_bytes", spool_->bytes()}});
  } else if (empty_it) {
    try {
      spool_->clear();
      log::info("catalog spool emptied: every row it held is committed", {{"spool", spool_->path().string()}});
    } catch (const std::exception& e) {
      log::error("catalog spool cannot be emptied", {{"error", e.what()}});
    }
  }
}

}  // namespace vigil::catalog
