#include "tests/support/replicated_catalog.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <pqxx/pqxx>
#include <stdexcept>

#include "tests/support/eventually.hpp"
#include "tests/support/vigild_process.hpp"

namespace vigil::test {
namespace fs = std::filesystem;

int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("no free TCP port on 127.0.0.1");
  return ntohs(addr.sin_port);
}

namespace {

// A cluster under DIR/pg on the unix socket and on TCP 127.0.0.1:PORT.
server::EmbeddedPostgresOptions options(const fs::path& dir, int port) {
  server::EmbeddedPostgresOptions o;
  o.data_dir = dir;
  o.port = port;
  o.tcp_listen = "127.0.0.1";
  o.fsync = false;
  return o;
}

}  // namespace

ReplicatedCatalog::ReplicatedCatalog() : dir_("vigil-pgha") {
  primary_port_ = free_tcp_port();
  do standby_port_ = free_tcp_port();
  while (standby_port_ == primary_port_);
  primary_ = std::make_unique<server::EmbeddedPostgres>(options(dir_.path() / "primary", primary_port_));
  primary_->start();  // initdb's pg_hba.conf trusts host and replication connections from 127.0.0.1
  if (::geteuid() == 0) run_as_ = lookup_user("vigil");  // the user the primary runs as

  // The standby: a base backup of the primary, with -R its standby.signal and primary_conninfo.
  const auto standby_root = dir_.path() / "standby";
  fs::create_directories(standby_root / "pg");
  fs::permissions(standby_root, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  fs::permissions(standby_root / "pg", fs::perms::owner_all);
  if (run_as_ && ::chown((standby_root / "pg").c_str(), run_as_->uid, run_as_->gid) != 0)
    throw std::runtime_error("chown of the standby's directory failed");
  run_tool({"pg_basebackup", "-h", "127.0.0.1", "-p", std::to_string(primary_port_), "-U", primary_->superuser(), "-D",
            (standby_root / "pg" / "data").string(), "-R", "-X", "stream", "--checkpoint=fast", "--no-sync"},
           "pg_basebackup of the primary");
  // The cluster exists: EmbeddedPostgres must start it as it is, not initialise it.
  std::ofstream(standby_root / "pg" / "initialized") << "pg_basebackup\n";
  standby_ = std::make_unique<server::EmbeddedPostgres>(options(standby_root, standby_port_));
  standby_->start();

  // Synchronous from now on, set on the primary only (not in the backup): a commit returns once
  // the standby has it. The promoted standby, alone, commits without waiting for anyone.
  pqxx::connection conn(primary_->conninfo());
  pqxx::nontransaction tx(conn);
  tx.exec0("ALTER SYSTEM SET synchronous_standby_names = '*'");
  tx.exec("SELECT pg_reload_conf()");
  const bool sync = eventually(
      [&] { return tx.exec1("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")[0].as<int>() == 1; },
      std::chrono::seconds(30));
  if (!sync) throw std::runtime_error("the standby did not become synchronous within 30 s");
}

ReplicatedCatalog::~ReplicatedCatalog() {
  if (standby_) standby_->stop();
  if (primary_) primary_->stop();
}

std::string ReplicatedCatalog::tcp(int port) const {
  return "host=127.0.0.1 port=" + std::to_string(port) + " user=" + primary_->superuser() + " dbname=vigil";
}

void ReplicatedCatalog::kill_primary() {
  const auto pids = postgres_processes_under(dir_.path() / "primary");
  if (pids.empty()) throw std::runtime_error("the primary has no process to kill");
  for (auto pid : pids) ::kill(pid, SIGKILL);
  primary_->stop();  // reaps the postmaster
  const bool gone =
      eventually([&] { return postgres_processes_under(dir_.path() / "primary").empty(); }, std::chrono::seconds(30));
  if (!gone) throw std::runtime_error("the primary's processes outlived SIGKILL");
}

void ReplicatedCatalog::promote_standby() {
  run_tool({"pg_ctl", "promote", "-D", standby_->cluster_dir().string(), "-w", "-t", "60"}, "pg_ctl promote");
}

void ReplicatedCatalog::run_tool(std::vector<std::string> argv, const std::string& what) {
  argv[0] = (server::EmbeddedPostgres::find_pg_bin_dir() / argv[0]).string();
  SpawnOptions opts;
  opts.argv = std::move(argv);
  opts.run_as = run_as_;  // pg_ctl refuses root, and the backup must be the cluster user's
  opts.output_file = dir_.path() / (opts.argv[1] == "promote" ? "pg_ctl.log" : "pg_basebackup.log");
  run_to_completion(opts, what);
}

}  // namespace vigil::test
