#include "server/core/catalog_health.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <cstdlib>
#include <string_view>

namespace vigil::server {
namespace {

using Clock = std::chrono::steady_clock;

std::string first_line(const char* text) {
  std::string s = text ? text : "";
  s = s.substr(0, s.find('\n'));
  return s.empty() ? "unknown error" : s;
}

// Waits until CONN's socket is ready for EVENTS or UNTIL passes.
bool wait_socket(PGconn* conn, short events, Clock::time_point until) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
  if (left <= 0) return false;
  pollfd p{PQsocket(conn), events, 0};
  return ::poll(&p, 1, static_cast<int>(left)) > 0;
}

// A connection within UNTIL, or null with WHY set.
PGconn* connect(const std::string& conninfo, Clock::time_point until, std::string& why) {
  PGconn* conn = PQconnectStart(conninfo.c_str());
  if (!conn) {
    why = "out of memory";
    return nullptr;
  }
  for (;;) {
    const auto state = PQconnectPoll(conn);
    if (state == PGRES_POLLING_OK) return conn;
    if (state == PGRES_POLLING_FAILED) {
      why = first_line(PQerrorMessage(conn));
      break;
    }
    if (!wait_socket(conn, state == PGRES_POLLING_READING ? POLLIN : POLLOUT, until)) {
      why = "no answer while connecting";
      break;
    }
  }
  PQfinish(conn);
  return nullptr;
}

// The schema version, or -1 with WHY set; CONN is unusable afterwards on failure. A server that
// refuses writes (a standby: --db names a replica, or libpq found only the standby during a
// failover) answers reads but cannot take a single row of vigild's: down, and said why.
int schema_version(PGconn* conn, Clock::time_point until, std::string& why) {
  if (!PQsendQuery(conn,
                   "SELECT coalesce(max(version), 0), current_setting('transaction_read_only') FROM "
                   "vigil_schema_version")) {
    why = first_line(PQerrorMessage(conn));
    return -1;
  }
  int version = -1;
  for (;;) {
    while (PQisBusy(conn)) {
      if (!wait_socket(conn, POLLIN, until)) {
        why = "no answer within the deadline";
        return -1;
      }
      if (!PQconsumeInput(conn)) {
        why = first_line(PQerrorMessage(conn));
        return -1;
      }
    }
    PGresult* r = PQgetResult(conn);
    if (!r) break;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
      if (std::string_view(PQgetvalue(r, 0, 1)) == "on") {
        why =
            "the catalog server is read-only (a standby?): its rows wait; give --db the primary, or every host "
            "with target_session_attrs=read-write";
      } else {
        version = std::atoi(PQgetvalue(r, 0, 0));
      }
    } else {
      why = first_line(PQresultErrorMessage(r));
    }
    PQclear(r);
  }
  return version;
}

}  // namespace

CatalogHealth::CatalogHealth(std::string conninfo, std::chrono::milliseconds interval,
                             std::chrono::milliseconds deadline)
    : conninfo_(std::move(conninfo)), interval_(interval), deadline_(deadline) {
  probe();
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

CatalogHealth::~CatalogHealth() {
  thread_.request_stop();
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (conn_) PQfinish(static_cast<PGconn*>(conn_));
}

CatalogHealth::Status CatalogHealth::status() const {
  std::lock_guard lock(mu_);
  Status s = status_;
  // A probe stuck longer than its deadline (it cannot be, but the thread may not have run) or a
  // last answer that is old says nothing good about now.
  if (s.ok && Clock::now() - s.checked_at > interval_ + 2 * deadline_) {
    s.ok = false;
    s.error = "the catalog has not answered a health probe recently";
  }
  return s;
}

void CatalogHealth::probe() {
  const auto until = Clock::now() + deadline_;
  std::string why;
  auto* conn = static_cast<PGconn*>(conn_);
  if (conn && PQstatus(conn) != CONNECTION_OK) {
    PQfinish(conn);
    conn = nullptr;
  }
  if (!conn) conn = connect(conninfo_, until, why);
  int version = conn ? schema_version(conn, until, why) : -1;
  if (conn && version < 0) {
    PQfinish(conn);  // a query that did not answer: start clean next time
    conn = nullptr;
  }
  conn_ = conn;
  std::lock_guard lock(mu_);
  status_.ok = version >= 0;
  status_.schema_version = version < 0 ? 0 : version;
  status_.error = version < 0 ? why : std::string();
  status_.checked_at = Clock::now();
}

void CatalogHealth::run(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    wake_.wait_for(lock, stop, interval_, [] { return false; });
    if (stop.stop_requested()) break;
    lock.unlock();
    probe();
    lock.lock();
  }
}

}  // namespace vigil::server
