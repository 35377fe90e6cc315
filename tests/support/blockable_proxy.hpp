#pragma once
// A TCP forwarder that sits between one vigild and PostgreSQL and can cut that one link while
// everything else (the node, its cameras, its disks, PostgreSQL for the other nodes) goes on: the
// network partition of docs/nodes.md, "A node cut off from PostgreSQL".
//
// - pass: bytes flow both ways (again: what was held goes on, as TCP retransmits after a
//   partition heals).
// - blackhole: nothing is read, written, accepted or closed; every socket stays open. The kernel
//   still acknowledges what the client sends (into the proxy's receive buffer), so neither side's
//   TCP keepalive or user timeout notices anything: only a deadline of the application's own does
//   (the hardest kind of partition, and that of a hung proxy such as PgBouncer or HAProxy).
// - reset(): every connection is closed now with RST, in any mode.
//
// The server's side is parsed into messages (the PostgreSQL protocol v3, which is why the client
// connects with sslmode=disable and gssencmode=disable: conninfo() says so), so that
// blackhole_in_transaction() can cut the link at the worst moment: right after PostgreSQL told the
// client it is inside a transaction (ReadyForQuery 'T'), so that the server keeps it open, with its
// locks, waiting for a next statement that does not come — optionally only once the client has
// sent a given statement in it (the sweeper's advisory lock: node_partition_test.cpp).
//
// Thread: one of its own for the sockets; the methods from any thread. Errors: the constructor
// throws std::runtime_error when it cannot listen; a connection that fails is closed.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

namespace vigil::test {

class BlockableProxy {
 public:
  // Forwards to the PostgreSQL that CONNINFO names (its first host: a Unix socket directory or a
  // TCP host), listening on a free port of 127.0.0.1.
  explicit BlockableProxy(const std::string& conninfo);
  ~BlockableProxy();
  BlockableProxy(const BlockableProxy&) = delete;
  BlockableProxy& operator=(const BlockableProxy&) = delete;

  int port() const { return port_; }
  // The conninfo given, through this proxy.
  std::string conninfo() const { return conninfo_; }

  void pass();
  void blackhole();
  // Blackholes right after the server tells a client that it is in a transaction, after a
  // statement containing AFTER (any, when empty) on that connection; false (and no blackhole) if
  // no client was within WITHIN.
  bool blackhole_in_transaction(std::chrono::milliseconds within, const std::string& after = {});
  void reset();
  std::size_t connections() const { return connections_.load(); }

 private:
  enum class Mode { pass, arm, blackhole };
  struct Link;
  void run();
  void set(Mode mode);
  void wake() const;

  std::string upstream_path_;  // a Unix socket, or empty
  int upstream_port_ = 0;      // a TCP port on upstream_host_
  std::string upstream_host_;
  std::string conninfo_;
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_fds_[2] = {-1, -1};
  mutable std::mutex mu_;
  std::condition_variable changed_;
  Mode mode_ = Mode::pass;    // guarded by mu_
  std::string after_;         // guarded by mu_: blackhole_in_transaction()'s statement
  bool reset_asked_ = false;  // guarded by mu_
  bool stop_ = false;         // guarded by mu_
  std::atomic<std::size_t> connections_{0};
  std::thread thread_;
};

}  // namespace vigil::test
