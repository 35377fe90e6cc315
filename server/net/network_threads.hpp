#pragma once
// The threads that run client sessions (wire protocol and HTTP). Each thread runs its own
// io_context and a session lives on one of them for its whole life, so a session's
// coroutine, its timers and the wake-ups posted to it by a disk's IO thread never hand off
// between threads: no strand, no lock contention in the scheduler, one wake-up per event.
// (One io_context run by several threads cost ~2x the CPU per packet in `vigil bench
// ingest`: most of it in futex hand-offs between the threads.)
// Thread: start()/next()/shutdown() from the daemon's main thread. Errors: exceptions.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace vigil::server {

class NetworkThreads {
 public:
  // COUNT threads (at least one).
  explicit NetworkThreads(unsigned count);
  ~NetworkThreads();
  NetworkThreads(const NetworkThreads&) = delete;
  NetworkThreads& operator=(const NetworkThreads&) = delete;

  // The io_context for the next session, round robin.
  boost::asio::io_context& next() noexcept;
  void start();
  // Stops every context, joins the threads and destroys what sessions were left (their
  // coroutine frames), so nothing of a session outlives the services it used.
  // AFTER_JOIN runs once the threads are joined and before the contexts are destroyed (what
  // posts to them from other threads drains there).
  void shutdown(const std::function<void()>& after_join = {});

  // How many session threads this machine should have: half its cores (the disks' IO
  // threads, the catalog and PostgreSQL need the rest), at least one, at most four.
  static unsigned default_count() noexcept;

 private:
  using Guard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  std::vector<Guard> guards_;
  std::vector<std::jthread> threads_;
  std::size_t next_ = 0;
};

}  // namespace vigil::server
