#include "common/child_process.hpp"

#include <string_view>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace vigil {

std::optional<RunAs> lookup_user(const std::string& name) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return std::nullopt;
  return RunAs{pw.pw_uid, pw.pw_gid, name};
}

namespace {

// Marks every descriptor from FIRST up close-on-exec (async-signal-safe: used between fork and
// exec). close_range(2) where the kernel has it (5.11+ for the flag); else each open one by hand.
void cloexec_from(int first) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, static_cast<unsigned>(first), ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
#endif
  const int max_fd = static_cast<int>(::sysconf(_SC_OPEN_MAX));
  for (int fd = first; fd < max_fd; ++fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

}  // namespace

RunAs ensure_system_user(const std::string& name, const std::string& comment) {
  if (auto user = lookup_user(name)) return *user;
  SpawnOptions opts;
  opts.argv = {"/usr/sbin/useradd",
               "--system",
               "--user-group",
               "--no-create-home",
               "--home-dir",
               "/nonexistent",
               "--shell",
               "/usr/sbin/nologin",
               "--comment",
               comment,
               name};
  opts.die_with_parent = false;
  run_to_completion(opts, "creating system user '" + name + "'");
  if (auto user = lookup_user(name)) return *user;
  throw std::runtime_error("system user '" + name + "' was created but cannot be looked up");
}

ChildProcess ChildProcess::spawn(const SpawnOptions& options) {
  if (options.argv.empty()) throw std::invalid_argument("spawn: empty argv");
  if (options.pass_fds.size() > 16) throw std::invalid_argument("spawn: at most 16 pass_fds");
  int first_free = 3;  // above every passed descriptor's number in the child
  for (const auto& [from, to] : options.pass_fds) {
    if (to < 3 || from < 0) throw std::invalid_argument("spawn: pass_fds numbers must be >= 3");
    first_free = std::max(first_free, to + 1);
  }
  // Everything the child needs is prepared before fork(): after fork only async-signal-safe calls.
  std::vector<char*> argv;
  argv.reserve(options.argv.size() + 1);
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The environment: ours, with OPTIONS.env's names replaced or added.
  std::vector<char*> envp;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const auto& add : options.env) replaced = replaced || add.rfind(name, 0) == 0;
    if (!replaced) envp.push_back(*e);
  }
  for (const auto& add : options.env) envp.push_back(const_cast<char*>(add.c_str()));
  envp.push_back(nullptr);
  int out_fd = options.output_file.empty()
                   ? ::open("/dev/null", O_WRONLY | O_CLOEXEC)
                   : ::open(options.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (out_fd < 0) {
    throw std::system_error(errno, std::generic_category(), "opening " + options.output_file.string());
  }
  // Only a file of our own is handed to the child's user (never /dev/null).
  if (options.run_as && options.chown_output && !options.output_file.empty() &&
      ::fchown(out_fd, options.run_as->uid, options.run_as->gid) != 0) {
    int e = errno;
    ::close(out_fd);
    throw std::system_error(e, std::generic_category(), "chown " + options.output_file.string());
  }
  int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(out_fd);
    ::close(null_in);
    throw std::system_error(e, std::generic_category(), "fork");
  }
  if (pid == 0) {
    if (options.new_session) ::setsid();
    ::dup2(null_in, STDIN_FILENO);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(out_fd, STDERR_FILENO);
    // Only 0-2 and the passed descriptors survive exec. The passed ones first move above every
    // target number (so one's target never overwrites another's source), then everything from 3
    // up is marked close-on-exec, then each lands on its number (dup2 clears close-on-exec there).
    int moved[16];
    const std::size_t passed = std::min<std::size_t>(options.pass_fds.size(), 16);
    for (std::size_t i = 0; i < passed; ++i) {
      moved[i] = ::fcntl(options.pass_fds[i].first, F_DUPFD_CLOEXEC, first_free);
      if (moved[i] < 0) ::_exit(124);
    }
    cloexec_from(3);
    for (std::size_t i = 0; i < passed; ++i) {
      if (::dup2(moved[i], options.pass_fds[i].second) < 0) ::_exit(124);
    }
    if (options.run_as) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(options.run_as->gid) != 0 || ::setuid(options.run_as->uid) != 0) {
        const char msg[] = "vigil: cannot drop privileges\n";
        [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
        ::_exit(126);
      }
    }
    // After setuid: a credential change clears the parent-death signal, so set it last.
    if (options.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGQUIT);
      if (::getppid() != parent) ::_exit(125);  // parent already gone
    }
    ::execve(argv[0], argv.data(), envp.data());
    const char msg[] = "vigil: exec failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(null_in);
  return ChildProcess(pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_), status_(other.status_) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !status_) terminate(SIGKILL, std::chrono::milliseconds(0));
    pid_ = other.pid_;
    status_ = other.status_;
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !status_) terminate(SIGKILL, std::chrono::milliseconds(0));
}

bool ChildProcess::running() noexcept {
  if (pid_ <= 0 || status_) return false;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = st;
    return false;
  }
  return r == 0;
}

int ChildProcess::wait() noexcept {
  if (pid_ <= 0) return 0;
  while (!status_) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, 0);
    if (r == pid_) status_ = st;
    else if (r < 0 && errno != EINTR) status_ = 0;
  }
  return *status_;
}

int ChildProcess::terminate(int sig, std::chrono::milliseconds grace) noexcept {
  if (pid_ <= 0) return 0;
  if (!running()) return status_.value_or(0);
  ::kill(pid_, sig);
  auto deadline = std::chrono::steady_clock::now() + grace;
  // Poll for exit: waitpid has no timeout, and a SIGCHLD handler would belong to the whole process.
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      return wait();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_.value_or(0);
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

std::string tail_of_file(const std::filesystem::path& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(std::move(line));
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (auto& l : last) out.append(l).push_back('\n');
  return out;
}

void run_to_completion(const SpawnOptions& options, const std::string& what) {
  auto opts = options;
  std::filesystem::path tmp_log;
  if (opts.output_file.empty()) {
    char name[] = "/tmp/vigil-child-XXXXXX";
    int fd = ::mkostemp(name, O_CLOEXEC);
    if (fd >= 0) ::close(fd);
    tmp_log = name;
    opts.output_file = tmp_log;
  }
  auto child = ChildProcess::spawn(opts);
  int st = child.wait();
  std::string tail = tail_of_file(opts.output_file, 15);
  if (!tmp_log.empty()) std::filesystem::remove(tmp_log);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    throw std::runtime_error(what + " failed: " + options.argv[0] + " " + describe_wait_status(st) +
                             (tail.empty() ? "" : ":\n" + tail));
  }
}

}  // namespace vigil
