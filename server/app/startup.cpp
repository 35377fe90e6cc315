#include "server/app/startup.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <boost/asio/ip/address.hpp>
#include <boost/json.hpp>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "common/log.hpp"
#include "common/tls_context.hpp"
#include "server/app/config.hpp"

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace vigil::server {

DataDirLock::DataDirLock(const fs::path& dir) : path_(dir / "vigild.lock") {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "opening " + path_.string());
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    std::string other;
    std::ifstream(path_) >> other;
    ::close(fd_);
    throw std::runtime_error("another vigild (pid " + (other.empty() ? "?" : other) + ") is using " + dir.string());
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    log::warn("cannot write pid to lock file", {{"file", path_.string()}});
  }
}

DataDirLock::~DataDirLock() { ::close(fd_); }

void EndpointsFile::write(const asio::ip::tcp::endpoint& wire, const asio::ip::tcp::endpoint& http, bool http_tls) {
  auto run = dir_ / "run";
  fs::create_directories(run);
  auto ep = [](const asio::ip::tcp::endpoint& e) {
    auto a = e.address();
    return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(e.port());
  };
  boost::json::object o{{"wire", ep(wire)}, {"http", ep(http)}, {"pid", ::getpid()}, {"version", VIGIL_VERSION}};
  if (http_tls) o["http_tls"] = true;  // `vigil camera`/`token` then use https://
  auto tmp = run / "endpoints.json.tmp";
  std::ofstream(tmp) << boost::json::serialize(o) << "\n";
  fs::rename(tmp, run / "endpoints.json");
  written_ = true;
}

EndpointsFile::~EndpointsFile() {
  std::error_code ignored;
  if (written_) fs::remove(dir_ / "run" / "endpoints.json", ignored);
}

asio::ip::tcp::endpoint resolve_numeric(const std::string& host, std::uint16_t port, const char* flag) {
  boost::system::error_code ec;
  std::string h = host == "localhost" ? "127.0.0.1" : host;
  auto addr = asio::ip::make_address(h, ec);
  if (ec) throw ConfigError(std::string("--") + flag + ": '" + host + "' is not an IP address");
  return {addr, port};
}

admission::DiskProfile load_profile_file(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("--profile: cannot read " + file.string());
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return admission::profile_from_json(boost::json::parse(ss.str()));
  } catch (const std::exception& e) {
    throw std::runtime_error("--profile " + file.string() + ": " + e.what());
  }
}

std::shared_ptr<asio::ssl::context> make_tls_context(const fs::path& cert, const fs::path& key,
                                                     const std::string& flag) {
  return make_server_tls_context(cert, key, flag);
}

}  // namespace vigil::server
