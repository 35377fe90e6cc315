#include "tests/support/vigild_process.hpp"

#include <cstdlib>

#include <algorithm>

#include <signal.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace vigil::test {

VigildProcess::VigildProcess(const fs::path& data_dir, std::vector<std::string> extra_args)
    : data_dir_(data_dir), log_path_(data_dir.parent_path() / (data_dir.filename().string() + "-vigild.log")) {
  SpawnOptions opts;
  opts.argv = {VIGILD_PATH, "--data", data_dir.string(), "--http-port", "0"};
  // Any free port, unless the test needs a fixed one (a client reconnecting after a restart).
  if (std::find(extra_args.begin(), extra_args.end(), "--listen") == extra_args.end()) {
    opts.argv.push_back("--listen");
    opts.argv.push_back("127.0.0.1:0");
  }
  for (auto& a : extra_args) opts.argv.push_back(std::move(a));
  opts.output_file = log_path_;
  opts.new_session = false;
  child_ = ChildProcess::spawn(opts);
}

VigildProcess::~VigildProcess() { stop(SIGTERM); }

std::string VigildProcess::output() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool VigildProcess::wait_ready(std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  auto file = data_dir_ / "run" / "endpoints.json";
  while (std::chrono::steady_clock::now() < deadline) {
    if (!child_.running()) return false;
    std::ifstream in(file);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      boost::system::error_code ec;
      auto v = boost::json::parse(ss.str(), ec);
      if (!ec && v.is_object() && v.as_object().at("pid").to_number<pid_t>() == child_.pid()) {
        wire_ = std::string(v.at("wire").as_string());
        http_ = std::string(v.at("http").as_string());
        std::ifstream(data_dir_ / "admin.token") >> token_;
        if (!token_.empty()) ::setenv("VIGIL_TOKEN", token_.c_str(), 1);
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string token() {
  const char* t = std::getenv("VIGIL_TOKEN");
  return t ? t : "";
}

int VigildProcess::stop(int sig) { return child_.terminate(sig, std::chrono::seconds(40)); }

ExitResult run_to_exit(const std::string& program, std::vector<std::string> args, const fs::path& log) {
  SpawnOptions s;
  s.argv = {program};
  for (auto& a : args) s.argv.push_back(std::move(a));
  s.output_file = log;
  s.new_session = false;
  auto child = ChildProcess::spawn(s);
  const int st = child.wait();
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), tail_of_file(log, 200)};
}

std::vector<pid_t> postgres_processes_under(const fs::path& dir) {
  std::vector<pid_t> out;
  auto want = fs::weakly_canonical(dir).string();
  for (auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream comm(entry.path() / "comm");
    std::string c;
    std::getline(comm, c);
    if (c != "postgres" && c != "postmaster") continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') continue;
    std::error_code ec;
    auto cwd = fs::read_symlink(entry.path() / "cwd", ec).string();
    if (!ec && cwd.rfind(want, 0) == 0) out.push_back(std::stoi(name));
  }
  return out;
}

}  // namespace vigil::test
