#include "bench/replay_process.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace vigil::bench {
namespace {

bool set_affinity(pid_t tid, const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return ::sched_setaffinity(tid, sizeof set, &set) == 0;
}

// One result a line: sent acked buffer_bytes refused largest_rate_bps admitted error...
std::string encode(const std::vector<ReplayResult>& results) {
  std::ostringstream out;
  for (const auto& r : results) {
    std::string error = r.error;
    for (char& c : error) c = c == '\n' ? ' ' : c;
    out << r.sent << ' ' << r.acked << ' ' << r.buffer_bytes << ' ' << r.refused << ' ' << r.largest_rate_bps << ' '
        << (r.admitted ? 1 : 0) << ' ' << error << '\n';
  }
  return out.str();
}

std::vector<ReplayResult> decode(const std::string& text) {
  std::vector<ReplayResult> results;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    ReplayResult r;
    int admitted = 0;
    l >> r.sent >> r.acked >> r.buffer_bytes >> r.refused >> r.largest_rate_bps >> admitted;
    r.admitted = admitted != 0;
    std::getline(l >> std::ws, r.error);
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

ReplayProcessResult replay_in_process(const std::string& wire, const std::string& name_prefix, int k,
                                      const ReplayClip& clip, const ReplayOptions& options,
                                      const std::vector<int>& cpus) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // The child: the clip is already in memory (copied with the process). Pinned before its
    // threads start, so they inherit the mask.
    ::close(fds[0]);
    if (!cpus.empty()) set_affinity(0, cpus);
    ReplayOptions plain{.declared_bps = options.declared_bps,
                        .seconds = options.seconds,
                        .speed = options.speed,
                        .first_wall_us = options.first_wall_us};
    std::vector<ReplayResult> results(static_cast<std::size_t>(k));
    {
      std::vector<std::jthread> threads;
      for (int i = 0; i < k; ++i) {
        threads.emplace_back([&, i] {
          results[static_cast<std::size_t>(i)] = replay(wire, name_prefix + "-" + std::to_string(i), clip, plain);
        });
      }
    }
    const std::string text = encode(results);
    std::size_t off = 0;
    while (off < text.size()) {
      const ssize_t n = ::write(fds[1], text.data() + off, text.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    ::_exit(off == text.size() ? 0 : 1);
  }
  ::close(fds[1]);
  std::string text;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("the replaying process failed");
  ReplayProcessResult out;
  out.results = decode(text);
  if (out.results.size() != static_cast<std::size_t>(k)) throw std::runtime_error("the replaying process lost results");
  out.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  return out;
}

int pin_threads(int pid, const std::string& comm, const std::vector<int>& cpus) {
  int pinned = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::string name;
    std::getline(std::ifstream(task.path() / "comm"), name);
    if (name != comm) continue;
    if (set_affinity(static_cast<pid_t>(std::stol(task.path().filename().string())), cpus)) ++pinned;
  }
  return pinned;
}

}  // namespace vigil::bench
