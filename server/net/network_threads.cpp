#include "server/net/network_threads.hpp"

#include <algorithm>

#include "common/log.hpp"

namespace vigil::server {

NetworkThreads::NetworkThreads(unsigned count) {
  for (unsigned i = 0; i < std::max(1u, count); ++i) {
    // Concurrency hint 1: each context is run by exactly one thread (other threads only post).
    contexts_.push_back(std::make_unique<boost::asio::io_context>(1));
    guards_.emplace_back(contexts_.back()->get_executor());
  }
}

NetworkThreads::~NetworkThreads() { shutdown(); }

boost::asio::io_context& NetworkThreads::next() noexcept {
  auto& ctx = *contexts_[next_];
  next_ = (next_ + 1) % contexts_.size();
  return ctx;
}

void NetworkThreads::start() {
  for (auto& ctx : contexts_) {
    threads_.emplace_back([c = ctx.get()] {
      // A session's exception must not end the thread that serves every other session.
      for (;;) {
        try {
          c->run();
          return;
        } catch (const std::exception& e) {
          log::error("network thread: unhandled exception in a session", {{"error", e.what()}});
        }
      }
    });
  }
}

void NetworkThreads::shutdown(const std::function<void()>& after_join) {
  guards_.clear();
  for (auto& ctx : contexts_) ctx->stop();
  threads_.clear();  // joins
  if (after_join) after_join();
  contexts_.clear();  // destroys the sessions left, while the services they use still exist
}

unsigned NetworkThreads::default_count() noexcept {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp(cores / 2, 1u, 4u);
}

}  // namespace vigil::server
