#include "bench/bench_vigild.hpp"

#include <cstdlib>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace fs = std::filesystem;

namespace vigil::bench {

ScratchDir::ScratchDir(const fs::path& base, const std::string& name)
    : path_(base / (name + "-" + std::to_string(::getpid()))) {
  fs::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

int spawn_logged(const std::vector<std::string>& argv, const fs::path& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
  return pid;
}

BenchVigild::BenchVigild(const fs::path& data, const std::vector<std::string>& extra, const fs::path& log)
    : data_(data) {
  const fs::path vigild = fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "server" / "vigild";
  if (!fs::exists(vigild)) throw std::runtime_error("vigild not found next to vigil (" + vigild.string() + ")");
  std::vector<std::string> argv{vigild.string(), "--data", data.string(), "--listen", "127.0.0.1:0",
                                "--http-port",   "0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  pid_ = spawn_logged(argv, log);
  for (int i = 0; i < 600 && wire_.empty(); ++i) {
    std::ifstream in(data / "run" / "endpoints.json");
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      try {
        const auto doc = boost::json::parse(ss.str());
        // A vigild killed before this one left its endpoints behind: only this process's count.
        if (doc.at("pid").to_number<int>() != pid_) throw std::runtime_error("endpoints of an earlier vigild");
        wire_ = std::string(doc.at("wire").as_string());
        std::string http(doc.at("http").as_string());
        if (http.starts_with("http://")) http = http.substr(7);
        http_ = http;
        std::ifstream(data / "admin.token") >> token_;
        // The bench's own clients (wire replays, HTTP) and the `vigil` processes it runs use it.
        if (!token_.empty()) ::setenv("VIGIL_TOKEN", token_.c_str(), 1);
      } catch (const std::exception&) {
        wire_.clear();
      }
    }
    int status = 0;
    if (wire_.empty() && ::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      throw std::runtime_error("vigild exited at start (see " + log.string() + ")");
    }
    if (wire_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (wire_.empty()) throw std::runtime_error("vigild did not start (see " + log.string() + ")");
}

BenchVigild::~BenchVigild() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
}

void BenchVigild::kill_now() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int st = 0;
  ::waitpid(pid_, &st, 0);
  pid_ = 0;
}

std::string BenchVigild::conninfo() const {
  return "host=" + (data_ / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil";
}

double cpu_seconds_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), {});
  const auto close = s.rfind(')');
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double rss_bytes_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  double pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

}  // namespace vigil::bench
