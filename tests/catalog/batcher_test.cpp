// The catalog batcher: commits in batches, within its delay bound, in order, and loses
// nothing to a dropped connection or a single bad mutation. Real PostgreSQL.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>
#include <thread>

#include "catalog/batcher.hpp"
#include "tests/support/temp_cluster.hpp"

using vigil::catalog::Batcher;
using vigil::catalog::BatcherOptions;

namespace {

std::string fresh_db_with_table(std::string_view hint) {
  auto conninfo = vigil::test::shared_cluster().create_database(hint);
  pqxx::connection conn(conninfo);
  pqxx::work tx(conn);
  tx.exec0("CREATE TABLE t (n int PRIMARY KEY, at_us bigint)");
  tx.commit();
  return conninfo;
}

long count_rows(const std::string& conninfo) {
  pqxx::connection conn(conninfo);
  pqxx::nontransaction tx(conn);
  return tx.exec1("SELECT count(*) FROM t")[0].as<long>();
}

Batcher::Mutation insert(int n) {
  return [n](pqxx::work& tx) { tx.exec_params0("INSERT INTO t (n) VALUES ($1)", n); };
}

}  // namespace

TEST_CASE("queued mutations are committed together, in order", "[batcher]") {
  auto conninfo = fresh_db_with_table("batcher_order");
  // A long delay: only flush() or a full batch may trigger the commit.
  Batcher b(conninfo, BatcherOptions{.max_delay = std::chrono::hours(1), .max_batch = 1000});
  for (int i = 0; i < 200; ++i) b.enqueue("insert " + std::to_string(i), insert(i));
  // Order matters: this update only finds its row if the inserts before it committed first.
  b.enqueue("update", [](pqxx::work& tx) { tx.exec0("UPDATE t SET at_us = 1 WHERE n = 199"); });
  b.flush();
  CHECK(count_rows(conninfo) == 200);
  CHECK(b.committed() == 201);
  CHECK(b.batches() <= 2);  // 201 mutations in at most two transactions
  pqxx::connection conn(conninfo);
  pqxx::nontransaction tx(conn);
  CHECK(tx.exec1("SELECT at_us FROM t WHERE n = 199")[0].as<long>() == 1);
}

TEST_CASE("a full batch is committed without waiting for the delay", "[batcher]") {
  auto conninfo = fresh_db_with_table("batcher_full");
  Batcher b(conninfo, BatcherOptions{.max_delay = std::chrono::hours(1), .max_batch = 10});
  for (int i = 0; i < 10; ++i) b.enqueue("insert", insert(i));
  // Bounded poll: with a one-hour delay, only the batch-size trigger can commit these.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (b.committed() < 10 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(b.committed() == 10);
  CHECK(count_rows(conninfo) == 10);
}

TEST_CASE("without flush, mutations commit once the delay bound passes", "[batcher]") {
  auto conninfo = fresh_db_with_table("batcher_delay");
  Batcher b(conninfo, BatcherOptions{.max_delay = std::chrono::milliseconds(20), .max_batch = 1000});
  b.enqueue("insert", insert(1));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (b.committed() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(count_rows(conninfo) == 1);
}

TEST_CASE("a rejected mutation is isolated and the rest of its batch commits", "[batcher]") {
  auto conninfo = fresh_db_with_table("batcher_reject");
  Batcher b(conninfo, BatcherOptions{.max_delay = std::chrono::hours(1)});
  b.enqueue("insert 1", insert(1));
  b.enqueue("duplicate 1", insert(1));  // primary key violation
  b.enqueue("insert 2", insert(2));
  b.flush();
  CHECK(b.rejected() == 1);
  CHECK(b.committed() == 2);
  CHECK(count_rows(conninfo) == 2);
}

TEST_CASE("a dropped connection loses nothing: the batch is retried", "[batcher]") {
  auto conninfo = fresh_db_with_table("batcher_reconnect");
  Batcher b(conninfo, BatcherOptions{.max_delay = std::chrono::hours(1)});
  b.enqueue("insert 1", insert(1));
  b.flush();
  // Kill the batcher's backend behind its back.
  {
    pqxx::connection admin(vigil::test::shared_cluster().conninfo());
    pqxx::nontransaction tx(admin);
    pqxx::connection probe(conninfo);
    std::string db = probe.dbname();
    auto r = tx.exec_params(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", db);
    REQUIRE(r.size() >= 1);
  }
  for (int i = 2; i <= 5; ++i) b.enqueue("insert", insert(i));
  b.flush();
  CHECK(b.committed() == 5);
  CHECK(b.rejected() == 0);
  CHECK(count_rows(conninfo) == 5);
}

TEST_CASE("a read-only server (a standby) rejects no row: the batch waits for a writable one", "[batcher]") {
  auto conninfo = fresh_db_with_table("batcher_read_only");
  // Sessions of this database refuse writes as a hot standby's do (SQLSTATE 25006): a catalog
  // failover where libpq found only the standby.
  pqxx::connection admin(conninfo);
  pqxx::nontransaction tx(admin);
  tx.exec0("ALTER DATABASE " + tx.quote_name(admin.dbname()) + " SET default_transaction_read_only = on");
  Batcher b(conninfo,
            BatcherOptions{.max_delay = std::chrono::milliseconds(10), .max_backoff = std::chrono::milliseconds(200)});
  for (int i = 1; i <= 4; ++i) b.enqueue("insert", insert(i));
  // Bounded poll: the batcher finds the server read-only and keeps the rows (before, it took the
  // refusal for bad rows and rejected every one).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!b.down() && b.rejected() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(b.down());
  CHECK(b.rejected() == 0);
  CHECK(b.waiting() == 4);
  // The server takes writes again (the standby promoted): every row commits, none lost.
  tx.exec0("ALTER DATABASE " + tx.quote_name(admin.dbname()) + " SET default_transaction_read_only = off");
  b.flush();
  CHECK(b.committed() == 4);
  CHECK(b.rejected() == 0);
  CHECK(count_rows(conninfo) == 4);
}
