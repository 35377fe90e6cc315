#pragma once
// The tests' one bounded wait: for something another thread or process makes true (a catalog row
// through the batcher, a process gone, a log line). Never a sleep for timing: the wait ends as
// soon as the condition holds, and the limit only bounds a failure.
#include <chrono>
#include <thread>

namespace vigil::test {

// Polls CONDITION until it holds (true) or LIMIT passes (false, after one last look). The pause
// between polls only spares what is polled, typically PostgreSQL.
template <class F>
bool eventually(F&& condition, std::chrono::milliseconds limit = std::chrono::seconds(60),
                std::chrono::milliseconds poll = std::chrono::milliseconds(50)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(poll);
  }
  return static_cast<bool>(condition());
}

}  // namespace vigil::test
