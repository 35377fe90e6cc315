#include "server/app/embedded_postgres.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <pqxx/pqxx>
#include <condition_variable>
#include <stdexcept>
#include <thread>

#include <libpq-fe.h>

#include "common/log.hpp"

namespace fs = std::filesystem;

namespace vigil::server {
namespace {

std::string quote_conninfo_value(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

// True while PID names a live (non-zombie) process.
bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return true;
  char state = line[close + 2];
  return state != 'Z' && state != 'X';
}

// A postmaster chdir()s into its data directory, so /proc/PID/cwd identifies which cluster it serves.
bool is_postmaster_of(pid_t pid, const fs::path& data_dir) {
  std::error_code ec;
  auto cwd = fs::read_symlink("/proc/" + std::to_string(pid) + "/cwd", ec);
  if (ec) return false;
  auto want = fs::weakly_canonical(data_dir, ec);
  return !ec && cwd == want;
}

bool wait_for_exit(pid_t pid, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (process_alive(pid)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Files may vanish while the tree is walked: after a kill, the old postmaster (ended by its
// parent-death signal) can still be removing postmaster.pid and its socket lock while the new
// vigild starts. What is gone needs no chown; a restart once failed here ("chown
// .../postmaster.pid: No such file or directory", the kill campaign).
void chown_tree(const fs::path& root, const RunAs& user) {
  auto chown_one = [&](const fs::path& p) {
    if (::lchown(p.c_str(), user.uid, user.gid) != 0 && errno != ENOENT) {
      throw std::system_error(errno, std::generic_category(), "chown " + p.string());
    }
  };
  chown_one(root);
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) chown_one(it->path());
  if (ec && ec != std::errc::no_such_file_or_directory) throw std::system_error(ec, "walking " + root.string());
}

// Can USER search (x) directory P? Root-owned parents such as /tmp normally allow it.
bool traversable_by(const fs::path& p, const RunAs& user) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return false;
  if (st.st_uid == user.uid) return st.st_mode & S_IXUSR;
  if (st.st_gid == user.gid) return st.st_mode & S_IXGRP;
  return st.st_mode & S_IXOTH;
}

}  // namespace

fs::path EmbeddedPostgres::find_pg_bin_dir() {
  const fs::path root = "/usr/lib/postgresql";
  std::error_code ec;
  int best = -1;
  fs::path best_dir;
  for (auto& entry : fs::directory_iterator(root, ec)) {
    auto bin = entry.path() / "bin";
    if (!fs::exists(bin / "postgres") || !fs::exists(bin / "initdb")) continue;
    int version = std::atoi(entry.path().filename().c_str());
    if (version > best) {
      best = version;
      best_dir = bin;
    }
  }
  if (best < 0) {
    throw std::runtime_error(
        "no PostgreSQL server found under /usr/lib/postgresql (install postgresql-15, "
        "e.g. with deploy/install-deps.sh) or pass --db URL");
  }
  return best_dir;
}

EmbeddedPostgres::EmbeddedPostgres(EmbeddedPostgresOptions options) : options_(std::move(options)) {
  if (options_.data_dir.empty()) throw std::invalid_argument("embedded PostgreSQL needs a data directory");
  options_.data_dir = fs::absolute(options_.data_dir).lexically_normal();
  if (options_.pg_bin_dir.empty()) options_.pg_bin_dir = find_pg_bin_dir();
  pg_root_ = options_.data_dir / "pg";
  data_path_ = pg_root_ / "data";
  socket_dir_ = pg_root_ / "run";
  log_path_ = pg_root_ / "postgres.log";
  marker_path_ = pg_root_ / "initialized";
}

EmbeddedPostgres::~EmbeddedPostgres() { stop(); }

std::string EmbeddedPostgres::conninfo(const std::string& database) const {
  return "host=" + quote_conninfo_value(socket_dir_.string()) + " port=" + std::to_string(options_.port) +
         " user=" + quote_conninfo_value(superuser_) +
         " dbname=" + quote_conninfo_value(database.empty() ? options_.database : database);
}

void EmbeddedPostgres::start() {
  if (postmaster_.running()) return;
  prepare_directories();
  if (!fs::exists(marker_path_)) init_cluster();
  clear_previous_postmaster();
  spawn_postmaster();
  wait_until_ready();
  if (!fs::exists(marker_path_)) {
    create_database_if_missing();
    std::ofstream(marker_path_) << "initialised by vigild " VIGIL_VERSION "\n";
    // The cluster user's, like the rest of the tree: else the next start chowns the whole tree.
    if (run_as_) (void)::lchown(marker_path_.c_str(), run_as_->uid, run_as_->gid);
  }
  log::info("embedded PostgreSQL ready",
            {{"pid", postmaster_.pid()}, {"socket", socket_dir_.string()}, {"user", run_as_ ? run_as_->name : "self"}});
}

void EmbeddedPostgres::prepare_directories() {
  const auto& dir = options_.data_dir;
  fs::create_directories(dir);
  auto sock = (socket_dir_ / (".s.PGSQL." + std::to_string(options_.port))).string();
  if (sock.size() >= sizeof(sockaddr_un{}.sun_path)) {
    throw std::runtime_error("data directory path is too long for PostgreSQL's unix socket (" +
                             std::to_string(sock.size()) + " > " + std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) +
                             " characters): use a shorter --data path");
  }
  fs::create_directories(socket_dir_);
  fs::permissions(pg_root_, fs::perms::owner_all);
  fs::permissions(socket_dir_, fs::perms::owner_all);
  if (::geteuid() != 0) return;

  run_as_ = ensure_system_user(options_.run_as_user);
  // The cluster user must be able to reach DIR/pg: give DIR search-only permission for others
  // (no listing), and refuse with a clear message if a parent directory blocks it.
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  for (fs::path p = dir.parent_path(); !p.empty(); p = p.parent_path()) {
    if (!traversable_by(p, *run_as_)) {
      throw std::runtime_error("PostgreSQL runs as user '" + run_as_->name + "', which cannot enter " + p.string() +
                               ": choose a --data directory whose parents are searchable (chmod o+x)");
    }
    if (p == p.root_path()) break;
  }
  struct stat st {};
  if (::stat(pg_root_.c_str(), &st) == 0 && (st.st_uid != run_as_->uid || st.st_gid != run_as_->gid)) {
    chown_tree(pg_root_, *run_as_);
  } else {
    // The top may be right while files below (e.g. a log) were left by a root process.
    std::error_code ec;
    for (fs::recursive_directory_iterator it(pg_root_, ec), end; !ec && it != end; it.increment(ec)) {
      if (::lstat(it->path().c_str(), &st) == 0 && st.st_uid != run_as_->uid) {
        chown_tree(pg_root_, *run_as_);
        break;
      }
    }
  }
}

void EmbeddedPostgres::init_cluster() {
  if (fs::exists(data_path_)) {
    // No marker: an earlier initdb died midway. Nothing of ours can be in it yet.
    log::warn("incomplete PostgreSQL cluster found, initialising it again", {{"dir", data_path_.string()}});
    clear_previous_postmaster();
    fs::remove_all(data_path_);
  }
  log::info("initialising embedded PostgreSQL cluster", {{"dir", data_path_.string()}});
  SpawnOptions opts;
  opts.argv = {(options_.pg_bin_dir / "initdb").string(),
               "-D",
               data_path_.string(),
               "-U",
               superuser_,
               "-A",
               "trust",
               "-E",
               "UTF8",
               "--no-locale",
               "--no-instructions"};
  if (!options_.fsync) opts.argv.push_back("--no-sync");
  opts.run_as = run_as_;
  opts.output_file = log_path_;
  run_to_completion(opts, "initdb of the embedded PostgreSQL cluster (log: " + log_path_.string() + ")");
}

void EmbeddedPostgres::clear_previous_postmaster() {
  auto pid_file = data_path_ / "postmaster.pid";
  std::ifstream in(pid_file);
  pid_t pid = 0;
  if (!(in >> pid)) return;
  in.close();
  if (process_alive(pid) && is_postmaster_of(pid, data_path_)) {
    // A postmaster outlived its vigild (it should have died with it: PDEATHSIG). Stop it before
    // starting ours so there is never a second postmaster on the same data.
    log::warn("stopping an orphaned postmaster on our cluster", {{"pid", pid}});
    ::kill(pid, SIGINT);
    if (!wait_for_exit(pid, std::chrono::seconds(30))) {
      ::kill(pid, SIGQUIT);
      if (!wait_for_exit(pid, std::chrono::seconds(5))) {
        ::kill(pid, SIGKILL);
        if (!wait_for_exit(pid, std::chrono::seconds(5))) {
          throw std::runtime_error("an orphaned postmaster (pid " + std::to_string(pid) + ") on " +
                                   data_path_.string() + " does not stop");
        }
      }
    }
  } else {
    log::warn("removing stale postmaster.pid", {{"pid", pid}, {"file", pid_file.string()}});
  }
  // Whatever is left names no live postmaster of ours: remove it so PostgreSQL does not
  // mistake an unrelated process that reused the pid for a running server.
  std::error_code ec;
  fs::remove(pid_file, ec);
  auto sock = socket_dir_ / (".s.PGSQL." + std::to_string(options_.port));
  fs::remove(sock.string() + ".lock", ec);
  fs::remove(sock, ec);
}

void EmbeddedPostgres::spawn_postmaster() {
  SpawnOptions opts;
  opts.argv = {(options_.pg_bin_dir / "postgres").string(),
               "-D",
               data_path_.string(),
               "-k",
               socket_dir_.string(),
               "-p",
               std::to_string(options_.port),
               "-c",
               "listen_addresses=" + options_.tcp_listen.value_or(""),
               "-c",
               "unix_socket_permissions=0700",
               "-c",
               std::string("fsync=") + (options_.fsync ? "on" : "off"),
               "-c",
               "logging_collector=off"};
  // After a crash PostgreSQL fsyncs every file of its data directory, one by one, before it
  // replays its WAL: seconds on a small catalog (4 of the 5 s a restart took after SIGKILL in the
  // kill campaign). One syncfs(2) of the file system makes the same data durable at once
  // (PostgreSQL 14 and later; before Linux 5.8 a write-back error is only in the kernel's log).
  int pg_version = 0;
  std::ifstream(data_path_ / "PG_VERSION") >> pg_version;
  if (pg_version >= 14) opts.argv.insert(opts.argv.end(), {"-c", "recovery_init_sync_method=syncfs"});
  opts.run_as = run_as_;
  opts.output_file = log_path_;
  postmaster_ = ChildProcess::spawn(opts);
}

void EmbeddedPostgres::wait_until_ready(const std::stop_token& stop) {
  auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  const std::string probe = conninfo("postgres") + " connect_timeout=2";
  // Readiness poll with a deadline: PostgreSQL has no readiness notification we can wait on.
  while (PQping(probe.c_str()) != PQPING_OK) {
    if (stop.stop_requested()) throw std::runtime_error("stopping");
    std::unique_lock lock(mu_);
    if (!postmaster_.running()) {
      throw std::runtime_error("embedded PostgreSQL " + describe_wait_status(postmaster_.wait_status().value_or(0)) +
                               "; last lines of " + log_path_.string() + ":\n" + tail_of_file(log_path_, 10));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      postmaster_.terminate(SIGQUIT, std::chrono::seconds(5));
      throw std::runtime_error("embedded PostgreSQL did not become ready within " +
                               std::to_string(options_.start_timeout.count()) + " s; see " + log_path_.string());
    }
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void EmbeddedPostgres::create_database_if_missing() {
  pqxx::connection conn(conninfo("postgres"));
  pqxx::nontransaction tx(conn);
  auto rows = tx.exec_params("SELECT 1 FROM pg_database WHERE datname = $1", options_.database);
  if (rows.empty()) tx.exec0("CREATE DATABASE " + tx.quote_name(options_.database));
}

void EmbeddedPostgres::supervise() {
  if (supervisor_.joinable()) return;
  supervisor_ = std::jthread([this](std::stop_token st) { run_supervisor(st); });
}

void EmbeddedPostgres::run_supervisor(std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  const auto pause = [&](std::chrono::milliseconds d) {
    std::unique_lock lock(m);
    cv.wait_for(lock, stop, d, [] { return false; });
  };
  auto backoff = std::chrono::milliseconds(1000);
  while (!stop.stop_requested()) {
    pause(std::chrono::milliseconds(500));
    if (stop.stop_requested() || running()) continue;
    std::optional<int> status;
    {
      std::lock_guard lock(mu_);
      status = postmaster_.wait_status();
    }
    log::error("embedded PostgreSQL died; starting it again", {{"status", describe_wait_status(status.value_or(0))},
                                                               {"restarts", restarts_.load()},
                                                               {"log", log_path_.string()},
                                                               {"last_lines", tail_of_file(log_path_, 5)}});
    while (!stop.stop_requested()) {
      try {
        // What is left of the dead one (its pid file, its socket; backends still exiting) is
        // cleared before the new one starts.
        clear_previous_postmaster();
        {
          std::lock_guard lock(mu_);
          spawn_postmaster();
        }
        wait_until_ready(stop);
        ++restarts_;
        backoff = std::chrono::milliseconds(1000);
        log::info("embedded PostgreSQL started again", {{"pid", postmaster_pid()}, {"restarts", restarts_.load()}});
        break;
      } catch (const std::exception& e) {
        if (stop.stop_requested()) break;
        log::error("embedded PostgreSQL did not start again; retrying",
                   {{"error", e.what()}, {"retry_in_ms", backoff.count()}});
        {
          std::lock_guard lock(mu_);
          if (postmaster_.running()) postmaster_.terminate(SIGQUIT, std::chrono::seconds(5));
        }
        pause(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(30'000));
      }
    }
  }
}

void EmbeddedPostgres::stop() noexcept {
  if (supervisor_.joinable()) {
    supervisor_.request_stop();
    supervisor_.join();
  }
  std::lock_guard lock(mu_);
  if (!postmaster_.running()) return;
  // SIGINT = PostgreSQL's fast shutdown: roll back open transactions, checkpoint, exit.
  int st = postmaster_.terminate(SIGINT, stop_grace_);
  log::info("embedded PostgreSQL stopped", {{"status", describe_wait_status(st)}});
}

}  // namespace vigil::server
