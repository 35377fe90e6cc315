#pragma once
// Spawning helper processes (initdb, postgres) with dropped privileges.
// Start-up code only: throws std::system_error / std::runtime_error on failure.
// Thread: call from the thread that will outlive the child (normally main): the child is
// asked to die with SIGQUIT when that thread exits (PR_SET_PDEATHSIG), so a kill -9 of
// vigild never leaves an orphaned postmaster behind.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vigil {

// An unprivileged account to run a child as (used when vigild runs as root).
struct RunAs {
  uid_t uid;
  gid_t gid;
  std::string name;
};

// The account NAME, or nullopt if there is none.
std::optional<RunAs> lookup_user(const std::string& name);

// Returns the account NAME, creating it as a system user if it does not exist.
// REQUIRES: running as root.
RunAs ensure_system_user(const std::string& name, const std::string& comment = "Vigil embedded PostgreSQL");

struct SpawnOptions {
  std::vector<std::string> argv;      // argv[0] is the absolute path of the program
  std::optional<RunAs> run_as;        // drop to this user before exec
  std::filesystem::path output_file;  // stdout+stderr appended here; empty = /dev/null
  bool chown_output = true;           // with run_as: the output file becomes the child's user's
  bool new_session = true;            // setsid(): terminal Ctrl-C reaches vigild only
  bool die_with_parent = true;        // PR_SET_PDEATHSIG(SIGQUIT)
  // "NAME=value" entries added to (or replacing in) the inherited environment: how secrets such
  // as a token reach a child without showing in its command line.
  std::vector<std::string> env;
  // Descriptors the child gets besides 0-2: {parent's fd, number in the child} (child numbers >= 3,
  // distinct). Every other descriptor of this process is closed in the child before exec, whether
  // or not it was opened with close-on-exec: a child never sees vigild's sockets or files.
  std::vector<std::pair<int, int>> pass_fds;
};

// A child process owned by this object. The destructor kills (SIGKILL) and reaps a child
// that is still running; call terminate() first for a graceful stop.
class ChildProcess {
 public:
  static ChildProcess spawn(const SpawnOptions& options);

  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const noexcept { return pid_; }
  bool running() noexcept;  // reaps the child if it has exited
  // Exit status as from waitpid once reaped; nullopt while running.
  std::optional<int> wait_status() const noexcept { return status_; }

  // Sends SIG, waits up to GRACE for exit; escalates to SIGKILL after that. Returns the wait status.
  int terminate(int sig, std::chrono::milliseconds grace) noexcept;
  // Waits for exit without signalling (for short-lived helpers like initdb). Returns the wait status.
  int wait() noexcept;

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Runs a program to completion; throws with the tail of its output if it fails.
void run_to_completion(const SpawnOptions& options, const std::string& what);

// A human-readable description of a wait status ("exited with status 1", "killed by signal 9").
std::string describe_wait_status(int status);

// Last LINES lines of a text file (for error messages that quote a child's log).
std::string tail_of_file(const std::filesystem::path& path, int lines);

}  // namespace vigil
