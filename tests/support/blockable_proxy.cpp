#include "tests/support/blockable_proxy.hpp"

#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "catalog/conninfo.hpp"

namespace vigil::test {
namespace {

constexpr std::size_t kBufferCapBytes = 256 * 1024;  // per direction: beyond it, that side is not read
constexpr auto npos = std::string::npos;

// The server's messages, each a type byte and a 4-byte big-endian length that counts itself.
class ServerFraming {
 public:
  // The offset in DATA just past the first ReadyForQuery that says "in a transaction", or npos.
  // The state stays consistent: feed the rest of DATA afterwards.
  std::size_t feed(std::string_view data) {
    for (std::size_t i = 0; i < data.size();) {
      if (have_ < 5) {
        header_[have_++] = static_cast<unsigned char>(data[i++]);
        if (have_ == 5) {
          const std::uint32_t length = (std::uint32_t{header_[1]} << 24) | (std::uint32_t{header_[2]} << 16) |
                                       (std::uint32_t{header_[3]} << 8) | header_[4];
          body_left_ = length >= 4 ? length - 4 : 0;
          if (body_left_ == 0) have_ = 0;
        }
        continue;
      }
      if (header_[0] == 'Z' && body_left_ == 1) {
        const char status = data[i++];
        body_left_ = 0;
        have_ = 0;
        if (status == 'T') return i;
        continue;
      }
      const auto take = std::min(body_left_, data.size() - i);
      i += take;
      body_left_ -= take;
      if (body_left_ == 0) have_ = 0;
    }
    return npos;
  }

 private:
  unsigned char header_[5] = {};
  std::size_t have_ = 0;
  std::size_t body_left_ = 0;
};

void non_blocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Writes what it can of BUF without waiting; false on a broken socket.
bool write_some(int fd, std::string& buf) {
  while (!buf.empty()) {
    const auto n = ::send(fd, buf.data(), buf.size(), MSG_NOSIGNAL);
    if (n > 0) {
      buf.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }
  return true;
}

// Appends what FD has to BUF; false at end of stream or on an error.
bool read_some(int fd, std::string& buf) {
  char chunk[64 * 1024];
  const auto n = ::recv(fd, chunk, sizeof chunk, 0);
  if (n > 0) {
    buf.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

void close_with_reset(int fd) {
  const linger now{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof now);
  ::close(fd);
}

}  // namespace

struct BlockableProxy::Link {
  int client = -1, server = -1;
  std::string to_client, to_server;
  ServerFraming framing;
  bool statement_seen = false;  // the client sent blackhole_in_transaction's statement
  ~Link() {
    if (client >= 0) ::close(client);
    if (server >= 0) ::close(server);
  }
};

BlockableProxy::BlockableProxy(const std::string& conninfo) {
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, void (*)(PQconninfoOption*)> options(PQconninfoParse(conninfo.c_str(), &error),
                                                                         PQconninfoFree);
  if (error) PQfreemem(error);
  if (!options) throw std::runtime_error("blockable proxy: cannot parse the conninfo");
  std::string host, port = "5432";
  for (auto* o = options.get(); o->keyword; ++o) {
    if (!o->val) continue;
    const std::string value = o->val;
    if (std::string_view(o->keyword) == "host") host = value.substr(0, value.find(','));
    if (std::string_view(o->keyword) == "port") port = value.substr(0, value.find(','));
  }
  if (host.empty()) throw std::runtime_error("blockable proxy: the conninfo names no host");
  if (host.front() == '/') {
    upstream_path_ = host + "/.s.PGSQL." + port;
  } else {
    upstream_host_ = host;
    upstream_port_ = std::stoi(port);
  }

  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      ::pipe2(wake_fds_, O_NONBLOCK | O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw std::runtime_error("blockable proxy: cannot listen on 127.0.0.1: " + why);
  }
  non_blocking(listen_fd_);
  port_ = ntohs(addr.sin_port);
  conninfo_ = catalog::with_settings(conninfo, {{"host", "127.0.0.1"},
                                                {"port", std::to_string(port_)},
                                                {"sslmode", "disable"},
                                                {"gssencmode", "disable"}});
  thread_ = std::thread([this] { run(); });
}

BlockableProxy::~BlockableProxy() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake();
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_fds_[0]);
  ::close(wake_fds_[1]);
}

void BlockableProxy::wake() const {
  const char byte = 1;
  [[maybe_unused]] const auto n = ::write(wake_fds_[1], &byte, 1);  // a full pipe is awake already
}

void BlockableProxy::set(Mode mode) {
  {
    std::lock_guard lock(mu_);
    mode_ = mode;
  }
  changed_.notify_all();
  wake();
}

void BlockableProxy::pass() { set(Mode::pass); }
void BlockableProxy::blackhole() { set(Mode::blackhole); }

bool BlockableProxy::blackhole_in_transaction(std::chrono::milliseconds within, const std::string& after) {
  {
    std::lock_guard lock(mu_);
    after_ = after;
  }
  set(Mode::arm);
  std::unique_lock lock(mu_);
  if (changed_.wait_for(lock, within, [&] { return mode_ == Mode::blackhole; })) return true;
  mode_ = Mode::pass;
  return false;
}

void BlockableProxy::reset() {
  {
    std::lock_guard lock(mu_);
    reset_asked_ = true;
  }
  wake();
}

void BlockableProxy::run() {
  std::vector<std::unique_ptr<Link>> links;
  const auto connect_upstream = [this]() -> int {
    int fd = -1;
    if (!upstream_path_.empty()) {
      fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strncpy(addr.sun_path, upstream_path_.c_str(), sizeof addr.sun_path - 1);
      if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    } else {
      fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<std::uint16_t>(upstream_port_));
      ::inet_pton(AF_INET, upstream_host_.c_str(), &addr.sin_addr);
      if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    }
    if (fd >= 0) ::close(fd);
    return -1;
  };

  for (;;) {
    Mode mode;
    bool reset_now;
    std::string after;
    {
      std::lock_guard lock(mu_);
      if (stop_) break;
      mode = mode_;
      after = after_;
      reset_now = std::exchange(reset_asked_, false);
    }
    if (reset_now) {
      for (auto& l : links) {
        close_with_reset(std::exchange(l->client, -1));
        close_with_reset(std::exchange(l->server, -1));
      }
      links.clear();
      connections_ = 0;
    }
    std::vector<pollfd> fds{{wake_fds_[0], POLLIN, 0}};
    if (mode != Mode::blackhole) {
      fds.push_back({listen_fd_, POLLIN, 0});
      for (const auto& l : links) {
        fds.push_back({l->client,
                       static_cast<short>((l->to_server.size() < kBufferCapBytes ? POLLIN : 0) |
                                          (l->to_client.empty() ? 0 : POLLOUT)),
                       0});
        fds.push_back({l->server,
                       static_cast<short>((l->to_client.size() < kBufferCapBytes ? POLLIN : 0) |
                                          (l->to_server.empty() ? 0 : POLLOUT)),
                       0});
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR
    char drain[64];
    while (::read(wake_fds_[0], drain, sizeof drain) > 0) {}
    {
      std::lock_guard lock(mu_);
      if (mode_ != mode || stop_ || reset_asked_) continue;  // look again at what was asked
    }
    if (mode == Mode::blackhole) continue;

    bool cut = false;  // blackholed in the middle of this pass: nothing more moves
    for (std::size_t i = 0; i < links.size() && !cut; ++i) {
      auto& l = *links[i];
      const auto& c = fds[2 + 2 * i];
      const auto& s = fds[3 + 2 * i];
      bool ok = true;
      if (c.revents & POLLOUT) ok = ok && write_some(l.client, l.to_client);
      if (s.revents & POLLOUT) ok = ok && write_some(l.server, l.to_server);
      if (ok && (c.revents & (POLLIN | POLLHUP | POLLERR))) {
        std::string got;
        ok = read_some(l.client, got);
        if (mode == Mode::arm && !after.empty() && got.find(after) != npos) l.statement_seen = true;
        l.to_server += got;
      }
      if (ok && (s.revents & (POLLIN | POLLHUP | POLLERR))) {
        std::string got;
        ok = read_some(l.server, got);
        const auto in_transaction = l.framing.feed(got);
        bool armed = false;
        if (mode == Mode::arm && in_transaction != npos && (after.empty() || l.statement_seen)) {
          std::lock_guard lock(mu_);
          armed = mode_ == Mode::arm;  // not given up by blackhole_in_transaction() meanwhile
          if (armed) mode_ = Mode::blackhole;
        }
        if (armed) {
          // The client learns that it is in a transaction; its next statement is held.
          l.to_client += got.substr(0, in_transaction);
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
          while (!l.to_client.empty() && write_some(l.client, l.to_client) &&
                 std::chrono::steady_clock::now() < until) {
            pollfd out{l.client, POLLOUT, 0};
            ::poll(&out, 1, 50);
          }
          l.framing.feed(std::string_view(got).substr(in_transaction));
          l.to_client += got.substr(in_transaction);
          changed_.notify_all();
          cut = true;
        } else {
          l.to_client += got;
        }
      }
      if (!ok) {
        // One side is gone: what it sent last goes to the other if it can, then both close.
        write_some(l.client, l.to_client);
        write_some(l.server, l.to_server);
        links[i].reset();
      }
    }
    std::erase_if(links, [](const auto& l) { return !l; });

    if (!cut && (fds[1].revents & POLLIN)) {
      for (int fd; (fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
        const int server = connect_upstream();
        if (server < 0) {
          close_with_reset(fd);
          continue;
        }
        non_blocking(server);
        auto l = std::make_unique<Link>();
        l->client = fd;
        l->server = server;
        links.push_back(std::move(l));
      }
    }
    connections_ = links.size();
  }
}

}  // namespace vigil::test
